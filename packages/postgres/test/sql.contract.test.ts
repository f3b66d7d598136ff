import { readdirSync } from 'node:fs';
import path from 'node:path';
import { PortRpc, StorageError } from '@plover/core';
import { migrate, PgSql, type Sql, type SqlExecutor } from '@plover/postgres';
import { MessageChannel } from 'node:worker_threads';
import { PortSql, serveSql } from '@plover/postgres/over-port';
import { PGliteSql } from '@plover/postgres/pglite';
import { describeWith, realService } from '../../../test/support/services';
import { createTestDatabase, type TestDatabase } from './support/database';

/** One database per adapter for this file, fresh and unmigrated when the suite starts. */
interface Adapter {
  name: string;
  suite: jest.Describe;
  start(): Promise<void>;
  /** Closes every handle `connect` gave out and disposes of the database. */
  stop(): Promise<void>;
  /** Another client of the suite's database. PGlite is one in-process connection: there it is the same instance. */
  connect(): Promise<Sql>;
  /** A handle of the caller's own, which it closes (pg: another pool; PGlite: another in-memory database). */
  openOwn(): Promise<Sql>;
}

function pglite(): Adapter {
  let instance: PGliteSql | undefined;
  const current = (): PGliteSql => {
    if (!instance) throw new Error('adapter not started');
    return instance;
  };
  return {
    name: 'PGlite',
    suite: describe,
    start: async () => {
      instance = await PGliteSql.open();
    },
    stop: () => current().close(),
    connect: () => Promise.resolve(current()),
    openOwn: () => PGliteSql.open(),
  };
}

/** PGlite used through a MessagePort, as embedded mode's ingestion thread uses the main thread's. */
class SqlThroughPort extends PortSql {
  constructor(
    private readonly owner: Sql,
    private readonly ownerSide: PortRpc,
    clientSide: PortRpc,
  ) {
    super(clientSide);
  }

  static over(owner: Sql): SqlThroughPort {
    const { port1, port2 } = new MessageChannel();
    const ownerSide = new PortRpc(port1);
    serveSql(ownerSide, owner);
    return new SqlThroughPort(owner, ownerSide, new PortRpc(port2));
  }

  /** Closes the handle, then the port and the database behind it. */
  override async close(): Promise<void> {
    await super.close();
    this.ownerSide.close();
    await this.owner.close();
  }
}

function pgliteThroughPort(): Adapter {
  const pgliteAdapter = pglite();
  let client: Sql | undefined;
  return {
    name: 'PGlite through a MessagePort',
    suite: describe,
    start: async () => {
      await pgliteAdapter.start();
      client = SqlThroughPort.over(await pgliteAdapter.connect());
    },
    stop: async () => {
      await client?.close();
    },
    connect: () => {
      if (!client) throw new Error('adapter not started');
      return Promise.resolve(client);
    },
    openOwn: async () => SqlThroughPort.over(await PGliteSql.open()),
  };
}

function postgres(adminUrl: string | undefined): Adapter {
  let database: TestDatabase | undefined;
  const handles: PgSql[] = [];
  const url = (): string => {
    if (!database) throw new Error('adapter not started');
    return database.url;
  };
  return {
    name: 'Postgres',
    suite: describeWith({ url: adminUrl }),
    start: async () => {
      if (!adminUrl) throw new Error('TEST_DATABASE_URL is not set');
      database = await createTestDatabase(adminUrl);
    },
    stop: async () => {
      await Promise.all(handles.map((handle) => handle.close()));
      await database?.drop();
    },
    connect: () => {
      const handle = new PgSql({ connectionString: url() });
      handles.push(handle);
      return Promise.resolve(handle);
    },
    openOwn: () => Promise.resolve(new PgSql({ connectionString: url() })),
  };
}

const MIGRATION_IDS = readdirSync(path.resolve(__dirname, '../migrations'))
  .map((file) => file.replace(/\.sql$/, ''))
  .sort();

describe.each([pglite(), pgliteThroughPort(), postgres(realService('TEST_DATABASE_URL').url)])('$name', (adapter) => {
  adapter.suite('Sql contract', () => {
    let sql: Sql;

    beforeAll(async () => {
      await adapter.start();
      sql = await adapter.connect();
    });
    afterAll(() => adapter.stop());

    it('answers ping', async () => {
      await expect(sql.ping()).resolves.toBeUndefined();
    });

    it('binds parameters as values, never as SQL, and returns the same JS types', async () => {
      await sql.exec(
        'test.createParams',
        `CREATE TABLE params (
           id serial PRIMARY KEY, t text, i integer, big bigint, huge bigint, f double precision, n text,
           j jsonb, ja jsonb, tags text[], nums integer[], at timestamptz, d date
         )`,
      );
      const hostile = `it's "quoted" \\ '; DROP TABLE params; --`;
      const at = new Date('2024-05-06T07:08:09.123Z');
      await sql.query(
        'test.insertParams',
        'INSERT INTO params (t, i, big, huge, f, n, j, ja, tags, nums, at, d) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)',
        [
          hostile,
          42,
          1234567890123,
          9007199254740993n,
          1.5,
          null,
          { a: [1, 'x'], quote: "'" },
          JSON.stringify([1, 'two']),
          ['a', "b'c", 'd,e', '{x}', null],
          [1, 2, 3],
          at,
          '2024-05-06',
        ],
      );

      const { rows } = await sql.query('test.selectParams', 'SELECT t, i, big, huge, f, n, j, ja, tags, nums, at, d FROM params');
      expect(rows).toEqual([
        {
          t: hostile,
          i: 42,
          big: 1234567890123,
          huge: 9007199254740993n,
          f: 1.5,
          n: null,
          j: { a: [1, 'x'], quote: "'" },
          ja: [1, 'two'],
          tags: ['a', "b'c", 'd,e', '{x}', null],
          nums: [1, 2, 3],
          at,
          d: '2024-05-06',
        },
      ]);
      const derived = await sql.query(
        'test.derived',
        `SELECT count(*) AS n, array_agg(big) AS bigs, array_agg(d) AS days, interval '1 day 2 hours' AS span FROM params WHERE t = $1`,
        [hostile],
      );
      expect(derived.rows).toEqual([{ n: 1, bigs: [1234567890123], days: ['2024-05-06'], span: '1 day 02:00:00' }]);
    });

    it('reports the rows a statement returned or changed', async () => {
      await sql.exec('test.createCounted', 'CREATE TABLE counted (id integer PRIMARY KEY, flag boolean NOT NULL)');
      expect((await sql.query('test.insert', 'INSERT INTO counted VALUES (1, true), (2, true), (3, false)')).rowCount).toBe(3);
      expect((await sql.query('test.update', 'UPDATE counted SET flag = false WHERE flag')).rowCount).toBe(2);
      expect((await sql.query('test.select', 'SELECT id FROM counted WHERE id > $1', [1])).rowCount).toBe(2);
    });

    it('runs one statement per query and several per exec', async () => {
      await expect(sql.query('test.twoStatements', 'SELECT 1; SELECT 2')).rejects.toMatchObject({ code: '42601', retriable: false });
      await sql.exec('test.script', 'CREATE TABLE scripted (id integer); INSERT INTO scripted VALUES (1); INSERT INTO scripted VALUES (2);');
      expect((await sql.query('test.select', 'SELECT count(*) AS n FROM scripted')).rows).toEqual([{ n: 2 }]);
    });

    describe('transactions', () => {
      beforeAll(() => sql.exec('test.createItems', 'CREATE TABLE items (id integer PRIMARY KEY, label text NOT NULL)'));
      beforeEach(() => sql.exec('test.truncateItems', 'TRUNCATE items'));
      const labels = async (): Promise<string[]> =>
        (await sql.query<{ label: string }>('test.labels', 'SELECT label FROM items ORDER BY label')).rows.map((row) => row.label);

      it('commits when the callback resolves and returns its value', async () => {
        const result = await sql.transaction(async (tx) => {
          await tx.query('test.insert', 'INSERT INTO items VALUES ($1, $2)', [1, 'kept']);
          return 'done';
        });
        expect(result).toBe('done');
        expect(await labels()).toEqual(['kept']);
      });

      it('rolls back when the callback throws, rethrows the same error and stays usable', async () => {
        const failure = new Error('callback failed');
        await expect(
          sql.transaction(async (tx) => {
            await tx.query('test.insert', 'INSERT INTO items VALUES ($1, $2)', [1, 'discarded']);
            throw failure;
          }),
        ).rejects.toBe(failure);
        expect(await labels()).toEqual([]);
        await sql.query('test.insert', 'INSERT INTO items VALUES ($1, $2)', [2, 'after']);
        expect(await labels()).toEqual(['after']);
      });

      it('rolls back when a statement fails and rejects with its StorageError', async () => {
        const outcome = sql.transaction(async (tx) => {
          await tx.query('test.insert', 'INSERT INTO items VALUES ($1, $2)', [1, 'first']);
          await tx.query('test.insertDuplicate', 'INSERT INTO items VALUES ($1, $2)', [1, 'duplicate']);
        });
        await expect(outcome).rejects.toBeInstanceOf(StorageError);
        await expect(outcome).rejects.toMatchObject({ code: '23505', retriable: false });
        expect(await labels()).toEqual([]);
      });

      it('refuses to report a commit when the callback swallowed a failed statement', async () => {
        const outcome = sql.transaction(async (tx) => {
          await tx.query('test.insert', 'INSERT INTO items VALUES ($1, $2)', [1, 'first']);
          await tx.query('test.insertDuplicate', 'INSERT INTO items VALUES ($1, $2)', [1, 'duplicate']).catch(() => undefined);
        });
        await expect(outcome).rejects.toMatchObject({ name: 'StorageError', code: '25P02', retriable: false });
        expect(await labels()).toEqual([]);
      });

      it('keeps plain queries out of an open transaction', async () => {
        let entered!: () => void;
        const inside = new Promise<void>((resolve) => (entered = resolve));
        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        const failure = new Error('abort');
        const transaction = sql.transaction(async (tx) => {
          await tx.query('test.insert', 'INSERT INTO items VALUES ($1, $2)', [1, 'in transaction']);
          entered();
          await gate;
          throw failure;
        });
        await inside;
        const plain = sql.query('test.insert', 'INSERT INTO items VALUES ($1, $2)', [2, 'outside']);
        // Give an adapter that interleaved statements the chance to run the plain insert inside the transaction.
        await new Promise((resolve) => setTimeout(resolve, 50));
        release();
        await expect(transaction).rejects.toBe(failure);
        await plain;
        expect(await labels()).toEqual(['outside']);
      });

      it('serializes concurrent read-modify-write transactions on a row locked FOR UPDATE', async () => {
        await sql.exec('test.createCounter', 'CREATE TABLE counter (id integer PRIMARY KEY, value integer NOT NULL); INSERT INTO counter VALUES (1, 0)');
        const increments = 8;
        await Promise.all(
          Array.from({ length: increments }, () =>
            sql.transaction(async (tx) => {
              const { rows } = await tx.query<{ value: number }>('test.read', 'SELECT value FROM counter WHERE id = 1 FOR UPDATE');
              await new Promise((resolve) => setTimeout(resolve, 5));
              await tx.query('test.write', 'UPDATE counter SET value = $1 WHERE id = 1', [(rows[0]?.value ?? 0) + 1]);
            }),
          ),
        );
        expect((await sql.query('test.counter', 'SELECT value FROM counter')).rows).toEqual([{ value: increments }]);
      });
    });

    it('classifies a unique violation as a permanent StorageError carrying the SQLSTATE', async () => {
      await sql.exec('test.createUnique', 'CREATE TABLE uniques (key text PRIMARY KEY)');
      await sql.query('test.insert', 'INSERT INTO uniques VALUES ($1)', ['a']);
      const error: unknown = await sql.query('test.insert', 'INSERT INTO uniques VALUES ($1)', ['a']).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageError);
      expect(error).toMatchObject({ code: '23505', retriable: false, message: expect.stringMatching(/^test\.insert: /) });
      expect((error as StorageError).cause).toMatchObject({ code: '23505' });
    });

    it('refuses a transaction executor used after its transaction ended', async () => {
      let kept: SqlExecutor | undefined;
      await sql.transaction((tx) => {
        kept = tx;
        return Promise.resolve();
      });
      await expect(kept?.query('test.stale', 'SELECT 1')).rejects.toMatchObject({ name: 'StorageError', retriable: false });
    });

    it('rejects with a permanent StorageError once closed; closing twice is harmless', async () => {
      const own = await adapter.openOwn();
      await own.ping();
      await own.close();
      await own.close();
      await expect(own.query('test.afterClose', 'SELECT 1')).rejects.toMatchObject({ name: 'StorageError', retriable: false });
    });

    describe('migrations', () => {
      it('apply each migration exactly once when two processes migrate at the same time', async () => {
        const [a, b] = [await adapter.connect(), await adapter.connect()];
        const results = await Promise.all([migrate(a), migrate(b)]);
        expect(results.flatMap((result) => result.applied).sort()).toEqual(MIGRATION_IDS);
        const recorded = await sql.query<{ version: number; name: string }>('test.recorded', 'SELECT version, name FROM plover_migrations ORDER BY version');
        expect(recorded.rows.map((row) => `${String(row.version).padStart(3, '0')}_${row.name}`)).toEqual(MIGRATION_IDS);
      });

      it('apply nothing on a second run', async () => {
        await expect(migrate(sql)).resolves.toEqual({ applied: [] });
      });

      it('create the account tables with their keys and cascades', async () => {
        const organization = (await sql.query<{ id: string }>('test.org', `INSERT INTO organizations (name) VALUES ('Acme') RETURNING id`)).rows[0];
        const project = await sql.query<{ id: number; uuid: string; timezone: string }>(
          'test.project',
          'INSERT INTO projects (organization_id, name, api_token) VALUES ($1, $2, $3) RETURNING id, uuid, timezone',
          [organization?.id, 'Shop', 'phc_token'],
        );
        expect(project.rows).toEqual([{ id: expect.any(Number), uuid: expect.any(String), timezone: 'UTC' }]);
        await expect(
          sql.query('test.duplicateToken', 'INSERT INTO projects (organization_id, name, api_token) VALUES ($1, $2, $3)', [
            organization?.id,
            'Copy',
            'phc_token',
          ]),
        ).rejects.toMatchObject({ code: '23505' });

        const user = (await sql.query<{ id: number }>('test.user', `INSERT INTO users (email) VALUES ('Owner@Example.com') RETURNING id`)).rows[0];
        await expect(sql.query('test.duplicateEmail', `INSERT INTO users (email) VALUES ('owner@example.com')`)).rejects.toMatchObject({ code: '23505' });
        await sql.query('test.membership', `INSERT INTO organization_memberships (organization_id, user_id, level) VALUES ($1, $2, 'owner')`, [
          organization?.id,
          user?.id,
        ]);
        await sql.query('test.key', 'INSERT INTO personal_api_keys (user_id, label, secure_value, mask_value, scopes) VALUES ($1, $2, $3, $4, $5)', [
          user?.id,
          'ci',
          'sha256$abc',
          'phx_...abcd',
          ['insight:read'],
        ]);

        await sql.query('test.deleteOrg', 'DELETE FROM organizations WHERE id = $1', [organization?.id]);
        const left = await sql.query(
          'test.left',
          'SELECT (SELECT count(*) FROM projects) AS projects, (SELECT count(*) FROM organization_memberships) AS memberships',
        );
        expect(left.rows).toEqual([{ projects: 0, memberships: 0 }]);
        await sql.query('test.deleteUser', 'DELETE FROM users WHERE id = $1', [user?.id]);
        expect((await sql.query('test.keys', 'SELECT count(*) AS n FROM personal_api_keys')).rows).toEqual([{ n: 0 }]);
      });
    });
  });
});
