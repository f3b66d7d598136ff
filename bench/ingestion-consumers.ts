/**
 * Ingestion with 1, 2 and 3 consumer processes side by side in one run: distributed mode's ingestion
 * (services/ingestion/src/main.ts, each its own process) in one consumer group on real Kafka (a topic of
 * BENCH_CONSUMERS_PARTITIONS, 12) and Postgres, ClickHouse's HTTP interface served by chDB in this process.
 *
 *   TEST_KAFKA_BROKERS=127.0.0.1:9092 TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
 *     node --conditions=plover-source --import tsx bench/ingestion-consumers.ts
 *
 * Per round and consumer count, on a topic prefix and project of its own: the consumers are started, the group
 * left to settle (every member assigned) and 3,000 events consumed as a warm-up; then BENCH_CONSUMERS_EVENTS
 * (30,000) events of the person
 * workload (test/support/person-workload.ts: users of 20 events, each event a `$set` of its person, three in
 * four users merging an anonymous id or an alias) are produced straight to the bus as capture produces them, and
 * the run ends when ClickHouse holds them all and every offset is committed. Reported per run:
 * - `eventsPerSecond`: events ÷ seconds from the first produce to the last event stored;
 * - `consumerCpuMsPerThousandEvents`: user + system CPU of the consumer processes over that time ÷ events, from
 *   /proc (Linux): what sizes a cluster, since it does not depend on how many cores the run had;
 * - `otherCpuMsPerThousandEvents`: this process over the same time (the ClickHouse stand-in, the producer and
 *   the polling), for scale; a ClickHouse server costs far less per request than chDB's stand-in;
 * - from the consumers' /metrics over that time: `batches`, `meanBatchSize`, `eventsProcessedAgain` (after a
 *   staged person change lost to another writer) and `stepSeconds` (summed over batches).
 * BENCH_CONSUMERS_COUNTS (`1,2,3`) and BENCH_CONSUMERS_ROUNDS (2; counts run ascending, then descending, to
 * spread drift in the machine's load) pick the runs. Prints one JSON line per run and one summary line.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { KafkaBus } from '@plover/bus/kafka';
import { HttpClickHouse } from '@plover/clickhouse';
import { capturedEventKey, CAPTURE_TOPICS, type CapturedEventMessage } from '@plover/contracts';
import { silentLogger } from '@plover/core';
import { PgSql } from '@plover/postgres';
import { startChdbHttpServer } from '../packages/clickhouse/test/support/chdb-http-server';
import { createTestDatabase } from '../packages/postgres/test/support/database';
import { IngestionCluster } from '../test/support/ingestion-cluster';
import { personWorkload, type WorkloadEvent } from '../test/support/person-workload';
import { run } from '../test/support/processes';
import { createProject } from './stacks';
import { procCpuSeconds } from './proc';

const EVENTS = Number(process.env.BENCH_CONSUMERS_EVENTS ?? 30_000);
const PARTITIONS = Number(process.env.BENCH_CONSUMERS_PARTITIONS ?? 12);
const COUNTS = (process.env.BENCH_CONSUMERS_COUNTS ?? '1,2,3').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_CONSUMERS_ROUNDS ?? 2);
const KAFKA_BROKERS = process.env.TEST_KAFKA_BROKERS || process.env.KAFKA_BROKERS;
const DATABASE_URL = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
/** Events per produce call and calls at once, as capture produces its requests' batches. */
const REQUEST_EVENTS = 500;
const PRODUCERS = 4;
/** Events consumed before the measurement, per run. */
const WARM_UP_EVENTS = 3_000;
/** The message capture produces for `event` (packages/contracts CapturedEventMessage). */
function captured(projectId: number, event: WorkloadEvent) {
  const message: CapturedEventMessage = {
    uuid: event.uuid,
    team_id: projectId,
    distinct_id: event.distinct_id,
    ip: '203.0.113.9',
    now: new Date().toISOString(),
    sent_at: null,
    data: event,
    historical: false,
  };
  return { key: capturedEventKey(projectId, event.distinct_id), value: Buffer.from(JSON.stringify(message)) };
}

/** The consumer's Prometheus samples, by name and labels as written (`plover_ingestion_step_seconds_sum{step="process"}`). */
async function scrape(port: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^(plover_ingestion_[a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (match) samples.set(match[1]!, Number(match[2]));
  }
  return samples;
}

/** Summed over the consumers: what the samples of `after` add to those of `before`. */
function added(before: readonly Map<string, number>[], after: readonly Map<string, number>[]): Map<string, number> {
  const sums = new Map<string, number>();
  after.forEach((samples, index) => {
    for (const [key, value] of samples) sums.set(key, (sums.get(key) ?? 0) + value - (before[index]?.get(key) ?? 0));
  });
  return sums;
}

/** The sum of the samples named `name`, whatever their labels. */
function total(samples: Map<string, number>, name: string): number {
  let sum = 0;
  for (const [key, value] of samples) if (key === name || key.startsWith(`${name}{`)) sum += value;
  return sum;
}

async function waitFor(what: string, condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

interface Context {
  env: Record<string, string>;
  sql: PgSql;
  clickhouse: HttpClickHouse;
}

async function measure(context: Context, consumers: number, round: number): Promise<Record<string, unknown>> {
  const projectId = await createProject(context.sql);
  const workload = personWorkload({ label: `bench${round}c${consumers}`, projectId, events: EVENTS, streams: 1, seed: round });
  const cluster = new IngestionCluster({ env: context.env, partitions: PARTITIONS, label: `bench-consumers-${consumers}` });
  const bus = new KafkaBus({
    brokers: KAFKA_BROKERS!.split(','),
    clientId: 'plover-bench',
    logger: silentLogger(),
    topicPrefix: cluster.prefix,
    partitions: PARTITIONS,
  });
  try {
    await Promise.all(Array.from({ length: consumers }, () => cluster.startConsumer()));
    await waitFor('every consumer assigned', async () => (await cluster.assignments()).filter((partitions) => partitions > 0).length === consumers, 120_000);
    const pids = cluster.consumers.map((consumer) => consumer.pid!);
    const stored = async () => {
      const [row] = await context.clickhouse.query<{ n: string }>('bench.count', 'SELECT count() AS n FROM events WHERE team_id = {projectId:Int64}', {
        projectId,
      });
      return Number(row?.n ?? 0);
    };
    const produce = async (events: readonly WorkloadEvent[]) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: PRODUCERS }, async () => {
          while (next < events.length) {
            const batch = events.slice(next, (next += REQUEST_EVENTS));
            await bus.produce(
              CAPTURE_TOPICS.events,
              batch.map((event) => captured(projectId, event)),
            );
          }
        }),
      );
    };
    // Not measured: every consumer's code paths compiled, as in a process that has run for a while.
    const warmUp = personWorkload({ label: `warm${round}c${consumers}`, projectId, events: WARM_UP_EVENTS, streams: 1, seed: round + 100 });
    await produce(warmUp.events);
    await waitFor('the warm-up stored', async () => (await stored()) >= warmUp.events.length, 600_000);

    const loadAverage = os.loadavg()[0]!;
    const metricsBefore = await Promise.all(cluster.consumers.map((consumer) => scrape(consumer.port)));
    const cpuBefore = pids.map((pid) => procCpuSeconds(pid));
    const ownBefore = process.cpuUsage();
    const started = performance.now();
    await produce(workload.events);
    await waitFor('every event stored', async () => (await stored()) >= warmUp.events.length + workload.events.length, 1_800_000);
    const seconds = (performance.now() - started) / 1000;
    const consumerCpu = pids.reduce((sum, pid, index) => sum + procCpuSeconds(pid) - cpuBefore[index]!, 0);
    const own = process.cpuUsage(ownBefore);
    const metrics = added(metricsBefore, await Promise.all(cluster.consumers.map((consumer) => scrape(consumer.port))));
    const batches = total(metrics, 'plover_ingestion_batch_size_count');
    const steps = Object.fromEntries(
      [...metrics]
        .flatMap(([key, value]) => {
          const step = /^plover_ingestion_step_seconds_sum\{.*step="([a-z_]+)"/.exec(key)?.[1];
          return step ? [[step, Math.round(value * 10) / 10] as const] : [];
        })
        .sort(),
    );
    await waitFor('every offset committed', async () => (await cluster.uncommitted()) === 0, 120_000);
    const perThousand = (cpu: number) => Math.round((cpu / workload.events.length) * 1000 * 1000 * 10) / 10;
    return {
      bench: 'ingestion-consumers',
      round,
      consumers,
      partitions: PARTITIONS,
      events: workload.events.length,
      seconds: Math.round(seconds * 10) / 10,
      eventsPerSecond: Math.round(workload.events.length / seconds),
      consumerCpuMsPerThousandEvents: perThousand(consumerCpu),
      otherCpuMsPerThousandEvents: perThousand((own.user + own.system) / 1e6),
      batches,
      meanBatchSize: Math.round(total(metrics, 'plover_ingestion_batch_size_sum') / Math.max(1, batches)),
      eventsProcessedAgain: total(metrics, 'plover_ingestion_person_reprocessed_total'),
      stepSeconds: steps,
      loadAverageAtStart: Math.round(loadAverage * 10) / 10,
      loadAverageAtEnd: Math.round(os.loadavg()[0]! * 10) / 10,
    };
  } finally {
    await bus.close();
    await cluster.close();
  }
}

async function main(): Promise<void> {
  if (!KAFKA_BROKERS || !DATABASE_URL) throw new Error('set TEST_KAFKA_BROKERS and TEST_DATABASE_URL (or KAFKA_BROKERS and DATABASE_URL)');
  const database = await createTestDatabase(DATABASE_URL);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-bench-consumers-'));
  const server = await startChdbHttpServer(dataDir);
  const clickhouseDatabase = `plover_bench_${Date.now()}`;
  const env = { DATABASE_URL: database.url, CLICKHOUSE_URL: server.url, CLICKHOUSE_DATABASE: clickhouseDatabase, KAFKA_BROKERS };
  const sql = new PgSql({ connectionString: database.url });
  const clickhouse = new HttpClickHouse({ url: server.url, database: clickhouseDatabase, username: 'default', password: '' });
  try {
    const migrated = await run('services/management/src/cli.ts', ['migrate'], env);
    if (migrated.code !== 0) throw new Error(`migrate failed: ${migrated.output}`);
    const results: Record<string, unknown>[] = [];
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const consumers of round % 2 === 1 ? COUNTS : [...COUNTS].reverse()) {
        const result = await measure({ env, sql, clickhouse }, consumers, round);
        console.log(JSON.stringify(result));
        results.push(result);
      }
    }
    const byCount = COUNTS.map((consumers) => {
      const runs = results.filter((result) => result.consumers === consumers);
      const mean = (key: string) => Math.round(runs.reduce((sum, result) => sum + Number(result[key]), 0) / runs.length);
      return { consumers, eventsPerSecond: mean('eventsPerSecond'), consumerCpuMsPerThousandEvents: mean('consumerCpuMsPerThousandEvents') };
    });
    const one = byCount[0]!.eventsPerSecond;
    console.log(
      JSON.stringify({
        bench: 'ingestion-consumers',
        summary: byCount.map((entry) => ({ ...entry, throughputVsFirst: Math.round((entry.eventsPerSecond / one) * 100) / 100 })),
        cpus: os.cpus().length,
        node: process.version,
      }),
    );
  } finally {
    await clickhouse.close();
    await sql.close();
    await server.close();
    await database.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
