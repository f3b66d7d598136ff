import type { QueryResult, Sql, SqlExecutor } from '@plover/postgres';

/** Wraps a Sql so that tests can count the queries run by name, and make chosen ones fail or hang. */
export class FaultySql implements Sql {
  readonly counts = new Map<string, number>();
  failing = new Set<string>();
  delayMs = new Map<string, number>();

  constructor(private readonly inner: Sql) {}

  async query<R>(name: string, text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    if (this.failing.has(name)) throw new Error(`injected failure of ${name}`);
    const delay = this.delayMs.get(name);
    if (delay) await new Promise((resolve) => setTimeout(resolve, delay));
    return this.inner.query<R>(name, text, params);
  }

  exec(name: string, script: string): Promise<void> {
    return this.inner.exec(name, script);
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.inner.transaction(fn);
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
