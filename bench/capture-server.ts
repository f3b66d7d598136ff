/**
 * The processes of the capture benchmarks (bench/capture.ts, bench/replay.ts), and this file as their entry point:
 *
 *   server <bus>   holds the database client (token lookups), the bus, capture and the baseline; embedded, it also
 *                  runs a consumer that reads every message of the capture, replay and baseline topics (parsing each
 *                  as ingestion will), so both sides pay for it alike. Driven over IPC (ServerProcess).
 *   load <spec>    one phase of load (autocannon, or bench/paced.ts at a fixed rate), a process of its own.
 *
 * The baseline is a bare node:http server that reads the body, gunzips it when it is gzip, JSON.parses it and
 * appends its events to the same bus (key and value as capture would, nothing else): the ceiling capture is
 * measured against. BENCH_CAPTURE_CONNECTIONS (32), BENCH_CAPTURE_SECONDS (5) and BENCH_CAPTURE_WARMUP_SECONDS (1)
 * shape every phase.
 */
// First: the thread pool size embedded mode runs with (see the module).
import '@plover/config/threadpool';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gunzip } from 'node:zlib';
import autocannon from 'autocannon';
import { bootstrap, ProjectTokenCache } from '@plover/accounts';
import { LocalLogBus, type Consumer, type EventBus } from '@plover/bus';
import { KafkaBus } from '@plover/bus/kafka';
import { createApp, DEFAULT_CAPTURE_SETTINGS } from '@plover/capture/app';
import { parseCapturedEventMessage, parseSnapshotMessage } from '@plover/contracts';
import { silentLogger } from '@plover/core';
import { createMetricsRegistry, listen } from '@plover/http';
import { migrate, PgSql, type Sql } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';
import { PLOVER_NODE_FLAGS } from '../test/support/embedded';
import { pacedLoad } from './paced';
import { procCpuSeconds, procMemoryMiB } from './proc';

const ROOT = path.resolve(__dirname, '..');
export const SECONDS = Number(process.env.BENCH_CAPTURE_SECONDS ?? 5);
const WARMUP_SECONDS = Number(process.env.BENCH_CAPTURE_WARMUP_SECONDS ?? 1);
export const CONNECTIONS = Number(process.env.BENCH_CAPTURE_CONNECTIONS ?? 32);
const PACED_WARMUP_SECONDS = 1;
export const KAFKA_BROKERS = process.env.TEST_KAFKA_BROKERS || process.env.KAFKA_BROKERS;
const DATABASE_URL = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL;
const MB = 1024 * 1024;

export type BusKind = 'LocalLogBus' | 'KafkaBus';

/** What the server process tells the orchestrator once it listens. */
export interface ServerReady {
  capturePort: number;
  baselinePort: number;
  token: string;
  database: Database['name'];
  /** Resident MB after the imports, and what each startup step added (the database: migrated, one project). */
  startupRssMb: { modules: number; database: number; busCaptureConsumer: number };
}

/** The server's answer to `settle`: messages its consumer has read so far, by topic. */
export interface Consumed {
  capture: number;
  replay: number;
  baseline: number;
  /** LocalLogBus: the consumer's reads served from appends still in memory, and from the files. */
  readsFromMemory?: number;
  readsFromFile?: number;
}

/** The server's answer to `stop`: its heap as Node accounts it, in MB. */
export type MemoryUsageMb = Record<keyof NodeJS.MemoryUsage, number>;

type ToServer = { id: number; command: 'settle' | 'stop' };
/** How late the server's event loop ran its timers since the previous settle (ms): its own stalls, GC pauses included. */
export interface LoopDelay {
  p99: number;
  max: number;
}

type FromServer = { ready: ServerReady } | { id: number; consumed: Consumed; loopDelayMs: LoopDelay } | { id: number; memory: MemoryUsageMb };

// ---- server process ----

interface Database {
  name: 'PGlite' | 'Postgres';
  sql: Sql;
  close(): Promise<void>;
}

/** Embedded: PGlite in this process. KafkaBus with a Postgres server at hand: a fresh database there, as main.ts runs. */
async function openDatabase(kind: BusKind): Promise<Database> {
  if (kind === 'LocalLogBus' || !DATABASE_URL) {
    const sql = await PGliteSql.open({ guardTransactions: false }); // as embedded mode opens it
    return { name: 'PGlite', sql, close: () => sql.close() };
  }
  const name = `plover_bench_capture_${randomBytes(6).toString('hex')}`;
  const admin = new PgSql({ connectionString: DATABASE_URL, max: 1 });
  await admin.exec('bench.create', `CREATE DATABASE ${name}`);
  const url = new URL(DATABASE_URL);
  url.pathname = `/${name}`;
  const sql = new PgSql({ connectionString: url.toString(), max: 10 });
  return {
    name: 'Postgres',
    sql,
    async close() {
      await sql.close();
      await admin.exec('bench.drop', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.close();
    },
  };
}

async function openBus(kind: BusKind): Promise<{ bus: EventBus; close(): Promise<void> }> {
  if (kind === 'KafkaBus') {
    const bus = new KafkaBus({ brokers: KAFKA_BROKERS!.split(','), clientId: 'plover-bench-capture', logger: silentLogger() });
    return { bus, close: () => bus.close() };
  }
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-bench-capture-'));
  const bus = await LocalLogBus.open({ dataDir });
  return {
    bus,
    async close() {
      await bus.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

interface BaselineEvent {
  distinct_id?: string;
  properties?: { distinct_id?: string };
}

/**
 * The baseline: read, gunzip (on libuv's pool, as capture does) when the body is gzip, JSON.parse, append each
 * event to the bus keyed by its distinct id. No validation, no normalization, no token check.
 */
async function baselineServer(bus: EventBus, topic: string): Promise<{ port: number; close(): Promise<void> }> {
  const produce = (payload: Buffer, res: http.ServerResponse) => {
    const body = JSON.parse(payload.toString('utf8')) as { batch?: BaselineEvent[] } | BaselineEvent[] | BaselineEvent;
    const events = Array.isArray(body) ? body : 'batch' in body && body.batch ? body.batch : [body as BaselineEvent];
    const messages = events.map((event) => ({ key: `1:${event.distinct_id ?? event.properties?.distinct_id}`, value: Buffer.from(JSON.stringify(event)) }));
    bus.produce(topic, messages).then(
      () => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":1}'),
      () => res.writeHead(503).end(),
    );
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (body[0] !== 0x1f || body[1] !== 0x8b) return produce(body, res);
      gunzip(body, (error, payload) => (error ? res.writeHead(400).end() : produce(payload, res)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const rssMb = () => Math.round(process.memoryUsage.rss() / MB);

async function serve(kind: BusKind): Promise<void> {
  const send = (message: FromServer) => process.send!(message);
  const runId = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const atStart = rssMb();
  const database = await openDatabase(kind);
  const { sql } = database;
  await migrate(sql);
  const token = (await bootstrap(sql, { adminEmail: 'bench@example.com', projectName: 'Bench', timezone: 'UTC' }))!.project.api_token;
  const afterDatabase = rssMb();
  const adapter = await openBus(kind);
  const topics = { events: `bench-capture-${runId}-events`, historical: `bench-capture-${runId}-historical` };
  const replay = { ...DEFAULT_CAPTURE_SETTINGS.replay, topic: `bench-capture-${runId}-replay` };
  const baselineTopic = `bench-capture-${runId}-baseline`;
  await adapter.bus.ensureTopics([topics.events, topics.historical, replay.topic, baselineTopic]);
  const consumed: Consumed = { capture: 0, replay: 0, baseline: 0 };
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  let consumer: Consumer | undefined;
  if (kind === 'LocalLogBus') {
    consumer = await adapter.bus.consume({
      groupId: `bench-capture-${runId}`,
      topics: [topics.events, replay.topic, baselineTopic],
      handleBatch: (batch) => {
        if (batch.topic === baselineTopic) {
          for (const message of batch.messages) JSON.parse(message.value.toString('utf8'));
          consumed.baseline += batch.messages.length;
        } else if (batch.topic === replay.topic) {
          for (const message of batch.messages) if (parseSnapshotMessage(message.value).ok) consumed.replay++;
        } else {
          for (const message of batch.messages) if (parseCapturedEventMessage(message.value).ok) consumed.capture++;
        }
        return Promise.resolve();
      },
    });
  }
  const app = createApp({
    logger: silentLogger(),
    metrics: createMetricsRegistry('bench'),
    sql,
    bus: adapter.bus,
    trustProxy: false,
    projectTokens: new ProjectTokenCache(sql),
    settings: { topics, replay },
  });
  const server = await listen(app, { port: 0, host: '127.0.0.1' });
  const baseline = await baselineServer(adapter.bus, baselineTopic);
  send({
    ready: {
      capturePort: server.port,
      baselinePort: baseline.port,
      token,
      database: database.name,
      startupRssMb: { modules: atStart, database: afterDatabase - atStart, busCaptureConsumer: rssMb() - afterDatabase },
    },
  });

  process.on('message', (message: ToServer) => {
    if (message.command === 'settle') {
      // The consumer has caught up once a quarter second passes without it reading anything.
      let last = -1;
      const poll = setInterval(() => {
        const total = consumed.capture + consumed.replay + consumed.baseline;
        if (total !== last) {
          last = total;
          return;
        }
        clearInterval(poll);
        const loopDelayMs = { p99: round2(loopDelay.percentile(99) / 1e6), max: round2(loopDelay.max / 1e6) };
        loopDelay.reset();
        const reads = adapter.bus instanceof LocalLogBus ? adapter.bus.stats() : undefined;
        send({ id: message.id, consumed: { ...consumed, readsFromMemory: reads?.readsFromMemory, readsFromFile: reads?.readsFromFile }, loopDelayMs });
      }, 250);
      return;
    }
    const memory = Object.fromEntries(Object.entries(process.memoryUsage()).map(([key, bytes]) => [key, Math.round(bytes / MB)])) as MemoryUsageMb;
    void (async () => {
      await server.close();
      await baseline.close();
      await consumer?.stop();
      await adapter.close();
      await database.close();
      process.send!({ id: message.id, memory } satisfies FromServer, () => process.exit(0));
    })();
  });
}

// ---- load process ----

export interface LoadSpec {
  url: string;
  /** A JSON body, sent as application/json. */
  body?: string;
  /** Or bodies read from these files, sent in turn by each connection with `headers` (autocannon only). */
  bodyFiles?: string[];
  headers?: Record<string, string>;
  seconds: number;
  /** Requests per second offered; 0 = as fast as the server answers. */
  rate: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  latencyMs: { p50: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  loadCpuCores: number;
  loadRssMb: number;
}

async function load(spec: LoadSpec): Promise<void> {
  const cpu = process.cpuUsage();
  const headers = spec.headers ?? { 'content-type': 'application/json' };
  let figures: Omit<LoadResult, 'loadCpuCores' | 'loadRssMb'>;
  let seconds: number;
  if (spec.rate > 0) {
    // A steady rate: open loop, latency from each request's due time (see bench/paced.ts for why not autocannon).
    // Its own warm-up: the connections are open and in use before the measured window starts.
    figures = await pacedLoad({
      url: spec.url,
      headers,
      body: () => spec.body as string,
      rate: spec.rate,
      warmupSeconds: PACED_WARMUP_SECONDS,
      seconds: spec.seconds,
      connections: CONNECTIONS,
    });
    seconds = spec.seconds + PACED_WARMUP_SECONDS;
  } else {
    const requests = spec.bodyFiles?.map((file) => ({ method: 'POST' as const, body: readFileSync(file) }));
    const result = await autocannon({ url: spec.url, method: 'POST', headers, body: spec.body, requests, connections: CONNECTIONS, duration: spec.seconds });
    figures = {
      requestsPerSecond: Math.round(result.requests.total / result.duration),
      latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
      non2xx: result.non2xx,
      errors: result.errors + result.timeouts,
    };
    seconds = result.duration;
  }
  const used = process.cpuUsage(cpu);
  process.stdout.write(
    JSON.stringify({
      ...figures,
      loadCpuCores: round2((used.user + used.system) / 1e6 / seconds),
      loadRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    } satisfies LoadResult),
  );
}

// ---- orchestration ----

export const round2 = (value: number) => Math.round(value * 100) / 100;

function self(args: string[], stdio: 'ipc' | 'pipe', execArgv: string[] = []): ChildProcess {
  return spawn(process.execPath, [...execArgv, '--conditions=plover-source', '--import', 'tsx', __filename, ...args], {
    cwd: ROOT,
    stdio: stdio === 'ipc' ? ['ignore', 'inherit', 'inherit', 'ipc'] : ['ignore', 'pipe', 'inherit'],
  });
}

async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const child = self(['load', JSON.stringify(spec)], 'pipe');
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`load process exited with ${code}`);
  return JSON.parse(out) as LoadResult;
}

/** The server process, driven over IPC. */
export class ServerProcess {
  private nextId = 0;
  private readonly waiting = new Map<number, (message: FromServer) => void>();
  readonly ready: Promise<ServerReady>;
  readonly pid: number;

  constructor(private readonly child: ChildProcess) {
    this.pid = child.pid!;
    this.ready = new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`server process exited with ${code}`)));
      child.on('message', (message: FromServer) => {
        if ('ready' in message) resolve(message.ready);
        else this.waiting.get(message.id)?.(message);
      });
    });
  }

  private request(command: ToServer['command']): Promise<FromServer> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.child.send({ id, command } satisfies ToServer);
    });
  }

  /** Waits for the consumer to catch up; what it read so far, and the loop delay since the previous settle. */
  async settle(): Promise<{ consumed: Consumed; loopDelayMs: LoopDelay }> {
    return (await this.request('settle')) as { consumed: Consumed; loopDelayMs: LoopDelay };
  }

  /** Stops the server and waits for the process to exit (which writes its CPU profile, when asked for). */
  async stop(): Promise<MemoryUsageMb> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    const { memory } = (await this.request('stop')) as { memory: MemoryUsageMb };
    await exited;
    return memory;
  }
}

export interface Phase extends LoadResult {
  eventsPerSecond: number;
  serverCpuCores: number;
  /** Server CPU per accepted event: what the code costs, less sensitive than throughput to a busy machine. */
  serverCpuUsPerEvent: number;
  serverRssMb: number;
  serverLoopDelayMs: LoopDelay;
}

export async function measure(server: ServerProcess, spec: Omit<LoadSpec, 'seconds'>, eventsPerRequest: number): Promise<Phase> {
  if (WARMUP_SECONDS > 0) await runLoad({ ...spec, seconds: WARMUP_SECONDS });
  await server.settle();
  const before = procCpuSeconds(server.pid);
  const started = performance.now();
  const result = await runLoad({ ...spec, seconds: SECONDS });
  const serverCpuCores = round2((procCpuSeconds(server.pid) - before) / ((performance.now() - started) / 1000));
  const serverRssMb = Math.round(procMemoryMiB(server.pid, 'VmRSS'));
  const { loopDelayMs } = await server.settle();
  const eventsPerSecond = result.requestsPerSecond * eventsPerRequest;
  return {
    ...result,
    eventsPerSecond,
    serverCpuCores,
    serverCpuUsPerEvent: Math.round((serverCpuCores / eventsPerSecond) * 1e6),
    serverRssMb,
    serverLoopDelayMs: loopDelayMs,
  };
}

/**
 * Starts the server process on `kind`; embedded, with the heap settings `npm start` gives Plover (package.json).
 * With `profileDir`, it writes a CPU profile there when stopped.
 */
export function startServer(kind: BusKind, profileDir?: string): ServerProcess {
  const execArgv = [...(kind === 'LocalLogBus' ? PLOVER_NODE_FLAGS : []), ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])];
  return new ServerProcess(self(['server', kind], 'ipc', execArgv));
}

if (path.resolve(process.argv[1] ?? '') === __filename) {
  const [role, arg] = process.argv.slice(2);
  (role === 'server' ? serve(arg as BusKind) : load(JSON.parse(arg!) as LoadSpec)).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
