/** One contract, every adapter (test/support/variants.ts). */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { ApiError, StorageError } from '@plover/core';
import {
  checkPoints,
  countEvents,
  HttpClickHouse,
  insertEvents,
  limitedClickHouse,
  listEvents,
  migrate,
  NO_GROUPS,
  type ClickHouse,
  type EventRow,
} from '@plover/clickhouse';
import type { QueryLimits } from '@plover/config';
import { ChdbClickHouse } from '@plover/chdb';
import { splitStatements } from '../src/migrate';
import { tempDir, variants, type Target } from './support/variants';

/** Every chunk of a stream, joined. */
async function streamed(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const all: Uint8Array[] = [];
  for await (const chunk of chunks) all.push(chunk);
  return Buffer.concat(all);
}

let nextProject = 1;
function event(projectId: number, overrides: Partial<EventRow> = {}): EventRow {
  return {
    uuid: randomUUID(),
    event: '$pageview',
    properties: JSON.stringify({ $current_url: 'https://example.com/', $session_id: 's1' }),
    timestamp: '2024-03-01 12:00:00.123456',
    team_id: projectId,
    distinct_id: 'user-1',
    elements_chain: '',
    created_at: '2024-03-01 12:00:01.000001',
    person_id: randomUUID(),
    person_properties: '{}',
    person_created_at: '2024-01-01 00:00:00.000',
    person_mode: 'full',
    ...NO_GROUPS,
    session_id: 's1',
    window_id: '',
    historical_migration: false,
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<StorageError> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StorageError);
  return error as StorageError;
}

/** Analysis limits no statement of these tests comes near. */
const generous: QueryLimits = {
  maxExecutionSeconds: 30,
  maxMemoryBytes: 1_000_000_000,
  maxRowsToRead: 1_000_000_000,
  maxBytesToRead: 100_000_000_000,
  maxResultRows: 1000,
  maxResultBytes: 10_000_000,
  maxThreads: 1,
  threadNice: 0,
  maxPoints: 1000,
};

describe.each(variants)('ClickHouse contract: $name', (variant) => {
  let target: Target;
  let ch: ClickHouse;

  beforeAll(async () => {
    target = await variant.open();
    ch = target.ch;
  });

  afterAll(async () => {
    await target?.close();
  });

  describe('migrations', () => {
    it('apply in order, are recorded, and a second run applies nothing', async () => {
      expect(await migrate(ch)).toEqual({
        applied: ['001_events', '002_ingestion_warnings', '003_person_overrides', '004_materialized_properties', '005_session_replay', '006_logs'],
      });
      expect(await migrate(ch)).toEqual({ applied: [] });
      const recorded = await ch.query('test.ledger', 'SELECT version, name FROM plover_migrations FINAL ORDER BY version');
      expect(recorded).toEqual([
        { version: 1, name: 'events' },
        { version: 2, name: 'ingestion_warnings' },
        { version: 3, name: 'person_overrides' },
        { version: 4, name: 'materialized_properties' },
        { version: 5, name: 'session_replay' },
        { version: 6, name: 'logs' },
      ]);
    });

    it('create the database named in the options and migrate it, harmlessly when two runs race', async () => {
      const database = `plover_db_${randomUUID().replace(/-/g, '')}`;
      try {
        const racing = await Promise.all([migrate(ch, { database }), migrate(ch, { database })]);
        expect(racing.flatMap((run) => run.applied)).toContain('001_events');
        expect(await migrate(ch, { database })).toEqual({ applied: [] });
        const recorded = await ch.query('test.ledger', `SELECT version FROM ${database}.plover_migrations FINAL ORDER BY version`);
        expect(recorded).toEqual([{ version: 1 }, { version: 2 }, { version: 3 }, { version: 4 }, { version: 5 }, { version: 6 }]);
        const tables = await ch.query('test.tables', 'SELECT name FROM system.tables WHERE database = {database:String} ORDER BY name', { database });
        expect(tables).toEqual([
          { name: 'events' },
          { name: 'ingestion_warnings' },
          { name: 'logs' },
          { name: 'person_overrides' },
          { name: 'plover_migrations' },
          { name: 'session_replay_snapshots' },
          { name: 'session_replay_summaries' },
        ]);
      } finally {
        await ch.command('test.dropDatabase', `DROP DATABASE IF EXISTS ${database}`);
      }
    });

    it('refuse a migration file renamed after it was applied', async () => {
      const database = `plover_db_${randomUUID().replace(/-/g, '')}`;
      const { dir, remove } = await tempDir();
      try {
        await writeFile(path.join(dir, '001_first.sql'), 'CREATE TABLE IF NOT EXISTS {database}.t (x UInt8) ENGINE = MergeTree ORDER BY x;\n');
        expect(await migrate(ch, { database, dir })).toEqual({ applied: ['001_first'] });
        await rename(path.join(dir, '001_first.sql'), path.join(dir, '001_renamed.sql'));
        const error = await failure(migrate(ch, { database, dir }));
        expect(error).toMatchObject({ retriable: false, code: 'BAD_MIGRATION' });
      } finally {
        await ch.command('test.dropDatabase', `DROP DATABASE IF EXISTS ${database}`);
        await remove();
      }
    });

    it('split a file at semicolons that end a line, ignoring comment-only chunks', () => {
      const sql = "-- header\nCREATE TABLE a (s String DEFAULT ';');\n\nCREATE TABLE b (x UInt8);  \n-- trailing comment\n";
      expect(splitStatements(sql)).toEqual(["-- header\nCREATE TABLE a (s String DEFAULT ';')", 'CREATE TABLE b (x UInt8)']);
    });
  });

  describe('events', () => {
    beforeAll(async () => {
      await migrate(ch);
    });

    it('round-trip every column: unicode, quotes, JSON, microsecond timestamps', async () => {
      const projectId = nextProject++;
      const tricky = event(projectId, {
        event: 'signed "up" — 日本語 🚀',
        distinct_id: "o'brien\\tab\t\nnewline",
        properties: JSON.stringify({ quote: '"\'`', nested: { emoji: '🦜', n: 1.5 }, list: [1, 'two', null] }),
        timestamp: '2024-03-01 12:34:56.654321',
        created_at: '2024-03-01 12:34:57.000009',
        person_properties: JSON.stringify({ email: 'ü@example.com' }),
        person_created_at: '2023-12-31 23:59:59.999',
        person_mode: 'force_upgrade',
        group0_properties: '{"name":"Acme"}',
        group4_properties: '{"name":"Globex"}',
        group0_created_at: '2024-02-01 10:00:00.500',
        group4_created_at: '2024-02-04 10:00:00.250',
        $group_0: 'acme',
        $group_4: 'globex',
        session_id: '018e0f9a-session',
        window_id: '018e0f9a-window',
        historical_migration: true,
      });
      const plain = event(projectId, { timestamp: '2024-03-01 13:00:00.000001', person_mode: 'propertyless' });
      await insertEvents(ch, [tricky, plain]);
      expect(await listEvents(ch, projectId)).toEqual([tricky, plain]);
    });

    it('accept ISO-8601 date-times on insert and return them in ClickHouse form', async () => {
      const projectId = nextProject++;
      const row = event(projectId, { timestamp: '2024-03-01T12:00:00.123456Z' });
      await insertEvents(ch, [row]);
      const [stored] = await listEvents(ch, projectId);
      expect(stored?.timestamp).toBe('2024-03-01 12:00:00.123456');
    });

    it('show a redelivered event once, in counts and in rows', async () => {
      const projectId = nextProject++;
      const batch = [
        event(projectId),
        event(projectId, { event: 'clicked', distinct_id: 'user-2' }),
        event(projectId, { timestamp: '2024-03-02 00:00:00.000000' }),
      ];
      await insertEvents(ch, batch);
      await insertEvents(ch, batch);
      await insertEvents(ch, [batch[1]!]);
      expect(await countEvents(ch, projectId)).toBe(3);
      const listed = await listEvents(ch, projectId);
      expect(listed.map((row) => row.uuid).sort()).toEqual(batch.map((row) => row.uuid).sort());
    });

    it('refuse a row with a field that has no column rather than drop the field', async () => {
      const error = await failure(ch.insert('events', [{ ...event(nextProject++), no_such_column: 1 }]));
      expect(error).toMatchObject({ retriable: false, code: '117' }); // INCORRECT_DATA
    });

    it('serve concurrent inserts and queries correctly', async () => {
      const projectIds = Array.from({ length: 8 }, () => nextProject++);
      await Promise.all(
        projectIds.map((projectId, i) =>
          insertEvents(
            ch,
            Array.from({ length: i + 1 }, () => event(projectId)),
          ),
        ),
      );
      const counts = await Promise.all(projectIds.map((projectId) => countEvents(ch, projectId)));
      expect(counts).toEqual(projectIds.map((_, i) => i + 1));
    });
  });

  describe('bound parameters', () => {
    beforeAll(async () => {
      await migrate(ch);
    });

    it('keep an injection attempt inert', async () => {
      const attempt = "x' OR 1=1 --";
      expect(await ch.query('test.echo', 'SELECT {s:String} AS s', { s: attempt })).toEqual([{ s: attempt }]);
      const projectId = nextProject++;
      await insertEvents(ch, [event(projectId)]);
      const rows = await ch.query<{ n: string }>('test.inert', 'SELECT count() AS n FROM events FINAL WHERE team_id = {t:Int64} AND distinct_id = {d:String}', {
        t: projectId,
        d: attempt,
      });
      expect(rows).toEqual([{ n: '0' }]);
    });

    it('bind String, Int64, DateTime64 and Array values', async () => {
      const rows = await ch.query(
        'test.types',
        "SELECT {s:String} AS s, {i:Int64} AS i, {big:Int64} AS big, {d:DateTime64(3, 'UTC')} AS d, {d6:DateTime64(6, 'UTC')} AS d6, {a:Array(String)} AS a, {n:Array(Int64)} AS n",
        {
          s: 'tab\there, back\\slash, "quotes", \'single\', ünïcödé',
          i: -42,
          big: '9223372036854775807',
          d: new Date('2024-03-01T12:34:56.789Z'),
          d6: '2024-03-01 12:34:56.123456',
          a: ["it's", 'a\\b', 'plain'],
          n: [1, 2n ** 62n],
        },
      );
      expect(rows).toEqual([
        {
          s: 'tab\there, back\\slash, "quotes", \'single\', ünïcödé',
          i: '-42',
          big: '9223372036854775807',
          d: '2024-03-01 12:34:56.789',
          d6: '2024-03-01 12:34:56.123456',
          a: ["it's", 'a\\b', 'plain'],
          n: ['1', String(2n ** 62n)],
        },
      ]);
    });

    it('queryRows returns rows as arrays with each column name and type, duplicate names kept', async () => {
      const result = await ch.queryRows('test.rows', 'SELECT {s:String} AS s, 1, 1, [1, 2] AS a FROM numbers(2)', { s: 'x' });
      expect(result).toEqual({
        columns: [
          { name: 's', type: 'String' },
          { name: '1', type: 'UInt8' },
          { name: '1', type: 'UInt8' },
          { name: 'a', type: 'Array(UInt8)' },
        ],
        rows: [
          ['x', 1, 1, [1, 2]],
          ['x', 1, 1, [1, 2]],
        ],
      });
    });

    it('queryRaw returns TabSeparatedRaw bytes as the engine wrote them: tabs between values, nothing escaped', async () => {
      const bytes = await ch.queryRaw(
        'test.text',
        'SELECT number AS n, concat({s:String}, toString(number)) AS s FROM numbers(3) WHERE number < {below:UInt32} ORDER BY n',
        { s: 'a\\b "c"\u00e9', below: 2 },
      );
      expect(bytes.toString('utf8')).toBe('0\ta\\b "c"\u00e90\n1\ta\\b "c"\u00e91\n');
      expect((await ch.queryRaw('test.empty', 'SELECT 1 FROM numbers(0)')).length).toBe(0);
    });

    it('queryRawStream streams queryRaw’s bytes chunk by chunk, with bound parameters', async () => {
      const sql =
        'SELECT number AS n, concat({s:String}, toString(number)) AS s FROM numbers(200000) WHERE number < {below:UInt32} ORDER BY n SETTINGS max_block_size = 10000';
      const params = { s: 'a\\b "c"\u00e9', below: 150_000 };
      const chunks: Uint8Array[] = [];
      for await (const chunk of ch.queryRawStream('test.stream', sql, params)) chunks.push(chunk);
      expect(chunks.length).toBeGreaterThan(1);
      expect(Buffer.concat(chunks).equals(await ch.queryRaw('test.text', sql, params))).toBe(true);

      expect((await streamed(ch.queryRawStream('test.empty', 'SELECT 1 FROM numbers(0)'))).length).toBe(0);
    });

    it('queryRawStream broken off cancels the statement; a failing one rejects with the engine code; the handle goes on', async () => {
      for (let round = 0; round < 3; round++) {
        for await (const chunk of ch.queryRawStream('test.cut', 'SELECT number FROM numbers(10000000) SETTINGS max_block_size = 1000')) {
          expect(chunk.length).toBeGreaterThan(0);
          break;
        }
      }
      const error = await streamed(ch.queryRawStream('test.syntax', 'SELEC 1')).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ retriable: false, code: '62' });
      expect((await streamed(ch.queryRawStream('test.next', 'SELECT 42'))).toString()).toBe('42\n');
      await expect(ch.query('test.next', 'SELECT 42 AS answer')).resolves.toEqual([{ answer: 42 }]);
    });

    it('refuse integers that have already lost precision', async () => {
      const error = await failure(ch.query('test.unsafe', 'SELECT {i:Int64} AS i', { i: 2 ** 60 }));
      expect(error).toMatchObject({ retriable: false, code: 'BAD_PARAMETER' });
    });
  });

  describe('errors', () => {
    it('a syntax error is permanent and carries the ClickHouse code', async () => {
      const error = await failure(ch.query('test.syntax', 'SELEC 1'));
      expect(error).toMatchObject({ retriable: false, code: '62' });
    });

    it('a server-side limit is retriable and carries the ClickHouse code', async () => {
      const error = await failure(ch.query('test.limit', 'SELECT count() FROM system.numbers SETTINGS max_execution_time = 0.2'));
      expect(error).toMatchObject({ retriable: true, code: '159' }); // TIMEOUT_EXCEEDED
    });

    it('an unknown table is permanent', async () => {
      const error = await failure(ch.command('test.unknownTable', 'INSERT INTO no_such_table SELECT 1'));
      expect(error).toMatchObject({ retriable: false, code: '60' });
    });

    it('ping resolves', async () => {
      await expect(ch.ping()).resolves.toBeUndefined();
    });

    if (variant.kind === 'http') {
      it('an unreachable server is retriable', async () => {
        const unreachable = new HttpClickHouse({ url: 'http://127.0.0.1:1' });
        try {
          const error = await failure(unreachable.ping());
          expect(error).toMatchObject({ retriable: true, code: 'ECONNREFUSED' });
        } finally {
          await unreachable.close();
        }
      });

      it('a closed handle refuses calls', async () => {
        const closed = target.connect!();
        await closed.close();
        const error = await failure(closed.ping());
        expect(error).toMatchObject({ retriable: false, code: 'CLOSED' });
      });

      it('a request past its deadline is retriable', async () => {
        const impatient = target.connect!({ requestTimeoutMs: 300 });
        try {
          const error = await failure(impatient.query('test.slow', 'SELECT sleep(1.5) AS s'));
          expect(error).toMatchObject({ retriable: true, code: 'TIMEOUT' });
        } finally {
          await impatient.close();
        }
      });
    }
  });

  describe('analysis limits (limitedClickHouse)', () => {
    async function refusal(limits: Partial<QueryLimits>, sql: string): Promise<ApiError> {
      const error: unknown = await limitedClickHouse(ch, { ...generous, ...limits })
        .query('test.limited', sql)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(ApiError);
      return error as ApiError;
    }

    it('a statement within the limits answers as the handle does, trailing comment and bound parameters included', async () => {
      const limited = limitedClickHouse(ch, generous);
      await expect(
        limited.query('test.within', 'SELECT number AS n FROM numbers(3) WHERE number < {below:UInt32} -- a comment', { below: 2 }),
      ).resolves.toEqual([{ n: '0' }, { n: '1' }]);
    });

    it.each([
      [{ maxResultRows: 10 }, 'SELECT number FROM numbers(100000)', 'too_many_rows_or_bytes', /max_result_rows/],
      [{ maxResultBytes: 1000 }, 'SELECT toString(number) FROM numbers(100000)', 'too_many_rows_or_bytes', /max_result_bytes/],
      [{ maxRowsToRead: 1000 }, 'SELECT count() FROM numbers(1000000)', 'too_many_rows', /max_rows_to_read \(1000 rows\)/],
      [{ maxBytesToRead: 1000 }, 'SELECT count() FROM numbers(1000000)', 'too_many_bytes', /max_bytes_to_read/],
      [{ maxMemoryBytes: 1_000_000 }, 'SELECT groupArray(number) FROM numbers(10000000)', 'memory_limit_exceeded', /max_memory_usage/],
      [{ maxExecutionSeconds: 1 }, 'SELECT sleepEachRow(0.25) FROM numbers(12) SETTINGS max_block_size = 1', 'timeout_exceeded', /max_execution_time \(1 s\)/],
    ])('%j is a 400 naming the limit', async (limits, sql, code, detail) => {
      const error = await refusal(limits, sql);
      expect(error).toMatchObject({ status: 400, type: 'validation_error', code });
      expect(error.detail).toMatch(detail);
    });

    it('queryRaw is bounded too', async () => {
      const limited = limitedClickHouse(ch, { ...generous, maxResultRows: 10 });
      expect((await limited.queryRaw('test.text', 'SELECT number FROM numbers(3)')).toString()).toBe('0\n1\n2\n');
      const error = await limited.queryRaw('test.text', 'SELECT number FROM numbers(100000)').catch((caught: unknown) => caught);
      expect(error).toMatchObject({ status: 400, code: 'too_many_rows_or_bytes' });
    });

    it('queryRawStream is an export: no row, result or time cap, but the memory limit and thread priority hold', async () => {
      const limited = limitedClickHouse(ch, { ...generous, maxResultRows: 10, maxRowsToRead: 1000, threadNice: 10 });
      const text = await streamed(limited.queryRawStream('test.stream', "SELECT number, getSetting('os_thread_priority') FROM numbers(100000)"));
      expect(text.toString().split('\n')).toHaveLength(100001);
      expect(text.toString().startsWith('0\t10\n')).toBe(true);
      const memory = limitedClickHouse(ch, { ...generous, maxMemoryBytes: 1_000_000 });
      const error = await streamed(memory.queryRawStream('test.memory', 'SELECT groupArray(number) FROM numbers(10000000)')).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ status: 400, code: 'memory_limit_exceeded' });
    });

    it('the rows a refused statement had produced never reach the next statement', async () => {
      const limited = limitedClickHouse(ch, { ...generous, maxResultRows: 5000 });
      for (let round = 0; round < 3; round++) {
        await expect(limited.query('test.cut', 'SELECT number FROM numbers(100000) SETTINGS max_block_size = 1000')).rejects.toBeInstanceOf(ApiError);
        await expect(ch.query('test.next', 'SELECT 42 AS answer')).resolves.toEqual([{ answer: 42 }]);
      }
    });

    it('ANALYSIS_THREAD_NICE reaches the engine as os_thread_priority; 0 leaves the setting out', async () => {
      const niceOf = async (threadNice: number) => {
        const [row] = await limitedClickHouse(ch, { ...generous, threadNice }).query<{ nice: unknown }>(
          'test.nice',
          "SELECT getSetting('os_thread_priority') AS nice",
        );
        return Number(row!.nice);
      };
      expect(await niceOf(10)).toBe(10);
      expect(await niceOf(0)).toBe(0);
    });

    it('checkPoints refuses series × breakdown values × intervals beyond maxPoints, naming the figures', () => {
      expect(() => checkPoints(generous, 2, 25, 20)).not.toThrow();
      expect(() => checkPoints(generous, 10, 1001, 4992)).toThrow(
        expect.objectContaining({ status: 400, code: 'too_many_points', detail: expect.stringMatching(/49969920 points .* limit of 1000/) }),
      );
    });
  });

  if (variant.kind === 'chdb') {
    describe('in-process engine', () => {
      // The engine applies os_thread_priority only with CAP_SYS_NICE (bit 23 of the effective set), else not at all.
      const canNice = (BigInt(`0x${/^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]}`) >> 23n) & 1n;
      (canNice ? it : it.skip)("an analysis statement's threads run at ANALYSIS_THREAD_NICE, and libuv's workers return to 0", async () => {
        // [name, nice] of each thread of this process (fields of /proc/<tid>/stat after the name: nice is the 17th).
        const threads = (): [string, number][] =>
          readdirSync('/proc/self/task').flatMap((tid) => {
            try {
              const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
              const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
              return [[name, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])] as [string, number]];
            } catch {
              return []; // ended meanwhile
            }
          });
        let done = false;
        const query = limitedClickHouse(ch, { ...generous, maxThreads: 2, threadNice: 10 })
          .query('test.niced', "SELECT count() AS c FROM numbers(5000000) WHERE sipHash128(number, 'plover') != ''")
          .finally(() => (done = true));
        const seen = new Set<string>();
        while (!done) {
          for (const [name, nice] of threads()) if (nice === 10) seen.add(name);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(await query).toEqual([{ c: '5000000' }]);
        // The libuv worker that ran the call (named `node`, as the request thread is) and the engine's pipeline threads.
        expect(seen).toContain('node');
        expect([...seen].filter((name) => name !== 'node')).not.toEqual([]);
        expect(threads().filter(([name, nice]) => name === 'node' && nice !== 0)).toEqual([]);
      });

      it('async queries do not block a concurrent HTTP request (show it)', async () => {
        const server = http.createServer((_req, res) => res.end('ok'));
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        const { port } = server.address() as AddressInfo;
        try {
          const started = performance.now();
          let finishedAt: number | undefined;
          // One thread of hashing, ~1 s on the 2-core dev machine; max_threads=1 keeps its length independent
          // of the core count and leaves a core to the event loop, as in production.
          const query = ch
            .query('test.heavy', "SELECT count() AS c FROM numbers(10000000) WHERE sipHash128(number, 'plover') != '' SETTINGS max_threads = 1")
            .then((rows) => {
              finishedAt = performance.now();
              return rows;
            });
          // A timer firing while the query runs is the first sign the loop is free; the request is the proof.
          await new Promise((resolve) => setTimeout(resolve, 20));
          const sent = performance.now();
          const body = await new Promise<string>((resolve, reject) => {
            http
              .get(`http://127.0.0.1:${port}/`, (res) => {
                res.setEncoding('utf8');
                let text = '';
                res.on('data', (chunk: string) => (text += chunk));
                res.on('end', () => resolve(text));
              })
              .on('error', reject);
          });
          const answeredAt = performance.now();
          const stillRunning = finishedAt === undefined;
          expect(await query).toEqual([{ c: '10000000' }]);
          const queryMs = finishedAt! - started;
          const responseMs = answeredAt - sent;
          expect(body).toBe('ok');
          expect(stillRunning).toBe(true);
          expect(responseMs).toBeLessThan(queryMs / 5);
        } finally {
          await new Promise((resolve) => server.close(resolve));
        }
      });

      it('refuses a second data directory in the same process while one is open', async () => {
        const { dir, remove } = await tempDir();
        try {
          const error = await failure(ChdbClickHouse.open({ dataDir: dir }));
          expect(error).toMatchObject({ retriable: false, code: 'CHDB_CONNECTION' });
        } finally {
          await remove();
        }
      });

      it('close() lets calls already made finish, refuses new ones, and releases the data directory', async () => {
        const pending = ch.query('test.beforeClose', 'SELECT count() AS c FROM numbers(1000000)');
        const closed = ch.close();
        const refused = await failure(ch.ping());
        expect(refused).toMatchObject({ retriable: false, code: 'CLOSED' });
        expect(await pending).toEqual([{ c: '1000000' }]);
        await closed;
        const { dir, remove } = await tempDir();
        try {
          const other = await ChdbClickHouse.open({ dataDir: dir });
          await other.ping();
          await other.close();
        } finally {
          await remove();
        }
      });
    });
  }
});
