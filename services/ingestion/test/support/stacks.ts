/**
 * The two stacks the consumer runs on: embedded (LocalLogBus + PGlite + chDB, all in one data directory) and
 * distributed (Kafka + a real Postgres database; ClickHouse is chDB, as no server exists on this machine).
 * A stack is described by plain data, so that a child process (consumer-child.ts) opens the same stores.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalLogBus, type BusMessage, type EventBus } from '@plover/bus';
import { KafkaBus } from '@plover/bus/kafka';
import { migrate as migrateClickHouse, type ClickHouse } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { silentLogger, withTimeout } from '@plover/core';
import { createConsumer, type ConsumerDeps, type IngestionConsumer, type IngestionSettings } from '@plover/ingestion/consumer';
import { migrate as migratePostgres, PgSql, type Sql } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';
import { Registry } from 'prom-client';
import { deleteTopics } from '../../../../packages/bus/test/support/kafka-factory';
import { createTestDatabase, type TestDatabase } from '../../../../packages/postgres/test/support/database';
import { realService } from '../../../../test/support/services';

export const postgres = realService('TEST_DATABASE_URL');
export const kafka = realService('TEST_KAFKA_BROKERS');

export interface Stores {
  sql: Sql;
  clickhouse: ClickHouse;
  bus: EventBus;
}

/** Everything needed to open a stack's stores, in this process or a child. */
export interface StackDescription {
  kind: 'embedded' | 'kafka';
  dataDir: string;
  databaseUrl?: string;
  brokers?: string;
  settings: Pick<IngestionSettings, 'topics' | 'groupIds'>;
}

export interface Stack {
  readonly name: string;
  readonly description: StackDescription;
  /** The open stores; replaced by resume(). */
  readonly stores: Stores;
  /** How long a test may wait for a delivery (a Kafka group takes seconds to form, longer after a kill). */
  readonly deliveryTimeoutMs: number;
  /** Closes the stores and keeps their data, so that a child process can open them (one process per directory). */
  suspend(): Promise<void>;
  resume(): Promise<Stores>;
  destroy(): Promise<void>;
}

export interface StackFactory {
  name: string;
  open(): Promise<Stack>;
}

const runId = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
let sequence = 0;

/** Kafka is shared by every run on the machine: names never repeat. */
function uniqueName(label: string): string {
  return `plover-ingestion-test-${runId}-${label}-${++sequence}`;
}

/**
 * Store calls not settled yet, across every stack of this test file. Twice in CI a suite hung with no word on
 * where (a check in `waitFor` that never returned; a stack whose close never finished): the stores are traced so
 * that such a wait names the calls it is stuck behind.
 */
const unsettled = new Set<{ call: string; since: number }>();

/** `target` with every method that returns a promise counted in `unsettled` until the promise settles. */
function traced<T extends object>(store: string, target: T): T {
  return new Proxy(target, {
    get(object, key) {
      const value: unknown = Reflect.get(object, key, object);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        const result: unknown = Reflect.apply(value, object, args);
        if (!(result instanceof Promise)) return result;
        const entry = { call: `${store}.${String(key)}(${typeof args[0] === 'string' ? args[0] : '…'})`, since: Date.now() };
        unsettled.add(entry);
        return result.finally(() => unsettled.delete(entry));
      };
    },
  });
}

/** The store calls still running, oldest first, with how long they have run. */
export function unsettledCalls(): string {
  const now = Date.now();
  const calls = [...unsettled].map(({ call, since }) => `${call} for ${now - since} ms`);
  return calls.length > 0 ? calls.join(', ') : 'none';
}

/** Waits for `promise`; if it takes longer than `patienceMs`, says so on stderr, with the store calls it may be stuck behind. */
export async function reportingDelay<T>(what: string, promise: Promise<T>, patienceMs = 30_000): Promise<T> {
  const started = Date.now();
  const report = () => process.stderr.write(`${what} has taken ${Date.now() - started} ms so far; store calls running: ${unsettledCalls()}\n`);
  const timer = setInterval(report, patienceMs);
  try {
    return await promise;
  } finally {
    clearInterval(timer);
  }
}

export async function openStores(description: StackDescription): Promise<Stores> {
  const { dataDir } = description;
  const opened: { close(): Promise<void> }[] = [];
  const opening = async <T extends { close(): Promise<void> }>(store: Promise<T> | T): Promise<T> => {
    const open = await store;
    opened.push(open);
    return open;
  };
  try {
    const clickhouse = await opening(ChdbClickHouse.open({ dataDir: path.join(dataDir, 'clickhouse') }));
    const sql = await opening<Sql>(
      description.kind === 'embedded'
        ? PGliteSql.open({ dataDir: path.join(dataDir, 'postgres') })
        : new PgSql({ connectionString: required(description.databaseUrl) }),
    );
    const bus = await opening<EventBus>(
      description.kind === 'embedded'
        ? LocalLogBus.open({ dataDir: path.join(dataDir, 'bus') })
        : new KafkaBus({ brokers: required(description.brokers).split(','), clientId: 'plover-ingestion-test', logger: silentLogger() }),
    );
    await migratePostgres(sql);
    await migrateClickHouse(clickhouse);
    return { sql: traced('sql', sql), clickhouse: traced('clickhouse', clickhouse), bus: traced('bus', bus) };
  } catch (error) {
    // chDB allows one data directory per process: a half-opened stack must not keep this process from opening another.
    await closeInOrder(opened.reverse()).catch(() => undefined);
    throw error;
  }
}

/** Closes every store, also when another fails to close (an open chDB holds its data directory for the whole process). */
export async function closeStores(stores: Stores): Promise<void> {
  await closeInOrder([stores.bus, stores.clickhouse, stores.sql]);
}

/** Closes each store in turn (the bus first: its consumers may still call the others), the rest also after a failure. */
async function closeInOrder(stores: readonly { close(): Promise<void> }[]): Promise<void> {
  const failures: unknown[] = [];
  for (const store of stores) await store.close().catch((error: unknown) => failures.push(error));
  if (failures.length > 0) throw failures[0];
}

function required(value: string | undefined): string {
  if (!value) throw new Error('stack description is incomplete');
  return value;
}

async function openStack(name: string, description: StackDescription, cleanup: () => Promise<void>, deliveryTimeoutMs: number): Promise<Stack> {
  let stores: Stores | undefined = await openStores(description);
  let destroyed = false;
  const current = (): Stores => {
    if (!stores) throw new Error(`${name} stack is suspended`);
    return stores;
  };
  return {
    name,
    description,
    deliveryTimeoutMs,
    get stores() {
      return current();
    },
    async suspend() {
      await closeStores(current());
      stores = undefined;
    },
    async resume() {
      // A test that timed out may still get here after its file's afterAll destroyed the stack: reopening chDB
      // then would hold its data directory in this worker for good.
      if (destroyed) throw new Error(`${name} stack was destroyed`);
      stores = await openStores(description);
      return stores;
    },
    async destroy() {
      destroyed = true;
      if (stores) await reportingDelay(`closing the ${name} stack`, closeStores(stores));
      stores = undefined;
      await cleanup();
    },
  };
}

const DEFAULT_NAMES: StackDescription['settings'] = {
  topics: { events: 'events', historical: 'events_historical', deadLetter: 'events_dlq' },
  groupIds: { events: 'ingestion', historical: 'ingestion-historical' },
};

export const embedded: StackFactory = {
  name: 'embedded (LocalLogBus, PGlite, chDB)',
  async open() {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-ingestion-'));
    return openStack(this.name, { kind: 'embedded', dataDir, settings: DEFAULT_NAMES }, () => rm(dataDir, { recursive: true, force: true }), 30_000);
  },
};

export const distributed: StackFactory = {
  name: 'distributed (Kafka, Postgres, chDB)',
  async open() {
    const brokers = required(kafka.url);
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-ingestion-'));
    const database: TestDatabase = await createTestDatabase(required(postgres.url));
    const settings: StackDescription['settings'] = {
      topics: { events: uniqueName('events'), historical: uniqueName('historical'), deadLetter: uniqueName('dlq') },
      groupIds: { events: uniqueName('ingestion'), historical: uniqueName('ingestion-historical') },
    };
    return openStack(
      this.name,
      { kind: 'kafka', dataDir, databaseUrl: database.url, brokers, settings },
      async () => {
        await deleteTopics(brokers, Object.values(settings.topics));
        await database.drop();
        await rm(dataDir, { recursive: true, force: true });
      },
      // A consumer killed without leaving holds its partitions until the 10 s session timeout expires.
      60_000,
    );
  },
};

/** Embedded always; distributed when Postgres and Kafka are configured (under CI=true realService insists). */
export const stackFactories: StackFactory[] = postgres.url && kafka.url ? [embedded, distributed] : [embedded];

/** Ingestion time of every row a test consumer writes, so rows can be compared whole. */
export const INGESTED_AT = new Date('2024-06-01T00:00:00.000Z');

/** A consumer on the stack's stores, quiet and with the ingestion time fixed. */
export async function startConsumer(stack: Stack, overrides: Partial<ConsumerDeps> = {}): Promise<IngestionConsumer> {
  const consumer = await createConsumer({
    logger: silentLogger(),
    metrics: new Registry(),
    ...stack.stores,
    // A test reads what it produced at once: short batches do not wait for more.
    settings: { ...stack.description.settings, retryBackoffMs: 100, lingerMs: 0 },
    now: () => INGESTED_AT,
    ...overrides,
  });
  // Stopping waits for the batch in flight, i.e. for its store calls.
  return { stop: () => reportingDelay('stopping the ingestion consumer', consumer.stop()) };
}

/**
 * Resolves once `condition` holds; throws after `timeoutMs` with `what` in the message, also when a check itself
 * has not returned by then (naming the store calls still running).
 */
export async function waitFor(what: string, condition: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const check = withTimeout(
      condition(),
      Math.max(0, deadline - Date.now()),
      () => new Error(`timed out waiting for ${what}: the last check did not return; store calls running: ${unsettledCalls()}`),
    );
    if (await check) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Reads a topic from the start under a new group, collecting every message. */
export async function collectTopic(bus: EventBus, topic: string): Promise<{ received: BusMessage[]; stop: () => Promise<void> }> {
  const received: BusMessage[] = [];
  // Kafka refuses to subscribe to a topic that does not exist yet.
  await bus.ensureTopics([topic]);
  const consumer = await bus.consume({
    groupId: uniqueName('reader'),
    topics: [topic],
    handleBatch: (batch) => {
      received.push(...batch.messages);
      return Promise.resolve();
    },
  });
  return { received, stop: () => consumer.stop() };
}
