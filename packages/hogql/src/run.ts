/**
 * Running a HogQL query for one project: parse, print, then one read-only ClickHouse statement under Plover's
 * limits. Every failure comes out as an ApiError (a 400 for anything the query did, 503 when ClickHouse could
 * not be reached), never as a raw storage error.
 */
import { randomUUID } from 'node:crypto';
import type { ClickHouse } from '@plover/clickhouse';
import { ApiError, StorageError } from '@plover/core';
import { actionRefs, type ActionResolver } from './actions';
import { HogQLError } from './errors';
import { parseSelect, type AstNode } from './parser';
import { Printer, type PrintedQuery } from './printer';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 50_000;

/** What printing a query for one project needs. */
export interface HogQLPrintOptions {
  teamId: number;
  values?: Readonly<Record<string, unknown>>;
  /** The project's timezone (PrintOptions.timezone); also the session's, for `now()`, `today()` and parsed dates. */
  timezone?: string;
  /** Built expressions for placeholders such as `{filters}` (PrintOptions.expressions). */
  expressions?: Readonly<Record<string, AstNode>>;
  /** Loads the actions the query names in `matchesAction`; without it such a query is refused. */
  actions?: ActionResolver;
}

export interface HogQLRunOptions extends HogQLPrintOptions {
  /** Marks the statement so that cancel() can find it; a fresh id when absent. */
  queryId?: string;
  /** Timings are added here as `{k, t}` (seconds), PostHog's shape. */
  timings?: { k: string; t: number }[];
}

export interface HogQLResult {
  results: unknown[][];
  columns: string[];
  /** `[name, ClickHouse type]` per column. */
  types: [string, string][];
  hogql: string;
  clickhouse: string;
  hasMore: boolean;
  limit: number;
  offset: number;
}

/**
 * The settings HogQL statements run with besides the analysis limits (which the ClickHouse handle adds:
 * `limitedClickHouse`): read-only (`readonly = 2`, and no user text can reach settings: SETTINGS is refused), room
 * for the expressions a printed query expands to, `IN` matching NULLs as HogQL means it, and 64-bit integers as
 * JSON numbers, as PostHog answers them.
 */
const HOGQL_SETTINGS = {
  readonly: 2,
  max_ast_elements: 1_000_000,
  max_expanded_ast_elements: 1_000_000,
  transform_null_in: 1,
  output_format_json_quote_64bit_integers: 0,
} as const;

/** Parses and prints `query` for `teamId`; HogQLErrors for anything wrong with it. */
export async function printHogQL(query: string, options: HogQLPrintOptions): Promise<PrintedQuery> {
  return printAst(await parseSelect(query), query, options);
}

async function printAst(ast: AstNode, text: string, options: HogQLPrintOptions): Promise<PrintedQuery> {
  const refs = actionRefs(ast);
  const actions = refs.length > 0 && options.actions ? await options.actions(refs) : undefined;
  return new Printer(
    {
      teamId: options.teamId,
      values: options.values,
      timezone: options.timezone,
      expressions: options.expressions,
      defaultLimit: DEFAULT_LIMIT,
      maxLimit: MAX_LIMIT,
      actions,
    },
    text,
  ).print(ast);
}

const queryMarker = (queryId: string) => `/* hogql-query ${queryId} */`;

/**
 * Runs `query` for `options.teamId` on `ch`, which bounds it: the management API hands in its analysis handle
 * (`limitedClickHouse`, the one owner of time, memory, rows and thread limits).
 */
export function runHogQL(ch: ClickHouse, query: string, options: HogQLRunOptions): Promise<HogQLResult> {
  return run(ch, query, () => printHogQL(query, options), options);
}

/**
 * Runs a SELECT built as an AST (ast.ts) the way {@link runHogQL} runs text: the same printer, guard and limits.
 * `hogql` is its text as shown to the caller.
 */
export function runHogQLAst(ch: ClickHouse, ast: AstNode, hogql: string, options: HogQLRunOptions): Promise<HogQLResult> {
  return run(ch, hogql, () => printAst(ast, '', options), options);
}

async function run(ch: ClickHouse, query: string, print: () => Promise<PrintedQuery>, options: HogQLRunOptions): Promise<HogQLResult> {
  const timings = options.timings ?? [];
  let started = performance.now();
  const lap = (k: string) => {
    const now = performance.now();
    timings.push({ k, t: (now - started) / 1000 });
    started = now;
  };
  const printed = await toApi(print);
  lap('./print');
  const sql = `${queryMarker(options.queryId ?? randomUUID())} ${printed.sql}`;
  const settings = options.timezone ? { ...HOGQL_SETTINGS, session_timezone: options.timezone } : HOGQL_SETTINGS;
  const result = await toApi(() => ch.queryRows('hogql', sql, printed.params, settings));
  lap('./clickhouse_execute');
  const hasMore = result.rows.length > printed.limit;
  return {
    results: hasMore ? result.rows.slice(0, printed.limit) : result.rows,
    columns: printed.columns,
    types: printed.columns.map((name, i) => [name, result.columns[i]?.type ?? 'String']),
    hogql: query,
    clickhouse: printed.sql,
    hasMore,
    limit: printed.limit,
    offset: printed.offset,
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Stops the statement run with `queryId` (a uuid Plover made), on whichever connection runs it. The marker is
 * written into the statement rather than bound: chDB runs bound statements one at a time, so a bound KILL would
 * wait for the very query it is meant to stop.
 */
export async function cancelHogQL(ch: ClickHouse, queryId: string): Promise<void> {
  if (!UUID.test(queryId)) throw new RangeError('A query id is a uuid');
  await ch.command('hogql.cancel', `KILL QUERY WHERE startsWith(query, '${queryMarker(queryId)}') ASYNC`);
}

/** The ClickHouse code of a statement stopped by KILL QUERY (`cancelHogQL`). */
const CANCELLED = '394';

/** ClickHouse codes of failures outside the query's control: the store is down or overloaded. */
const UNAVAILABLE = new Set(['202', '203', '209', '210', '279', 'TIMEOUT', 'CLOSED', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE']);

/** The message of a ClickHouse exception without its code prefix, the SQL it quotes and the server version. */
function clickHouseMessage(error: StorageError): string {
  const text = error.message.replace(/^.*?DB::Exception: /s, '');
  return text.split(/: In scope |\. \([A-Z_]+\)|\n| \(version /)[0]!.trim();
}

/** A failure of a HogQL query as the API answers it (a limit the engine hit is already one: `limitedClickHouse`). */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof HogQLError) {
    const position = error.start !== undefined ? ` (at ${error.start}${error.end !== undefined ? `-${error.end}` : ''})` : '';
    return ApiError.validation(`${error.message}${position}`, null, error.kind);
  }
  if (error instanceof StorageError) {
    if (error.code === CANCELLED) return ApiError.validation('Query was cancelled', null, 'query_cancelled');
    if (UNAVAILABLE.has(String(error.code)) || error.retriable) return ApiError.unavailable('ClickHouse is unavailable, try again', 5);
    if (/^\d+$/.test(String(error.code))) return ApiError.validation(clickHouseMessage(error), null, 'clickhouse_error');
  }
  return ApiError.unavailable('The query could not be run', 5);
}

async function toApi<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toApiError(error);
  }
}
