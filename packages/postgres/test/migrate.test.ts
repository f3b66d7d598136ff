import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { migrate, WritesRefusedWhen, type Sql } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';

describe('migrate', () => {
  let sql: Sql;
  let root: string;
  let dirs = 0;

  /** A migrations directory holding exactly `files`. */
  async function migrations(files: Record<string, string>): Promise<string> {
    const dir = path.join(root, String(++dirs));
    await mkdir(dir);
    await Promise.all(Object.entries(files).map(([name, script]) => writeFile(path.join(dir, name), script)));
    return dir;
  }

  const tables = async (): Promise<string[]> =>
    (
      await sql.query<{ name: string }>(
        'test.tables',
        `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`,
      )
    ).rows.map((row) => row.name);

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'plover-migrate-'));
    sql = await PGliteSql.open();
  });
  afterAll(async () => {
    await sql.close();
    await rm(root, { recursive: true, force: true });
  });
  beforeEach(() => sql.exec('test.reset', 'DROP SCHEMA public CASCADE; CREATE SCHEMA public'));

  it('refuses badly named files and duplicate versions before touching the database', async () => {
    await expect(migrate(sql, { dir: await migrations({ '001-accounts.sql': 'SELECT 1' }) })).rejects.toThrow(/NNN_name\.sql/);
    await expect(migrate(sql, { dir: await migrations({ '1_accounts.sql': 'SELECT 1' }) })).rejects.toThrow(/NNN_name\.sql/);
    await expect(migrate(sql, { dir: await migrations({ '001_a.sql': 'SELECT 1', '001_b.sql': 'SELECT 1' }) })).rejects.toThrow(/share version 1/);
    expect(await tables()).toEqual([]);
  });

  it('applies files in numeric version order, several statements each', async () => {
    const dir = await migrations({
      // 1000 sorts before 999 as text: applying by name would fail on the missing table.
      '1000_second.sql': 'ALTER TABLE things ADD COLUMN label text; INSERT INTO things VALUES (1, $$one$$);',
      '999_first.sql': 'CREATE TABLE things (id integer PRIMARY KEY);',
    });
    await expect(migrate(sql, { dir })).resolves.toEqual({ applied: ['999_first', '1000_second'] });
    expect((await sql.query('test.things', 'SELECT id, label FROM things')).rows).toEqual([{ id: 1, label: 'one' }]);
    await expect(migrate(sql, { dir })).resolves.toEqual({ applied: [] });
  });

  it('leaves the database as it was when a migration fails', async () => {
    const dir = await migrations({ '001_good.sql': 'CREATE TABLE good (id integer);', '002_bad.sql': 'CREATE TABLE bad (id nosuchtype);' });
    await expect(migrate(sql, { dir })).rejects.toMatchObject({ name: 'StorageError', code: '42704', message: expect.stringMatching(/^migrate\.002_bad: /) });
    expect(await tables()).toEqual([]);
  });

  it('refuses a file whose version was applied under another name', async () => {
    await migrate(sql, { dir: await migrations({ '001_first.sql': 'CREATE TABLE first (id integer);' }) });
    await expect(migrate(sql, { dir: await migrations({ '001_renamed.sql': 'CREATE TABLE renamed (id integer);' }) })).rejects.toThrow(/applied as "first"/);
  });

  it('only reads a database already current, so that it migrates while writes are refused (a start on a full disk)', async () => {
    const dir = await migrations({ '001_first.sql': 'CREATE TABLE first (id integer);', '002_second.sql': 'CREATE TABLE second (id integer);' });
    const full = new WritesRefusedWhen(sql, () => 'the disk is full');
    await expect(migrate(full, { dir })).rejects.toMatchObject({ name: 'StorageError', message: expect.stringMatching(/read-only|the disk is full/) });
    await migrate(sql, { dir });
    await expect(migrate(full, { dir })).resolves.toEqual({ applied: [] });
    // Still refused while a migration is pending, with nothing applied.
    const more = await migrations({
      '001_first.sql': 'CREATE TABLE first (id integer);',
      '002_second.sql': 'CREATE TABLE second (id integer);',
      '003_third.sql': 'CREATE TABLE third (id integer);',
    });
    await expect(migrate(full, { dir: more })).rejects.toMatchObject({ name: 'StorageError' });
    expect(await tables()).toEqual(['first', 'plover_migrations', 'second']);
  });
});
