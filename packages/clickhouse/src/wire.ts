/**
 * What both adapters send to ClickHouse, defined once so a server and chDB see the same settings, parameter
 * values and table names, and return identically shaped rows.
 */
import { StorageError } from '@plover/core';
import type { ClickHouseParams, RowsResult, StatementSettings } from './port';

/**
 * Settings applied to every statement on both adapters. Each one is set explicitly because chDB's defaults
 * differ from a server's (checked in chDB 26.7 `system.settings`), and because a server's profile may change them:
 * - 64-bit integers are quoted in JSON output (the port's contract; chDB defaults to bare numbers, which
 *   `JSON.parse` silently rounds beyond 2^53);
 * - date/time input is parsed best-effort, so ISO-8601 strings (`JSON.stringify(new Date())`) insert into
 *   DateTime64 columns (server default `basic` rejects them; chDB already defaults to best_effort);
 * - an inserted field with no matching column is an error rather than silently dropped data (a typo in a
 *   row key must not lose a column's values).
 */
export const SESSION_SETTINGS = {
  output_format_json_quote_64bit_integers: 1,
  date_time_input_format: 'best_effort',
  input_format_skip_unknown_fields: 0,
} as const;

const SETTING_NAME = /^[a-z][a-z0-9_]*$/;
/** Text settings are spliced between quotes: names and timezones (`Europe/Berlin`, `Etc/GMT+3`), never a quote. */
const SETTING_TEXT = /^[A-Za-z0-9_/+-]*$/;

/**
 * `sql` with `settings` as its trailing `SETTINGS` clause (after a line break, so a trailing `--` comment cannot
 * swallow it); `sql` itself when there are none. Numbers must be safe integers and texts plain words: settings come
 * from code and configuration, and are checked anyway since they are spliced.
 */
export function withSettings(sql: string, settings: StatementSettings | undefined): string {
  const entries = Object.entries(settings ?? {});
  if (entries.length === 0) return sql;
  const clause = entries.map(([name, value]) => {
    const valid = typeof value === 'number' ? Number.isSafeInteger(value) : SETTING_TEXT.test(value);
    if (!SETTING_NAME.test(name) || !valid) throw new StorageError(`Invalid ClickHouse setting ${name} = ${JSON.stringify(value)}`, false, 'BAD_SETTING');
    return `${name} = ${typeof value === 'number' ? value : `'${value}'`}`;
  });
  return `${sql}\nSETTINGS ${clause.join(', ')}`;
}

/** `name` or `database.name`: the only table references `insert` accepts, since the name is spliced into SQL. */
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

export function assertTableName(table: string): void {
  if (!TABLE_NAME.test(table)) {
    throw new StorageError(`Invalid ClickHouse table name ${JSON.stringify(table)}`, false, 'BAD_TABLE_NAME');
  }
}

/**
 * Bound parameter values in the one form both transports serialize the same way. @clickhouse/client and chDB
 * format strings, bigints, safe numbers, null and arrays of them identically; they differ on `Date` (the client
 * sends a Unix timestamp with milliseconds, chDB a `YYYY-MM-DD HH:MM:SS` string that drops them), so dates are
 * turned into the client's timestamp string here (time-zone agnostic, parsed by DateTime and DateTime64
 * parameters alike). Numbers beyond ±2^53 are refused on both: they have already lost precision, so an Int64
 * id must be passed as a string or bigint.
 */
export function normalizeParams(params: ClickHouseParams): ClickHouseParams {
  const out: ClickHouseParams = {};
  for (const [key, value] of Object.entries(params)) out[key] = normalizeValue(key, value);
  return out;
}

function normalizeValue(key: string, value: unknown): unknown {
  if (value instanceof Date) {
    const ms = value.getTime();
    if (Number.isNaN(ms)) throw badParameter(key, 'is an invalid Date');
    // Same digits as @clickhouse/client's formatQueryParams (zero-padded so it never reads as a date string).
    const seconds = String(Math.floor(ms / 1000)).padStart(10, '0');
    const millis = value.getUTCMilliseconds();
    return millis === 0 ? seconds : `${seconds}.${String(millis).padStart(3, '0')}`;
  }
  if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) {
    throw badParameter(key, 'is an integer beyond ±2^53; pass it as a string or bigint');
  }
  if (Array.isArray(value)) return value.map((item) => normalizeValue(key, item));
  return value;
}

function badParameter(key: string, problem: string): StorageError {
  return new StorageError(`ClickHouse parameter ${key} ${problem}`, false, 'BAD_PARAMETER');
}

/** ClickHouse's JSONCompact output: column names and types in `meta`, rows as arrays in `data`. */
export interface CompactResult {
  meta: { name: string; type: string }[];
  data: unknown[][];
}

export function compactRows(result: CompactResult): RowsResult {
  return { columns: result.meta.map(({ name, type }) => ({ name, type })), rows: result.data };
}
