/**
 * The ClickHouse port. Adapters: `HttpClickHouse` (@clickhouse/client against a server) and
 * `ChdbClickHouse` (in-process chDB, embedded mode). Same SQL on both; parameters are ClickHouse native
 * bound parameters (`{name:Type}` in the SQL, values in `params`), never interpolated.
 */
export type ClickHouseParams = Record<string, unknown>;

/**
 * Settings of one statement, sent as its one trailing `SETTINGS` clause (wire.ts `withSettings`). Names and values
 * come from code and configuration, never from a request.
 */
export type StatementSettings = Readonly<Record<string, number | string>>;

/** A sharded ClickHouse cluster that a handle's statements go to (cluster.ts, docs/clickhouse-cluster.md). */
export interface ClickHouseCluster {
  /** The cluster's name in the servers' `remote_servers` configuration. */
  name: string;
  /**
   * Local tables are `Replicated*MergeTree`s, replicated among the replicas of their shard through Keeper
   * (`{shard}` and `{replica}` macros). Without it they are plain MergeTrees: one node per shard.
   */
  replicated: boolean;
}

export interface RowsResult {
  columns: { name: string; type: string }[];
  rows: unknown[][];
}

export interface ClickHouse {
  /**
   * Set on a handle to a cluster: migrations create local and Distributed tables, inserts wait for every shard
   * and mutations go to the local tables. Unset (a single server, chDB): the tables are plain MergeTrees.
   */
  readonly cluster?: ClickHouseCluster;
  /** A statement without a result (DDL, ALTER, INSERT … SELECT). `name` labels it in logs and metrics. */
  command(name: string, sql: string, params?: ClickHouseParams): Promise<void>;
  /** A SELECT; rows come back as objects (JSONEachRow; 64-bit integers as strings). */
  query<R = Record<string, unknown>>(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): Promise<R[]>;
  /**
   * A SELECT whose rows come back as arrays, with the result's column names and ClickHouse types (JSONCompact):
   * for queries whose columns are not known in advance, or have the same name twice.
   */
  queryRows(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): Promise<RowsResult>;
  /**
   * A SELECT answered as the bytes ClickHouse writes in TabSeparatedRaw (UTF-8; values joined by tabs, each row
   * ended by a line break, nothing escaped), unparsed: for answers passed on as they are, where parsing each row and
   * serializing it again would cost more than the query.
   */
  queryRaw(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): Promise<Buffer>;
  /**
   * {@link queryRaw}'s bytes streamed, chunk by chunk while the statement runs (a chunk ends at a line break): for
   * answers too large to hold at once. Breaking off the iteration cancels the statement; a failure after the first
   * chunk rejects the iteration where it happened.
   */
  queryRawStream(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): AsyncIterable<Uint8Array>;
  /** Inserts rows as JSONEachRow into `table`; resolves once ClickHouse has stored them. */
  insert(table: string, rows: readonly Record<string, unknown>[]): Promise<void>;
  /**
   * Makes every insert resolved so far survive a power loss. Only where the adapter cannot promise that per
   * insert (chDB); a ClickHouse server is made durable by how it is run (replicas, its MergeTree settings).
   */
  sync?(): Promise<void>;
  /** Resolves when the engine answers; rejects with a StorageError otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
