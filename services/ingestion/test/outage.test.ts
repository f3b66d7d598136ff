import { HttpClickHouse, countEvents, type ClickHouse, type ClickHouseParams, type StatementSettings } from '@plover/clickhouse';
import { StorageError } from '@plover/core';
import type { IngestionConsumer } from '@plover/ingestion/consumer';
import { PgSql, type Sql, type SqlExecutor } from '@plover/postgres';
import path from 'node:path';
import { Registry } from 'prom-client';
import { startChdbHttpServer } from '../../../packages/clickhouse/test/support/chdb-http-server';
import { createProject } from '../../../packages/persons/test/support/stores';
import { personStates, personUpdates, referenceStates } from './support/persons';
import { collectTopic, stackFactories, startConsumer, waitFor, type Stack } from './support/stacks';
import { startTcpProxy } from './support/tcp-proxy';

/** A dependency the test can take away and give back while the consumer runs. */
interface Outage {
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Stand-in for an unreachable store where the stack has no server to cut (PGlite and chDB live in the process):
 * every call fails as a dropped connection does, with a retriable StorageError.
 */
class Switch {
  down = false;
  check(operation: string): void {
    if (this.down) throw new StorageError(`${operation}: connection refused (test outage)`, true, 'ECONNREFUSED');
  }
}

function switchedSql(inner: Sql, power: Switch): Sql {
  const executor = (target: SqlExecutor): SqlExecutor => ({
    query: (name, text, params) => (power.check(name), target.query(name, text, params)),
    exec: (name, script) => (power.check(name), target.exec(name, script)),
  });
  return {
    ...executor(inner),
    transaction: (fn) => (power.check('transaction'), inner.transaction((tx) => fn(executor(tx)))),
    ping: () => (power.check('ping'), inner.ping()),
    close: () => inner.close(),
  };
}

function switchedClickHouse(inner: ClickHouse, power: Switch): ClickHouse {
  return {
    command: (name: string, sql: string, params?: ClickHouseParams) => (power.check(name), inner.command(name, sql, params)),
    query: <R>(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings) => (
      power.check(name),
      inner.query<R>(name, sql, params, settings)
    ),
    queryRows: (name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings) => (
      power.check(name),
      inner.queryRows(name, sql, params, settings)
    ),
    queryRaw: (name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings) => (
      power.check(name),
      inner.queryRaw(name, sql, params, settings)
    ),
    queryRawStream: (name, sql, params, settings) => (power.check(name), inner.queryRawStream(name, sql, params, settings)),
    insert: (table, rows) => (power.check(`insert into ${table}`), inner.insert(table, rows)),
    ping: () => (power.check('ping'), inner.ping()),
    close: () => inner.close(),
  };
}

function switchOutage(power: Switch): Outage {
  return {
    down: () => Promise.resolve(void (power.down = true)),
    up: () => Promise.resolve(void (power.down = false)),
    close: () => Promise.resolve(),
  };
}

/** Postgres for the consumer: through a TCP proxy to the real server, or PGlite behind a switch. */
async function postgresOutage(stack: Stack): Promise<{ sql: Sql; outage: Outage }> {
  const { databaseUrl } = stack.description;
  if (!databaseUrl) {
    const power = new Switch();
    return { sql: switchedSql(stack.stores.sql, power), outage: switchOutage(power) };
  }
  const url = new URL(databaseUrl);
  const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  url.hostname = proxy.host;
  url.port = String(proxy.port);
  // A short connection timeout, as an operator would set it, so a refused connection fails fast either way.
  const sql = new PgSql({ connectionString: url.toString(), max: 10, connectionTimeoutMs: 1_000 });
  return {
    sql,
    outage: {
      down: () => proxy.block(),
      up: () => proxy.unblock(),
      close: async () => {
        await sql.close();
        await proxy.close();
      },
    },
  };
}

/** ClickHouse for the consumer: over HTTP through a TCP proxy (distributed stack), or chDB behind a switch. */
async function clickHouseOutage(stack: Stack): Promise<{ clickhouse: ClickHouse; outage: Outage }> {
  if (stack.description.kind === 'embedded') {
    const power = new Switch();
    return { clickhouse: switchedClickHouse(stack.stores.clickhouse, power), outage: switchOutage(power) };
  }
  // ClickHouse's HTTP interface served by chDB on the stack's own data directory (no server on this machine).
  const server = await startChdbHttpServer(path.join(stack.description.dataDir, 'clickhouse'));
  const url = new URL(server.url);
  const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port) });
  const clickhouse = new HttpClickHouse({ url: `http://${proxy.host}:${proxy.port}`, requestTimeoutMs: 5_000 });
  return {
    clickhouse,
    outage: {
      down: () => proxy.block(),
      up: () => proxy.unblock(),
      close: async () => {
        await clickhouse.close();
        await proxy.close();
        await server.close();
      },
    },
  };
}

async function batchFailures(metrics: Registry): Promise<number> {
  const metric = await metrics.getSingleMetric('plover_ingestion_batch_failures_total')?.get();
  return (metric?.values ?? []).filter((value) => value.labels.retriable === 'true').reduce((sum, value) => sum + value.value, 0);
}

describe.each(stackFactories)('outages: $name', (factory) => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await factory.open();
  });

  afterAll(async () => {
    await stack?.destroy();
  });

  it.each([
    ['Postgres', async (s: Stack) => postgresOutage(s)],
    ['ClickHouse', async (s: Stack) => clickHouseOutage(s)],
  ] as const)(
    '%s unreachable mid-stream: batches are retried until it is back, nothing is lost or applied twice',
    async (_name, makeOutage) => {
      const projectId = await createProject(stack.stores.sql);
      const { messages, distinctIds } = personUpdates(projectId, 400, 20);
      const { outage, ...replaced } = await makeOutage(stack);
      const metrics = new Registry();
      const deadLetters = await collectTopic(stack.stores.bus, stack.description.settings.topics.deadLetter);
      let consumer: IngestionConsumer | undefined;
      try {
        consumer = await startConsumer(stack, { ...replaced, metrics, settings: { ...stack.description.settings, batchSize: 25, retryBackoffMs: 100 } });
        await stack.stores.bus.produce(stack.description.settings.topics.events, messages);
        const count = () => countEvents(stack.stores.clickhouse, projectId);
        await waitFor('the first batches', async () => (await count()) >= 50, stack.deliveryTimeoutMs);

        await outage.down();
        await waitFor('failed attempts', async () => (await batchFailures(metrics)) >= 3, stack.deliveryTimeoutMs);
        // A batch already past its Postgres step when it went away (its ClickHouse insert in flight) still lands;
        // after that, nothing is stored for as long as the outage lasts.
        let stalled = await count();
        await waitFor(
          'no event stored for 300 ms',
          async () => {
            await new Promise((resolve) => setTimeout(resolve, 300));
            const now = await count();
            const still = now === stalled;
            stalled = now;
            return still;
          },
          stack.deliveryTimeoutMs,
        );
        expect(stalled).toBeLessThan(messages.length);

        await outage.up();
        await waitFor('every event', async () => (await count()) === messages.length, stack.deliveryTimeoutMs);
      } finally {
        await consumer?.stop();
        await outage.close();
        await deadLetters.stop();
      }
      expect(await personStates(stack.stores.sql, projectId, distinctIds)).toEqual(await referenceStates(messages, distinctIds));
      expect(deadLetters.received).toEqual([]);
    },
    180_000,
  );
});
