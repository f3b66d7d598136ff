/**
 * The Sql port: everything Plover asks of Postgres. Adapters: `PgSql` (a `pg` Pool against a real server)
 * and `PGliteSql` (in-process WASM Postgres, embedded mode). Same SQL, same migrations, bound parameters only.
 *
 * Both adapters return the same JS values for the same SQL (see types.ts): int8 → number (bigint beyond
 * 2^53), numeric → string, timestamptz → Date, date → 'YYYY-MM-DD', json/jsonb → parsed, arrays → arrays.
 * Parameters: for a jsonb parameter pass an object or JSON text — a JS array binds as a Postgres array
 * on pg, so a jsonb array goes in as `JSON.stringify(value)`.
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
  /**
   * Runs a script of several statements without parameters (migrations, DDL). Added to the port because
   * `query` goes through the extended protocol, which accepts exactly one statement per call.
   */
  exec(name: string, script: string): Promise<void>;
}

export interface Sql extends SqlExecutor {
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws (the error is rethrown).
   * Inside `fn` use `tx` only: PGlite has a single connection, so the Sql itself waits for the transaction to end.
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** Resolves when the database answers a trivial query; rejects with a StorageError otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
