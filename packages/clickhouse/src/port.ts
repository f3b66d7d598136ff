/**
 * The ClickHouse port. Adapters: `HttpClickHouse` (@clickhouse/client against a server) and
 * `ChdbClickHouse` (in-process chDB, embedded mode). Same SQL on both; parameters are ClickHouse native
 * bound parameters (`{name:Type}` in the SQL, values in `params`), never interpolated.
 */
export type ClickHouseParams = Record<string, unknown>;

export interface ClickHouse {
  /** A statement without a result (DDL, ALTER, INSERT … SELECT). `name` labels it in logs and metrics. */
  command(name: string, sql: string, params?: ClickHouseParams): Promise<void>;
  /** A SELECT; rows come back as objects (JSONEachRow; 64-bit integers as strings). */
  query<R = Record<string, unknown>>(name: string, sql: string, params?: ClickHouseParams): Promise<R[]>;
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
