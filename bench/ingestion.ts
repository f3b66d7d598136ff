/**
 * Ingestion end to end: captured-event messages produced to the bus → rows queryable in ClickHouse, through the
 * consumer (services/ingestion createConsumer) with persons and groups in Postgres. Per stack:
 * - embedded: LocalLogBus + PGlite + chDB in this process (what `npm start` runs);
 * - distributed, when TEST_KAFKA_BROKERS (or KAFKA_BROKERS) and TEST_DATABASE_URL (or DATABASE_URL, an admin
 *   connection that may create databases) are set: Kafka + Postgres + ClickHouse's HTTP interface, served by chDB
 *   in a child process (no ClickHouse server on this machine), so this process holds what a consumer holds. That
 *   stand-in costs ≈ 50 ms per request (a chDB session and its SETs each time), far more than a server;
 * - kafka-chdb: the same with chDB in this process instead, which shows the consumer without that cost.
 * BENCH_INGESTION_STACKS (`embedded,distributed,kafka-chdb`) picks them. Prints one JSON line per stack.
 *
 *   node <the flags of services/standalone/node-flags.json> --conditions=plover-source --import tsx bench/ingestion.ts
 *
 * (`npm run bench -- ingestion` does so: the consumer runs in this process, with the heap settings `npm start`
 * gives Plover; without them the drain spends more CPU in garbage collection: about 8 % without the young
 * generation, about 12 % without the old generation's growth.)
 *
 * Events look like posthog-js pageviews (≈ 1 KB, browser properties that feed person properties); one in ten
 * carries a `$set` that changes its person, i.e. a Postgres write. Phases, after a warm-up that creates every
 * person (one event per distinct id, not measured):
 * - drain: BENCH_INGESTION_EVENTS (50,000) events produced while no consumer runs, then consumed: sustained
 *   throughput (`drainEventsPerSecond`), from the consumer's start to the last row stored;
 * - paced: BENCH_INGESTION_RATE (1,000) events/s for BENCH_INGESTION_SECONDS (10) in requests of 100, with the
 *   consumer running: lag per event from its produce call to its row being stored (`lagMsP50/P99`). The lag
 *   target holds below the drain rate; above it lag only grows, so pick a rate under `drainEventsPerSecond`.
 * BENCH_INGESTION_PEOPLE (5,000) distinct ids; INGESTION_BATCH_SIZE and INGESTION_CONCURRENCY as in production.
 * `drainCpuSecondsPerThousandEvents` is this process's CPU (not Postgres', Kafka's or the ClickHouse server's);
 * `drainMainThreadCpuSecondsPerThousandEvents` is the part of it on the main thread (Linux only), which bounds
 * the embedded drain: JS and PGlite run there, chDB on threads of its own.
 * `drainStepSeconds` sums the consumer's step timings over batches (concurrent partitions overlap).
 * `rssMiB` is this process's peak: consumer and producer, plus PGlite and chDB in the embedded stack;
 * `chdbTrackedMiB` is what chDB's own memory tracker counts at the end.
 * `pacedLoopDelayMsP99`/`Max`: the event loop's delay during the paced phase, i.e. what a request served by the
 * same process (capture, in embedded mode) waits behind the consumer's main-thread work, PGlite's WAL fsyncs
 * included (they run synchronously inside its queries).
 * BENCH_INGESTION_PROFILE_DIR=<dir> writes a CPU profile of the drain alone there (node's --cpu-prof would
 * mix in the warm-up's person creations and the paced phase).
 */
// First: the thread pool size embedded mode runs with (see the module).
import '@plover/config/threadpool';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session as InspectorSession } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { KafkaBus } from '@plover/bus/kafka';
import { countEvents, HttpClickHouse, migrate as migrateClickHouse, type ClickHouse } from '@plover/clickhouse';
import { createLogger, silentLogger } from '@plover/core';
import { createConsumer, DEFAULT_INGESTION_SETTINGS, type IngestionConsumer } from '@plover/ingestion/consumer';
import { migrate as migratePostgres, PgSql } from '@plover/postgres';
import { Registry } from 'prom-client';
import { deleteTopics } from '../packages/bus/test/support/kafka-factory';
import { createTestDatabase } from '../packages/postgres/test/support/database';
import { pageview } from './pageviews';
import { createProject, embeddedStack, mainThreadCpuSeconds, observeInserts, openChdb, stepSeconds, waitUntil, type Stack } from './stacks';

const EVENTS = Number(process.env.BENCH_INGESTION_EVENTS ?? 50_000);
const RATE = Number(process.env.BENCH_INGESTION_RATE ?? 1_000);
const SECONDS = Number(process.env.BENCH_INGESTION_SECONDS ?? 10);
const PEOPLE = Number(process.env.BENCH_INGESTION_PEOPLE ?? 5_000);
const BATCH_SIZE = Number(process.env.INGESTION_BATCH_SIZE ?? DEFAULT_INGESTION_SETTINGS.batchSize);
const CONCURRENCY = Number(process.env.INGESTION_CONCURRENCY ?? DEFAULT_INGESTION_SETTINGS.concurrency);
const KAFKA_BROKERS = process.env.TEST_KAFKA_BROKERS || process.env.KAFKA_BROKERS;
const DATABASE_URL = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
const STACKS = (process.env.BENCH_INGESTION_STACKS ?? 'embedded,distributed,kafka-chdb').split(',');
const PROFILE_DIR = process.env.BENCH_INGESTION_PROFILE_DIR;
/** Events per produce call, as capture produces one request's batch. */
const REQUEST_EVENTS = 100;
const PRODUCERS = 8;

/** ClickHouse's HTTP interface on chDB in a child process (the test helper behind the distributed suites). */
async function chdbServer(dataDir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const script = `require('./packages/clickhouse/test/support/chdb-http-server.ts').startChdbHttpServer(${JSON.stringify(dataDir)}).then((server) => console.log(server.url))`;
  const child = spawn(process.execPath, ['--conditions=plover-source', '--import', 'tsx', '-e', script], {
    cwd: path.join(__dirname, '..'),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
    void exited.then(() => reject(new Error('the chDB HTTP server exited')));
  });
  return {
    url,
    async stop() {
      child.kill();
      await exited;
    },
  };
}

async function distributedStack(brokers: string, adminUrl: string, clickhouseKind: 'http' | 'chdb'): Promise<Stack> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-bench-ingestion-'));
  const database = await createTestDatabase(adminUrl);
  const sql = new PgSql({ connectionString: database.url, max: 10 });
  const server = clickhouseKind === 'http' ? await chdbServer(dataDir) : undefined;
  const clickhouse = server ? new HttpClickHouse({ url: server.url }) : await openChdb(dataDir);
  const bus = new KafkaBus({ brokers: brokers.split(','), clientId: 'plover-bench', logger: silentLogger() });
  const run = `plover-bench-ingestion-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const topics = { events: `${run}-events`, historical: `${run}-historical`, deadLetter: `${run}-dlq` };
  return {
    name: server ? 'distributed (Kafka, Postgres, ClickHouse HTTP on chDB)' : 'kafka-chdb (Kafka, Postgres, chDB in process)',
    sql,
    clickhouse,
    bus,
    settings: { topics, groupIds: { events: `${run}-ingestion`, historical: `${run}-historical` } },
    async close() {
      await bus.close();
      await clickhouse.close();
      await server?.stop();
      await sql.close();
      await deleteTopics(brokers, Object.values(topics));
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Remembers when each event was produced and reports, per stored row, how long it took. */
class LagMeter {
  private readonly producedAt = new Map<string, number>();
  readonly lags: number[] = [];
  stored = 0;
  lastStoredAt = 0;
  /** When set, the events rows inserted are kept here, batch by batch (the raw-insert baseline replays them). */
  kept: Record<string, unknown>[][] | undefined;

  produced(uuids: readonly string[], at: number): void {
    for (const uuid of uuids) this.producedAt.set(uuid, at);
  }

  /** The ClickHouse the consumer writes to: events inserts are timed as they complete. */
  wrap(inner: ClickHouse): ClickHouse {
    return observeInserts(inner, (table, rows) => {
      if (table !== 'events') return;
      const now = performance.now();
      for (const row of rows) {
        const at = this.producedAt.get(row.uuid as string);
        if (at !== undefined) this.lags.push(now - at);
      }
      this.stored += rows.length;
      this.lastStoredAt = now;
      this.kept?.push([...rows]);
    });
  }
}

/**
 * The baseline of the ingestion-cost target: the same events rows the drain stored, in the same batches, inserted
 * straight into a copy of the events table through the same adapter (JSONEachRow, then sync() as the consumer
 * does): CPU of this process per row, and rows per second.
 */
async function rawInsert(
  clickhouse: ClickHouse,
  batches: readonly Record<string, unknown>[][],
): Promise<{ cpuSecondsPerThousandRows: number; rowsPerSecond: number }> {
  await clickhouse.command('bench.raw', 'DROP TABLE IF EXISTS events_raw');
  await clickhouse.command('bench.raw', 'CREATE TABLE events_raw AS events');
  const rows = batches.reduce((total, batch) => total + batch.length, 0);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (const batch of batches) {
    await clickhouse.insert('events_raw', batch);
    await clickhouse.sync?.();
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  await clickhouse.command('bench.raw', 'DROP TABLE events_raw');
  return { cpuSecondsPerThousandRows: Math.round(((cpu.user + cpu.system) / 1e3 / rows) * 1000) / 1000, rowsPerSecond: Math.round(rows / seconds) };
}

/** Produces events `from`…`from+count-1` in requests of REQUEST_EVENTS, PRODUCERS requests at a time. */
async function produceAll(stack: Stack, meter: LagMeter, teamId: number, from: number, count: number): Promise<void> {
  let next = from;
  const end = from + count;
  const topic = stack.settings.topics?.events ?? DEFAULT_INGESTION_SETTINGS.topics.events;
  await Promise.all(
    Array.from({ length: PRODUCERS }, async () => {
      while (next < end) {
        const start = next;
        next = Math.min(end, next + REQUEST_EVENTS);
        const events = Array.from({ length: next - start }, (_, i) => pageview(teamId, start + i, PEOPLE));
        const at = performance.now();
        await stack.bus.produce(
          topic,
          events.map((event) => event.message),
        );
        meter.produced(
          events.map((event) => event.uuid),
          at,
        );
      }
    }),
  );
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function batchCount(metrics: Registry): Promise<number> {
  const metric = await metrics.getSingleMetric('plover_ingestion_batch_size')?.get();
  return metric?.values.find((value) => 'metricName' in value && value.metricName === 'plover_ingestion_batch_size_count')?.value ?? 0;
}

async function chdbTrackedBytes(clickhouse: ClickHouse): Promise<number> {
  const [row] = await clickhouse.query<{ value: string }>('bench.memory', `SELECT value FROM system.metrics WHERE metric = 'MemoryTracking'`);
  return Number(row?.value ?? 0);
}

/** Starts a CPU profile of this process's main thread; the returned function writes it to PROFILE_DIR. */
async function startProfile(name: string): Promise<() => Promise<void>> {
  if (!PROFILE_DIR) return async () => {};
  const session = new InspectorSession();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    await mkdir(PROFILE_DIR, { recursive: true });
    await writeFile(path.join(PROFILE_DIR, `ingestion-${name}-${Date.now()}.cpuprofile`), JSON.stringify(profile));
  };
}

async function run(stack: Stack): Promise<Record<string, unknown>> {
  await migratePostgres(stack.sql);
  await migrateClickHouse(stack.clickhouse);
  const teamId = await createProject(stack.sql);
  let rssPeak = 0;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage.rss())), 100);
  const meter = new LagMeter();
  const metrics = new Registry();
  const start = () =>
    createConsumer({
      // Warnings show why a run stalls (a batch failing again and again).
      logger: createLogger({ service: 'bench', level: 'warn' }),
      metrics,
      sql: stack.sql,
      clickhouse: meter.wrap(stack.clickhouse),
      bus: stack.bus,
      settings: { ...stack.settings, batchSize: BATCH_SIZE, concurrency: CONCURRENCY },
    });
  let consumer: IngestionConsumer | undefined;
  try {
    // Warm-up: every person exists before anything is measured.
    consumer = await start();
    await produceAll(stack, meter, teamId, 0, PEOPLE);
    await waitUntil(() => meter.stored >= PEOPLE, 600_000);
    await consumer.stop();

    // Drain: a backlog, consumed as fast as the consumer can.
    await produceAll(stack, meter, teamId, PEOPLE, EVENTS);
    const before = meter.stored;
    const stopProfile = await startProfile('drain');
    meter.kept = [];
    const cpuBefore = process.cpuUsage();
    const mainCpuBefore = mainThreadCpuSeconds();
    metrics.resetMetrics();
    consumer = await start();
    const drainStart = performance.now();
    await waitUntil(() => meter.stored >= before + EVENTS, 600_000);
    const drainSeconds = (meter.lastStoredAt - drainStart) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const mainCpuAfter = mainThreadCpuSeconds();
    await stopProfile();
    const drainSteps = await stepSeconds(metrics);
    const drained = meter.kept;
    meter.kept = undefined;

    // Paced: a steady rate with the consumer running; lag per event.
    meter.lags.length = 0;
    metrics.resetMetrics();
    const pacedFrom = PEOPLE + EVENTS;
    const total = RATE * SECONDS;
    const loopDelay = monitorEventLoopDelay({ resolution: 1 });
    loopDelay.enable();
    const pacedStart = performance.now();
    const requests: Promise<void>[] = [];
    for (let sent = 0; sent < total; sent += REQUEST_EVENTS) {
      // Requests go out on schedule whether or not the previous ones were acknowledged, like independent clients.
      const due = pacedStart + (sent / RATE) * 1000;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      requests.push(produceAll(stack, meter, teamId, pacedFrom + sent, Math.min(REQUEST_EVENTS, total - sent)));
    }
    await Promise.all(requests);
    await waitUntil(() => meter.stored >= PEOPLE + EVENTS + total, 600_000);
    const pacedSeconds = (meter.lastStoredAt - pacedStart) / 1000;
    loopDelay.disable();
    const lags = [...meter.lags].sort((a, b) => a - b);
    const pacedSteps = await stepSeconds(metrics);
    const stored = await countEvents(stack.clickhouse, teamId);
    await consumer.stop();
    const raw = await rawInsert(stack.clickhouse, drained);
    const drainCpuSecondsPerThousandEvents = (cpu.user + cpu.system) / 1e3 / EVENTS;
    const round = (n: number) => Math.round(n * 10) / 10;
    const roundAll = (values: Record<string, number>) => Object.fromEntries(Object.entries(values).map(([key, value]) => [key, round(value)]));
    return {
      bench: 'ingestion',
      stack: stack.name,
      batchSize: BATCH_SIZE,
      concurrency: CONCURRENCY,
      people: PEOPLE,
      drainEvents: EVENTS,
      drainEventsPerSecond: Math.round(EVENTS / drainSeconds),
      // Three decimals: a tenth of a second per thousand events is 100 µs per event, too coarse to compare runs.
      drainCpuSecondsPerThousandEvents: Math.round(drainCpuSecondsPerThousandEvents * 1000) / 1000,
      rawInsert: raw,
      // Targets: CPU per event ≤ 2 × the raw insert's per row; drain rate ≥ 0.5 × the raw insert's.
      drainCpuOverRawInsert: Math.round((drainCpuSecondsPerThousandEvents / raw.cpuSecondsPerThousandRows) * 100) / 100,
      drainRateOverRawInsert: Math.round((EVENTS / drainSeconds / raw.rowsPerSecond) * 100) / 100,
      // The main thread bounds the drain rate in the embedded stack: all of the JS work and PGlite run on it.
      drainMainThreadCpuSecondsPerThousandEvents:
        mainCpuBefore === undefined || mainCpuAfter === undefined ? undefined : Math.round(((mainCpuAfter - mainCpuBefore) / EVENTS) * 1000 * 1000) / 1000,
      drainStepSeconds: roundAll(drainSteps),
      pacedRate: RATE,
      pacedSeconds: round(pacedSeconds),
      pacedEventsPerSecond: Math.round(total / pacedSeconds),
      lagMsP50: round(percentile(lags, 50)),
      lagMsP99: round(percentile(lags, 99)),
      lagMsMax: round(lags[lags.length - 1] ?? 0),
      pacedLoopDelayMsP99: round(loopDelay.percentile(99) / 1e6),
      pacedLoopDelayMsMax: round(loopDelay.max / 1e6),
      pacedStepSeconds: roundAll(pacedSteps),
      pacedBatches: await batchCount(metrics),
      storedEvents: stored,
      rssMiB: Math.round(rssPeak / 2 ** 20),
      heapUsedMiB: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
      chdbTrackedMiB: Math.round((await chdbTrackedBytes(stack.clickhouse)) / 2 ** 20),
      cpus: os.cpus().length,
      loadAverage: os.loadavg().map(round),
      node: process.version,
    };
  } finally {
    clearInterval(sampler);
    await consumer?.stop();
  }
}

/** Each stack runs in a process of its own, so that one's memory (PGlite keeps hundreds of MiB) is not the other's. */
async function main(): Promise<void> {
  const unknown = STACKS.filter((name) => !['embedded', 'distributed', 'kafka-chdb'].includes(name));
  if (unknown.length > 0) throw new Error(`unknown BENCH_INGESTION_STACKS entries: ${unknown.join(', ')}`);
  const selected = STACKS.filter((name) => name === 'embedded' || (KAFKA_BROKERS && DATABASE_URL));
  if (selected.length > 1) {
    for (const name of selected) {
      const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
        env: { ...process.env, BENCH_INGESTION_STACKS: name },
        stdio: 'inherit',
      });
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      if (code !== 0) throw new Error(`the ${name} run exited with ${code}`);
    }
    return;
  }
  for (const name of selected) {
    const stack =
      name === 'embedded'
        ? await embeddedStack('ingestion')
        : await distributedStack(KAFKA_BROKERS as string, DATABASE_URL as string, name === 'distributed' ? 'http' : 'chdb');
    try {
      console.log(JSON.stringify(await run(stack)));
    } finally {
      await stack.close();
    }
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
