import path from 'node:path';
import { PGliteSql } from '@plover/postgres/pglite';
import { canMountTmpfs, mountTmpfs, type Tmpfs } from '../../../test/support/tmpfs';

const MB = 1024 * 1024;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Longer than PGliteSql's disk checks (1 s) and its wait between reopen attempts (2 s). */
const NEXT_CHECK_MS = 2100;

const counter = async (sql: PGliteSql, rows: number) => {
  await sql.exec('test.create', 'CREATE TABLE counter (id int PRIMARY KEY, n int, padding text) WITH (fillfactor = 50)');
  await sql.exec('test.insert', `INSERT INTO counter SELECT id, 0, '' FROM generate_series(1, ${rows}) AS id`);
  return async () => (await sql.query<{ n: number }>('test.read', 'SELECT sum(n)::int AS n FROM counter')).rows[0]!.n;
};

(canMountTmpfs() ? describe : describe.skip)('PGliteSql on a full disk', () => {
  let disk: Tmpfs;

  beforeEach(() => {
    disk = mountTmpfs(96);
  });
  afterEach(() => disk.unmount());

  // Without the floor: a WAL segment that cannot be created (16 MB) on a disk with 2 MB free. PGlite answered that
  // statement with 53100 and spun at 100 % CPU on the next one, forever (no later statement, SIGTERM or freed
  // space helped).
  it('fails fast once a WAL write met a full disk, keeps what committed, and reopens once there is room', async () => {
    const sql = await PGliteSql.open({ dataDir: path.join(disk.dir, 'postgres'), minFreeBytes: 0 });
    try {
      const total = await counter(sql, 1);
      // WAL within 1 MB of the end of its segment (the scratch rows' heap goes, their WAL stays).
      const toSegmentEnd = async () =>
        (await sql.query<{ left: number }>('test.wal', "SELECT (16777216 - (pg_current_wal_lsn() - '0/0'::pg_lsn) % 16777216)::int AS left")).rows[0]!.left;
      await sql.exec('test.scratch', 'CREATE TABLE scratch (v text)');
      for (let left = await toSegmentEnd(); left > MB; left = await toSegmentEnd()) {
        await sql.exec(
          'test.scratch',
          `INSERT INTO scratch SELECT repeat('x', 100) FROM generate_series(1, ${Math.ceil((left - MB) / 400)}); DELETE FROM scratch`,
        );
      }
      disk.fill(2 * MB);
      // Updates pruned in place (the table does not grow), each row's padding new (the WAL cannot log only a
      // changed prefix), until the WAL needs a segment the disk cannot hold.
      let committed = 0;
      let failure: unknown;
      while (failure === undefined && committed < 20_000) {
        await sql.query('test.update', 'UPDATE counter SET n = n + 1, padding = $1 WHERE id = 1', [String(committed).repeat(300).slice(0, 1500)]).then(
          () => committed++,
          (error: unknown) => (failure = error),
        );
      }
      expect(failure).toMatchObject({ name: 'StorageError', code: '53100', retriable: true });

      // Every statement now fails at once, also in a transaction, while the disk stays full.
      const started = Date.now();
      await expect(total()).rejects.toMatchObject({ code: '53100' });
      await expect(sql.transaction((tx) => tx.query('test.tx', 'UPDATE counter SET n = n + 1 WHERE id = 1'))).rejects.toMatchObject({ code: '53100' });
      await pause(NEXT_CHECK_MS);
      await expect(sql.ping()).rejects.toThrow(/its disk has .* free, and Postgres needs/);
      expect(Date.now() - started).toBeLessThan(NEXT_CHECK_MS + 1000);

      disk.release();
      await pause(NEXT_CHECK_MS);
      // Reopened (crash recovery): every acknowledged update is there, none that failed.
      expect(await total()).toBe(committed);
      await sql.transaction((tx) => tx.query('test.tx', 'UPDATE counter SET n = n + 1 WHERE id = 1'));
      expect(await total()).toBe(committed + 1);
    } finally {
      await sql.close();
    }
  });

  it('runs read-only below its floor: writes fail at once, reads go on, writes resume once there is room', async () => {
    const sql = await PGliteSql.open({ dataDir: path.join(disk.dir, 'postgres') });
    try {
      const total = await counter(sql, 10);
      await sql.exec('test.update', 'UPDATE counter SET n = n + 1');
      disk.fill(2 * MB);
      await pause(NEXT_CHECK_MS);
      const refused = { name: 'StorageError', code: '53100', retriable: true, message: expect.stringMatching(/the 50\.3 MB Postgres keeps for its WAL/) };
      await expect(sql.exec('test.update', "UPDATE counter SET n = n + 1, padding = repeat('y', 100000)")).rejects.toMatchObject(refused);
      await expect(sql.transaction((tx) => tx.query('test.update', 'UPDATE counter SET n = n + 1 WHERE id = $1', [1]))).rejects.toMatchObject(refused);
      expect(await total()).toBe(10);
      await sql.ping();

      disk.release();
      await pause(NEXT_CHECK_MS);
      await sql.exec('test.update', 'UPDATE counter SET n = n + 1');
      expect(await total()).toBe(20);
    } finally {
      await sql.close();
    }
  });

  it('names the disk when Postgres cannot start on it', async () => {
    disk.fill(MB);
    await expect(PGliteSql.open({ dataDir: path.join(disk.dir, 'fresh') })).rejects.toMatchObject({
      code: '53100',
      message: expect.stringMatching(/^PGlite could not start Postgres in .*fresh: its disk has .* free, and Postgres needs 33\.6 MB/),
    });
  });
});
