/**
 * The ClickHouse port over ClickHouse's HTTP interface (@clickhouse/client), for distributed mode.
 */
import { ClickHouseError, ClickHouseLogLevel, createClient, type ClickHouseClient, type ResultSet } from '@clickhouse/client';
import { StorageError } from '@plover/core';
import { CLUSTER_SETTINGS } from './cluster';
import { clickHouseFailure, closedFailure, nodeFailure, timeoutFailure, unclassifiedFailure } from './errors';
import type { ClickHouse, ClickHouseCluster, ClickHouseParams, RowsResult, StatementSettings } from './port';
import { assertTableName, compactRows, normalizeParams, SESSION_SETTINGS, withSettings } from './wire';

export interface HttpClickHouseOptions {
  /** e.g. `http://127.0.0.1:8123` */
  url: string;
  /** Database for unqualified table names; must exist (see `migrate`'s `database` option to create it). */
  database?: string;
  username?: string;
  password?: string;
  /** Per-request deadline; a request still running then fails with a retriable StorageError (code TIMEOUT). */
  requestTimeoutMs?: number;
  /** The cluster the server belongs to, for cluster mode (CLICKHOUSE_CLUSTER); unset for a single server. */
  cluster?: ClickHouseCluster;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/**
 * The client also has a socket timeout, whose error carries no code to classify it by. It is set this much
 * later than our own AbortSignal deadline so that ours always fires first and the failure is recognisable.
 */
const CLIENT_TIMEOUT_GRACE_MS = 5_000;

export class HttpClickHouse implements ClickHouse {
  readonly cluster: ClickHouseCluster | undefined;
  private readonly client: ClickHouseClient;
  private readonly timeoutMs: number;
  private closed = false;

  constructor(options: HttpClickHouseOptions) {
    this.timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.cluster = options.cluster;
    this.client = createClient({
      url: options.url,
      database: options.database,
      username: options.username,
      password: options.password,
      request_timeout: this.timeoutMs + CLIENT_TIMEOUT_GRACE_MS,
      clickhouse_settings: options.cluster ? { ...SESSION_SETTINGS, ...CLUSTER_SETTINGS } : SESSION_SETTINGS,
      // Failures reach the caller as StorageErrors and are logged there; the client's own console logging
      // would report each of them a second time, unstructured.
      log: { level: ClickHouseLogLevel.OFF },
    });
  }

  async command(name: string, sql: string, params?: ClickHouseParams): Promise<void> {
    await this.call(`ClickHouse command ${name}`, (abort_signal) =>
      this.client.command({
        query: sql,
        query_params: params && normalizeParams(params),
        clickhouse_settings: { log_comment: name },
        abort_signal,
      }),
    );
  }

  async query<R = Record<string, unknown>>(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): Promise<R[]> {
    return this.select(name, withSettings(sql, settings), params, 'JSONEachRow', (result) => result.json<R>());
  }

  async queryRows(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): Promise<RowsResult> {
    return this.select(name, withSettings(sql, settings), params, 'JSONCompact', async (result) => {
      const { meta = [], data } = await result.json<unknown[]>();
      return compactRows({ meta, data });
    });
  }

  async queryRaw(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): Promise<Buffer> {
    return this.select(name, withSettings(sql, settings), params, 'TabSeparatedRaw', async (result) => Buffer.from(await result.text()));
  }

  /**
   * The response body as it arrives. The adapter's deadline covers the statement until its first bytes; after
   * that the stream runs as long as the consumer reads (breaking off destroys the request, which cancels the
   * query on the server). A server that fails after it sent the first bytes appends its exception to the body.
   */
  async *queryRawStream(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): AsyncIterable<Uint8Array> {
    const operation = `ClickHouse query ${name}`;
    const abort = new AbortController();
    const deadline = setTimeout(() => abort.abort(), this.timeoutMs);
    const { stream } = await this.call(operation, () =>
      this.client.exec({
        query: `${withSettings(sql, settings)}\nFORMAT TabSeparatedRaw`,
        query_params: params && normalizeParams(params),
        clickhouse_settings: { log_comment: name },
        abort_signal: abort.signal,
      }),
    ).finally(() => clearTimeout(deadline));
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) yield chunk;
    } catch (error) {
      throw classify(operation, error, undefined);
    } finally {
      stream.destroy();
    }
  }

  async insert(table: string, rows: readonly Record<string, unknown>[]): Promise<void> {
    assertTableName(table);
    if (rows.length === 0) return;
    await this.call(`ClickHouse insert into ${table}`, (abort_signal) => this.client.insert({ table, values: rows, format: 'JSONEachRow', abort_signal }));
  }

  async ping(): Promise<void> {
    await this.call('ClickHouse ping', async (abort_signal) => {
      // A SELECT rather than the /ping endpoint, which answers without checking credentials.
      // ping() reports failure in its result instead of throwing.
      const result = await this.client.ping({ select: true, abort_signal });
      if (!result.success) throw result.error;
    });
  }

  /** Closes idle sockets; calls made afterwards fail (code CLOSED), as on the chDB adapter. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    await this.client.close();
  }

  private select<T, F extends 'JSONEachRow' | 'JSONCompact' | 'TabSeparatedRaw'>(
    name: string,
    sql: string,
    params: ClickHouseParams | undefined,
    format: F,
    read: (result: ResultSet<F>) => Promise<T>,
  ): Promise<T> {
    return this.call(`ClickHouse query ${name}`, async (abort_signal) => {
      const result = await this.client.query({
        query: sql,
        format,
        query_params: params && normalizeParams(params),
        // Shows up in the server's system.query_log, so a slow or failing statement can be traced to its caller.
        clickhouse_settings: { log_comment: name },
        abort_signal,
      });
      return read(result);
    });
  }

  /** Runs one request under the adapter's deadline and turns any failure into a classified StorageError. */
  private async call<T>(operation: string, request: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (this.closed) throw closedFailure(operation);
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      return await request(signal);
    } catch (error) {
      throw classify(operation, error, signal.aborted ? this.timeoutMs : undefined);
    }
  }
}

function classify(operation: string, error: unknown, timedOutAfterMs: number | undefined): StorageError {
  if (error instanceof StorageError) return error;
  if (timedOutAfterMs !== undefined) return timeoutFailure(operation, timedOutAfterMs, error);
  if (error instanceof ClickHouseError) {
    const code = Number(error.code);
    if (Number.isInteger(code)) return clickHouseFailure(operation, code, error);
  }
  const systemCode = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof systemCode === 'string') return nodeFailure(operation, systemCode, error);
  return unclassifiedFailure(operation, error);
}
