/**
 * Bounds on what one analysis request may make ClickHouse do, the same on a server and on chDB. Every read a
 * request handler makes goes through `limitedClickHouse`, which gives each SELECT the settings below in its
 * `SETTINGS` clause (the port's statement settings, which both adapters write the same way) and turns a limit
 * the engine hit into a 400 naming it, instead of a 500 or a process that runs out of memory.
 */
import { ApiError, StorageError } from '@plover/core';
import type { QueryLimits } from '@plover/config';
import type { ClickHouse, ClickHouseParams, StatementSettings } from './port';

/** The ClickHouse codes of the limits above (src/Common/ErrorCodes.cpp), each with the setting it names. */
const LIMIT_CODES: ReadonlyMap<string, { name: string; setting: (limits: QueryLimits) => string }> = new Map([
  ['158', { name: 'too_many_rows', setting: (l) => `max_rows_to_read (${l.maxRowsToRead} rows)` }],
  ['159', { name: 'timeout_exceeded', setting: (l) => `max_execution_time (${l.maxExecutionSeconds} s)` }],
  ['160', { name: 'too_slow', setting: (l) => `max_execution_time (${l.maxExecutionSeconds} s, estimated)` }],
  ['241', { name: 'memory_limit_exceeded', setting: (l) => `max_memory_usage (${l.maxMemoryBytes} bytes)` }],
  ['307', { name: 'too_many_bytes', setting: (l) => `max_bytes_to_read (${l.maxBytesToRead} bytes)` }],
  ['396', { name: 'too_many_rows_or_bytes', setting: (l) => `max_result_rows / max_result_bytes (${l.maxResultRows} rows, ${l.maxResultBytes} bytes)` }],
  // The HTTP adapter's own deadline (its requests time out a little after max_execution_time would).
  ['TIMEOUT', { name: 'timeout_exceeded', setting: (l) => `max_execution_time (${l.maxExecutionSeconds} s)` }],
]);

/** The settings clause of `limits`: numbers from configuration only, never request input. */
export function limitSettings(limits: QueryLimits): Record<string, number> {
  const settings: Record<string, number> = {
    max_execution_time: limits.maxExecutionSeconds,
    max_memory_usage: limits.maxMemoryBytes,
    max_rows_to_read: limits.maxRowsToRead,
    max_bytes_to_read: limits.maxBytesToRead,
    max_result_rows: limits.maxResultRows,
    max_result_bytes: limits.maxResultBytes,
  };
  if (limits.maxThreads > 0) settings.max_threads = limits.maxThreads;
  if (limits.threadNice > 0) settings.os_thread_priority = limits.threadNice;
  return settings;
}

/**
 * The settings clause of a streamed statement under `limits`. A stream is an export (every matching row, however
 * many: no row, result or time cap), and exports already wait for one of the process's few export turns, so it
 * runs on the engine's default threads; `max_memory_usage` and the threads' priority still hold.
 */
export function streamSettings(limits: QueryLimits): Record<string, number> {
  const settings: Record<string, number> = { max_memory_usage: limits.maxMemoryBytes };
  if (limits.threadNice > 0) settings.os_thread_priority = limits.threadNice;
  return settings;
}

/**
 * The 400 a statement that hit one of `limits` answers with (`code` the ClickHouse error's name, as PostHog
 * exposes ClickHouse errors a user can act on); undefined for any other failure.
 */
export function limitExceeded(error: unknown, limits: QueryLimits): ApiError | undefined {
  if (!(error instanceof StorageError) || error.code === undefined) return undefined;
  const hit = LIMIT_CODES.get(error.code);
  if (hit === undefined) return undefined;
  return ApiError.validation(`The query exceeded the limit ${hit.setting(limits)}. Narrow the date range, the filters or the breakdown.`, null, hit.name);
}

/**
 * `clickhouse` with every `query` bounded by `limits`: the limit settings join the statement's own settings in its
 * one `SETTINGS` clause (a statement's own setting of the same name is overridden: a caller cannot loosen a limit),
 * and a limit the engine hit becomes a 400 ApiError. A `queryRawStream` is bounded by {@link streamSettings} instead. `beforeQuery` runs before each query and may hold it back or
 * refuse it by rejecting (the management API's concurrency gate).
 * Commands and inserts pass through: handlers of analysis routes only read.
 */
export function limitedClickHouse(clickhouse: ClickHouse, limits: QueryLimits, beforeQuery: () => Promise<void> | undefined = () => undefined): ClickHouse {
  const bounds = limitSettings(limits);
  const streaming = streamSettings(limits);
  async function bounded<T>(read: () => Promise<T>): Promise<T> {
    await beforeQuery();
    try {
      return await read();
    } catch (error) {
      throw limitExceeded(error, limits) ?? error;
    }
  }
  return {
    cluster: clickhouse.cluster,
    command: (name, sql, params) => clickhouse.command(name, sql, params),
    insert: (table, rows) => clickhouse.insert(table, rows),
    sync: clickhouse.sync && (() => clickhouse.sync!()),
    ping: () => clickhouse.ping(),
    close: () => clickhouse.close(),
    query: <R = Record<string, unknown>>(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings) =>
      bounded(() => clickhouse.query<R>(name, sql, params, { ...settings, ...bounds })),
    queryRows: (name, sql, params, settings) => bounded(() => clickhouse.queryRows(name, sql, params, { ...settings, ...bounds })),
    queryRaw: (name, sql, params, settings) => bounded(() => clickhouse.queryRaw(name, sql, params, { ...settings, ...bounds })),
    queryRawStream: (name, sql, params, settings) => ({
      async *[Symbol.asyncIterator]() {
        await beforeQuery();
        try {
          yield* clickhouse.queryRawStream(name, sql, params, { ...settings, ...streaming });
        } catch (error) {
          throw limitExceeded(error, limits) ?? error;
        }
      },
    }),
  };
}

/**
 * Refuses up front (400 naming the limit) a computation of `series` lines × `breakdownValues` values each ×
 * `intervals` points that would exceed `limits.maxPoints`: its answer would not fit the memory of one request.
 */
export function checkPoints(limits: QueryLimits, series: number, breakdownValues: number, intervals: number): void {
  const points = Math.max(1, series) * Math.max(1, breakdownValues) * Math.max(1, intervals);
  if (points > limits.maxPoints) {
    throw ApiError.validation(
      `This insight would compute ${points} points (${series} series × ${breakdownValues} breakdown values × ${intervals} intervals), more than the limit of ${limits.maxPoints}. Use fewer series, a lower breakdown_limit, a longer interval or a shorter date range.`,
      null,
      'too_many_points',
    );
  }
}
