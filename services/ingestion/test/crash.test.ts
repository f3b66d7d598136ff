import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { countEvents, countPersons } from '@plover/clickhouse';
import { PersonReads } from '@plover/persons';
import { Registry } from 'prom-client';
import { createProject } from '../../../packages/persons/test/support/stores';
import { captured, uuidOf } from './support/captured';
import { personStates, personUpdates, referenceStates } from './support/persons';
import { stackFactories, startConsumer, waitFor, type Stack } from './support/stacks';

const REPO_ROOT = path.resolve(__dirname, '../../..');
const CHILD_SCRIPT = path.join(__dirname, 'support', 'consumer-child.ts');
/** How long the child's counts must stay put before the kill: no batch is between two steps then. */
const SETTLED_MS = 500;

/**
 * Runs consumer-child.ts until every batch it has in flight is stored and hung, then kills it with SIGKILL. With
 * `hangTable`, until its batch hangs on that table's insert instead (see the child).
 */
async function crashAfterInsert(stack: Stack, options: { batchSize: number; committedBatches: number; hangTable?: string }): Promise<void> {
  const child = spawn(process.execPath, ['--conditions=plover-source', '--import', 'tsx', CHILD_SCRIPT], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      TEST_INGESTION_STACK: JSON.stringify(stack.description),
      TEST_BATCH_SIZE: String(options.batchSize),
      TEST_COMMITTED_BATCHES: String(options.committedBatches),
      ...(options.hangTable ? { TEST_HANG_TABLE: options.hangTable } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  let last = { inflight: 0, hung: 0, at: Date.now() };
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    const match = /^inflight (\d+) hung (\d+)$/.exec(line);
    if (match) last = { inflight: Number(match[1]), hung: Number(match[2]), at: Date.now() };
  });
  let gone = false;
  void exited.then(() => (gone = true));
  try {
    await waitFor(
      'the child to hang after its inserts',
      () => {
        if (gone) throw new Error('the consumer child exited');
        return last.hung > 0 && last.inflight === last.hung && Date.now() - last.at >= SETTLED_MS;
      },
      stack.deliveryTimeoutMs,
    );
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)} (last report: ${JSON.stringify(last)}; stderr: ${stderr})`, { cause: error });
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
}

async function alreadyStored(metrics: Registry): Promise<number> {
  const metric = await metrics.getSingleMetric('plover_ingestion_messages_total')?.get();
  return (metric?.values ?? []).filter((value) => value.labels.outcome === 'already_stored').reduce((sum, value) => sum + value.value, 0);
}

describe.each(stackFactories)('crash safety: $name', (factory) => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await factory.open();
  });

  afterAll(async () => {
    await stack?.destroy();
  });

  it('a consumer killed after its ClickHouse insert and before the commit: no duplicate, no second person update, nothing missing', async () => {
    const projectId = await createProject(stack.stores.sql);
    const { messages, distinctIds } = personUpdates(projectId, 400, 10);
    await stack.stores.bus.produce(stack.description.settings.topics.events, messages);

    // Embedded stores belong to one process at a time: the child gets them, then this process again.
    await stack.suspend();
    try {
      await crashAfterInsert(stack, { batchSize: 40, committedBatches: 1 });
    } finally {
      await stack.resume();
    }
    const { clickhouse } = stack.stores;
    const storedByTheChild = await countEvents(clickhouse, projectId);
    expect(storedByTheChild).toBeGreaterThan(40);

    const metrics = new Registry();
    const consumer = await startConsumer(stack, { metrics, settings: { ...stack.description.settings, batchSize: 40 } });
    try {
      await waitFor('every event', async () => (await countEvents(clickhouse, projectId)) === messages.length, stack.deliveryTimeoutMs);
    } finally {
      await consumer.stop();
    }

    // The uncommitted batches came again and were recognised as stored.
    expect(await alreadyStored(metrics)).toBeGreaterThan(0);
    const [raw] = await clickhouse.query<{ rows: string; uuids: string }>(
      'test.rawRows',
      'SELECT count() AS rows, uniqExact(uuid) AS uuids FROM events WHERE team_id = {projectId:Int64}',
      { projectId },
    );
    // Not even a copy on disk waiting for a merge: the replayed events were not inserted again.
    expect(raw).toEqual({ rows: String(messages.length), uuids: String(messages.length) });
    const stored = await clickhouse.query<{ uuid: string }>('test.uuids', 'SELECT toString(uuid) AS uuid FROM events FINAL WHERE team_id = {projectId:Int64}', {
      projectId,
    });
    expect(new Set(stored.map((row) => row.uuid))).toEqual(new Set(messages.map(uuidOf)));
    expect(await personStates(stack.stores.sql, projectId, distinctIds)).toEqual(await referenceStates(messages, distinctIds));
  }, 180_000);

  it('a consumer killed after a merge was committed in Postgres and before its person override reached ClickHouse: the redelivery copies it', async () => {
    const projectId = await createProject(stack.stores.sql);
    const { bus, clickhouse } = stack.stores;
    const topic = stack.description.settings.topics.events;
    // Two persons first, each with an event stored under its own uuid.
    const consumer = await startConsumer(stack);
    try {
      await bus.produce(topic, [captured(projectId, 'anon', '$pageview'), captured(projectId, 'user', '$pageview')]);
      await waitFor('the two persons', async () => (await countEvents(clickhouse, projectId)) === 2, stack.deliveryTimeoutMs);
    } finally {
      await consumer.stop();
    }
    await bus.produce(topic, [captured(projectId, 'user', '$identify', { $anon_distinct_id: 'anon' }, { minutes: 1 })]);

    await stack.suspend();
    try {
      await crashAfterInsert(stack, { batchSize: 40, committedBatches: 0, hangTable: 'person_overrides' });
    } finally {
      await stack.resume();
    }
    // The merge is done in Postgres; ClickHouse has no override and not the $identify.
    expect(await new PersonReads(stack.stores.sql).getByDistinctId(projectId, 'anon')).toMatchObject({ distinctIds: expect.arrayContaining(['anon', 'user']) });
    expect(await countEvents(stack.stores.clickhouse, projectId)).toBe(2);

    const again = await startConsumer(stack);
    try {
      await waitFor('the $identify', async () => (await countEvents(stack.stores.clickhouse, projectId)) === 3, stack.deliveryTimeoutMs);
    } finally {
      await again.stop();
    }
    // The anon person's event counts as the merged person: one person, as insights count them.
    expect(await countPersons(stack.stores.clickhouse, projectId)).toBe(1);
  }, 180_000);
});
