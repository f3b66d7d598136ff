/** A chDB engine in a fresh temporary directory, migrated, for one test file; removed after it. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { migrate } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';

/** Registers the file's beforeAll/afterAll; the returned function gives the open engine. */
export function useScratchClickHouse(prefix: string): () => ChdbClickHouse {
  let ch: ChdbClickHouse | undefined;
  let dir: string | undefined;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), prefix));
    ch = await ChdbClickHouse.open({ dataDir: dir });
    await migrate(ch);
  });
  afterAll(async () => {
    await ch?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });
  return () => {
    if (ch === undefined) throw new Error('the scratch engine is not open yet');
    return ch;
  };
}
