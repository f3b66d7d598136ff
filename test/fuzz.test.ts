/**
 * Every route of embedded Plover under generated hostile requests (seeded, bounded): no answer is a 5xx, every
 * error is the JSON error shape, no request stalls the process, and `/_health` keeps answering. The anonymous half
 * sends SDK bodies; the authenticated half calls every route of the management route table (analysis included)
 * with valid keys of hostile kinds and bodies and queries generated from the route's schemas, while `/flags` is
 * asked beside it (its latency within a multiple of idle) and the process's memory is compared after.
 * `npm test` sends a few thousand bodies per SDK route; `npm run fuzz` sends more (FUZZ_SCALE, FUZZ_SEED).
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { SCOPE_OBJECTS } from '../services/management/src/accounts/routes';
import { PROJECT_MOUNTS } from '../services/management/src/routes';
import { declaredTable } from '../services/management/test/support/table';
import { seededRandom } from './support/random';
import { startEmbedded, type EmbeddedPlover } from './support/embedded';
import { managementRoutes, SDK_ROUTES, type FuzzRequest, type FuzzRoute, type TableRoute } from './support/fuzz/requests';
import type { Schema } from './support/fuzz/schema-values';
import { flagsBeside, flagsLatency, flagsVerdict } from './support/latency';

const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const SEED = Number(process.env.FUZZ_SEED ?? 20261126);
const SDK_CASES = Math.round(2_000 * SCALE);
const MANAGEMENT_CASES = Math.round(6 * SCALE);
/** Resident memory the authenticated half may leave behind. */
const RSS_GROWTH_MIB = 600;
const IN_FLIGHT = 4;
/** A request answered later than this counts as a stall. */
const STALL_MS = 15_000;
/** `/_health` must answer this fast between rounds. */
const HEALTH_MS = 2_000;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  ms: number;
}

interface Failure {
  route: string;
  seed: number;
  request: string;
  problem: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });

/** Header values a client library would refuse to send are sent with the offending characters replaced. */
function sendable(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    try {
      http.validateHeaderValue(name, value);
      out[name] = value;
    } catch {
      out[name] = value.replace(/[^\t\x20-\x7e\x80-\xff]/g, '?');
    }
  }
  return out;
}

function send(port: number, request: FuzzRequest, timeoutMs = STALL_MS): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: request.method,
        path: request.path,
        agent,
        headers: { ...sendable(request.headers), ...(request.body ? { 'content-length': String(request.body.length) } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), ms: performance.now() - started }));
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(request.body);
  });
}

/** What is wrong with an answer, or undefined. */
function problemOf(answer: Answer): string | undefined {
  if (answer.status >= 500) return `status ${answer.status}: ${answer.body.subarray(0, 300).toString()}`;
  // A 405 of a route that exists has no body (PostHog's own answer to DELETE of undeletable objects).
  if (answer.status < 400 || (answer.status === 405 && answer.body.length === 0)) return undefined;
  let error: unknown;
  try {
    error = JSON.parse(answer.body.toString());
  } catch {
    return `status ${answer.status} without a JSON body: ${answer.body.subarray(0, 200).toString()}`;
  }
  const shape = error !== null && typeof error === 'object' && ['type', 'code', 'detail', 'attr'].every((key) => key in error);
  return shape ? undefined : `status ${answer.status} with a body not shaped {type, code, detail, attr}: ${answer.body.subarray(0, 200).toString()}`;
}

const HEAD_LIMIT = 16 * 1024;

function headBytes(request: FuzzRequest): number {
  return Object.entries(request.headers).reduce((sum, [name, value]) => sum + name.length + value.length + 4, request.path.length + 20);
}

function describeRequest(request: FuzzRequest): string {
  const body = request.body ? ` body[${request.body.length}]=${JSON.stringify(request.body.subarray(0, 160).toString('latin1'))}` : '';
  return `${request.method} ${request.path.slice(0, 200)} ${JSON.stringify(request.headers)}${body}`;
}

/** Every route of the management route table, under each path it answers at (project routes under the first mount). */
const TABLE = declaredTable();
const TABLE_ROUTES: TableRoute[] = [
  ...TABLE.api.map((route) => ({ ...route, path: `/api${route.path}/` })),
  ...TABLE.project.map((route) => ({ ...route, path: `/api${PROJECT_MOUNTS[0]}${route.path}/`.replace(/\/\/$/, '/') })),
  ...TABLE.shared,
].map(({ method, path, body, query }) => ({ method, path, body: body as Schema | undefined, query: query as Schema | undefined }));

describe('fuzzed routes (embedded)', () => {
  let plover: EmbeddedPlover;
  /** The hostile-but-valid keys of the authenticated half, and ids of objects its paths name. */
  const keys: string[] = [];
  const ids: string[] = [];

  beforeAll(async () => {
    plover = await startEmbedded();
    const admin = async (path: string, body: unknown) => {
      const response = await fetch(`http://127.0.0.1:${plover.port}/api${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${plover.credentials.personalKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(201);
      return (await response.json()) as { id: number | string; value: string; short_id?: string };
    };
    const other = await admin('/projects/', { name: 'Another project' });
    const key = async (scopes: string[], scoped_teams: number[] = []) => (await admin('/personal_api_keys/', { label: 'fuzz', scopes, scoped_teams })).value;
    keys.push(
      plover.credentials.personalKey,
      await key(SCOPE_OBJECTS.map((object) => `${object}:read`)),
      await key(['*'], [Number(other.id)]),
      await key(['annotation:read']),
    );
    const project = `/projects/${plover.credentials.projectId}`;
    const trend = { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: '$pageview' }], breakdownFilter: { breakdown: 'plan' } };
    for (const [path, body] of [
      ['/insights/', { name: 'Fuzzed', query: { kind: 'InsightVizNode', source: trend } }],
      ['/dashboards/', { name: 'Fuzzed' }],
      ['/feature_flags/', { key: 'fuzzed', filters: { groups: [{ rollout_percentage: 50 }] } }],
      ['/cohorts/', { name: 'Fuzzed', filters: { properties: { type: 'AND', values: [] } } }],
      ['/session_recording_playlists/', { name: 'Fuzzed' }],
    ] as const) {
      const created = await admin(`${project}${path}`, body);
      ids.push(String(created.id), ...(created.short_id ? [created.short_id] : []));
    }
    // Events for the analysis routes to compute over: a month of page views with a few properties.
    const now = Date.now();
    const batch = Array.from({ length: 500 }, (_, i) => ({
      event: i % 5 === 0 ? 'signed up' : '$pageview',
      distinct_id: `user-${i % 60}`,
      uuid: randomUUID(),
      timestamp: new Date(now - (i % 30) * 86_400_000 - 60_000).toISOString(),
      properties: { plan: ['free', 'pro'][i % 2], unique: `value-${i}`, $session_id: `session-${i % 40}`, $set: { email: `user-${i % 60}@example.com` } },
    }));
    const sent = await fetch(`http://127.0.0.1:${plover.port}/batch/`, { method: 'POST', body: JSON.stringify({ api_key: plover.credentials.token, batch }) });
    expect(sent.status).toBe(200);
    // Stored before the cases start: ingestion's person writes share PGlite with every management request.
    for (let stored = 0, i = 0; stored < batch.length; i++) {
      if (i > 300) throw new Error(`only ${stored} of ${batch.length} events stored`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const counted = await fetch(`http://127.0.0.1:${plover.port}/api${project}/query/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${plover.credentials.personalKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: { kind: 'HogQLQuery', query: 'select count() from events' } }),
      });
      if (counted.status === 200) stored = Number(((await counted.json()) as { results: number[][] }).results[0]![0]);
    }
  }, 300_000);

  afterAll(async () => {
    agent.destroy();
    if (plover) expect(await plover.stop()).toBe(0);
  }, 120_000);

  async function fuzz(routes: FuzzRoute[], cases: number, seedBase: number): Promise<void> {
    const failures: Failure[] = [];
    let done = 0;
    for (const [index, route] of routes.entries()) {
      // One seed per case: the failure report names it, and FUZZ_SEED with the case's index replays it.
      const queue = Array.from({ length: cases }, (_, i) => seedBase + index * 1_000_000 + i);
      const worker = async (): Promise<void> => {
        for (let seed = queue.shift(); seed !== undefined; seed = queue.shift()) {
          const request = route.generate(seededRandom(seed), { ...plover.credentials, keys, ids });
          try {
            const problem = problemOf(await send(plover.port, request));
            if (problem) failures.push({ route: route.name, seed, request: describeRequest(request), problem });
          } catch (error) {
            // Past the 16 KiB head limit the server answers 431 and closes; a client still sending its body
            // may see the connection reset before it reads that answer.
            if (headBytes(request) > HEAD_LIMIT && /ECONNRESET|EPIPE/.test((error as Error).message)) continue;
            failures.push({ route: route.name, seed, request: describeRequest(request), problem: `no answer: ${(error as Error).message}` });
          }
          if (++done % 250 === 0) {
            const health = await send(plover.port, { method: 'GET', path: '/_health', headers: {} }, HEALTH_MS).catch((error: Error) => error);
            if (health instanceof Error || health.status !== 200)
              failures.push({
                route: route.name,
                seed,
                request: 'GET /_health',
                problem: `health: ${String(health instanceof Error ? health.message : health.status)}`,
              });
          }
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    }
    // One line per kind of failure (route and problem), with a count and the first case's seed and request.
    const kinds = new Map<string, { count: number; first: Failure }>();
    for (const failure of failures) {
      const kind = `${failure.route}: ${failure.problem.slice(0, 120)}`;
      const entry = kinds.get(kind);
      if (entry) entry.count++;
      else kinds.set(kind, { count: 1, first: failure });
    }
    const summary = [...kinds]
      .slice(0, 40)
      .map(([kind, { count, first }]) => `${count}× ${kind}\n    seed ${first.seed}: ${first.request}`)
      .join('\n');
    expect(`${failures.length} failures\n${summary}`).toBe('0 failures\n');
  }

  it(
    `answers ${SDK_CASES} hostile requests per SDK route without a 5xx or a stall`,
    async () => {
      const before = plover.rssMiB();
      await fuzz(SDK_ROUTES, SDK_CASES, SEED);
      process.stdout.write(`fuzz: SDK routes, RSS ${before.toFixed(0)} → ${plover.rssMiB().toFixed(0)} MiB\n`);
    },
    30 * 60_000,
  );

  it(
    `answers ${MANAGEMENT_CASES} requests with hostile-but-valid keys per route of the management route table (${TABLE_ROUTES.length}) without a 5xx or a stall, /flags answering beside them, memory returned`,
    async () => {
      const idle: number[] = [];
      for (let i = 0; i < 30; i++) idle.push(await flagsLatency(plover.port, plover.credentials.token));
      const before = plover.rssMiB();
      // The cases may reset the project's token (then /flags answers 401): any answer below 500 counts.
      const { latencies } = await flagsBeside(
        plover.port,
        plover.credentials.token,
        () => fuzz(managementRoutes(TABLE_ROUTES), MANAGEMENT_CASES, SEED + 7),
        (status) => status < 500,
      );
      const flags = flagsVerdict(idle, latencies);
      // Memory a request took is given back (the engine's caches and V8's heap settle within seconds).
      await new Promise((resolve) => setTimeout(resolve, 5000));
      const after = plover.rssMiB();
      process.stdout.write(`fuzz: management routes, ${flags.text}; RSS ${before.toFixed(0)} → ${after.toFixed(0)} MiB\n`);
      expect(flags).toMatchObject({ ok: true });
      expect(after).toBeLessThan(before + RSS_GROWTH_MIB);
    },
    30 * 60_000,
  );
});
