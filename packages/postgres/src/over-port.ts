/**
 * The Sql port across threads: `serveSql` answers, on the thread that owns a database handle, the calls a
 * `PortSql` makes from another thread. Embedded mode's PGlite is one in-process connection that only its own
 * thread can use, and ingestion runs in a worker thread (services/standalone): the worker's statements run on
 * the owner's connection, in the same queue as the owner's own.
 *
 * A transaction stays open on the owner's side between the worker's statements: BEGIN when the worker's
 * `transaction` starts, COMMIT when its callback resolves, ROLLBACK when it throws. Meanwhile the owner's
 * other statements wait, as they would for a local transaction on a single connection. If the worker's thread
 * ends with a transaction open, the owner rolls it back.
 */
import { PortRpc } from '@plover/core';
import { closedError } from './errors';
import type { QueryResult, Sql, SqlExecutor } from './sql';

interface OpenTransaction {
  tx: SqlExecutor;
  /** Ends the transaction: true commits, false rolls back. */
  end: (commit: boolean) => void;
  /** Settles once the transaction ended (rejects when BEGIN or COMMIT failed). */
  ended: Promise<void>;
}

/**
 * Parameters as values of this thread's own classes. A Date or byte array that crossed the port is made with the
 * receiving context's primordial constructors; a driver loaded in another context of the same thread (a test
 * runner's sandbox) would not recognize it with `instanceof`.
 */
function ownValues(params: readonly unknown[] | undefined): readonly unknown[] | undefined {
  return params?.map((value) => {
    const kind = Object.prototype.toString.call(value);
    if (kind === '[object Date]') return new Date((value as Date).getTime());
    if (kind === '[object Uint8Array]') return Uint8Array.from(value as Uint8Array);
    return value;
  });
}

/** Thrown inside the owner's transaction to roll it back; never leaves serveSql. */
class Rollback extends Error {}

/** Answers `rpc`'s Sql calls with `sql`, until the other side goes away. */
export function serveSql(rpc: PortRpc, sql: Sql): void {
  const open = new Map<number, OpenTransaction>();
  const transaction = (id: number, name: string): SqlExecutor => {
    const entry = open.get(id);
    // As a local executor used after its transaction ended: a bug of the caller's, never retriable.
    if (!entry) throw closedError(name);
    return entry.tx;
  };
  rpc
    .handle('sql.query', (name: string, text: string, params?: readonly unknown[]) => sql.query(name, text, ownValues(params)))
    .handle('sql.exec', (name: string, script: string) => sql.exec(name, script))
    .handle('sql.ping', () => sql.ping())
    .handle('sql.tx.query', (id: number, name: string, text: string, params?: readonly unknown[]) => transaction(id, name).query(name, text, ownValues(params)))
    .handle('sql.tx.exec', (id: number, name: string, script: string) => transaction(id, name).exec(name, script))
    .handle(
      'sql.begin',
      (id: number) =>
        new Promise<void>((begun, failed) => {
          let end: (commit: boolean) => void = () => {};
          const commit = new Promise<boolean>((resolve) => (end = resolve));
          const ended = sql
            .transaction(async (tx) => {
              open.set(id, { tx, end, ended });
              begun();
              if (!(await commit)) throw new Rollback('rolled back by the other thread');
            })
            .catch((error: unknown) => {
              if (!(error instanceof Rollback)) throw error;
            })
            .finally(() => open.delete(id));
          // BEGIN failed: the callback never ran.
          ended.catch(failed);
        }),
    )
    .handle('sql.end', async (id: number, commit: boolean) => {
      const entry = open.get(id);
      if (!entry) throw new Error(`transaction ${id} is not open`);
      entry.end(commit);
      await entry.ended;
    });
  rpc.onClose(() => {
    for (const entry of open.values()) {
      entry.end(false);
      entry.ended.catch(() => {});
    }
  });
}

/**
 * The Sql of another thread (see serveSql). Closing it ends this handle only (later calls reject as on a closed
 * handle): the owner closes the database.
 */
export class PortSql implements Sql {
  private nextTransaction = 0;
  private closed = false;

  constructor(private readonly rpc: PortRpc) {}

  query<R = Record<string, unknown>>(name: string, text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
    return this.call(name, 'sql.query', name, text, params);
  }

  exec(name: string, script: string): Promise<void> {
    return this.call(name, 'sql.exec', name, script);
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const id = this.nextTransaction++;
    await this.call('transaction', 'sql.begin', id);
    let result: T;
    try {
      result = await fn({
        query: <R>(name: string, text: string, params?: readonly unknown[]) => this.rpc.call<QueryResult<R>>('sql.tx.query', id, name, text, params),
        exec: (name: string, script: string) => this.rpc.call<void>('sql.tx.exec', id, name, script),
      });
    } catch (error) {
      // The callback's own failure is the one to report; a failed ROLLBACK leaves nothing to undo on our side.
      await this.rpc.call('sql.end', id, false).catch(() => {});
      throw error;
    }
    await this.rpc.call('sql.end', id, true);
    return result;
  }

  ping(): Promise<void> {
    return this.call('ping', 'sql.ping');
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private call<T>(name: string, method: string, ...args: unknown[]): Promise<T> {
    return this.closed ? Promise.reject(closedError(name)) : this.rpc.call<T>(method, ...args);
  }
}
