import { migrate, PgSql, type Sql } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';
import { createTestDatabase } from './database';

/** A fresh database with every migration applied. */
export interface MigratedDatabase {
  sql: Sql;
  /** The real server's connection string (undefined on PGlite), for a second pool on the same database. */
  url?: string;
  close(): Promise<void>;
}

export interface SqlBackend {
  name: string;
  open(): Promise<MigratedDatabase>;
}

export async function openMigratedPGlite(): Promise<MigratedDatabase> {
  const sql = await PGliteSql.open();
  await migrate(sql);
  return { sql, close: () => sql.close() };
}

/** A new database on the real server (dropped on close); `max` is the pool size. */
export async function openMigratedPostgres(adminUrl: string, max = 10): Promise<MigratedDatabase & { url: string }> {
  const database = await createTestDatabase(adminUrl);
  const sql = new PgSql({ connectionString: database.url, max });
  await migrate(sql);
  return {
    sql,
    url: database.url,
    async close() {
      await sql.close();
      await database.drop();
    },
  };
}

/** PGlite always; real Postgres when its admin URL is known (CI fails earlier, in realService, when it is not). */
export function sqlBackends(postgresUrl: string | undefined, max = 10): SqlBackend[] {
  const pglite: SqlBackend = { name: 'PGlite', open: openMigratedPGlite };
  return postgresUrl ? [pglite, { name: 'Postgres', open: () => openMigratedPostgres(postgresUrl, max) }] : [pglite];
}
