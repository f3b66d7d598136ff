import path from 'node:path';
import type { EventBus } from '@plover/bus';
import { LocalLogBus } from '@plover/bus';
import type { ClickHouse } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import type { Logger } from '@plover/core';
import { migrateAll, type AppliedMigrations } from '@plover/management/admin';
import type { Sql } from '@plover/postgres';
import { openEmbeddedPostgres, openSqlThread, type SqlThreadData } from './sql-thread';

export interface EmbeddedStores {
  sql: Sql;
  clickhouse: ClickHouse;
  bus: EventBus;
  /** What this start applied (nothing when the data dir was already current). */
  migrations: AppliedMigrations;
  close(): Promise<void>;
}

export const TOPICS = ['events', 'events_historical', 'events_dlq'];

/**
 * Opens the in-process stand-ins for Postgres, ClickHouse and Kafka under one data directory, migrated. With
 * `sqlThread`, PGlite runs in a thread of its own (sql-thread.ts), which also serves the ports given there.
 */
export async function openEmbeddedStores(
  dataDir: string,
  logger: Logger,
  options: { sqlThread?: Pick<SqlThreadData, 'clientPorts' | 'logging'> } = {},
): Promise<EmbeddedStores> {
  const postgresDir = path.join(dataDir, 'postgres');
  const [postgres, clickhouse] = await Promise.all([
    options.sqlThread ? openSqlThread({ ...options.sqlThread, dataDir: postgresDir }, logger) : openEmbeddedPostgres(postgresDir, logger),
    ChdbClickHouse.open({ dataDir: path.join(dataDir, 'clickhouse') }),
  ]);
  const sql = 'sql' in postgres ? postgres.sql : postgres;
  const bus = await LocalLogBus.open({ dataDir: path.join(dataDir, 'bus'), logger });
  const close = async () => {
    await bus.close();
    await clickhouse.close();
    await postgres.close();
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
