/**
 * Session replay benchmarks (targets: BENCHMARKS.md#targets). Every figure is a ratio to a baseline measured in the
 * same run, subject and baseline alternating over BENCH_REPLAY_ROUNDS (3) rounds; BENCH_REPLAY_PARTS
 * (`capture,drain,fetch`) picks the parts. Prints one JSON line.
 *
 *   npm run bench:replay        (node --conditions=plover-source --import tsx bench/replay.ts)
 *
 * - capture: `/s/` with posthog-js-shaped gzip bodies (test/support/recording.ts) of about BENCH_REPLAY_BODY_KIB
 *   (100) KiB, 8 sessions sent in turn, against capture's baseline server (gunzip, JSON.parse, the same bus): the
 *   server and load processes of bench/capture-server.ts (LocalLogBus, PGlite, the in-process consumer reading both
 *   topics). Figure: MiB/s of gzip bodies answered 200, and the server's CPU per MiB.
 * - drain: BENCH_REPLAY_DRAIN_MESSAGES (2,000) snapshot messages as capture writes them (40 sessions of two-second
 *   flushes, interleaved) queued on the local log, then drained by the replay consumer into chDB (project settings
 *   from PGlite, sync before each commit), against chDB's raw insert of the same rows: the inserts the consumer made,
 *   replayed one after another into a database of their own. Figure: MiB/s of message bytes.
 * - fetch: a 30-minute recording (1,800 s of events in two-second flushes, about 900 messages) stored by the replay
 *   consumer, then read whole through readSnapshotBlocks in one call, in pages of 100 (its default) and of 20 (the
 *   span posthog-js's player asks for), and through the management app's snapshots route when it serves one,
 *   against one `SELECT data FROM session_replay_snapshots` of the same rows through the same client. Figure: ms per
 *   whole read (median of BENCH_REPLAY_FETCH_READS (5) per round).
 *
 * BENCH_REPLAY_PROFILE_DIR=<dir> writes a CPU profile of the capture server process there; for the drain and
 * fetch, run this file with `node --cpu-prof`.
 */
import '@plover/config/threadpool';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { bootstrap, updateSessionReplaySettings, type Credentials } from '@plover/accounts';
import type { OutgoingMessage } from '@plover/bus';
import { migrate as migrateClickHouse, readSnapshotBlocks, type ClickHouse } from '@plover/clickhouse';
import { REPLAY_TOPIC } from '@plover/contracts';
import { createLogger, uuidv7 } from '@plover/core';
import { listen } from '@plover/http';
import { createReplayConsumer } from '@plover/ingestion/replay';
import { createApp as createManagementApp } from '@plover/management/app';
import { migrate as migratePostgres } from '@plover/postgres';
import { Registry } from 'prom-client';
import { snapshotMessages } from '../services/capture/src/replay';
import { seededRandom } from '../test/support/random';
import { flushes, recordingEvents, SNAPSHOT_REQUEST_HEADERS, snapshotEvent, snapshotRequestBody, type RrwebEvent } from '../test/support/recording';
import { measure, round2, startServer, type Phase } from './capture-server';
import { embeddedStack, observeInserts, waitUntil, type Stack } from './stacks';

const ROUNDS = Number(process.env.BENCH_REPLAY_ROUNDS ?? 3);
const PARTS = (process.env.BENCH_REPLAY_PARTS ?? 'capture,drain,fetch').split(',');
const BODY_BYTES = Number(process.env.BENCH_REPLAY_BODY_KIB ?? 100) * 1024;
const DRAIN_MESSAGES = Number(process.env.BENCH_REPLAY_DRAIN_MESSAGES ?? 2_000);
const FETCH_READS = Number(process.env.BENCH_REPLAY_FETCH_READS ?? 5);
const PROFILE_DIR = process.env.BENCH_REPLAY_PROFILE_DIR;
const CAPTURE_SESSIONS = 8;
const DRAIN_SESSIONS = 40;
const FLUSH_MS = 2_000;
const RECORDING_MS = 1_800_000;
/**
 * Pages the store is read in: one call for the whole recording, readSnapshotBlocks' default page, and the span of
 * blocks posthog-js's player asks the snapshots route for at once.
 */
const FETCH_PAGES = { storeWhole: 10_000, storePages100: 100, storePages20: 20 } as const;
const RAW_DATABASE = 'bench_raw';
const MIB = 1024 * 1024;

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const sessionIdOf = (n: number) => `0198c0dd-7a3e-7c1b-9a52-${String(n).padStart(12, '0')}`;

// ---- capture: /s/ against the baseline ----

/** One body per session: consecutive two-second flushes (a page every 10 s) until the gzip passes BODY_BYTES. */
function captureBodies(token: string): { bodies: Buffer[]; snapshotsPerBody: number; decompressedBytes: number } {
  const start = Date.now() - 300_000;
  const recordings = Array.from({ length: CAPTURE_SESSIONS }, (_, i) =>
    flushes(recordingEvents({ random: seededRandom(i + 1), start, durationMs: 300_000, pageEveryMs: 10_000 }), start, FLUSH_MS),
  );
  const targetOf = (i: number) => ({ token, distinctId: `user-${i}`, sessionId: sessionIdOf(i), windowId: `window-${i}` });
  const body = (i: number, count: number) =>
    snapshotRequestBody((recordings[i] as RrwebEvent[][]).slice(0, count).map((flush) => snapshotEvent(targetOf(i), flush)));
  let snapshotsPerBody = 1;
  while (body(0, snapshotsPerBody).length < BODY_BYTES) snapshotsPerBody++;
  const bodies = recordings.map((_, i) => body(i, snapshotsPerBody));
  const decompressedBytes = recordings.reduce(
    (sum, recording, i) => sum + Buffer.byteLength(JSON.stringify(recording.slice(0, snapshotsPerBody).map((flush) => snapshotEvent(targetOf(i), flush)))),
    0,
  );
  return { bodies, snapshotsPerBody, decompressedBytes: decompressedBytes / bodies.length };
}

interface CapturePhase {
  mibPerSecond: number;
  serverCpuMsPerMib: number;
  requestsPerSecond: number;
  latencyMsP99: number;
  non2xx: number;
  errors: number;
}

function capturePhase(phase: Phase, bodyBytes: number): CapturePhase {
  const mibPerSecond = (phase.requestsPerSecond * bodyBytes) / MIB;
  return {
    mibPerSecond: round2(mibPerSecond),
    serverCpuMsPerMib: round2((phase.serverCpuCores / mibPerSecond) * 1000),
    requestsPerSecond: phase.requestsPerSecond,
    latencyMsP99: phase.latencyMs.p99,
    non2xx: phase.non2xx,
    errors: phase.errors,
  };
}

async function capturePart(): Promise<Record<string, unknown>> {
  const server = startServer('LocalLogBus', PROFILE_DIR);
  const ready = await server.ready;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'plover-bench-replay-bodies-'));
  try {
    const { bodies, snapshotsPerBody, decompressedBytes } = captureBodies(ready.token);
    const bodyFiles = await Promise.all(
      bodies.map(async (body, i) => {
        const file = path.join(dir, `body-${i}.gz`);
        await writeFile(file, body);
        return file;
      }),
    );
    const bodyBytes = bodies.reduce((sum, body) => sum + body.length, 0) / bodies.length;
    const load = (port: number) => ({ url: `http://127.0.0.1:${port}/s/`, bodyFiles, headers: SNAPSHOT_REQUEST_HEADERS, rate: 0 });
    const rounds: Array<{ baseline: CapturePhase; capture: CapturePhase; ratio: number }> = [];
    for (let round = 0; round < ROUNDS; round++) {
      const baseline = capturePhase(await measure(server, load(ready.baselinePort), snapshotsPerBody), bodyBytes);
      const capture = capturePhase(await measure(server, load(ready.capturePort), snapshotsPerBody), bodyBytes);
      rounds.push({ baseline, capture, ratio: round2(capture.mibPerSecond / baseline.mibPerSecond) });
    }
    const { consumed } = await server.settle();
    return {
      bodyKiB: round2(bodyBytes / 1024),
      decompressedKiB: round2(decompressedBytes / 1024),
      snapshotsPerBody,
      rounds,
      medianRatio: median(rounds.map((round) => round.ratio)),
      consumedByInProcessConsumer: consumed,
    };
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

// ---- drain and fetch: the replay consumer on the embedded stack ----

/** The inserts of a ClickHouse client, recorded, and how many snapshot messages each sync made durable. */
class InsertRecorder {
  calls: Array<{ table: string; rows: readonly Record<string, unknown>[] }> = [];
  private stored = 0;
  synced = 0;
  lastSyncAt = 0;

  wrap(inner: ClickHouse): ClickHouse {
    const observed = observeInserts(inner, (table, rows) => {
      this.calls.push({ table, rows });
      if (table === 'session_replay_summaries') this.stored += rows.length;
    });
    return {
      ...observed,
      sync: async () => {
        const stored = this.stored;
        await inner.sync?.();
        this.synced = Math.max(this.synced, stored);
        this.lastSyncAt = performance.now();
      },
    };
  }
}

interface ReplayStack extends Stack {
  credentials: Credentials;
}

async function replayStack(): Promise<ReplayStack> {
  const stack = await embeddedStack('replay');
  await migratePostgres(stack.sql);
  await migrateClickHouse(stack.clickhouse);
  await migrateClickHouse(stack.clickhouse, { database: RAW_DATABASE });
  const credentials = (await bootstrap(stack.sql, { adminEmail: 'bench@example.com', projectName: 'Bench', timezone: 'UTC' })) as Credentials;
  await updateSessionReplaySettings(stack.sql, credentials.project.id, { session_recording_opt_in: true });
  return { ...stack, credentials };
}

/** The bus messages capture makes of these `$snapshot` events. */
function messagesOf(projectId: number, events: readonly Record<string, unknown>[]): OutgoingMessage[] {
  const now = Date.now();
  return snapshotMessages(
    events.map((event) => ({ event, attrPrefix: '' })),
    { projectId, now, nowIso: new Date(now).toISOString(), sentAt: undefined, maxMessageBytes: 1_000_000, eventUuid: () => uuidv7(now) },
  );
}

async function produce(stack: Stack, messages: readonly OutgoingMessage[]): Promise<void> {
  for (let i = 0; i < messages.length; i += 100) await stack.bus.produce(REPLAY_TOPIC, messages.slice(i, i + 100));
}

/** Runs the replay consumer until `count` more messages are stored and synced; the seconds from its start. */
async function drain(stack: Stack, recorder: InsertRecorder, count: number): Promise<number> {
  const target = recorder.synced + count;
  const started = performance.now();
  const consumer = await createReplayConsumer({
    logger: createLogger({ service: 'bench', level: 'warn' }),
    metrics: new Registry(),
    sql: stack.sql,
    clickhouse: recorder.wrap(stack.clickhouse),
    bus: stack.bus,
  });
  try {
    await waitUntil(() => recorder.synced >= target, 600_000);
    return (recorder.lastSyncAt - started) / 1000;
  } finally {
    await consumer.stop();
  }
}

/** DRAIN_MESSAGES messages of DRAIN_SESSIONS sessions, their flushes interleaved as live traffic would be. */
function drainMessages(projectId: number, round: number, token: string): OutgoingMessage[] {
  const perSession = Math.ceil(DRAIN_MESSAGES / DRAIN_SESSIONS);
  const start = Date.now() - perSession * FLUSH_MS - 60_000;
  const sessions = Array.from({ length: DRAIN_SESSIONS }, (_, s) => {
    const n = round * DRAIN_SESSIONS + s;
    const target = { token, distinctId: `user-${n}`, sessionId: sessionIdOf(1_000 + n), windowId: `window-${n}` };
    const events = recordingEvents({ random: seededRandom(1_000 + n), start, durationMs: perSession * FLUSH_MS });
    return messagesOf(
      projectId,
      flushes(events, start, FLUSH_MS).map((flush) => snapshotEvent(target, flush)),
    );
  });
  const interleaved: OutgoingMessage[] = [];
  for (let i = 0; i < Math.max(...sessions.map((session) => session.length)); i++)
    for (const session of sessions) if (i < session.length) interleaved.push(session[i] as OutgoingMessage);
  return interleaved.slice(0, DRAIN_MESSAGES);
}

async function drainPart(stack: ReplayStack): Promise<Record<string, unknown>> {
  const projectId = stack.credentials.project.id;
  const recorder = new InsertRecorder();
  const rounds: Array<{
    messageMiB: number;
    drainMibPerSecond: number;
    rawInsertMibPerSecond: number;
    ratio: number;
    inserts: number;
    cpuSeconds: { drain: number; raw: number };
  }> = [];
  for (let round = 0; round < ROUNDS; round++) {
    const messages = drainMessages(projectId, round, stack.credentials.project.api_token);
    const messageMiB = messages.reduce((sum, message) => sum + message.value.length, 0) / MIB;
    await produce(stack, messages);
    recorder.calls = [];
    let cpu = process.cpuUsage();
    const drainSeconds = await drain(stack, recorder, messages.length);
    const drainCpu = process.cpuUsage(cpu);
    const calls = recorder.calls;
    cpu = process.cpuUsage();
    const rawStart = performance.now();
    for (const call of calls) await stack.clickhouse.insert(`${RAW_DATABASE}.${call.table}`, call.rows);
    const rawSeconds = (performance.now() - rawStart) / 1000;
    const rawCpu = process.cpuUsage(cpu);
    rounds.push({
      messageMiB: round2(messageMiB),
      drainMibPerSecond: round2(messageMiB / drainSeconds),
      rawInsertMibPerSecond: round2(messageMiB / rawSeconds),
      ratio: round2(rawSeconds / drainSeconds),
      inserts: calls.length,
      cpuSeconds: { drain: round2((drainCpu.user + drainCpu.system) / 1e6), raw: round2((rawCpu.user + rawCpu.system) / 1e6) },
    });
  }
  return { messagesPerRound: DRAIN_MESSAGES, sessionsPerRound: DRAIN_SESSIONS, rounds, medianRatio: median(rounds.map((round) => round.ratio)) };
}

/** Reads the recording whole through the management app's snapshots route, or undefined when it has none. */
async function snapshotsRoute(stack: ReplayStack, sessionId: string): Promise<{ read: () => Promise<number>; close: () => Promise<void> } | undefined> {
  const app = createManagementApp({
    logger: createLogger({ service: 'bench', level: 'warn' }),
    metrics: new Registry(),
    sql: stack.sql,
    clickhouse: stack.clickhouse,
    trustProxy: false,
  });
  const server = await listen(app, { port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${server.port}/api/projects/${stack.credentials.project.id}/session_recordings/${sessionId}/snapshots?source=blob_v2`;
  const headers = { Authorization: `Bearer ${stack.credentials.personal_api_key.value}` };
  const probe = await fetch(url, { headers });
  await probe.arrayBuffer();
  if (probe.status !== 200) {
    await server.close();
    return undefined;
  }
  return {
    read: async () => (await (await fetch(url, { headers })).arrayBuffer()).byteLength,
    close: () => server.close(),
  };
}

async function fetchPart(stack: ReplayStack): Promise<Record<string, unknown>> {
  const projectId = stack.credentials.project.id;
  const sessionId = sessionIdOf(999_999);
  const start = Date.now() - RECORDING_MS - 60_000;
  const target = { token: stack.credentials.project.api_token, distinctId: 'user-fetch', sessionId, windowId: 'window-fetch' };
  const recording = flushes(recordingEvents({ random: seededRandom(99), start, durationMs: RECORDING_MS }), start, FLUSH_MS);
  const messages = messagesOf(
    projectId,
    recording.map((flush) => snapshotEvent(target, flush)),
  );
  await produce(stack, messages);
  await drain(stack, new InsertRecorder(), messages.length);

  const readStore = (pageBlocks: number) => async () => {
    let bytes = 0;
    for (let offset = 0; ; offset += pageBlocks) {
      const page = await readSnapshotBlocks(stack.clickhouse, projectId, sessionId, { offset, limit: pageBlocks });
      for (const block of page) bytes += Buffer.byteLength(block.data);
      if (page.length < pageBlocks) return bytes;
    }
  };
  const readPlain = async () => {
    const rows = await stack.clickhouse.query<{ data: string }>(
      'bench.replay.plainRead',
      'SELECT data FROM session_replay_snapshots WHERE team_id = {projectId:Int64} AND session_id = {sessionId:String} ORDER BY first_timestamp',
      { projectId, sessionId },
    );
    return rows.reduce((sum, row) => sum + Buffer.byteLength(row.data), 0);
  };
  const route = await snapshotsRoute(stack, sessionId);
  const readers: Record<string, () => Promise<number>> = {
    plain: readPlain,
    ...Object.fromEntries(Object.entries(FETCH_PAGES).map(([name, pageBlocks]) => [name, readStore(pageBlocks)])),
    ...(route ? { route: route.read } : {}),
  };
  const sizes: Record<string, number> = Object.fromEntries(
    await Promise.all(Object.entries(readers).map(async ([name, read]) => [name, await read()] as const)),
  );
  // The same JSONL from each; the route may leave out the last line's newline.
  if (Object.keys(FETCH_PAGES).some((name) => sizes[name] !== sizes.plain) || (sizes.route !== undefined && Math.abs(sizes.route - (sizes.plain ?? 0)) > 1)) {
    throw new Error(`the reads disagree on the recording's bytes: ${JSON.stringify(sizes)}`);
  }
  const timed = async (read: () => Promise<number>) => {
    const ms: number[] = [];
    for (let i = 0; i < FETCH_READS; i++) {
      const started = performance.now();
      await read();
      ms.push(performance.now() - started);
    }
    return round2(median(ms));
  };
  const rounds: Array<Record<string, number>> = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const figures: Record<string, number> = {};
      for (const [name, read] of Object.entries(readers)) figures[`${name}Ms`] = await timed(read);
      for (const name of Object.keys(readers))
        if (name !== 'plain') figures[`${name}Ratio`] = round2((figures[`${name}Ms`] as number) / (figures.plainMs as number));
      rounds.push(figures);
    }
  } finally {
    await route?.close();
  }
  return {
    messages: messages.length,
    events: recording.reduce((sum, flush) => sum + flush.length, 0),
    jsonlMiB: round2((sizes.plain ?? 0) / MIB),
    route: route ? 'measured' : 'absent',
    rounds,
    medianRatios: Object.fromEntries(
      Object.keys(readers)
        .filter((name) => name !== 'plain')
        .map((name) => [name, median(rounds.map((round) => round[`${name}Ratio`] as number))]),
    ),
  };
}

async function main(): Promise<void> {
  const unknown = PARTS.filter((part) => !['capture', 'drain', 'fetch'].includes(part));
  if (unknown.length > 0) throw new Error(`unknown BENCH_REPLAY_PARTS entries: ${unknown.join(', ')}`);
  const result: Record<string, unknown> = {
    bench: 'replay',
    date: new Date().toISOString(),
    cpus: os.cpus().length,
    node: process.version,
    loadAtStart: os.loadavg().map(round2),
  };
  if (PARTS.includes('capture')) result.capture = await capturePart();
  if (PARTS.includes('drain') || PARTS.includes('fetch')) {
    const stack = await replayStack();
    try {
      if (PARTS.includes('drain')) result.drain = await drainPart(stack);
      if (PARTS.includes('fetch')) result.fetch = await fetchPart(stack);
    } finally {
      await stack.close();
    }
  }
  result.loadAtEnd = os.loadavg().map(round2);
  console.log(JSON.stringify(result));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
