import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { migrate } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { seed, type SeedEvent } from './data';

/** chDB in a temporary directory, migrated, with the seeded dataset for projects 1 and 2. */
export async function seededStore(perProject: number): Promise<{ ch: ChdbClickHouse; events: SeedEvent[]; close: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'plover-hogql-'));
  const ch = await ChdbClickHouse.open({ dataDir: dir });
  await migrate(ch);
  const events = await seed(ch, [1, 2], perProject);
  return {
    ch,
    events,
    close: async () => {
      await ch.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
