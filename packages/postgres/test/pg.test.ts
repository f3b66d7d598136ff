import { StorageError } from '@plover/core';
import { PgSql } from '@plover/postgres';
import { describeWith, realService } from '../../../test/support/services';
import { createTestDatabase, type TestDatabase } from './support/database';

describe('PgSql without a server', () => {
  it('reports a closed port as a retriable connection failure', async () => {
    const sql = new PgSql({ connectionString: 'postgres://postgres@127.0.0.1:1/plover' });
    try {
      const error: unknown = await sql.ping().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageError);
      expect(error).toMatchObject({ retriable: true, code: 'ECONNREFUSED' });
    } finally {
      await sql.close();
    }
  });
});

const server = realService('TEST_DATABASE_URL');

describeWith(server)('PgSql against a server', () => {
  let database: TestDatabase;
  let sql: PgSql;

  beforeAll(async () => {
    database = await createTestDatabase(server.url ?? '');
    sql = new PgSql({ connectionString: database.url });
    await sql.exec('test.createCounter', 'CREATE TABLE counter (id integer PRIMARY KEY, value integer NOT NULL)');
  });
  afterAll(async () => {
    await sql.close();
    await database.drop();
  });

  it('reports an unknown database as permanent, with its SQLSTATE', async () => {
    const url = new URL(database.url);
    url.pathname = '/plover_test_missing';
    const missing = new PgSql({ connectionString: url.toString() });
    try {
      await expect(missing.ping()).rejects.toMatchObject({ name: 'StorageError', retriable: false, code: '3D000' });
    } finally {
      await missing.close();
    }
  });

  it('applies statementTimeoutMs to every connection: the cancelled statement is permanent, 57014', async () => {
    const impatient = new PgSql({ connectionString: database.url, statementTimeoutMs: 50 });
    try {
      await expect(impatient.query('test.sleep', 'SELECT pg_sleep(5)')).rejects.toMatchObject({ retriable: false, code: '57014' });
    } finally {
      await impatient.close();
    }
  });

  it('fails a caller that waited connectionTimeoutMs for a pool slot, retriably', async () => {
    // Long enough for the holder to connect on a busy machine; the ping then waits this long for the one slot.
    const small = new PgSql({ connectionString: database.url, max: 1, connectionTimeoutMs: 1000 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const holding = new Promise<void>((resolve) => (entered = resolve));
    try {
      const holder = small.transaction(() => {
        entered();
        return held;
      });
      await holding;
      await expect(small.ping()).rejects.toMatchObject({ name: 'StorageError', retriable: true });
      release();
      await holder;
      await expect(small.ping()).resolves.toBeUndefined();
    } finally {
      release();
      await small.close();
    }
  });

  it('loses updates without FOR UPDATE, which is why the contract test takes the lock', async () => {
    await sql.query('test.reset', 'INSERT INTO counter VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET value = 0');
    // Both transactions read before either writes; the second write then overwrites the first.
    let arrivals = 0;
    let bothRead!: () => void;
    const barrier = new Promise<void>((resolve) => (bothRead = resolve));
    const increment = () =>
      sql.transaction(async (tx) => {
        const { rows } = await tx.query<{ value: number }>('test.read', 'SELECT value FROM counter WHERE id = 1');
        if (++arrivals === 2) bothRead();
        await barrier;
        await tx.query('test.write', 'UPDATE counter SET value = $1 WHERE id = 1', [(rows[0]?.value ?? 0) + 1]);
      });
    await Promise.all([increment(), increment()]);
    expect((await sql.query('test.counter', 'SELECT value FROM counter')).rows).toEqual([{ value: 1 }]);
  });

  describe('when the server kills a connection', () => {
    let killer: PgSql;
    beforeAll(() => {
      killer = new PgSql({ connectionString: database.url });
    });
    afterAll(() => killer.close());

    const terminate = (pid: number | undefined) => killer.query('test.terminate', 'SELECT pg_terminate_backend($1, 5000)', [pid]);

    it('under a statement: retriable by its SQLSTATE, 57P01', async () => {
      const outcome = sql.transaction(async (tx) => {
        const { rows } = await tx.query<{ pid: number }>('test.pid', 'SELECT pg_backend_pid() AS pid');
        const sleeping = tx.query('test.sleep', 'SELECT pg_sleep(30)');
        await terminate(rows[0]?.pid);
        await sleeping;
      });
      await expect(outcome).rejects.toMatchObject({ name: 'StorageError', retriable: true, code: '57P01' });
      await expect(sql.ping()).resolves.toBeUndefined();
    });

    it('between statements: retriable although pg reports it without a code', async () => {
      const outcome = sql.transaction(async (tx) => {
        const { rows } = await tx.query<{ pid: number }>('test.pid', 'SELECT pg_backend_pid() AS pid');
        await terminate(rows[0]?.pid);
        // Let the client see its socket close before it sends the next statement.
        await new Promise((resolve) => setTimeout(resolve, 200));
        await tx.query('test.afterKill', 'SELECT 1');
      });
      await expect(outcome).rejects.toMatchObject({ name: 'StorageError', retriable: true, code: undefined });
      await expect(sql.ping()).resolves.toBeUndefined();
    });
  });
});
