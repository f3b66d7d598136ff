/**
 * Capture benchmark (SPEC §8), per bus: LocalLogBus always (embedded, in a temporary directory), KafkaBus when
 * TEST_KAFKA_BROKERS or KAFKA_BROKERS is set. Prints one JSON line.
 *
 *   node --conditions=plover-source --import tsx bench/capture.ts
 *
 * For each bus, side by side in one run:
 *   baseline      a bare node:http server that reads the body, JSON.parses it and appends its events to the
 *                 same bus (key and value as capture would, nothing else): the ceiling capture is measured against
 *   batch         capture's `/batch/`, BENCH_CAPTURE_BATCH (100) events per request, posthog-node-shaped
 *   single        capture's `/i/v0/e/`, one event per request, as fast as it goes
 *   singleHalf    `/i/v0/e/` at half the rate `single` reached, for the latency at a steady load
 * Embedded runs a consumer in the same process that reads and parses every message, as ingestion will.
 * autocannon runs in a worker thread with BENCH_CAPTURE_CONNECTIONS (32) connections for BENCH_CAPTURE_SECONDS (5).
 * rssMb is the process's peak resident memory (server, bus, consumer and the load generator's thread).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { bootstrap } from '@plover/accounts';
import { LocalLogBus, type Consumer, type EventBus } from '@plover/bus';
import { KafkaBus } from '@plover/bus/kafka';
import { createApp } from '@plover/capture/app';
import { parseCapturedEventMessage } from '@plover/contracts';
import { silentLogger } from '@plover/core';
import { createMetricsRegistry, listen } from '@plover/http';
import { migrate } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';

const SECONDS = Number(process.env.BENCH_CAPTURE_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CAPTURE_CONNECTIONS ?? 32);
const BATCH = Number(process.env.BENCH_CAPTURE_BATCH ?? 100);
const KAFKA_BROKERS = process.env.TEST_KAFKA_BROKERS || process.env.KAFKA_BROKERS;
const runId = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;

interface Bus {
  name: string;
  bus: EventBus;
  close(): Promise<void>;
}

async function localLogBus(): Promise<Bus> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-bench-capture-'));
  const bus = await LocalLogBus.open({ dataDir });
  return {
    name: 'LocalLogBus',
    bus,
    async close() {
      await bus.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

function kafkaBus(brokers: string): Bus {
  const bus = new KafkaBus({ brokers: brokers.split(','), clientId: 'plover-bench-capture', logger: silentLogger() });
  return { name: 'KafkaBus', bus, close: () => bus.close() };
}

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

/** The baseline: read, JSON.parse, append each event to the bus. No validation, no normalization, no token check. */
async function baselineServer(bus: EventBus, topic: string): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { batch?: Array<{ distinct_id: string }> } & { distinct_id: string };
      const events = body.batch ?? [body];
      const messages = events.map((event) => ({ key: `1:${event.distinct_id}`, value: Buffer.from(JSON.stringify(event)) }));
      bus.produce(topic, messages).then(
        () => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":1}'),
        () => res.writeHead(503).end(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

interface LoadResult {
  requestsPerSecond: number;
  eventsPerSecond: number;
  latencyMs: { p50: number; p99: number; max: number };
  non2xx: number;
  errors: number;
}

async function load(url: string, body: string, eventsPerRequest: number, overallRate?: number): Promise<LoadResult> {
  const result = await autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    connections: CONNECTIONS,
    duration: SECONDS,
    workers: 1,
    ...(overallRate ? { overallRate } : {}),
  });
  return {
    requestsPerSecond: Math.round(result.requests.average),
    eventsPerSecond: Math.round(result.requests.average * eventsPerRequest),
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

async function run(open: () => Promise<Bus>, withConsumer: boolean) {
  const sql = await PGliteSql.open({});
  await migrate(sql);
  const token = (await bootstrap(sql, { adminEmail: 'bench@example.com', projectName: 'Bench', timezone: 'UTC' }))!.project.api_token;
  const adapter = await open();
  const topics = { events: `bench-capture-${runId}-${adapter.name}-events`, historical: `bench-capture-${runId}-${adapter.name}-historical` };
  const baselineTopic = `bench-capture-${runId}-${adapter.name}-baseline`;
  await adapter.bus.ensureTopics([topics.events, topics.historical, baselineTopic]);
  let consumed = 0;
  let consumer: Consumer | undefined;
  if (withConsumer) {
    consumer = await adapter.bus.consume({
      groupId: `bench-capture-${runId}`,
      topics: [topics.events],
      handleBatch: (batch) => {
        for (const message of batch.messages) if (parseCapturedEventMessage(message.value).ok) consumed++;
        return Promise.resolve();
      },
    });
  }
  const app = createApp({ logger: silentLogger(), metrics: createMetricsRegistry('bench'), sql, bus: adapter.bus, trustProxy: false, capture: { topics } });
  const server = await listen(app, { port: 0, host: '127.0.0.1' });
  const baseline = await baselineServer(adapter.bus, baselineTopic);
  try {
    const batch = batchBody(token, BATCH);
    const single = JSON.stringify({ event: '$pageview', distinct_id: 'user-1', properties: { $lib: 'web', token, $current_url: 'https://shop.example/' } });
    const capture = `http://127.0.0.1:${server.port}`;
    const results = {
      baseline: await load(`http://127.0.0.1:${baseline.port}/batch/`, batch, BATCH),
      batch: await load(`${capture}/batch/`, batch, BATCH),
      single: { ...(await load(`${capture}/i/v0/e/`, single, 1)) },
      singleHalf: undefined as (LoadResult & { offeredPerSecond: number }) | undefined,
    };
    const half = Math.max(1, Math.round(results.single.requestsPerSecond / 2));
    results.singleHalf = { offeredPerSecond: half, ...(await load(`${capture}/i/v0/e/`, single, 1, half)) };
    return {
      bus: adapter.name,
      ...results,
      batchVsBaseline: Number((results.batch.eventsPerSecond / results.baseline.eventsPerSecond).toFixed(2)),
      ...(withConsumer ? { consumedByInProcessConsumer: consumed } : {}),
    };
  } finally {
    await server.close();
    await baseline.close();
    await consumer?.stop();
    await adapter.close();
    await sql.close();
  }
}

async function main(): Promise<void> {
  const results = [await run(localLogBus, true)];
  if (KAFKA_BROKERS) results.push(await run(() => Promise.resolve(kafkaBus(KAFKA_BROKERS)), false));
  const rssMb = Math.round(process.resourceUsage().maxRSS / 1024);
  console.log(JSON.stringify({ bench: 'capture', cpus: os.cpus().length, node: process.version, seconds: SECONDS, connections: CONNECTIONS, rssMb, results }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
