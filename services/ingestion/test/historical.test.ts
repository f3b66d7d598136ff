import { countEvents, listEvents, type ClickHouse } from '@plover/clickhouse';
import { createProject } from '../../../packages/persons/test/support/stores';
import { captured, uuidOf } from './support/captured';
import { stackFactories, startConsumer, waitFor, type Stack } from './support/stacks';

/**
 * ClickHouse whose inserts of historical events wait until `release()`: an import stuck in its own consumer
 * group, to show that live events go by it.
 */
function holdingHistoricalInserts(inner: ClickHouse): { clickhouse: ClickHouse; release: () => void } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const clickhouse: ClickHouse = {
    command: (name, sql, params) => inner.command(name, sql, params),
    query: (name, sql, params, settings) => inner.query(name, sql, params, settings),
    queryRows: (name, sql, params, settings) => inner.queryRows(name, sql, params, settings),
    queryRaw: (name, sql, params, settings) => inner.queryRaw(name, sql, params, settings),
    queryRawStream: (name, sql, params, settings) => inner.queryRawStream(name, sql, params, settings),
    async insert(table, rows) {
      if (table === 'events' && rows.some((row) => row.historical_migration === true)) await released;
      await inner.insert(table, rows);
    },
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
  return { clickhouse, release };
}

describe.each(stackFactories)('historical imports: $name', (factory) => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await factory.open();
  });

  afterAll(async () => {
    await stack?.destroy();
  });

  it('are consumed in a group of their own, so a slow import never holds up live events, and are stored as historical', async () => {
    const projectId = await createProject(stack.stores.sql);
    const { clickhouse, release } = holdingHistoricalInserts(stack.stores.clickhouse);
    const consumer = await startConsumer(stack, { clickhouse });
    const { topics } = stack.description.settings;
    try {
      const imported = captured(projectId, 'importer', 'old order', {}, { historical: true });
      const live = captured(projectId, 'importer', 'new order', {}, { minutes: 60 });
      await stack.stores.bus.produce(topics.historical, [imported]);
      await stack.stores.bus.produce(topics.events, [live]);

      await waitFor('the live event', async () => (await countEvents(stack.stores.clickhouse, projectId)) === 1, stack.deliveryTimeoutMs);
      release();
      await waitFor('the imported event', async () => (await countEvents(stack.stores.clickhouse, projectId)) === 2, stack.deliveryTimeoutMs);

      const rows = await listEvents(stack.stores.clickhouse, projectId);
      expect(rows.map((row) => [row.uuid, row.event, row.historical_migration])).toEqual([
        [uuidOf(imported), 'old order', true],
        [uuidOf(live), 'new order', false],
      ]);
    } finally {
      release();
      await consumer.stop();
    }
  }, 120_000);
});
