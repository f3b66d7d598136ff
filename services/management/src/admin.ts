import { migrate as migrateClickHouse, type ClickHouse } from '@plover/clickhouse';
import type { Logger } from '@plover/core';
import { migrate as migratePostgres, type Sql } from '@plover/postgres';

export interface AppliedMigrations {
  postgres: string[];
  clickhouse: string[];
}

/** Brings both databases to the current schema; what was applied is returned (nothing on a second run). */
export async function migrateAll(stores: { sql: Sql; clickhouse: ClickHouse }, logger: Logger): Promise<AppliedMigrations> {
  const postgres = await migratePostgres(stores.sql, { logger });
  const clickhouse = await migrateClickHouse(stores.clickhouse, { logger });
  return { postgres: postgres.applied, clickhouse: clickhouse.applied };
}
