import { countEvents, listEvents } from '@plover/clickhouse';
import { StorageError } from '@plover/core';
import { PersonReads, PersonStore, personUuid } from '@plover/persons';
import type { Sql, SqlExecutor } from '@plover/postgres';
import { Registry } from 'prom-client';
import { createProject } from '../../../packages/persons/test/support/stores';
import { captured } from './support/captured';
import { personStates, personUpdates, referenceStates } from './support/persons';
import { stackFactories, startConsumer, waitFor, type Stack } from './support/stacks';

/** `sql` with each statement and each transaction (named `transaction`) run through `around`, with the call that runs it. */
function intercepted(sql: Sql, around: <T>(name: string, run: () => Promise<T>) => Promise<T>): Sql {
  const executor = (inner: SqlExecutor): SqlExecutor => ({
    query: <R>(name: string, text: string, params?: readonly unknown[]) => around(name, () => inner.query<R>(name, text, params)),
    exec: (name, script) => inner.exec(name, script),
  });
  return {
    ...executor(sql),
    transaction: (fn) => around('transaction', () => sql.transaction((tx) => fn(executor(tx)))),
    ping: () => sql.ping(),
    close: () => sql.close(),
  };
}

async function counterValue(metrics: Registry, name: string): Promise<number> {
  const metric = await metrics.getSingleMetric(name)?.get();
  return (metric?.values ?? []).reduce((sum, value) => sum + value.value, 0);
}

// The consumer stages a batch's person property changes and stores them with one statement (packages/persons
// PersonSnapshot); these are the cases where that statement cannot simply succeed.
describe.each(stackFactories)('staged person changes: $name', (factory) => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await factory.open();
  });

  afterAll(async () => {
    await stack?.destroy();
  });

  const produce = (messages: Parameters<Stack['stores']['bus']['produce']>[1]) => stack.stores.bus.produce(stack.description.settings.topics.events, messages);

  it('a management PATCH while a batch is processed loses nothing: the events relying on it are processed after it', async () => {
    const projectId = await createProject(stack.stores.sql);
    const persons = new PersonStore(stack.stores.sql);
    let patchOnRead = false;
    // The PATCH lands after the batch read its persons and before its flush.
    const sql = intercepted(stack.stores.sql, async <T>(name: string, run: () => Promise<T>) => {
      const result = await run();
      if (patchOnRead && name === 'persons.findByDistinctIds') {
        patchOnRead = false;
        await persons.updateProperties(projectId, personUuid(projectId, 'user'), { set: { api: true } });
      }
      return result;
    });
    const metrics = new Registry();
    const consumer = await startConsumer(stack, { sql, metrics });
    const count = 20;
    try {
      await produce([captured(projectId, 'user', 'signed up')]);
      await waitFor('the person', async () => (await countEvents(stack.stores.clickhouse, projectId)) === 1, stack.deliveryTimeoutMs);
      patchOnRead = true;
      await produce(Array.from({ length: count }, (_, i) => captured(projectId, 'user', 'clicked', { $set: { counter: i } }, { minutes: 1 + i })));
      await waitFor('every event', async () => (await countEvents(stack.stores.clickhouse, projectId)) === count + 1, stack.deliveryTimeoutMs);
    } finally {
      await consumer.stop();
    }

    const person = await new PersonReads(stack.stores.sql).getByDistinctId(projectId, 'user');
    expect(person).toMatchObject({ properties: { api: true, counter: count - 1 }, version: count + 1 });
    // Each event's snapshot is the person after it, the PATCH included: they were decided again after it.
    const clicked = (await listEvents(stack.stores.clickhouse, projectId)).filter((row) => row.event === 'clicked');
    const snapshots = clicked.map((row) => JSON.parse(row.person_properties) as Record<string, unknown>);
    expect(snapshots.map(({ api, counter }) => ({ api, counter }))).toEqual(Array.from({ length: count }, (_, i) => ({ api: true, counter: i })));
    expect(await counterValue(metrics, 'plover_ingestion_person_reprocessed_total')).toBeGreaterThan(0);
  });

  it('Postgres failing at the flush: the redelivered batch ends as one by one, no version bumped twice', async () => {
    const projectId = await createProject(stack.stores.sql);
    const { messages, distinctIds } = personUpdates(projectId, 200, 10);
    let failFlush = true;
    const sql = intercepted(stack.stores.sql, <T>(name: string, run: () => Promise<T>) => {
      if (!failFlush || name !== 'persons.updateIfUnchanged') return run();
      failFlush = false;
      return Promise.reject(new StorageError('persons.updateIfUnchanged: connection terminated', true, '08006'));
    });
    const metrics = new Registry();
    const consumer = await startConsumer(stack, { sql, metrics, settings: { ...stack.description.settings, retryBackoffMs: 100, batchSize: 500 } });
    try {
      await produce(messages);
      await waitFor('every event', async () => (await countEvents(stack.stores.clickhouse, projectId)) === messages.length, stack.deliveryTimeoutMs);
    } finally {
      await consumer.stop();
    }

    expect(failFlush).toBe(false);
    expect(await counterValue(metrics, 'plover_ingestion_batch_failures_total')).toBeGreaterThan(0);
    expect(await personStates(stack.stores.sql, projectId, distinctIds)).toEqual(await referenceStates(messages, distinctIds));
  });

  it('a flush committed but reported failed (connection lost around its COMMIT): settled on redelivery, not applied twice', async () => {
    const projectId = await createProject(stack.stores.sql);
    const people = 10;
    const created = Array.from({ length: people }, (_, person) => captured(projectId, `person-${person}`, 'signed up'));
    const updates = personUpdates(projectId, 200, people);
    let flushRan = false;
    let loseAck = false;
    const sql = intercepted(stack.stores.sql, async <T>(name: string, run: () => Promise<T>) => {
      if (name === 'persons.updateIfUnchanged') flushRan = true;
      if (name !== 'transaction') return run();
      flushRan = false;
      const result = await run();
      if (loseAck && flushRan) {
        loseAck = false;
        throw new StorageError('transaction.commit: connection terminated', true, '08006');
      }
      return result;
    });
    const metrics = new Registry();
    const consumer = await startConsumer(stack, { sql, metrics, settings: { ...stack.description.settings, retryBackoffMs: 100, batchSize: 500 } });
    try {
      await produce(created);
      await waitFor('the persons', async () => (await countEvents(stack.stores.clickhouse, projectId)) === people, stack.deliveryTimeoutMs);
      // From here on every person write is a staged change, stored by a flush: the first one loses its answer.
      loseAck = true;
      await produce(updates.messages);
      await waitFor(
        'every event',
        async () => (await countEvents(stack.stores.clickhouse, projectId)) === people + updates.messages.length,
        stack.deliveryTimeoutMs,
      );
    } finally {
      await consumer.stop();
    }

    expect(loseAck).toBe(false);
    expect(await counterValue(metrics, 'plover_ingestion_batch_failures_total')).toBeGreaterThan(0);
    expect(await personStates(stack.stores.sql, projectId, updates.distinctIds)).toEqual(
      await referenceStates([...created, ...updates.messages], updates.distinctIds),
    );
  });
});
