/**
 * EventsQuery, PostHog's "explore events" table: columns of HogQL expressions over the project's events, filtered
 * and ordered, built as a HogQL AST from expressions parsed one by one and run by packages/hogql, so the team
 * guard, property access and limits are HogQL's own (docs/query.md, "EventsQuery").
 */
import {
  call,
  constant,
  containsAggregate,
  field,
  parseExpr,
  parseOrderExpr,
  runHogQLAst,
  selectQuery,
  template,
  toApiError,
  type AstNode,
  type HogQLResult,
} from '@plover/hogql';
import { parsePropertyFilters, resolveInstant, type InsightContext } from '@plover/insights';
import type { ClickHouse } from '@plover/clickhouse';
import { PersonReads } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { errors } from '../shared/errors';
import { hogqlActions } from './hogql-actions';
import { propertiesAst } from './hogql-filters';

/** The event columns `*` stands for, in PostHog's order; the row holds them as one object. */
const STAR_FIELDS = ['uuid', 'event', 'properties', 'timestamp', 'team_id', 'distinct_id', 'elements_chain', 'created_at'] as const;

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 50_000;
const MAX_ITEMS = 100;

function strings(node: Record<string, unknown>, key: string, required = false): string[] {
  const value = node[key];
  if (value === undefined || value === null) {
    if (required) throw errors.required(key);
    return [];
  }
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) throw errors.validation('Must be a list of strings.', key);
  if (value.length > MAX_ITEMS) throw errors.validation(`At most ${MAX_ITEMS} items.`, key);
  return value;
}

function optionalText(node: Record<string, unknown>, key: string): string | null {
  const value = node[key];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw errors.validation('Must be a string.', key);
  return value;
}

function count(node: Record<string, unknown>, key: string, fallback: number, max: number): number {
  const value = node[key];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw errors.validation('Must be a non-negative integer.', key);
  return Math.min(value, max);
}

/** A select item: a special column (`*`, `person`) or a HogQL expression. */
function selectItem(text: string): Promise<AstNode> {
  const trimmed = text.trim();
  if (trimmed === '*') return Promise.resolve(call('tuple', ...STAR_FIELDS.map((name) => field(name))));
  // The event's distinct id: its person is read from the person store once the page is known.
  if (trimmed === 'person') return Promise.resolve(field('distinct_id'));
  return parseExpr(text);
}

const jsonObject = (text: unknown): unknown => {
  if (typeof text !== 'string') return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return {};
  }
};

/** `*`'s tuple as PostHog's object. */
function renderCell(column: string, value: unknown): unknown {
  if (column.trim() !== '*' || !Array.isArray(value)) return value;
  const row: Record<string, unknown> = Object.fromEntries(STAR_FIELDS.map((name, i) => [name, value[i]]));
  return { ...row, properties: jsonObject(row.properties), elements: [] };
}

/**
 * The `person` columns (holding the event's distinct id) as PostHog's `{uuid, created_at, properties, distinct_id}`,
 * the person read from the person store by distinct id, one statement per page; `{distinct_id}` when it has none.
 */
async function withPersons(sql: Sql, projectId: number, select: string[], rows: unknown[][]): Promise<unknown[][]> {
  const at = select.flatMap((text, i) => (text.trim() === 'person' ? [i] : []));
  if (at.length === 0) return rows;
  const ids = [...new Set(rows.flatMap((row) => at.map((i) => String(row[i]))))];
  const persons = await new PersonReads(sql).byDistinctIds(projectId, ids);
  return rows.map((row) =>
    row.map((value, i) => {
      if (!at.includes(i)) return value;
      const person = persons.get(String(value));
      if (person === undefined) return { distinct_id: String(value) };
      return { uuid: person.uuid, created_at: person.createdAt.toISOString(), properties: person.properties, distinct_id: String(value) };
    }),
  );
}

const instantText = (date: Date) => date.toISOString().replace('T', ' ').replace('Z', '');

/** The conditions every EventsQuery adds: its time bounds, event names, person and property filters. */
async function conditions(node: Record<string, unknown>, ctx: InsightContext): Promise<AstNode[]> {
  const out: AstNode[] = [];
  const after = optionalText(node, 'after') ?? '-24h';
  if (after !== 'all') {
    const instant = resolveInstant(after, ctx, false, 'after');
    out.push(await template("timestamp > toDateTime64({t}, 6, 'UTC')", { t: constant(instantText(instant)) }));
  }
  const before = optionalText(node, 'before');
  const end = before === null ? new Date(ctx.now.getTime() + 5000) : resolveInstant(before, ctx, false, 'before');
  out.push(await template("timestamp < toDateTime64({t}, 6, 'UTC')", { t: constant(instantText(end)) }));
  const event = optionalText(node, 'event');
  if (event !== null) out.push(await template('event = {e}', { e: constant(event) }));
  const events = strings(node, 'events');
  if (events.length > 0) out.push(await template('has({e}, event)', { e: constant(events) }));
  const personId = optionalText(node, 'personId');
  if (personId !== null) out.push(await template('toString(person_id) = {p}', { p: constant(personId.toLowerCase()) }));
  for (const key of ['properties', 'fixedProperties']) {
    const condition = await propertiesAst(parsePropertyFilters(node[key], key), ctx, key);
    if (condition !== null) out.push(condition);
  }
  return out;
}

/** The default order: `count()` or else the first aggregate descending, else the newest events, else the first column. */
function defaultOrder(select: string[], items: AstNode[]): AstNode[] {
  const countAt = select.findIndex((text) => text.replace(/\s/g, '') === 'count()');
  const aggregateAt = countAt >= 0 ? countAt : items.findIndex(containsAggregate);
  if (aggregateAt >= 0) return [{ node: 'OrderExpr', expr: items[aggregateAt], order: 'DESC' }];
  if (select.some((text) => ['timestamp', '*'].includes(text.trim()))) return [{ node: 'OrderExpr', expr: field('timestamp'), order: 'DESC' }];
  return [{ node: 'OrderExpr', expr: items[0], order: 'ASC' }];
}

export interface EventsQueryResult extends Omit<HogQLResult, 'types'> {
  /** One ClickHouse type per column (PostHog's EventsQuery answers a plain list). */
  types: string[];
}

export async function runEventsQuery(
  ch: ClickHouse,
  sql: Sql,
  node: Record<string, unknown>,
  ctx: InsightContext,
  run: { queryId: string; timings: { k: string; t: number }[] },
): Promise<EventsQueryResult> {
  const select = strings(node, 'select', true);
  if (select.length === 0) throw errors.validation('Select at least one column.', 'select');
  const where = strings(node, 'where');
  const orderBy = strings(node, 'orderBy');
  const limit = count(node, 'limit', DEFAULT_LIMIT, MAX_LIMIT);
  const offset = count(node, 'offset', 0, Number.MAX_SAFE_INTEGER);
  let ast: AstNode;
  try {
    const items = await Promise.all(select.map(selectItem));
    const wheres = await Promise.all(where.map((text) => parseExpr(text)));
    const grouped = items.some(containsAggregate);
    ast = selectQuery({
      select: items,
      from: 'events',
      where: [...(await conditions(node, ctx)), ...wheres.filter((expr) => !containsAggregate(expr))],
      groupBy: grouped ? items.filter((item) => !containsAggregate(item)) : [],
      having: wheres.filter(containsAggregate),
      orderBy: orderBy.length > 0 ? await Promise.all(orderBy.map((text) => parseOrderExpr(text))) : defaultOrder(select, items),
      // One row more than asked for tells whether there are more.
      limit: limit + 1,
      offset,
    });
  } catch (error) {
    throw toApiError(error);
  }
  const filters = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
  const order = orderBy.length > 0 ? ` ORDER BY ${orderBy.join(', ')}` : '';
  const hogql = `SELECT ${select.join(', ')} FROM events${filters}${order} LIMIT ${limit} OFFSET ${offset}`;
  const result = await runHogQLAst(ch, ast, hogql, {
    teamId: ctx.projectId,
    timezone: ctx.timezone,
    actions: hogqlActions(ctx),
    queryId: run.queryId,
    timings: run.timings,
  });
  return {
    ...result,
    columns: select,
    types: result.types.map(([, type]) => type),
    results: await withPersons(
      sql,
      ctx.projectId,
      select,
      result.results.slice(0, limit).map((row) => row.map((value, i) => renderCell(select[i] ?? '', value))),
    ),
    hasMore: result.results.length > limit,
    limit,
  };
}
