/**
 * Cluster mode (docs/clickhouse-cluster.md): Plover's tables spread over the shards of a ClickHouse cluster. A
 * handle given a `cluster` (HttpClickHouse's option, from CLICKHOUSE_CLUSTER) changes three things, and nothing
 * in the queries:
 *
 * - Migrations. Each single-node statement becomes its cluster form (clusterStatements): a table is created
 *   `ON CLUSTER` as `<table>_local` on every node (a `Replicated*MergeTree` when the cluster is replicated, with
 *   the same columns, sorting key and version column), and under its own name as a `Distributed` table over
 *   those, sharded by SHARDING_KEYS. Queries and inserts keep naming `events`, `person_overrides`, ...
 * - Inserts wait until every shard has stored its rows, so ingestion commits its offsets only after that; and
 *   a subquery over a Distributed table inside a query over another one (the person overrides JOINed to
 *   events) runs once, its result sent to the shards (CLUSTER_SETTINGS).
 *
 * Mutations (`ALTER TABLE … DELETE`) cannot go through a Distributed table: mutationTarget names the local
 * tables, ON CLUSTER.
 */
import { StorageError } from '@plover/core';
import type { ClickHouse, ClickHouseCluster } from './port';

/** A Distributed table's shard-local table. */
export function localTable(table: string): string {
  return `${table}_local`;
}

/**
 * What decides each table's shard: an integer expression of columns of the table's sorting key, so that all
 * the copies of a row that the ReplacingMergeTree collapses (a redelivered message, a newer version) land on
 * the same shard, where background merges and FINAL can collapse them.
 *
 * - events: the distinct id, so one person's events sit together (per-person grouping, funnels and the
 *   redelivery check are answered by one shard each) and every copy of an event (same distinct id) too.
 * - ingestion_warnings: the event's uuid, which every copy of a warning carries (it has no distinct id).
 * - person_overrides: the merged-away person's uuid, the table's key: its versions collapse on one shard.
 *   Queries JOIN the overrides of a whole project to events of every shard: CLUSTER_SETTINGS sends them there.
 * - session_replay_snapshots, session_replay_summaries: the session id, so a recording's blocks and its
 *   summary rows are on one shard, read and summed there (the snapshot rows have no distinct id).
 * - logs: the record's uuid, which every copy of a record carries; a project's lines spread over every shard.
 * - plover_migrations: the migration's version, the ledger's key.
 * A table missing here cannot be created in cluster mode: each new table needs its key chosen.
 */
export const SHARDING_KEYS: Readonly<Record<string, string>> = {
  events: 'cityHash64(distinct_id)',
  ingestion_warnings: 'cityHash64(event_uuid)',
  person_overrides: 'cityHash64(old_person_id)',
  session_replay_snapshots: 'cityHash64(session_id)',
  session_replay_summaries: 'cityHash64(session_id)',
  logs: 'cityHash64(uuid)',
  plover_migrations: 'version',
};

/**
 * Every statement of a handle to a cluster runs with these:
 * - `distributed_foreground_insert`: an insert into a Distributed table hands each shard its rows and returns
 *   only once every shard stored them, instead of queueing them on the receiving node for a background send;
 *   ingestion commits its offsets after the insert returns, so only after that.
 * - `distributed_product_mode = 'global'`: a subquery over a Distributed table within a query over another one
 *   (IN or JOIN, e.g. the person overrides JOINed to events) runs once on the receiving node and its result goes
 *   to the shards (GLOBAL IN / GLOBAL JOIN). The server's default refuses such queries on two shards or more.
 */
export const CLUSTER_SETTINGS = { distributed_foreground_insert: 1, distributed_product_mode: 'global' } as const;

/** The path of a replicated local table's replicas in Keeper; the server expands the macros. */
const REPLICA_PATH = `'/clickhouse/tables/{shard}/{database}/{table}', '{replica}'`;
const NAME = '[A-Za-z_][A-Za-z0-9_]*';
const CREATE_TABLE = new RegExp(`^CREATE TABLE IF NOT EXISTS (\\S+)\\.(${NAME})(?=\\s)`, 'm');
const CREATE_DATABASE = /^CREATE DATABASE IF NOT EXISTS \S+$/;
const ALTER_TABLE = new RegExp(`^ALTER TABLE (\\S+)\\.(${NAME}) `, 'm');
const ENGINE = /\bENGINE = ([A-Za-z]*MergeTree)(?:\(([^()]*)\))?/g;
/** ALTER commands that change columns: the Distributed table must list the same columns as its local tables. */
const COLUMN_COMMAND = /^(ADD|DROP|MODIFY|RENAME|COMMENT) COLUMN\b/;

export function assertClusterName(name: string): void {
  if (!new RegExp(`^${NAME}$`).test(name)) {
    throw new StorageError(`Invalid ClickHouse cluster name ${JSON.stringify(name)}`, false, 'BAD_CLUSTER_NAME');
  }
}

/**
 * The statements that apply one single-node migration statement (database already substituted) to a cluster.
 * Understood: `CREATE DATABASE IF NOT EXISTS`; `CREATE TABLE IF NOT EXISTS <db>.<table>` of a *MergeTree
 * engine (→ local table, then Distributed table); `ALTER TABLE <db>.<table> <one command>` (→ the local table,
 * and for a column command the Distributed table too). Anything else is refused rather than guessed at.
 */
export function clusterStatements(statement: string, cluster: ClickHouseCluster): string[] {
  assertClusterName(cluster.name);
  const onCluster = `ON CLUSTER ${cluster.name}`;
  if (CREATE_DATABASE.test(statement)) return [`${statement} ${onCluster}`];

  const create = CREATE_TABLE.exec(statement);
  if (create) {
    const [header, database, table] = create as unknown as [string, string, string];
    const engines = [...statement.matchAll(ENGINE)];
    const [engine] = engines;
    if (engines.length !== 1 || !engine) throw unsupported(statement, 'a table needs exactly one *MergeTree engine');
    const shardingKey = SHARDING_KEYS[table];
    if (shardingKey === undefined) throw unsupported(statement, `table ${table} has no sharding key (SHARDING_KEYS)`);
    const [clause, family, args] = engine as unknown as [string, string, string | undefined];
    const localEngine = cluster.replicated ? `ENGINE = Replicated${family}(${[REPLICA_PATH, args].filter(Boolean).join(', ')})` : clause;
    const local = statement
      .replace(header, () => `CREATE TABLE IF NOT EXISTS ${database}.${localTable(table)} ${onCluster}`)
      .replace(clause, () => localEngine);
    const distributed =
      `CREATE TABLE IF NOT EXISTS ${database}.${table} ${onCluster} AS ${database}.${localTable(table)}\n` +
      `ENGINE = Distributed(${cluster.name}, ${database}, ${localTable(table)}, ${shardingKey})`;
    return [local, distributed];
  }

  const alter = ALTER_TABLE.exec(statement);
  if (alter) {
    const [header, database, table] = alter as unknown as [string, string, string];
    const command = statement.slice(alter.index + header.length);
    const statements = [statement.replace(header, () => `ALTER TABLE ${database}.${localTable(table)} ${onCluster} `)];
    if (COLUMN_COMMAND.test(command)) statements.push(statement.replace(header, () => `ALTER TABLE ${database}.${table} ${onCluster} `));
    return statements;
  }
  throw unsupported(statement, 'only CREATE DATABASE, CREATE TABLE and ALTER TABLE statements are understood');
}

/**
 * The table an `ALTER TABLE … DELETE` (or UPDATE) of `table` must name: the table itself on a single node; on a
 * cluster its local tables on every node, since a Distributed table holds no rows.
 */
export function mutationTarget(ch: ClickHouse, table: string): string {
  if (!ch.cluster) return table;
  assertClusterName(ch.cluster.name);
  return `${localTable(table)} ON CLUSTER ${ch.cluster.name}`;
}

function unsupported(statement: string, why: string): StorageError {
  const firstLine = statement.split('\n').find((line) => line.trim() !== '' && !line.trim().startsWith('--')) ?? '';
  return new StorageError(`Cannot apply "${firstLine.trim()}" to a ClickHouse cluster: ${why}`, false, 'BAD_MIGRATION');
}
