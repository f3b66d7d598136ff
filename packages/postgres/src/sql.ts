/**
 * The Sql port: everything Plover asks of Postgres. Adapters: `PgSql` (a `pg` Pool against a real server)
 * and `PGliteSql` (in-process WASM Postgres, embedded mode). Same SQL, same migrations, bound parameters only.
 */
export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface SqlExecutor {
  /**
   * Runs one statement with `$1…$n` bound parameters. `name` labels the query in logs and metrics
   * (e.g. `persons.fetchForUpdate`); it is never sent as SQL.
   */
  query<R = Record<string, unknown>>(name: string, text: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
}

export interface Sql extends SqlExecutor {
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws (the error is rethrown). */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** Resolves when the database answers a trivial query; rejects with a StorageError otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
