import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { migrate } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';

describe('ChdbClickHouse durability', () => {
  let dataDir: string;
  let clickhouse: ChdbClickHouse;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-chdb-durability-'));
    clickhouse = await ChdbClickHouse.open({ dataDir });
    await migrate(clickhouse);
  });

  afterAll(async () => {
    await clickhouse?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("fsyncs inserted and merged parts (ClickHouse's defaults do not), for every table the migrations create", async () => {
    const settings = await clickhouse.query(
      'test.settings',
      "SELECT name, value FROM system.merge_tree_settings WHERE name IN ('fsync_after_insert', 'fsync_part_directory', 'min_compressed_bytes_to_fsync_after_merge') ORDER BY name",
    );
    expect(settings).toEqual([
      { name: 'fsync_after_insert', value: '1' },
      { name: 'fsync_part_directory', value: '1' },
      { name: 'min_compressed_bytes_to_fsync_after_merge', value: '1' },
    ]);
    // No table overrides them.
    const overriding = await clickhouse.query(
      'test.tables',
      "SELECT name FROM system.tables WHERE database = currentDatabase() AND create_table_query LIKE '%fsync%'",
    );
    expect(overriding).toEqual([]);
  });

  it('sync() resolves after inserts into tables named with and without their database, and with nothing to sync', async () => {
    await clickhouse.insert('plover_migrations', [{ version: 900, name: 'test_sync' }]);
    await clickhouse.insert('default.plover_migrations', [{ version: 901, name: 'test_sync_qualified' }]);
    await expect(clickhouse.sync()).resolves.toBeUndefined();
    await expect(clickhouse.sync()).resolves.toBeUndefined();
  });
});
