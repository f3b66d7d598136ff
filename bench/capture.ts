/**
 * Capture benchmark (targets: BENCHMARKS.md#targets), per bus: LocalLogBus always (embedded: PGlite, the bus in a temporary directory),
 * KafkaBus when TEST_KAFKA_BROKERS or KAFKA_BROKERS is set (distributed: real Postgres when BENCH_DATABASE_URL or
 * TEST_DATABASE_URL is set, in a fresh database, else PGlite). Prints one JSON line.
 *
 *   node --conditions=plover-source --import tsx bench/capture.ts
 *
 * For each bus, side by side in one run:
 *   baseline      a bare node:http server that reads the body, JSON.parses it and appends its events to the
 *                 same bus (key and value as capture would, nothing else): the ceiling capture is measured against
 *   batch         capture's `/batch/`, BENCH_CAPTURE_BATCH (100) events per request, posthog-node-shaped
 *   baselineSingle  the baseline sent the `/i/v0/e/` body, one event per request: what `single` is measured against
 *   single        capture's `/i/v0/e/`, one event per request, as fast as it goes
 *   singleHalf    `/i/v0/e/` at half the rate `single` reached, for the latency at a steady load: open loop
 *                 (bench/paced.ts), requests evenly spaced, latency counted from each one's due time
 *
 * Processes (bench/capture-server.ts, shared with bench/replay.ts): the server process holds the database client
 * (token lookups), the bus, capture and the baseline; embedded, it also runs a consumer that reads every message of
 * the capture and baseline topics (parsing each as ingestion will), so both sides pay for it alike. The load
 * generator (autocannon, BENCH_CAPTURE_CONNECTIONS (32) connections) is a process of its own per phase: a warm-up of
 * BENCH_CAPTURE_WARMUP_SECONDS (1), then BENCH_CAPTURE_SECONDS (5) measured. Between phases the consumer is let
 * catch up, so a backlog never spills into the next phase.
 *
 * Reported: the server's CPU (cores, from /proc, and µs per event), resident memory and event-loop delay (p99 and
 * max, ms: how long its main thread was held up, GC pauses included) over each phase, its peak
 * (VmHWM) and what its startup steps added (the imports, tsx's included; the database with migrations and the
 * bootstrap project, which for PGlite is the whole database in this process; the bus, capture and the consumer),
 * and the load generator's own CPU and peak RSS. chDB is not part of capture and not loaded here.
 * BENCH_CAPTURE_PROFILE_DIR=<dir> writes a CPU profile of the server process there.
 */
import os from 'node:os';
import { CONNECTIONS, KAFKA_BROKERS, measure, round2, SECONDS, startServer, type BusKind } from './capture-server';
import { procMemoryMiB } from './proc';

const BATCH = Number(process.env.BENCH_CAPTURE_BATCH ?? 100);
const PROFILE_DIR = process.env.BENCH_CAPTURE_PROFILE_DIR;

/** What posthog-node sends: `{api_key, batch, sent_at}` with its usual properties. */
function batchBody(token: string, size: number): string {
  const now = new Date().toISOString();
  const batch = Array.from({ length: size }, (_, i) => ({
    distinct_id: `user-${i % 50}`,
    event: i % 10 === 0 ? '$pageview' : 'button clicked',
    properties: { $lib: 'posthog-node', $lib_version: '5.70.0', $geoip_disable: true, plan: 'pro', index: i, '$feature/beta': 'variant-b' },
    timestamp: now,
    type: 'capture',
  }));
  return JSON.stringify({ api_key: token, batch, sent_at: now });
}

async function run(kind: BusKind) {
  const server = startServer(kind, PROFILE_DIR);
  const ready = await server.ready;
  const batch = batchBody(ready.token, BATCH);
  const single = JSON.stringify({
    event: '$pageview',
    distinct_id: 'user-1',
    properties: { $lib: 'web', token: ready.token, $current_url: 'https://shop.example/' },
  });
  const capture = `http://127.0.0.1:${ready.capturePort}`;
  const baseline = await measure(server, { url: `http://127.0.0.1:${ready.baselinePort}/batch/`, body: batch, rate: 0 }, BATCH);
  const batchPhase = await measure(server, { url: `${capture}/batch/`, body: batch, rate: 0 }, BATCH);
  const baselineSingle = await measure(server, { url: `http://127.0.0.1:${ready.baselinePort}/i/v0/e/`, body: single, rate: 0 }, 1);
  const singlePhase = await measure(server, { url: `${capture}/i/v0/e/`, body: single, rate: 0 }, 1);
  const half = Math.max(1, Math.round(singlePhase.requestsPerSecond / 2));
  const singleHalf = { offeredPerSecond: half, ...(await measure(server, { url: `${capture}/i/v0/e/`, body: single, rate: half }, 1)) };
  const { consumed } = await server.settle();
  const serverPeakRssMb = Math.round(procMemoryMiB(server.pid, 'VmHWM'));
  const memoryUsageMb = await server.stop();
  return {
    bus: kind,
    database: ready.database,
    baseline,
    batch: batchPhase,
    baselineSingle,
    single: singlePhase,
    singleHalf,
    batchVsBaseline: round2(batchPhase.eventsPerSecond / baseline.eventsPerSecond),
    singleVsBaseline: round2(singlePhase.eventsPerSecond / baselineSingle.eventsPerSecond),
    serverPeakRssMb,
    serverStartupRssMb: ready.startupRssMb,
    serverMemoryUsageMb: memoryUsageMb,
    ...(kind === 'LocalLogBus' ? { consumedByInProcessConsumer: consumed } : {}),
  };
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg().map(round2);
  const results = [await run('LocalLogBus')];
  if (KAFKA_BROKERS) results.push(await run('KafkaBus'));
  console.log(
    JSON.stringify({ bench: 'capture', cpus: os.cpus().length, loadAtStart, node: process.version, seconds: SECONDS, connections: CONNECTIONS, results }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
