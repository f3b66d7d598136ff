import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { silentLogger, type Logger } from '@plover/core';
import type { Sql, SqlExecutor } from './sql';

/** The package's migrations, found the same way from src (tsx, jest) and from dist (after tsc). */
const MIGRATIONS_DIR = path.resolve(__dirname, '../migrations');

// Any fixed number works; it only has to be the same for every process migrating this database.
const MIGRATION_LOCK = 7_140_221_000;

const FILE_NAME = /^(\d{3,})_([a-z0-9_]+)\.sql$/;

export interface MigrateOptions {
  /** Directory of `NNN_name.sql` files; the package's own migrations by default. */
  dir?: string;
  logger?: Logger;
}

interface Migration {
  version: number;
  name: string;
  /** File name without `.sql`, e.g. `001_accounts`: what `migrate` reports. */
  id: string;
  script: string;
}

/**
 * Reads the migration files in version order (numerically: 1000 after 999), refusing names that do not
 * parse and duplicate versions before anything touches the database.
 */
async function readMigrations(dir: string): Promise<Migration[]> {
  // Dot files are the editor's and the OS's (swap files, .DS_Store), never migrations.
  const files = (await readdir(dir)).filter((file) => !file.startsWith('.'));
  const migrations = await Promise.all(
    files.map(async (file): Promise<Migration> => {
      const match = FILE_NAME.exec(file);
      if (!match) throw new Error(`migration file ${file} in ${dir} is not named NNN_name.sql`);
      const [, digits = '', name = ''] = match;
      const script = await readFile(path.join(dir, file), 'utf8');
      return { version: Number(digits), name, id: file.slice(0, -'.sql'.length), script };
    }),
  );
  migrations.sort((a, b) => a.version - b.version);
  migrations.forEach((migration, index) => {
    const previous = migrations[index - 1];
    if (previous?.version === migration.version) {
      throw new Error(`migrations ${previous.id} and ${migration.id} share version ${migration.version}`);
    }
  });
  return migrations;
}

/**
 * Applies the pending migrations and returns their ids (`001_accounts`…); a database already current
 * applies nothing. The whole run is one transaction holding an advisory lock, so processes migrating the
 * same database at once take turns and each migration is applied exactly once; a failing migration leaves
 * the database as it was. Because of that transaction, migrations cannot use statements that refuse to run
 * inside one (CREATE INDEX CONCURRENTLY, CREATE DATABASE).
 */
export async function migrate(sql: Sql, options: MigrateOptions = {}): Promise<{ applied: string[] }> {
  const logger = options.logger ?? silentLogger();
  const migrations = await readMigrations(options.dir ?? MIGRATIONS_DIR);
  // A current database is only read, so that a start on a disk too full for Postgres to write (embedded mode
  // refuses writes then) still starts; the transaction below looks again under the lock.
  if (pendingOf(migrations, await recordedVersions(sql)).length === 0) return { applied: [] };

  return sql.transaction(async (tx) => {
    // Taken before the table is even created: two processes creating it at once would collide.
    await tx.query('migrate.lock', 'SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(
      'migrate.createTable',
      `CREATE TABLE IF NOT EXISTS plover_migrations (
         version integer PRIMARY KEY,
         name text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    const applied: string[] = [];
    for (const migration of pendingOf(migrations, await recordedVersions(tx))) {
      logger.info({ migration: migration.id }, 'applying postgres migration');
      await tx.exec(`migrate.${migration.id}`, migration.script);
      await tx.query('migrate.record', 'INSERT INTO plover_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      applied.push(migration.id);
    }
    return { applied };
  });
}

/** The applied migrations' names by version; none before the first migration created the table. */
async function recordedVersions(sql: SqlExecutor): Promise<Map<number, string>> {
  const table = await sql.query<{ present: boolean }>('migrate.tablePresent', `SELECT to_regclass('plover_migrations') IS NOT NULL AS present`);
  if (table.rows[0]?.present !== true) return new Map();
  const recorded = await sql.query<{ version: number; name: string }>('migrate.recorded', 'SELECT version, name FROM plover_migrations');
  return new Map(recorded.rows.map((row) => [row.version, row.name]));
}

/** The migrations not applied yet, in order. */
function pendingOf(migrations: readonly Migration[], recorded: ReadonlyMap<number, string>): Migration[] {
  return migrations.filter((migration) => {
    const recordedName = recorded.get(migration.version);
    if (recordedName === undefined) return true;
    // A renamed or renumbered file would otherwise be skipped silently while its content never ran.
    if (recordedName !== migration.name) throw new Error(`migration ${migration.id} does not match version ${migration.version} applied as "${recordedName}"`);
    return false;
  });
}
