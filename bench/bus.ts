/**
 * EventBus benchmark, per adapter: LocalLogBus always (in a temporary directory on the machine's disk), KafkaBus
 * when TEST_KAFKA_BROKERS or KAFKA_BROKERS is set. Prints one JSON line.
 *
 *   node --conditions=plover-source --import tsx bench/bus.ts
 *
 * produce: BENCH_BUS_PRODUCERS concurrent producers (16: like capture's concurrent requests, which is what group
 *   commit is for) each produce batches of BENCH_BUS_BATCH (100) messages of 1 KB with distinct keys, back to
 *   back, for BENCH_BUS_SECONDS (5). Reports acknowledged messages/s and the latency of one produce call.
 * endToEnd: one producer sends a batch every 10 ms so that BENCH_BUS_RATE (10,000) messages/s go out, for
 *   BENCH_BUS_SECONDS, while a consumer group reads them; reports the time from the produce call to the handler.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalLogBus } from '@plover/bus';
import type { EventBus, OutgoingMessage } from '@plover/bus';
import { KafkaBus } from '@plover/bus/kafka';
import { silentLogger } from '@plover/core';

const PRODUCERS = Number(process.env.BENCH_BUS_PRODUCERS ?? 16);
const BATCH = Number(process.env.BENCH_BUS_BATCH ?? 100);
const SECONDS = Number(process.env.BENCH_BUS_SECONDS ?? 5);
const RATE = Number(process.env.BENCH_BUS_RATE ?? 10_000);
const MESSAGE_BYTES = 1024;
const E2E_INTERVAL_MS = 10;
const KAFKA_BROKERS = process.env.TEST_KAFKA_BROKERS || process.env.KAFKA_BROKERS;

interface Adapter {
  name: string;
  bus: EventBus;
  /** Adapter-specific figures sampled around a phase (LocalLogBus: its fsync count). */
  counters(): Record<string, number>;
  close(): Promise<void>;
}

async function localLogBus(): Promise<Adapter> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-bench-bus-'));
  const bus = await LocalLogBus.open({ dataDir });
  return {
    name: 'LocalLogBus',
    bus,
    counters: () => bus.stats(),
    async close() {
      await bus.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

function kafkaBus(brokers: string): Promise<Adapter> {
  const bus = new KafkaBus({ brokers: brokers.split(','), clientId: 'plover-bench', logger: silentLogger() });
  return Promise.resolve({ name: 'KafkaBus', bus, counters: () => ({}), close: () => bus.close() });
}

const runId = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
const value = randomBytes(MESSAGE_BYTES);

function percentiles(samples: number[]): { p50: number; p99: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN);
  return { p50: at(0.5), p99: at(0.99), max: round(sorted.at(-1) ?? NaN) };
}

function round(n: number, digits = 2): number {
  return Number(n.toFixed(digits));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Deltas of an adapter's counters over a phase, plus messages per fsync where the adapter counts them. */
function counterDeltas(before: Record<string, number>, after: Record<string, number>, messages: number): Record<string, number> {
  const deltas: Record<string, number> = {};
  for (const [name, value] of Object.entries(after)) deltas[name] = value - (before[name] ?? 0);
  if (deltas.syncs) deltas.messagesPerSync = round(messages / deltas.syncs, 1);
  return deltas;
}

async function produceThroughput(adapter: Adapter) {
  const topic = `bench-${runId}-produce`;
  await adapter.bus.ensureTopics([topic]);
  const callLatencies: number[] = [];
  let acked = 0;
  let key = 0;
  const before = adapter.counters();
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  const producer = async () => {
    while (performance.now() < deadline) {
      // Distinct keys, as from many persons: every batch spreads over all partitions.
      const batch: OutgoingMessage[] = Array.from({ length: BATCH }, () => ({ key: `1:person-${key++ % 100_000}`, value }));
      const sent = performance.now();
      await adapter.bus.produce(topic, batch);
      callLatencies.push(performance.now() - sent);
      acked += batch.length;
    }
  };
  await Promise.all(Array.from({ length: PRODUCERS }, producer));
  const seconds = (performance.now() - started) / 1000;
  return {
    producers: PRODUCERS,
    batch: BATCH,
    messageBytes: MESSAGE_BYTES,
    seconds: round(seconds),
    messages: acked,
    messagesPerSecond: Math.round(acked / seconds),
    megabytesPerSecond: round((acked * MESSAGE_BYTES) / seconds / 1e6, 1),
    produceCallMs: percentiles(callLatencies),
    ...counterDeltas(before, adapter.counters(), acked),
  };
}

async function endToEndLatency(adapter: Adapter) {
  const topic = `bench-${runId}-e2e`;
  await adapter.bus.ensureTopics([topic]);
  const latencies: number[] = [];
  const produceLatencies: number[] = [];
  let consumed = 0;
  // Each value starts with the time of its produce call (same process, same clock).
  const consumer = await adapter.bus.consume({
    groupId: `bench-${runId}-e2e`,
    topics: [topic],
    handleBatch: (batch) => {
      const now = performance.now();
      for (const message of batch.messages) latencies.push(now - message.value.readDoubleLE(0));
      consumed += batch.messages.length;
      return Promise.resolve();
    },
  });
  const perTick = Math.max(1, Math.round((RATE * E2E_INTERVAL_MS) / 1000));
  const ticks = Math.round((SECONDS * 1000) / E2E_INTERVAL_MS);
  const sends: Promise<void>[] = [];
  const started = performance.now();
  for (let tick = 0; tick < ticks; tick++) {
    // A fixed schedule: a slow produce does not lower the offered rate.
    await sleep(started + tick * E2E_INTERVAL_MS - performance.now());
    const sent = performance.now();
    const batch = Array.from({ length: perTick }, (_, i) => {
      const stamped = Buffer.from(value);
      stamped.writeDoubleLE(sent, 0);
      return { key: `1:person-${(tick * perTick + i) % 10_000}`, value: stamped };
    });
    sends.push(adapter.bus.produce(topic, batch).then(() => void produceLatencies.push(performance.now() - sent)));
  }
  await Promise.all(sends);
  const produced = ticks * perTick;
  const deadline = performance.now() + 30_000;
  while (consumed < produced && performance.now() < deadline) await sleep(10);
  await consumer.stop();
  return {
    offeredPerSecond: Math.round((perTick * 1000) / E2E_INTERVAL_MS),
    messages: produced,
    consumed,
    latencyMs: percentiles(latencies),
    produceCallMs: percentiles(produceLatencies),
  };
}

async function main(): Promise<void> {
  const openers: Array<() => Promise<Adapter>> = [localLogBus];
  if (KAFKA_BROKERS) openers.push(() => kafkaBus(KAFKA_BROKERS));
  const results = [];
  for (const open of openers) {
    const adapter = await open();
    try {
      results.push({ adapter: adapter.name, produce: await produceThroughput(adapter), endToEnd: await endToEndLatency(adapter) });
    } finally {
      await adapter.close();
    }
  }
  console.log(JSON.stringify({ bench: 'bus', cpus: os.cpus().length, node: process.version, results }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
