/**
 * Stored recordings for the management suites: one migrated chDB per suite, shared by its database backends
 * (each backend's projects numbered in a range of their own, so their rows never meet). Recorded messages come
 * from the replay store's own test support (snapshotBatch).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChdbClickHouse } from '@plover/chdb';
import { migrate, type ClickHouse } from '@plover/clickhouse';
import { createLogger } from '@plover/core';
import type { Sql } from '@plover/postgres';

/** A migrated chDB for the suite (opened before its tests, closed and removed after them). */
export function useChdb(): () => ClickHouse {
  let clickhouse: ClickHouse;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'plover-mgmt-ch-'));
    clickhouse = await ChdbClickHouse.open({ dataDir: dir });
    await migrate(clickhouse, { logger: createLogger({ service: 'test', level: 'silent' }) });
  });
  afterAll(async () => {
    await clickhouse.close();
    await rm(dir, { recursive: true, force: true });
  });
  return () => clickhouse;
}

/** Numbers the backend's next projects from its own range: backends sharing one ClickHouse keep their teams apart. */
export async function ownProjectIds(sql: Sql, backendIndex: number): Promise<void> {
  await sql.query('t.ids', `ALTER TABLE projects ALTER COLUMN id RESTART WITH ${(backendIndex + 1) * 100_000}`);
}
