/**
 * A capture app on PGlite (migrated, bootstrapped: one project and its token) and a bus, plus a reader that
 * takes what capture produced back off the bus.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { bootstrap, ProjectTokenCache } from '@plover/accounts';
import { LocalLogBus, type BusMessage, type EventBus } from '@plover/bus';
import { createApp, DEFAULT_CAPTURE_SETTINGS, type CaptureSettings } from '@plover/capture/app';
import { parseCapturedEventMessage, type CapturedEvent, type CapturedEventMessage } from '@plover/contracts';
import { silentLogger } from '@plover/core';
import { createMetricsRegistry, listen, type RunningServer, type ServiceApp } from '@plover/http';
import { migrate } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';

/** Every test's "now": timestamps in assertions are relative to it. */
export const NOW = Date.parse('2025-06-01T12:00:00.000Z');

const runId = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
let sequence = 0;

/** Topic names unique to this run (the Kafka broker is shared by every run on the machine). */
export function uniqueTopics(): { events: string; historical: string } {
  const n = ++sequence;
  return { events: `plover-capture-test-${runId}-${n}-events`, historical: `plover-capture-test-${runId}-${n}-historical` };
}

export interface Captured {
  message: CapturedEventMessage;
  event: CapturedEvent;
  key: string;
  topic: string;
}

export interface CaptureHarness {
  app: ServiceApp;
  sql: PGliteSql;
  bus: EventBus;
  token: string;
  projectId: number;
  topics: { events: string; historical: string };
  /** The session replay topic (`/s/`), unique to the harness like `topics`. */
  replayTopic: string;
  /** The logs topic (`/i/v1/logs`), unique to the harness like `topics`. */
  logsTopic: string;
  /**
   * Reads `topic` from the beginning with a new consumer group until `count` messages arrived, then watches
   * `quietMs` longer for any that should not be there. Fails when fewer arrive within `timeoutMs`.
   */
  read(topic: string, count: number, options?: { quietMs?: number; timeoutMs?: number }): Promise<Captured[]>;
  /** `read` without the parse: the raw bus messages, for topics that carry another contract. */
  readRaw(topic: string, count: number, options?: { quietMs?: number; timeoutMs?: number }): Promise<BusMessage[]>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** Defaults to a LocalLogBus in a temporary directory. */
  bus?: EventBus;
  capture?: Partial<CaptureSettings>;
  trustProxy?: boolean;
}

export async function openHarness(options: HarnessOptions = {}): Promise<CaptureHarness> {
  const sql = await PGliteSql.open({});
  await migrate(sql);
  const credentials = await bootstrap(sql, { adminEmail: 'admin@example.com', projectName: 'Test', timezone: 'UTC' });
  let dataDir: string | undefined;
  let bus = options.bus;
  if (!bus) {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-capture-'));
    bus = await LocalLogBus.open({ dataDir });
  }
  const topics = options.capture?.topics ?? uniqueTopics();
  const replay = options.capture?.replay ?? { ...DEFAULT_CAPTURE_SETTINGS.replay, topic: `${topics.events}-replay` };
  const logsTopic = options.capture?.logsTopic ?? `${topics.events}-logs`;
  const app = createApp({
    logger: silentLogger(),
    metrics: createMetricsRegistry('capture-test'),
    sql,
    bus,
    trustProxy: options.trustProxy ?? false,
    projectTokens: new ProjectTokenCache(sql),
    settings: { now: () => NOW, ...options.capture, topics, replay, logsTopic },
  });
  const openBus = bus;
  return {
    app,
    sql,
    bus,
    token: credentials!.project.api_token,
    projectId: credentials!.project.id,
    topics,
    replayTopic: replay.topic,
    logsTopic,
    read: (topic, count, readOptions) => readTopic(openBus, topic, count, readOptions),
    readRaw: (topic, count, readOptions) => readMessages(openBus, topic, count, readOptions),
    async close() {
      await openBus.close();
      await sql.close();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export async function readTopic(bus: EventBus, topic: string, count: number, options: { quietMs?: number; timeoutMs?: number } = {}): Promise<Captured[]> {
  return (await readMessages(bus, topic, count, options)).map((message) => {
    const parsed = parseCapturedEventMessage(message.value);
    if (!parsed.ok) throw new Error(`${topic} holds a message that breaks the contract: ${JSON.stringify(parsed.violation)}`);
    return { ...parsed.value, key: message.key, topic };
  });
}

async function readMessages(bus: EventBus, topic: string, count: number, options: { quietMs?: number; timeoutMs?: number } = {}): Promise<BusMessage[]> {
  const { quietMs = 300, timeoutMs = 15_000 } = options;
  const received: BusMessage[] = [];
  let enough: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => {
    enough = resolve;
    if (count === 0) resolve();
  });
  const consumer = await bus.consume({
    groupId: `reader-${runId}-${++sequence}`,
    topics: [topic],
    handleBatch: (batch) => {
      received.push(...batch.messages);
      if (received.length >= count) enough();
      return Promise.resolve();
    },
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      reached,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`read ${received.length} of ${count} messages from ${topic} in ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    await new Promise((resolve) => setTimeout(resolve, quietMs));
  } finally {
    clearTimeout(timer);
    await consumer.stop();
  }
  return received;
}

/**
 * A harness whose app listens on a real socket, opened before the suite's tests and closed after them, for
 * bodies of tens of MiB: over fetch, since superagent takes seconds to push them at a server that answered early.
 * `harness()` is the open harness; `post(path, body)` posts a JSON body to it.
 */
export function useListeningHarness(): { harness: () => CaptureHarness; post: (path: string, body: string | Buffer) => Promise<Response> } {
  let h: CaptureHarness;
  let server: RunningServer;
  beforeAll(async () => {
    h = await openHarness();
    server = await listen(h.app, { port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await server.close();
    await h.close();
  });
  return {
    harness: () => h,
    post: (path, body) => fetch(`http://127.0.0.1:${server.port}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body }),
  };
}
