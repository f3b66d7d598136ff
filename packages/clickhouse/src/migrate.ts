/**
 * Schema migrations for ClickHouse: the numbered files in packages/clickhouse/migrations (`NNN_name.sql`), the same
 * files for chDB and a server, applied in order and recorded in `plover_migrations`.
 *
 * ClickHouse has no transactions or advisory locks, so migrate() cannot stop two processes from migrating at
 * once. Instead every step is harmless to repeat: migration statements are idempotent (`IF NOT EXISTS`, and any
 * future ALTER must be written so too), and `plover_migrations` is a ReplacingMergeTree keyed by version, read
 * with FINAL, so a version that two runs both record still counts once. Two concurrent runs may both execute
 * a pending migration's statements; the second execution then changes nothing. A run that dies halfway is
 * finished by the next one, which re-executes the unrecorded migration from its first statement.
 *
 * On a handle to a cluster (`ch.cluster`) every statement, the ledger's and the database's included, is sent in
 * its cluster form (cluster.ts): `ON CLUSTER`, local tables and Distributed tables. The files stay single-node SQL.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { silentLogger, StorageError, type Logger } from '@plover/core';
import { clusterStatements } from './cluster';
import type { ClickHouse } from './port';

export interface MigrateOptions {
  /**
   * Database to migrate, created if missing. Lets a handle connected to `default` bootstrap a fresh server
   * (an HTTP handle connected to a database that does not exist yet cannot run anything). Defaults to the
   * handle's current database, which is then not created.
   */
  database?: string;
  /** Folder of `NNN_name.sql` files; defaults to this package's migrations. */
  dir?: string;
  logger?: Logger;
}

interface Migration {
  version: number;
  name: string;
  statements: string[];
}

/** Resolves from src/ (tests, tsx) and from dist/ (built) alike: both sit next to migrations/. */
const DEFAULT_DIR = path.join(__dirname, '..', 'migrations');
const FILE_NAME = /^(\d{3})_([a-z0-9_]+)\.sql$/;
/** Where a migration file's SQL names its database: `CREATE TABLE IF NOT EXISTS {database}.events`. */
const DATABASE_PLACEHOLDER = /\{database\}/g;

/** Applies the pending migrations in version order; `applied` names them (empty when up to date). */
export async function migrate(ch: ClickHouse, options: MigrateOptions = {}): Promise<{ applied: string[] }> {
  const logger = options.logger ?? silentLogger();
  const migrations = await loadMigrations(options.dir ?? DEFAULT_DIR);
  const database = options.database ?? (await currentDatabase(ch));
  const db = quoteIdentifier(database);
  /** Runs a DDL statement as written on a single node, and in its cluster form on a cluster. */
  const ddl = async (name: string, statement: string) => {
    if (!ch.cluster) return ch.command(name, statement);
    for (const [index, clustered] of clusterStatements(statement, ch.cluster).entries())
      await ch.command(index === 0 ? name : `${name}.distributed`, clustered);
  };
  if (options.database !== undefined) await ddl('migrate.createDatabase', `CREATE DATABASE IF NOT EXISTS ${db}`);
  await ddl(
    'migrate.createLedger',
    `CREATE TABLE IF NOT EXISTS ${db}.plover_migrations
     (version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3))
     ENGINE = ReplacingMergeTree ORDER BY version`,
  );
  const recorded = await ch.query<{ version: number; name: string }>('migrate.recorded', `SELECT version, name FROM ${db}.plover_migrations FINAL`);
  const recordedNames = new Map(recorded.map((row) => [row.version, row.name]));

  const applied: string[] = [];
  for (const migration of migrations) {
    const label = `${String(migration.version).padStart(3, '0')}_${migration.name}`;
    const recordedName = recordedNames.get(migration.version);
    if (recordedName !== undefined) {
      // A renamed or renumbered file would otherwise be skipped silently while its content never ran.
      if (recordedName !== migration.name) {
        throw new StorageError(`Migration ${label} does not match version ${migration.version} applied as "${recordedName}"`, false, 'BAD_MIGRATION');
      }
      continue;
    }
    logger.info({ database, migration: label }, 'applying ClickHouse migration');
    for (const [index, statement] of migration.statements.entries()) {
      await ddl(`migrate.${label}.${index + 1}`, statement.replace(DATABASE_PLACEHOLDER, db));
    }
    await ch.command('migrate.record', `INSERT INTO ${db}.plover_migrations (version, name) VALUES ({version:UInt32}, {name:String})`, {
      version: migration.version,
      name: migration.name,
    });
    applied.push(label);
  }
  logger.info({ database, applied: applied.length }, 'ClickHouse migrations up to date');
  return { applied };
}

/** Reads and splits the migration files, refusing a folder whose numbering is ambiguous. */
async function loadMigrations(dir: string): Promise<Migration[]> {
  const migrations: Migration[] = [];
  for (const file of (await readdir(dir)).sort()) {
    if (!file.endsWith('.sql')) continue;
    const match = FILE_NAME.exec(file);
    if (!match) throw new StorageError(`Migration file ${file} is not named NNN_name.sql`, false, 'BAD_MIGRATION');
    const version = Number(match[1]);
    if (migrations.some((m) => m.version === version)) {
      throw new StorageError(`Two migration files have version ${version}`, false, 'BAD_MIGRATION');
    }
    migrations.push({ version, name: match[2] ?? '', statements: splitStatements(await readFile(path.join(dir, file), 'utf8')) });
  }
  return migrations;
}

/**
 * A file holds statements separated by a `;` that ends a line (so a `;` inside a string or a comment mid-line
 * does not split). Chunks holding only comments and blank lines are dropped.
 */
export function splitStatements(sql: string): string[] {
  return sql
    .split(/;[ \t]*(?:\r?\n|$)/)
    .map((chunk) => chunk.trim())
    .filter((chunk) => chunk.split('\n').some((line) => line.trim() !== '' && !line.trim().startsWith('--')));
}

async function currentDatabase(ch: ClickHouse): Promise<string> {
  const [row] = await ch.query<{ database: string }>('migrate.currentDatabase', 'SELECT currentDatabase() AS database');
  if (!row) throw new StorageError('ClickHouse returned no current database', false, undefined);
  return row.database;
}

function quoteIdentifier(name: string): string {
  return `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
}
