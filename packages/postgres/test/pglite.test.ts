import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PGliteSql } from '@plover/postgres/pglite';

describe('PGliteSql', () => {
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'plover-pglite-'));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('keeps committed data in its data dir across a reopen', async () => {
    const dataDir = path.join(root, 'nested', 'postgres');
    const first = await PGliteSql.open({ dataDir });
    await first.exec('test.create', 'CREATE TABLE kept (value text)');
    await first.transaction((tx) => tx.query('test.insert', 'INSERT INTO kept VALUES ($1)', ['durable']));
    await first.close();

    const second = await PGliteSql.open({ dataDir });
    try {
      expect((await second.query('test.select', 'SELECT value FROM kept')).rows).toEqual([{ value: 'durable' }]);

      // Inside a transaction the Sql itself would wait for that transaction forever: it fails at once instead.
      const misuse = second.transaction(async () => {
        await second.query('test.nested', 'SELECT 1');
      });
      await expect(misuse).rejects.toMatchObject({ name: 'StorageError', retriable: false });
      await expect(second.transaction(() => second.transaction(() => Promise.resolve()))).rejects.toMatchObject({ name: 'StorageError' });
      await expect(second.ping()).resolves.toBeUndefined();
      // Shared buffers sized for one process, on a reopened data dir as on a fresh one.
      expect((await second.query('test.show', 'SHOW shared_buffers')).rows).toEqual([{ shared_buffers: '16MB' }]);
    } finally {
      await second.close();
    }
  });

  it('runs a data dir with fsync and synchronous commit (PGlite defaults to fsync off), and copies it through dump() and load', async () => {
    const source = await PGliteSql.open({ dataDir: path.join(root, 'source') });
    let dump: Blob;
    try {
      const settings = await source.query(
        'test.settings',
        "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method') ORDER BY name",
      );
      expect(settings.rows).toEqual([
        { name: 'fsync', setting: 'on' },
        { name: 'synchronous_commit', setting: 'on' },
        { name: 'wal_sync_method', setting: 'fsync' },
      ]);
      await source.exec('test.create', 'CREATE TABLE copied (value text)');
      await source.query('test.insert', 'INSERT INTO copied VALUES ($1)', ['committed after the last checkpoint']);
      dump = await source.dump();
    } finally {
      await source.close();
    }
    const copy = await PGliteSql.open({ dataDir: path.join(root, 'copy'), load: dump });
    try {
      expect((await copy.query('test.select', 'SELECT value FROM copied')).rows).toEqual([{ value: 'committed after the last checkpoint' }]);
    } finally {
      await copy.close();
    }
  });

  describe('checkpoints while open (PGlite has no checkpointer process)', () => {
    const redo = async (sql: PGliteSql) =>
      (await sql.query<{ lsn: string }>('test.redo', 'SELECT redo_lsn::text AS lsn FROM pg_control_checkpoint()')).rows[0]!.lsn;
    const writeWal = (sql: PGliteSql) => sql.exec('test.write', "INSERT INTO wal (v) SELECT repeat('x', 1000) FROM generate_series(1, 5000)");
    const waitForCheckpoint = async (sql: PGliteSql, from: string) => {
      for (let i = 0; i < 100 && (await redo(sql)) === from; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      return redo(sql);
    };

    it('checkpoints once the WAL written since the last checkpoint passes the policy, not before', async () => {
      const sql = await PGliteSql.open({ dataDir: path.join(root, 'by-volume'), checkpoint: { checkEveryMs: 10, walBytes: 16 * 1024 * 1024 } });
      try {
        await sql.exec('test.create', 'CREATE TABLE wal (v text)');
        const before = await redo(sql);
        await writeWal(sql); // ~6 MB of WAL: under the threshold
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(await redo(sql)).toBe(before);
        for (let i = 0; i < 3; i++) await writeWal(sql);
        expect(await waitForCheckpoint(sql, before)).not.toBe(before);
      } finally {
        await sql.close();
      }
    });

    it('checkpoints when the last checkpoint is older than the policy and anything was written since', async () => {
      const sql = await PGliteSql.open({ dataDir: path.join(root, 'by-age'), checkpoint: { checkEveryMs: 10, maxAgeMs: 0 } });
      try {
        const idle = await redo(sql);
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(await redo(sql)).toBe(idle);
        await sql.exec('test.create', 'CREATE TABLE wal (v text)');
        await writeWal(sql);
        expect(await waitForCheckpoint(sql, idle)).not.toBe(idle);
      } finally {
        await sql.close();
      }
    });
  });
});

describe('PGliteSql without the transaction guard (embedded mode)', () => {
  it('commits, rolls back and serializes transactions as with it', async () => {
    const sql = await PGliteSql.open({ guardTransactions: false });
    try {
      await sql.exec('test.create', 'CREATE TABLE t (value int)');
      await sql.transaction((tx) => tx.query('test.insert', 'INSERT INTO t VALUES (1)'));
      const failure = new Error('callback failed');
      await expect(
        sql.transaction(async (tx) => {
          await tx.query('test.insert', 'INSERT INTO t VALUES (2)');
          throw failure;
        }),
      ).rejects.toBe(failure);
      // A plain query issued while a transaction is open waits for it instead of running inside it.
      const order: string[] = [];
      let plain: Promise<unknown> | undefined;
      await sql.transaction(async (tx) => {
        await tx.query('test.insert', 'INSERT INTO t VALUES (3)');
        plain = sql.query('test.select', 'SELECT count(*)::int AS n FROM t').then((result) => order.push(`query saw ${String(result.rows[0]!.n)}`));
        await new Promise((resolve) => setTimeout(resolve, 20));
        order.push('transaction');
      });
      await plain;
      expect(order).toEqual(['transaction', 'query saw 2']);
      expect((await sql.query('test.select', 'SELECT value FROM t ORDER BY value')).rows).toEqual([{ value: 1 }, { value: 3 }]);
    } finally {
      await sql.close();
    }
  });
});

describe('PGliteSql extensions', () => {
  it('loads pg_trgm, so trigram indexes (persons search) work as on a real server', async () => {
    const sql = await PGliteSql.open({});
    try {
      await sql.exec('test.trgm', 'CREATE EXTENSION pg_trgm; CREATE TABLE t (s text); CREATE INDEX t_s ON t USING gin (s gin_trgm_ops)');
      const similar = await sql.query<{ score: number }>('test.similarity', 'SELECT similarity($1, $2) AS score', ['plover', 'plovers']);
      expect(similar.rows[0]!.score).toBeGreaterThan(0.5);
    } finally {
      await sql.close();
    }
  });
});
