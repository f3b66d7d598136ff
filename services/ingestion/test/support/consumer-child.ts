/**
 * A consumer process for the crash test, which kills it with SIGKILL. The first TEST_COMMITTED_BATCHES events
 * inserts behave; every later one is carried out in ClickHouse and then never returns, so its batch is stored but
 * never committed. With TEST_HANG_TABLE set, the first insert into that table never returns instead, and is
 * never carried out: the batch stops between its Postgres writes and that table's rows. The process prints `inflight <n> hung <m>` whenever either count changes: once every batch in
 * flight is hung, nothing is half done, and a kill lands exactly between the insert and the commit. It prints
 * `handled <topic> <partition> <next offset>` when a batch's handler resolved, i.e. the moment the bus may commit
 * it (stdout on a pipe is written synchronously, so the line's write(2) marks that moment in an strace).
 *
 * Run from the repository root: node --conditions=plover-source --import tsx services/ingestion/test/support/consumer-child.ts
 * with TEST_INGESTION_STACK (a StackDescription as JSON) and TEST_BATCH_SIZE.
 */
import type { EventBus } from '@plover/bus';
import type { ClickHouse } from '@plover/clickhouse';
import { silentLogger } from '@plover/core';
import { createConsumer } from '@plover/ingestion/consumer';
import { Registry } from 'prom-client';
import { openStores, type StackDescription } from './stacks';

async function main(): Promise<void> {
  const description = JSON.parse(required('TEST_INGESTION_STACK')) as StackDescription;
  const committedBatches = Number(required('TEST_COMMITTED_BATCHES'));
  const hangTable = process.env.TEST_HANG_TABLE;
  const stores = await openStores(description);

  let inflight = 0;
  let hung = 0;
  let inserts = 0;
  const report = () => process.stdout.write(`inflight ${inflight} hung ${hung}\n`);

  const clickhouse: ClickHouse = {
    command: (name, sql, params) => stores.clickhouse.command(name, sql, params),
    query: (name, sql, params, settings) => stores.clickhouse.query(name, sql, params, settings),
    queryRows: (name, sql, params, settings) => stores.clickhouse.queryRows(name, sql, params, settings),
    queryRaw: (name, sql, params, settings) => stores.clickhouse.queryRaw(name, sql, params, settings),
    queryRawStream: (name, sql, params, settings) => stores.clickhouse.queryRawStream(name, sql, params, settings),
    async insert(table, rows) {
      if (hangTable === undefined) {
        await stores.clickhouse.insert(table, rows);
        if (table !== 'events' || ++inserts <= committedBatches) return;
      } else if (table !== hangTable) {
        return stores.clickhouse.insert(table, rows);
      }
      hung += 1;
      report();
      await new Promise<never>(() => undefined);
    },
    sync: async () => {
      await stores.clickhouse.sync?.();
    },
    ping: () => stores.clickhouse.ping(),
    close: () => stores.clickhouse.close(),
  };
  const bus: EventBus = {
    produce: (topic, messages) => stores.bus.produce(topic, messages),
    consume: (options) =>
      stores.bus.consume({
        ...options,
        async handleBatch(batch) {
          inflight += 1;
          report();
          try {
            await options.handleBatch(batch);
            const last = batch.messages[batch.messages.length - 1];
            if (last) process.stdout.write(`handled ${batch.topic} ${batch.partition} ${BigInt(last.offset) + 1n}\n`);
          } finally {
            inflight -= 1;
            report();
          }
        },
      }),
    ensureTopics: (topics) => stores.bus.ensureTopics(topics),
    ping: () => stores.bus.ping(),
    close: () => stores.bus.close(),
  };
  await createConsumer({
    logger: silentLogger(),
    metrics: new Registry(),
    sql: stores.sql,
    clickhouse,
    bus,
    settings: { ...description.settings, batchSize: Number(required('TEST_BATCH_SIZE')), lingerMs: 0 },
  });
}

function required(variable: string): string {
  const value = process.env[variable];
  if (!value) throw new Error(`${variable} is not set`);
  return value;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
