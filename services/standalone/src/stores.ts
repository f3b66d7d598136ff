import path from 'node:path';
import type { EventBus } from '@plover/bus';
import { LocalLogBus } from '@plover/bus';
import type { ClickHouse } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import type { Logger } from '@plover/core';
import { migrateAll, type AppliedMigrations } from '@plover/management/admin';
import type { Sql } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';

export interface EmbeddedStores {
  sql: Sql;
  clickhouse: ClickHouse;
  bus: EventBus;
  /** What this start applied (nothing when the data dir was already current). */
  migrations: AppliedMigrations;
  close(): Promise<void>;
}

export const TOPICS = ['events', 'events_historical', 'events_dlq'];

/** Opens the in-process stand-ins for Postgres, ClickHouse and Kafka under one data directory, migrated. */
export async function openEmbeddedStores(dataDir: string, logger: Logger): Promise<EmbeddedStores> {
  // The transaction guard's async hooks cost every request CPU; the code it guards is tested with it on.
  const sql = await PGliteSql.open({
    dataDir: path.join(dataDir, 'postgres'),
    guardTransactions: false,
    onCheckpointError: (error) => logger.warn({ err: error }, 'periodic checkpoint of the embedded Postgres failed; retried at the next check'),
  });
  const clickhouse = await ChdbClickHouse.open({ dataDir: path.join(dataDir, 'clickhouse') });
  const bus = await LocalLogBus.open({ dataDir: path.join(dataDir, 'bus'), logger });
  const close = async () => {
    await bus.close();
    await clickhouse.close();
    await sql.close();
  };
  try {
    const migrations = await migrateAll({ sql, clickhouse }, logger);
    await bus.ensureTopics(TOPICS);
    return { sql, clickhouse, bus, migrations, close };
  } catch (error) {
    await close();
    throw error;
  }
}
