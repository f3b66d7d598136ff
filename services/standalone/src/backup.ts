/**
 * `npm run backup -- <dir>` and `npm run restore -- <dir>`: a copy of an embedded data dir, the operator's second
 * line of defence after the stores' own durability (a lost disk, a deleted directory, a bad upgrade).
 *
 * Both run with the server stopped: they take the data dir's lock, so nothing writes while the three stores are
 * copied, and the copy is consistent across them (every committed offset's events are in the copy, and every
 * event still on the log after its group's offset is in the copy of the log). A backup directory holds:
 *   postgres.tar       PGlite's dumpDataDir() of a checkpointed cluster
 *   clickhouse/        ClickHouse's `BACKUP DATABASE … TO File(…)` of the events database
 *   bus/               the local log as it is: segments, and the consumer groups' offsets
 *   credentials.json   the keys printed at the first start, if the data dir still has them
 *   manifest.json      written last: a directory without it is not a complete backup
 */
import { randomBytes } from 'node:crypto';
import { cp, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { BACKUPS_DIR, ChdbClickHouse } from '@plover/chdb';
import { fsyncPath, syncTreeAndParent } from '@plover/core';
import { PGliteSql } from '@plover/postgres/pglite';
import { DATA_DIR_LOCK } from './data-dir';

const MANIFEST = 'manifest.json';
const FORMAT = 1;

interface Manifest {
  format: number;
  createdAt: string;
  /** The ClickHouse database the backup holds. */
  database: string;
}

/** Backs `dataDir` up into `target`, which must be missing or empty. */
export async function backupDataDir(dataDir: string, target: string): Promise<Manifest> {
  const postgresDir = path.join(dataDir, 'postgres');
  // Opening PGlite on a directory without a cluster would create one: a wrong PLOVER_DATA_DIR must not pass.
  if (!(await exists(path.join(postgresDir, 'PG_VERSION')))) throw new Error(`${dataDir} is not an embedded data dir (no postgres/PG_VERSION)`);
  await requireEmpty(target);

  const sql = await PGliteSql.open({ dataDir: postgresDir, guardTransactions: false });
  try {
    await writeFile(path.join(target, 'postgres.tar'), Buffer.from(await (await sql.dump()).arrayBuffer()));
  } finally {
    await sql.close();
  }

  const clickhouseDir = path.join(dataDir, 'clickhouse');
  const staged = `plover-${Date.now()}-${randomBytes(4).toString('hex')}`;
  const clickhouse = await ChdbClickHouse.open({ dataDir: clickhouseDir });
  let database: string;
  try {
    database = await currentDatabase(clickhouse);
    await clickhouse.command('backup', `BACKUP DATABASE ${quote(database)} TO File('${staged}')`);
  } finally {
    await clickhouse.close();
  }
  const stagedDir = path.join(clickhouseDir, BACKUPS_DIR, staged);
  await cp(stagedDir, path.join(target, 'clickhouse'), { recursive: true });
  await rm(stagedDir, { recursive: true, force: true });

  await cp(path.join(dataDir, 'bus'), path.join(target, 'bus'), { recursive: true });
  await copyIfPresent(path.join(dataDir, 'credentials.json'), path.join(target, 'credentials.json'));

  await syncTreeAndParent(target);
  const manifest: Manifest = { format: FORMAT, createdAt: new Date().toISOString(), database };
  await writeFile(path.join(target, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
  await fsyncPath(path.join(target, MANIFEST));
  await fsyncPath(target);
  return manifest;
}

/** Restores the backup in `source` into `dataDir`, which must be missing or empty. */
export async function restoreDataDir(source: string, dataDir: string): Promise<Manifest> {
  const manifest = await readManifest(source);
  // The lock file is the only entry the caller may have made already.
  await requireEmpty(dataDir, [DATA_DIR_LOCK]);

  const sql = await PGliteSql.open({
    dataDir: path.join(dataDir, 'postgres'),
    load: new Blob([await readFile(path.join(source, 'postgres.tar'))]),
    guardTransactions: false,
  });
  await sql.close();

  const clickhouseDir = path.join(dataDir, 'clickhouse');
  const staged = `restore-${randomBytes(4).toString('hex')}`;
  await cp(path.join(source, 'clickhouse'), path.join(clickhouseDir, BACKUPS_DIR, staged), { recursive: true });
  const clickhouse = await ChdbClickHouse.open({ dataDir: clickhouseDir });
  try {
    await clickhouse.command('restore', `RESTORE DATABASE ${quote(manifest.database)} FROM File('${staged}')`);
  } finally {
    await clickhouse.close();
  }
  await rm(path.join(clickhouseDir, BACKUPS_DIR, staged), { recursive: true, force: true });

  await cp(path.join(source, 'bus'), path.join(dataDir, 'bus'), { recursive: true });
  await copyIfPresent(path.join(source, 'credentials.json'), path.join(dataDir, 'credentials.json'));
  // RESTORE writes its parts without the inserts' fsyncs, and cp syncs nothing.
  await syncTreeAndParent(dataDir);
  return manifest;
}

async function readManifest(source: string): Promise<Manifest> {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await readFile(path.join(source, MANIFEST), 'utf8')) as Manifest;
  } catch (error) {
    throw new Error(`${source} is not a complete backup (no readable ${MANIFEST})`, { cause: error });
  }
  if (manifest.format !== FORMAT) throw new Error(`${source} is a backup of format ${manifest.format}; this version restores format ${FORMAT}`);
  return manifest;
}

async function requireEmpty(dir: string, allowed: readonly string[] = []): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const entries = (await readdir(dir)).filter((entry) => !allowed.includes(entry));
  if (entries.length > 0) throw new Error(`${dir} is not empty (${entries.slice(0, 3).join(', ')}${entries.length > 3 ? ', …' : ''})`);
}

async function currentDatabase(clickhouse: ChdbClickHouse): Promise<string> {
  const [row] = await clickhouse.query<{ name: string }>('backup.database', 'SELECT currentDatabase() AS name');
  if (!row) throw new Error('chDB named no current database');
  return row.name;
}

async function copyIfPresent(from: string, to: string): Promise<void> {
  if (await exists(from)) await cp(from, to, { preserveTimestamps: true });
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

function quote(identifier: string): string {
  return `\`${identifier.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
}
