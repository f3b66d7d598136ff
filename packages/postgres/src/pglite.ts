import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdir } from 'node:fs/promises';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { StorageError } from '@plover/core';
import { toStorageError } from './errors';
import type { QueryResult, Sql, SqlExecutor } from './sql';
import { RESULT_PARSERS } from './types';

export interface PGliteSqlOptions {
  /** Directory holding the database files; undefined keeps the database in memory (tests). */
  dataDir?: string;
  /**
   * Fail at once when a transaction callback calls this Sql instead of its transaction's executor (see
   * assertOutsideTransaction). On by default, so every test catches that mistake. It follows the callback with
   * AsyncLocalStorage, which on Node 20 runs async hooks for every promise the process creates: 20–30 % of the
   * embedded server's CPU per captured event (bench/capture.ts, 2026-11-22). The embedded server turns it off.
   */
  guardTransactions?: boolean;
}

/** PGlite's top-level handle and its transaction handle offer the same query/exec calls. */
function executor(target: PGlite | Transaction): SqlExecutor {
  return {
    async query<R = Record<string, unknown>>(name: string, text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      try {
        const result = await target.query<R>(text, params ? [...params] : undefined);
        return { rows: result.rows, rowCount: result.rowCount ?? 0 };
      } catch (error) {
        throw toStorageError(error, name);
      }
    },
    async exec(name: string, script: string): Promise<void> {
      try {
        await target.exec(script);
      } catch (error) {
        throw toStorageError(error, name);
      }
    },
  };
}

/** Carries an error thrown by the caller's callback through PGlite's transaction, so it is rethrown unwrapped. */
class CallbackFailure extends Error {
  constructor(readonly error: unknown) {
    super('transaction callback failed');
  }
}

/**
 * PGlite's shared buffers live in this process's memory: Postgres' default 128 MB made an opened database
 * 210 MB of RSS, 16 MB makes it 90 MB (reopening a data dir, measured 2026-11-22). Embedded mode's tables are
 * read through the OS page cache beyond that, which is what one machine's page cache is for.
 */
const SETTINGS = ['shared_buffers=16MB'];

/**
 * The Sql port on PGlite, in process (embedded mode).
 *
 * Main thread, not PGlite's worker mode: `PGliteWorker` expects a browser-style Worker, elects a leader with
 * `navigator.locks` (absent in Node 20) and loads its database from a separate worker entry module, which
 * would need its own build step outside tsc's CommonJS output and jest's transform. Queries therefore run on
 * the event loop; callers that need throughput cache (see ARCHITECTURE.md, embedded adapters).
 *
 * PGlite is one connection. Its `transaction()` and top-level `query()`/`exec()` share one mutex, so a
 * transaction is exclusive and a plain query issued meanwhile waits for it to end instead of running inside it.
 */
export class PGliteSql implements Sql {
  private readonly direct: SqlExecutor;
  /** Set while this instance's transaction callback runs (when guarded); see assertOutsideTransaction. */
  private readonly transactionScope: AsyncLocalStorage<true> | undefined;

  private constructor(
    private readonly db: PGlite,
    guardTransactions: boolean,
  ) {
    this.direct = executor(db);
    this.transactionScope = guardTransactions ? new AsyncLocalStorage<true>() : undefined;
  }

  static async open(options: PGliteSqlOptions = {}): Promise<PGliteSql> {
    try {
      // PGlite creates only the last path segment; a fresh install's data dir has no parents yet.
      if (options.dataDir !== undefined) await mkdir(options.dataDir, { recursive: true });
      // pg_trgm indexes the persons `search` (email contains); real Postgres ships it, PGlite loads it here.
      // Imported dynamically: the contrib modules declare only ESM typings.
      const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm');
      const db = await PGlite.create({ dataDir: options.dataDir, parsers: RESULT_PARSERS, extensions: { pg_trgm }, postgresqlconf: SETTINGS });
      return new PGliteSql(db, options.guardTransactions ?? true);
    } catch (error) {
      throw toStorageError(error, 'open');
    }
  }

  async query<R = Record<string, unknown>>(name: string, text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
    this.assertOutsideTransaction(name);
    return this.direct.query<R>(name, text, params);
  }

  async exec(name: string, script: string): Promise<void> {
    this.assertOutsideTransaction(name);
    return this.direct.exec(name, script);
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    this.assertOutsideTransaction('transaction');
    const callback = async (tx: Transaction): Promise<T> => {
      try {
        return await fn(executor(tx));
      } catch (error) {
        throw new CallbackFailure(error);
      }
    };
    const scope = this.transactionScope;
    try {
      return await this.db.transaction((tx) => (scope ? scope.run(true, callback, tx) : callback(tx)));
    } catch (error) {
      if (error instanceof CallbackFailure) throw error.error;
      // BEGIN, COMMIT (25P02 when the callback swallowed an error) or ROLLBACK failed.
      throw toStorageError(error, 'transaction');
    }
  }

  async ping(): Promise<void> {
    await this.query('ping', 'SELECT 1');
  }

  async close(): Promise<void> {
    if (!this.db.closed) await this.db.close();
  }

  /**
   * Inside a transaction callback the Sql itself would wait for that very transaction to end: a deadlock
   * that hangs embedded mode while the same code runs on a pg pool. Fail at once instead (when guarded).
   */
  private assertOutsideTransaction(name: string): void {
    if (this.transactionScope?.getStore()) {
      throw new StorageError(`${name}: called on the Sql inside its own transaction; use the transaction's executor`, false, undefined);
    }
  }
}
