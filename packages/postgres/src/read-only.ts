import { diskLowError, StorageError } from '@plover/core';
import type { QueryResult, Sql, SqlExecutor } from './sql';

/** SQLSTATE `read_only_sql_transaction`: a write in a READ ONLY transaction. */
const READ_ONLY_SQL_TRANSACTION = '25006';

/**
 * Runs `fn` in a READ ONLY transaction of `sql`: reads answer as usual, the first write fails at once (Postgres
 * refuses it before writing anything, WAL included) and becomes a retriable disk-full StorageError naming `cause`.
 */
export async function readOnly<T>(sql: Sql, name: string, cause: string, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
  try {
    return await sql.transaction(async (tx) => {
      await tx.exec(`${name}.read_only`, 'SET TRANSACTION READ ONLY');
      return fn(tx);
    });
  } catch (error) {
    if (error instanceof StorageError && error.code === READ_ONLY_SQL_TRANSACTION) throw diskLowError(name, cause);
    throw error;
  }
}

/**
 * An Sql whose statements run read-only while `refusal()` names a cause (a disk below its watermark): new writes
 * fail fast with that cause, reads go on. Costs nothing while writes are allowed.
 */
export class WritesRefusedWhen implements Sql {
  constructor(
    private readonly sql: Sql,
    private readonly refusal: () => string | undefined,
  ) {}

  query<R = Record<string, unknown>>(name: string, text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
    const cause = this.refusal();
    return cause === undefined ? this.sql.query<R>(name, text, params) : readOnly(this.sql, name, cause, (tx) => tx.query<R>(name, text, params));
  }

  exec(name: string, script: string): Promise<void> {
    const cause = this.refusal();
    return cause === undefined ? this.sql.exec(name, script) : readOnly(this.sql, name, cause, (tx) => tx.exec(name, script));
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const cause = this.refusal();
    return cause === undefined ? this.sql.transaction(fn) : readOnly(this.sql, 'transaction', cause, fn);
  }

  ping(): Promise<void> {
    return this.sql.ping();
  }

  close(): Promise<void> {
    return this.sql.close();
  }
}
