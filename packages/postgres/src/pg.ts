import { Pool, types, type CustomTypesConfig, type PoolClient, type QueryConfig, type QueryResult as PgQueryResult } from 'pg';
import { StorageError, silentLogger, type Logger } from '@plover/core';
import { closedError, toStorageError } from './errors';
import type { QueryResult, Sql, SqlExecutor } from './sql';
import { ARRAY_ELEMENT_OID, RESULT_PARSERS } from './types';

export interface PgSqlOptions {
  connectionString: string;
  /** Pool size (connections per process). */
  max?: number;
  /** Server-side `statement_timeout` for every connection; the server's default when unset. */
  statementTimeoutMs?: number;
  /**
   * How long to wait for a connection (a free pool slot or a new connection). Added because pg waits
   * forever by default: against an unreachable host that is the OS TCP timeout (minutes), while callers
   * need a prompt, retriable failure (capture answers 503, the consumer backs off).
   */
  connectionTimeoutMs?: number;
  /** Receives failures of idle pooled connections, which no query observes. */
  logger?: Logger;
}

type TextParser = (text: string) => unknown;
// @types/pg types the built-in lookup as returning `any`; every text-format parser takes the wire text.
const builtinParser = types.getTypeParser as (oid: number, format?: 'text' | 'binary') => TextParser;
// Parses an array literal of any element type into (nested) arrays of element texts and nulls.
const parseTextArray = builtinParser(1009);

function mapArray(value: unknown, parse: TextParser): unknown {
  if (Array.isArray(value)) return value.map((element) => mapArray(element, parse));
  return typeof value === 'string' ? parse(value) : value;
}

/** pg's type lookup with the shared result rules (types.ts) layered over its defaults. */
const resultTypes: CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary'): TextParser => {
    const scalar = RESULT_PARSERS[oid];
    if (scalar) return scalar;
    const elementOid = ARRAY_ELEMENT_OID[oid];
    const element = elementOid === undefined ? undefined : RESULT_PARSERS[elementOid];
    if (element) return (text) => mapArray(parseTextArray(text), element);
    return builtinParser(oid, format);
  }) as typeof types.getTypeParser,
};

/**
 * One checked-out pool client. pg emits 'error' on a client whose connection dies; while the client is
 * checked out nobody else listens, so without this listener the process would crash. The listener also
 * tells the classifier that the connection broke, which pg does not always say with a code.
 */
class PgConnection implements SqlExecutor {
  private broken = false;
  private released = false;
  private readonly onError = (): void => {
    this.broken = true;
  };

  constructor(private readonly client: PoolClient) {
    client.on('error', this.onError);
  }

  async query<R = Record<string, unknown>>(name: string, text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
    // queryMode 'extended' (not in @types/pg) keeps parameterless queries on the extended protocol too:
    // one statement per call and the same wire behaviour as PGlite, which always uses it.
    const config: QueryConfig & { queryMode: 'extended' } = { text, values: params ? [...params] : [], queryMode: 'extended' };
    const result = await this.send(name, config);
    return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
  }

  async exec(name: string, script: string): Promise<void> {
    // Without values pg uses the simple protocol, which runs several statements in one call.
    await this.send(name, { text: script });
  }

  async send(name: string, config: QueryConfig): Promise<PgQueryResult> {
    // A transaction callback that kept `tx` past its end would otherwise run on a client someone else holds.
    if (this.released) throw closedError(name);
    try {
      return await this.client.query(config);
    } catch (error) {
      throw toStorageError(error, name, this.broken);
    }
  }

  /** Marks the connection as unusable, e.g. when ROLLBACK failed and its transaction state is unknown. */
  discard(): void {
    this.broken = true;
  }

  release(): void {
    this.released = true;
    this.client.off('error', this.onError);
    // A broken client is destroyed instead of going back to the pool.
    this.client.release(this.broken);
  }
}

/** The Sql port on a `pg` Pool against a real Postgres server. */
export class PgSql implements Sql {
  private readonly pool: Pool;
  private closing: Promise<void> | undefined;

  constructor(options: PgSqlOptions) {
    this.pool = new Pool({
      connectionString: options.connectionString,
      max: options.max ?? 10,
      statement_timeout: options.statementTimeoutMs,
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 10_000,
      types: resultTypes,
    });
    const logger = options.logger ?? silentLogger();
    // The pool drops an idle client whose connection died; without a listener the 'error' would crash the process.
    this.pool.on('error', (error) => logger.warn({ err: error }, 'idle postgres connection failed'));
  }

  /** Builds the adapter from the service config section (`DATABASE_URL`, `DATABASE_POOL_SIZE`). */
  static fromConfig(config: { url: string; poolSize: number }, logger?: Logger): PgSql {
    return new PgSql({ connectionString: config.url, max: config.poolSize, logger });
  }

  query<R = Record<string, unknown>>(name: string, text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
    return this.withConnection(name, (connection) => connection.query<R>(name, text, params));
  }

  exec(name: string, script: string): Promise<void> {
    return this.withConnection(name, (connection) => connection.exec(name, script));
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.withConnection('transaction', async (connection) => {
      await connection.exec('transaction.begin', 'BEGIN');
      let result: T;
      try {
        result = await fn(connection);
      } catch (error) {
        await connection.exec('transaction.rollback', 'ROLLBACK').catch(() => connection.discard());
        throw error;
      }
      const commit = await connection.send('transaction.commit', { text: 'COMMIT' });
      // COMMIT of a transaction that saw an error (and whose callback swallowed it) rolls back without
      // failing; report it as PGlite does, or the caller would believe its writes were stored.
      if (commit.command === 'ROLLBACK') {
        throw new StorageError('transaction.commit: the transaction was aborted by an earlier error and rolled back', false, '25P02');
      }
      return result;
    });
  }

  async ping(): Promise<void> {
    await this.query('ping', 'SELECT 1');
  }

  close(): Promise<void> {
    this.closing ??= this.pool.end();
    return this.closing;
  }

  private async withConnection<T>(name: string, use: (connection: PgConnection) => Promise<T>): Promise<T> {
    // Checked first: the pool's own "used after end" error carries no code and would read as a failed connection.
    if (this.closing) throw closedError(name);
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw toStorageError(error, name, true);
    }
    const connection = new PgConnection(client);
    try {
      return await use(connection);
    } finally {
      connection.release();
    }
  }
}
