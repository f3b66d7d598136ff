import { migrate as migrateClickHouse, type ClickHouse } from '@plover/clickhouse';
import type { Logger } from '@plover/core';
import { migrate as migratePostgres, type Sql } from '@plover/postgres';

export interface AppliedMigrations {
  postgres: string[];
  clickhouse: string[];
}

/**
 * Brings both databases to the current schema; what was applied is returned (nothing on a second run).
 * `clickhouseDatabase` is created first when given — the handle must then not be bound to it, since a
 * ClickHouse connection to a database that does not exist yet cannot run anything.
 */
export async function migrateAll(stores: { sql: Sql; clickhouse: ClickHouse }, logger: Logger, clickhouseDatabase?: string): Promise<AppliedMigrations> {
  const postgres = await migratePostgres(stores.sql, { logger });
  const clickhouse = await migrateClickHouse(stores.clickhouse, { logger, database: clickhouseDatabase });
  return { postgres: postgres.applied, clickhouse: clickhouse.applied };
}
