/**
 * Cluster mode (src/cluster.ts): the statements migrate() sends, against golden files, and what ClickHouse's
 * engine (chDB) makes of them. No ClickHouse server or Keeper runs here, so the engine runs what it can:
 * - the cluster DDL without `ON CLUSTER` (the distributed DDL queue needs Keeper and a server's DDL worker);
 * - the unreplicated local tables in full, and the replicated ones' CREATE statements on a stand-in Keeper
 *   that leaves them read-only (their ALTERs are the unreplicated ones', word for word);
 * - Distributed tables over shards that cannot be reached: a plain insert queues each shard's rows in a
 *   directory of that shard, which shows where the engine sends every row; a cluster handle's insert, which must
 *   reach every shard before it returns, fails.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { drainPending, Session } from 'chdb';
import { StorageError } from '@plover/core';
import {
  clusterStatements,
  HttpClickHouse,
  insertEvents,
  migrate,
  mutationTarget,
  NO_GROUPS,
  PERSON_OVERRIDES_SUBQUERY,
  SHARDING_KEYS,
  type ClickHouseCluster,
} from '@plover/clickhouse';
import { startChdbHttpServer, type ChdbHttpServer } from './support/chdb-http-server';
import { formatRecorded, RecordingClickHouse, type Recorded } from './support/recording';
import { tempDir } from './support/variants';

const GOLDEN = path.join(__dirname, 'golden');
const execFileAsync = promisify(execFile);
const REPLICATED: ClickHouseCluster = { name: 'plover', replicated: true };
const UNREPLICATED: ClickHouseCluster = { name: 'plover', replicated: false };

async function recordMigrate(cluster: ClickHouseCluster | undefined, database = 'plover'): Promise<Recorded[]> {
  const ch = new RecordingClickHouse(cluster);
  await migrate(ch, { database });
  return ch.recorded;
}

const commands = (recorded: readonly Recorded[]) => recorded.filter((statement) => statement.kind === 'command');
const withoutOnCluster = (sql: string) => sql.replaceAll(' ON CLUSTER plover', '');

/** `CREATE TABLE … ENGINE = Distributed(plover, db, <table>_local, <sharding expression>)`, as migrate() sent them. */
function distributedTables(recorded: readonly Recorded[]): { table: string; expression: string }[] {
  return commands(recorded).flatMap(({ sql }) => {
    const match = /ENGINE = Distributed\(plover, `plover`, (\w+)_local, (.+)\)$/.exec(sql);
    return match ? [{ table: match[1]!, expression: match[2]! }] : [];
  });
}

async function failure(promise: Promise<unknown>): Promise<StorageError> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StorageError);
  return error as StorageError;
}

describe('cluster migration statements', () => {
  it.each([
    ['single-node.sql', undefined],
    ['cluster-replicated.sql', REPLICATED],
    ['cluster-unreplicated.sql', UNREPLICATED],
  ])('%s holds exactly what migrate() sends', async (file, cluster) => {
    expect(formatRecorded(await recordMigrate(cluster))).toBe(readFileSync(path.join(GOLDEN, file), 'utf8'));
  });

  it('differ between a replicated and an unreplicated cluster in the local tables’ engines only', async () => {
    const replicated = await recordMigrate(REPLICATED);
    const unreplicated = await recordMigrate(UNREPLICATED);
    const unreplicate = (sql: string) =>
      sql.replace(
        /ENGINE = Replicated(\w+)\('\/clickhouse\/tables\/\{shard\}\/\{database\}\/\{table\}', '\{replica\}'(?:, ([^()]*))?\)/,
        (_, family: string, args?: string) => (args ? `ENGINE = ${family}(${args})` : `ENGINE = ${family}`),
      );
    expect(replicated.map((statement) => ({ ...statement, sql: unreplicate(statement.sql) }))).toEqual(unreplicated);
    expect(replicated.filter((statement) => statement.sql.includes('ENGINE = Replicated'))).toHaveLength(Object.keys(SHARDING_KEYS).length);
  });

  it('give every table a Distributed table sharded by its key, over a local table of the same name plus _local', async () => {
    const byTable = (a: { table: string }, b: { table: string }) => a.table.localeCompare(b.table);
    expect(distributedTables(await recordMigrate(REPLICATED)).sort(byTable)).toEqual(
      Object.entries(SHARDING_KEYS)
        .map(([table, expression]) => ({ table, expression }))
        .sort(byTable),
    );
  });

  it('refuse a statement they cannot translate, and a table without a sharding key', () => {
    expect(() => clusterStatements('CREATE TABLE IF NOT EXISTS `p`.other (x UInt8) ENGINE = MergeTree ORDER BY x', REPLICATED)).toThrow(
      /CREATE TABLE IF NOT EXISTS `p`.other .*: table other has no sharding key/,
    );
    expect(() => clusterStatements('CREATE VIEW `p`.v AS SELECT 1', REPLICATED)).toThrow(/only CREATE DATABASE, CREATE TABLE and ALTER TABLE/);
    expect(() => clusterStatements('CREATE DATABASE IF NOT EXISTS `p`', { name: 'a; DROP', replicated: true })).toThrow(StorageError);
  });

  it('send mutations to the local tables, on every node', () => {
    expect(mutationTarget(new RecordingClickHouse(), 'events')).toBe('events');
    expect(mutationTarget(new RecordingClickHouse(REPLICATED), 'events')).toBe('events_local ON CLUSTER plover');
  });
});

interface Topology {
  label: string;
  shards: number;
  replicas: number;
}

/**
 * A server configuration with the cluster `plover` (every replica an address where nothing listens), the
 * `{shard}`/`{replica}` macros, and ClickHouse's in-process stand-in for Keeper.
 */
function serverConfig({ shards, replicas }: Topology): string {
  const shard = (s: number) =>
    `<shard><internal_replication>true</internal_replication>${Array.from(
      { length: replicas },
      (_, r) => `<replica><host>127.0.${s + 1}.${r + 1}</host><port>1</port></replica>`,
    ).join('')}</shard>`;
  return `<clickhouse>
  <zookeeper><implementation>testkeeper</implementation></zookeeper>
  <macros><shard>01</shard><replica>r1</replica></macros>
  <remote_servers><plover>${Array.from({ length: shards }, (_, s) => shard(s)).join('')}</plover></remote_servers>
</clickhouse>
`;
}

describe.each<Topology>([
  { label: '1 shard', shards: 1, replicas: 1 },
  { label: '2 shards × 2 replicas', shards: 2, replicas: 2 },
])('the cluster DDL on an engine configured with $label', (topology) => {
  let remove: () => Promise<void>;
  /** Keeps the engine (and its configuration) up between the HTTP server's per-request connections. */
  let engine: Session;
  let server: ChdbHttpServer;
  /** A handle that knows nothing of the cluster: inserts queue for a background send. */
  let plain: HttpClickHouse;
  /** A cluster handle, as services get one from CLICKHOUSE_CLUSTER. */
  let clustered: HttpClickHouse;
  let recorded: Recorded[];

  beforeAll(async () => {
    const temp = await tempDir();
    remove = temp.remove;
    const configFile = path.join(temp.dir, 'config.xml');
    await writeFile(configFile, serverConfig(topology));
    const connectionArgs = [`--config-file=${configFile}`];
    engine = new Session(path.join(temp.dir, 'data'), { connectionArgs });
    server = await startChdbHttpServer(path.join(temp.dir, 'data'), { connectionArgs });
    recorded = await recordMigrate(UNREPLICATED);
    // A handle bound to a database that does not exist yet cannot run anything (migrate's `database` option).
    const bootstrap = new HttpClickHouse({ url: server.url });
    for (const { name, sql, params } of commands(recorded)) await bootstrap.command(name, withoutOnCluster(sql), params);
    await bootstrap.close();
    plain = new HttpClickHouse({ url: server.url, database: 'plover' });
    clustered = new HttpClickHouse({ url: server.url, database: 'plover', cluster: UNREPLICATED });
  });

  afterAll(async () => {
    await plain?.close();
    await clustered?.close();
    await server?.close();
    engine?.close();
    await drainPending();
    await remove?.();
  });

  it('parses every statement as sent, ON CLUSTER included', async () => {
    for (const cluster of [REPLICATED, UNREPLICATED]) {
      for (const { sql } of commands(await recordMigrate(cluster))) {
        const [parsed] = await plain.query<{ sql: string }>('test.parse', 'SELECT formatQuerySingleLine({sql:String}) AS sql', { sql });
        if (!sql.startsWith('INSERT')) expect(parsed!.sql).toContain('ON CLUSTER plover');
      }
    }
  });

  it('creates every table as a local table and a Distributed table with the same columns', async () => {
    const tables = await plain.query<{ name: string; engine: string }>(
      'test.tables',
      "SELECT name, engine FROM system.tables WHERE database = 'plover' ORDER BY name",
    );
    expect(tables).toEqual(
      Object.keys(SHARDING_KEYS)
        .flatMap((table) => [
          { name: table, engine: 'Distributed' },
          { name: `${table}_local`, engine: 'ReplacingMergeTree' },
        ])
        .sort((a, b) => a.name.localeCompare(b.name)),
    );
    for (const table of Object.keys(SHARDING_KEYS)) {
      const columns = (name: string) =>
        plain.query(
          'test.columns',
          "SELECT name, type, default_kind, default_expression FROM system.columns WHERE database = 'plover' AND table = {name:String} ORDER BY position",
          {
            name,
          },
        );
      expect(await columns(table)).toEqual(await columns(`${table}_local`));
    }
  });

  /** The rows the engine queued for a background send to the shards of `table`, each with its shard's number. */
  async function queued(table: string): Promise<{ shard: number; row: Record<string, unknown> }[]> {
    const [paths] = await plain.query<{ data_paths: string[] }>(
      'test.paths',
      "SELECT data_paths FROM system.tables WHERE database = 'plover' AND name = {table:String}",
      { table },
    );
    // A shard's queue is a directory `shard<number>_…` of files in the Distributed format, which file() reads.
    const rows = await plain.query<{ _path: string }>('test.queued', "SELECT *, _path FROM file({files:String}, 'Distributed')", {
      files: `${paths!.data_paths[0]}shard*/*.bin`,
    });
    return rows.map(({ _path, ...row }) => ({ shard: Number(/\/shard(\d+)_[^/]*\/[^/]*$/.exec(_path)![1]), row }));
  }

  it('sends every row to the shard that the sharding expression written in the DDL names', async () => {
    const values: Record<string, string> = { String: "concat('key-', toString(number))", UUID: 'generateUUIDv4(number)', UInt32: 'toUInt32(100 + number)' };
    for (const { table, expression } of distributedTables(recorded)) {
      const column = /^(?:cityHash64\((\w+)\)|(\w+))$/.exec(expression)!.slice(1).find(Boolean)!;
      const [{ type } = { type: '' }] = await plain.query<{ type: string }>(
        'test.type',
        "SELECT type FROM system.columns WHERE database = 'plover' AND table = {table:String} AND name = {column:String}",
        {
          table,
          column,
        },
      );
      await plain.command('test.insert', `INSERT INTO ${table} (${column}) SELECT ${values[type]} FROM numbers(200)`);
      const rows = await queued(table);
      expect(rows.length).toBeGreaterThanOrEqual(200);
      // The expression as the DDL writes it, computed by the engine for each queued row's value.
      const keys = rows.map(({ row }) => row[column]);
      const expected = await plain.query<{ shard: number }>(
        'test.expected',
        `SELECT toUInt32((${expression}) % ${topology.shards} + 1) AS shard FROM (SELECT arrayJoin({keys:Array(${type})}) AS ${column})`,
        { keys },
      );
      expect(rows.map(({ shard }) => shard)).toEqual(expected.map(({ shard }) => shard));
      expect(new Set(rows.map(({ shard }) => shard)).size).toBe(topology.shards);
      // The column is part of the local table's sorting key, so every copy of a row that the table collapses
      // has the same value in it, and goes to the same shard.
      const [key] = await plain.query<{ sorting_key: string }>(
        'test.key',
        "SELECT sorting_key FROM system.tables WHERE database = 'plover' AND name = {name:String}",
        {
          name: `${table}_local`,
        },
      );
      expect(key!.sorting_key).toMatch(new RegExp(`\\b${column}\\b`));
    }
  });

  it('returns a cluster handle’s insert only once every shard stored its rows: with shards down it fails, nothing queued', async () => {
    const row = {
      uuid: '00000000-0000-4000-8000-000000000001',
      event: '$pageview',
      properties: '{}',
      timestamp: '2024-03-01 12:00:00.000000',
      team_id: 1,
      distinct_id: 'user-1',
      elements_chain: '',
      created_at: '2024-03-01 12:00:00.000000',
      person_id: '00000000-0000-4000-8000-000000000002',
      person_properties: '{}',
      person_created_at: '2024-03-01 12:00:00.000',
      person_mode: 'full' as const,
      ...NO_GROUPS,
      session_id: '',
      window_id: '',
      historical_migration: false,
    };
    await insertEvents(plain, [row]);
    const before = (await queued('events')).length;
    const error = await failure(insertEvents(clustered, [row]));
    expect(error).toMatchObject({ retriable: true, code: '279' }); // ALL_CONNECTION_TRIES_FAILED
    await insertEvents(plain, [row]);
    expect((await queued('events')).length).toBe(before + 1);
  });

  if (topology.shards > 1) {
    it('runs the person overrides JOINed to events once and sends them to the shards, which a plain handle is refused', async () => {
      const sql = `SELECT count() FROM events AS e FINAL LEFT JOIN (${PERSON_OVERRIDES_SUBQUERY}) AS o ON e.person_id = o.old_person_id WHERE e.team_id = {projectId:Int64}`;
      expect(await failure(plain.query('test.join', sql, { projectId: 1 }))).toMatchObject({ code: '288' }); // DISTRIBUTED_IN_JOIN_SUBQUERY_DENIED
      // Past planning, the cluster handle's query fails only on reaching the shards.
      expect(await failure(clustered.query('test.join', sql, { projectId: 1 }))).toMatchObject({ code: '279' });
    });
  }

  it('accepts the replicated local tables, their replicas in Keeper under /clickhouse/tables/{shard}/{database}/{table}', async () => {
    const creates = commands(await recordMigrate(REPLICATED, 'plover_replicated')).filter(({ sql }) => /^CREATE (DATABASE|TABLE)/m.test(sql));
    try {
      for (const { name, sql } of creates) await plain.command(name, withoutOnCluster(sql));
      const replicas = await plain.query(
        'test.replicas',
        "SELECT table, zookeeper_path, replica_name FROM system.replicas WHERE database = 'plover_replicated' ORDER BY table",
      );
      expect(replicas).toEqual(
        Object.keys(SHARDING_KEYS)
          .sort()
          .map((table) => ({ table: `${table}_local`, zookeeper_path: `/clickhouse/tables/01/plover_replicated/${table}_local`, replica_name: 'r1' })),
      );
    } finally {
      // A replicated table left behind keeps the engine from shutting down.
      for (const table of Object.keys(SHARDING_KEYS)) await plain.command('test.drop', `DROP TABLE IF EXISTS plover_replicated.${table}_local SYNC`);
    }
  });
});

describe('the example server configuration, deploy/clickhouse/config.d/plover-cluster.xml', () => {
  it('declares the cluster the DDL names, 2 shards of 2 replicas, and each node’s macros from its environment', async () => {
    const { dir, remove } = await tempDir();
    try {
      // A server merges config.d/ into its configuration; so does the engine, next to its main file.
      await mkdir(path.join(dir, 'config.d'));
      await copyFile(path.join(__dirname, '../../../deploy/clickhouse/config.d/plover-cluster.xml'), path.join(dir, 'config.d/plover-cluster.xml'));
      await writeFile(path.join(dir, 'config.xml'), '<clickhouse></clickhouse>\n');
      // The engine reads the macros from its process's environment when it starts: a child process of its own,
      // with a node's variables (jest's process.env is a copy that the engine does not see).
      const script = `const { Session } = require('chdb');
        const engine = new Session(process.argv[1], { connectionArgs: ['--config-file=' + process.argv[2]] });
        const rows = (sql) => engine.query(sql, 'JSONEachRow').trim().split('\\n').map((line) => JSON.parse(line));
        process.stdout.write(JSON.stringify({
          replicas: rows("SELECT shard_num, replica_num, host_name, port FROM system.clusters WHERE cluster = 'plover' ORDER BY shard_num, replica_num"),
          macros: rows('SELECT macro, substitution FROM system.macros ORDER BY macro'),
        }));
        engine.close();`;
      const { stdout } = await execFileAsync(process.execPath, ['-e', script, path.join(dir, 'data'), path.join(dir, 'config.xml')], {
        env: { ...process.env, CLICKHOUSE_SHARD: '02', CLICKHOUSE_REPLICA: 's2r1', CLICKHOUSE_CLUSTER_SECRET: 'secret' },
      });
      expect(JSON.parse(stdout)).toEqual({
        replicas: [
          { shard_num: 1, replica_num: 1, host_name: 'clickhouse-s1r1', port: 9000 },
          { shard_num: 1, replica_num: 2, host_name: 'clickhouse-s1r2', port: 9000 },
          { shard_num: 2, replica_num: 1, host_name: 'clickhouse-s2r1', port: 9000 },
          { shard_num: 2, replica_num: 2, host_name: 'clickhouse-s2r2', port: 9000 },
        ],
        macros: [
          { macro: 'replica', substitution: 's2r1' },
          { macro: 'shard', substitution: '02' },
        ],
      });
    } finally {
      await remove();
    }
  });
});
