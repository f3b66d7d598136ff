/**
 * Embedded Plover as `npm start` runs it, against a durable bare sink, side by side in one run: does ingestion
 * hold up the request path? Prints one JSON line.
 *
 *   node --conditions=plover-source --import tsx bench/embedded.ts
 *
 * Processes: Plover (services/standalone, fresh data dir), the sink (bench/durable-floor.ts's `file` server:
 * node:http, JSON.parse, one file appended with writev + fdatasync shared by what queued meanwhile) and this one,
 * the load generator (bench/paced.ts: open loop, evenly spaced requests, latency from each one's due time).
 *
 * Phases, each BENCH_EMBEDDED_SECONDS (10) after a 1 s warm-up:
 *   idle       nothing queued when it starts (ingestion keeps up with the phase's own events): `/batch/` (100
 *              posthog-node events a request) at BENCH_EMBEDDED_BATCH_RATE (20/s), `/i/v0/e/` at BENCH_EMBEDDED_SINGLE_RATE (200/s), each against the sink at the same rate, and
 *              `/flags?v=2` (10 flags with person-property conditions) at half the rate it reached flat out
 *   draining   the same phases right after a backlog was built (`/batch/` flat out for BENCH_EMBEDDED_BLAST_SECONDS
 *              (10 s) with 32 connections), while ingestion drains it; the events still unstored at each phase's end
 *              are reported, so a phase that outlived the backlog shows it
 *   analysing  the same phases once the backlog is stored, while the management API is kept busy: EXPORTS (10)
 *              JSON lines exports of every event and a trend broken down by a property with 100 values, hourly over
 *              a week (`refresh: force_blocking`), each started again as soon as it ended
 * Memory: Plover's RSS idle after start, its peak (VmHWM) over the run, and its RSS 5 s after the backlog is stored
 * and SETTLE_SECONDS later.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { startEmbedded, type EmbeddedPlover } from '../test/support/embedded';
import { pacedLoad, type PacedResult } from './paced';
import { procMemoryMiB } from './proc';

const SECONDS = Number(process.env.BENCH_EMBEDDED_SECONDS ?? 10);
const BATCH_RATE = Number(process.env.BENCH_EMBEDDED_BATCH_RATE ?? 20);
const SINGLE_RATE = Number(process.env.BENCH_EMBEDDED_SINGLE_RATE ?? 200);
const BLAST_SECONDS = Number(process.env.BENCH_EMBEDDED_BLAST_SECONDS ?? 10);
const SETTLE_SECONDS = 25;
const BATCH = 100;
const FLAGS = 10;
const EXPORTS = 10;
const JSON_HEADERS = { 'content-type': 'application/json' };

const round2 = (value: number) => Math.round(value * 100) / 100;

function batchBody(token: string, offset: number): string {
  const now = new Date().toISOString();
  const batch = Array.from({ length: BATCH }, (_, i) => ({
    distinct_id: `user-${(offset + i) % 5000}`,
    event: i % 10 === 0 ? '$pageview' : 'button clicked',
    properties: { $lib: 'posthog-node', $lib_version: '5.70.0', $geoip_disable: true, plan: 'pro', index: i, $set: { plan: 'pro' } },
    timestamp: now,
    type: 'capture',
  }));
  return JSON.stringify({ api_key: token, batch, sent_at: now });
}

function singleBody(token: string, index: number): string {
  return JSON.stringify({ event: '$pageview', distinct_id: `user-${index % 5000}`, properties: { $lib: 'web', token, $current_url: 'https://shop.example/' } });
}

function flagsBody(token: string, index: number): string {
  return JSON.stringify({ api_key: token, distinct_id: `user-${index % 5000}` });
}

async function startSink(): Promise<{ port: number; stop(): void }> {
  const child = spawn(process.execPath, ['--conditions=plover-source', '--import', 'tsx', path.join(__dirname, 'durable-floor.ts'), 'server', 'file'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message) => resolve(message as number));
    child.once('exit', (code) => reject(new Error(`the sink exited with ${code}`)));
  });
  return { port, stop: () => child.kill('SIGTERM') };
}

async function api<T>(plover: EmbeddedPlover, method: string, route: string, body?: unknown): Promise<T> {
  const response = await fetch(`http://127.0.0.1:${plover.port}${route}`, {
    method,
    headers: { authorization: `Bearer ${plover.credentials.personalKey}`, ...JSON_HEADERS },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

async function createFlags(plover: EmbeddedPlover): Promise<void> {
  for (let i = 0; i < FLAGS; i++) {
    await api(plover, 'POST', `/api/projects/${plover.credentials.projectId}/feature_flags/`, {
      key: `bench-flag-${i}`,
      name: `bench flag ${i}`,
      active: true,
      filters: { groups: [{ properties: [{ key: 'plan', value: ['pro'], operator: 'exact', type: 'person' }], rollout_percentage: 10 * (i + 1) }] },
    });
  }
}

/** Events captured (accepted) and events ingested, from Plover's `/metrics`. */
async function pipeline(plover: EmbeddedPlover): Promise<{ captured: number; stored: number }> {
  const text = await (await fetch(`http://127.0.0.1:${plover.port}/metrics`)).text();
  const sum = (pattern: RegExp) => [...text.matchAll(pattern)].reduce((total, match) => total + Number(match[1]), 0);
  return {
    captured: sum(/^plover_capture_events_total\{[^}]*\} (\d+)/gm),
    stored: sum(/^plover_ingestion_messages_total\{[^}]*\} (\d+)/gm),
  };
}

/** Resolves once ingestion stored every event captured so far. */
async function drained(plover: EmbeddedPlover): Promise<void> {
  for (;;) {
    const { captured, stored } = await pipeline(plover);
    if (stored >= captured) return;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function paced(url: string, body: (index: number) => string, rate: number): Promise<PacedResult> {
  // Refused answers (capture sheds load with 503 when the bus is slow) are reported with the latencies, not thrown.
  return pacedLoad({ url, headers: JSON_HEADERS, body, rate, warmupSeconds: 1, seconds: SECONDS, connections: 32 });
}

async function flatOut(url: string, body: string, seconds: number): Promise<number> {
  const result = await autocannon({ url, method: 'POST', headers: JSON_HEADERS, body, connections: 32, duration: seconds });
  if (result.non2xx + result.errors > 0) throw new Error(`${url}: ${result.errors} errors, ${result.non2xx} non-2xx answers`);
  return result.requests.average;
}

/** A breakdown ClickHouse has to work for: `index` has 100 values, hourly over a week, recomputed on every run. */
function breakdownQuery(): unknown {
  return {
    query: {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: 'button clicked', math: 'dau' }],
      breakdownFilter: { breakdown: 'index', breakdown_type: 'event', breakdown_limit: 100 },
      dateRange: { date_from: '-7d' },
      interval: 'hour',
    },
    refresh: 'force_blocking',
  };
}

/**
 * The analysing phase's load on the management API, until `stop`: EXPORTS exports and one breakdown, each
 * started again when it ends. Counts what finished and what was refused (the export turns queue, then 429).
 */
function analysisLoad(plover: EmbeddedPlover): { stop(): Promise<{ exports: number; breakdowns: number; refused: number }> } {
  const counts = { exports: 0, breakdowns: 0, refused: 0 };
  let running = true;
  const base = `http://127.0.0.1:${plover.port}/api/projects/${plover.credentials.projectId}`;
  const auth = { authorization: `Bearer ${plover.credentials.personalKey}` };
  const loop = async (request: () => Promise<Response>, done: 'exports' | 'breakdowns') => {
    while (running) {
      const response = await request();
      await response.arrayBuffer();
      if (response.ok) counts[done]++;
      else counts.refused++;
    }
  };
  const loops = [
    ...Array.from({ length: EXPORTS }, () => loop(() => fetch(`${base}/events/?format=jsonl`, { headers: auth }), 'exports')),
    loop(() => fetch(`${base}/query/`, { method: 'POST', headers: { ...auth, ...JSON_HEADERS }, body: JSON.stringify(breakdownQuery()) }), 'breakdowns'),
  ];
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return counts;
    },
  };
}

const latency = (result: PacedResult) => ({
  p50: round2(result.latencyMs.p50),
  p99: round2(result.latencyMs.p99),
  max: round2(result.latencyMs.max),
  refused: result.non2xx + result.errors,
});

async function main(): Promise<void> {
  const loadAtStart = os.loadavg().map(round2);
  const sink = await startSink();
  const plover = await startEmbedded();
  try {
    const { token } = plover.credentials;
    const base = `http://127.0.0.1:${plover.port}`;
    const sinkBase = `http://127.0.0.1:${sink.port}`;
    await createFlags(plover);
    let offset = 0;
    const batch = () => batchBody(token, (offset += BATCH));
    // Warm-up: JIT, the project token cache, the first persons.
    await paced(`${base}/batch/`, batch, BATCH_RATE);
    await drained(plover);
    const idleRssMb = procMemoryMiB(plover.pid, 'VmRSS');

    const flagsMax = await flatOut(`${base}/flags/?v=2`, flagsBody(token, 1), 5);
    const flagsRate = Math.max(1, Math.round(flagsMax / 2));
    const phases = async () => {
      const started = await pipeline(plover);
      const sinkBatch = await paced(`${sinkBase}/batch/`, batch, BATCH_RATE);
      const ploverBatch = await paced(`${base}/batch/`, batch, BATCH_RATE);
      const sinkSingle = await paced(`${sinkBase}/i/v0/e/`, (i) => singleBody(token, i), SINGLE_RATE);
      const ploverSingle = await paced(`${base}/i/v0/e/`, (i) => singleBody(token, i), SINGLE_RATE);
      const flags = await paced(`${base}/flags/?v=2`, (i) => flagsBody(token, i), flagsRate);
      const ended = await pipeline(plover);
      return {
        batch: { sink: latency(sinkBatch), plover: latency(ploverBatch), p99Ratio: round2(ploverBatch.latencyMs.p99 / sinkBatch.latencyMs.p99) },
        single: { sink: latency(sinkSingle), plover: latency(ploverSingle), p99Ratio: round2(ploverSingle.latencyMs.p99 / sinkSingle.latencyMs.p99) },
        flags: { rate: flagsRate, ...latency(flags) },
        unstoredAtStart: started.captured - started.stored,
        unstoredAtEnd: ended.captured - ended.stored,
        storedPerSecond: Math.round((ended.stored - started.stored) / (5 * (SECONDS + 1))),
      };
    };
    await drained(plover);
    const idle = await phases();

    const blastRequestsPerSecond = await flatOut(`${base}/batch/`, batchBody(token, 0), BLAST_SECONDS);
    const draining = await phases();
    const drainingFlagsP99Ratio = round2(draining.flags.p99 / idle.flags.p99);

    // Memory once the backlog is stored: 5 s later, and once the allocators returned what they keep for a while
    // (chDB's jemalloc purges freed pages after some seconds).
    await drained(plover);
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const afterRssMb = procMemoryMiB(plover.pid, 'VmRSS');
    await new Promise((resolve) => setTimeout(resolve, SETTLE_SECONDS * 1000));
    const memory = {
      idleRssMb: Math.round(idleRssMb),
      peakRssMb: Math.round(procMemoryMiB(plover.pid, 'VmHWM')),
      afterRssMb: Math.round(afterRssMb),
      settledRssMb: Math.round(procMemoryMiB(plover.pid, 'VmRSS')),
    };
    // Last, so that the memory figures above are of ingestion alone.
    const analysis = analysisLoad(plover);
    const analysing = { ...(await phases()), management: await analysis.stop() };
    console.log(
      JSON.stringify({
        bench: 'embedded',
        cpus: os.cpus().length,
        loadAtStart,
        node: process.version,
        seconds: SECONDS,
        rates: { batch: BATCH_RATE, single: SINGLE_RATE, flagsMax: Math.round(flagsMax) },
        blast: { seconds: BLAST_SECONDS, eventsPerSecond: Math.round(blastRequestsPerSecond * BATCH) },
        idle,
        draining,
        drainingFlagsP99Ratio,
        analysing,
        analysingFlagsP99Ratio: round2(analysing.flags.p99 / idle.flags.p99),
        memory: {
          ...memory,
          peakOverIdle: round2(memory.peakRssMb / memory.idleRssMb),
          afterOverIdle: round2(memory.afterRssMb / memory.idleRssMb),
          settledOverIdle: round2(memory.settledRssMb / memory.idleRssMb),
        },
      }),
    );
  } finally {
    sink.stop();
    await plover.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
