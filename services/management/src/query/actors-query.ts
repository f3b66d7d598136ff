/**
 * ActorsQuery: with an InsightActorsQuery or FunnelsActorsQuery source, the persons behind one number of a trend,
 * stickiness, lifecycle, retention, paths or funnel result, a page at a time, from the SQL the number comes from
 * (packages/insights, actors.ts); without a source, the project's persons. Either way each page's persons are read
 * from the person store in one statement. docs/query.md, "ActorsQuery".
 */
import {
  actorsPage,
  eventDistinctIds,
  funnelActorsSql,
  matchedRecordings,
  parseFunnelsQuery,
  nodeRuleAttr,
  parseInsightQuery,
  parsePathsQuery,
  parseRetentionQuery,
  pathActorsSql,
  retentionActorsSql,
  seriesActorsSql,
  type ActorsSql,
  type FunnelPoint,
  type InsightContext,
  type LifecycleStatus,
  type MatchedRecording,
} from '@plover/insights';
import type { ClickHouse } from '@plover/clickhouse';
import { PersonReads, type Person } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { errors } from '../shared/errors';
import { personBody } from '../shared/person-body';

const DEFAULT_SELECT = ['person', 'id', 'created_at', 'event_count'];
/** The columns of the persons list (no source): what the person store has. */
const PERSON_COLUMNS = ['person', 'actor', 'id', 'created_at'];
/** `orderBy` of the persons list, and whether it lists the oldest first. */
const PERSON_ORDERS: Record<string, boolean> = { 'created_at DESC': false, created_at: true, 'created_at ASC': true };
const MAX_SEARCH = 200;
/** The columns an actors list can show, and their type as PostHog names it. */
const COLUMN_TYPES: Record<string, string> = {
  person: 'Tuple',
  actor: 'Tuple',
  id: 'UUID',
  created_at: "DateTime64(6, 'UTC')",
  event_count: 'UInt64',
  matched_recordings: 'Array',
  event_distinct_ids: 'Array(String)',
  appearances: 'Array(UInt32)',
};
const STATUSES: readonly LifecycleStatus[] = ['new', 'returning', 'resurrecting', 'dormant'];
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 10_000;

type Node = Record<string, unknown>;

function objectField(node: Node, key: string, attr: string): Node {
  const value = node[key];
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw errors.required(attr);
  return value as Node;
}

function count(node: Node, key: string, fallback: number, max: number): number {
  const value = node[key];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw errors.validation('Must be a non-negative integer.', key);
  return Math.min(value, max);
}

/** A breakdown value as clicked: text, a number, or PostHog's one-element list (`["Chrome"]`). */
function breakdownValue(raw: unknown, attr: string): string | null {
  const value: unknown = Array.isArray(raw) ? (raw.length === 1 ? (raw as unknown[])[0] : undefined) : raw;
  if (raw === undefined || raw === null) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw errors.validation('Must be one breakdown value.', attr);
}

function optionalNumber(node: Node, key: string, attr: string): number | null {
  const value = node[key];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw errors.validation('Must be a number.', attr);
  return value;
}

/** A funnel's point as PostHog's FunnelsActorsQuery names it (and `funnelTimeToConvertBin`, a bin's start). */
function funnelPoint(source: Node): Omit<FunnelPoint, 'input'> {
  const custom = source.funnelCustomSteps;
  if (custom !== undefined && custom !== null && (!Array.isArray(custom) || !custom.every((step) => typeof step === 'number'))) {
    throw errors.validation('Must be a list of step numbers.', 'funnelCustomSteps');
  }
  const period = source.funnelTrendsEntrancePeriodStart;
  if (period !== undefined && period !== null && typeof period !== 'string') throw errors.validation('Must be a date.', 'funnelTrendsEntrancePeriodStart');
  const dropOff = source.funnelTrendsDropOff ?? false;
  if (typeof dropOff !== 'boolean') throw errors.validation('Must be a boolean.', 'funnelTrendsDropOff');
  return {
    step: optionalNumber(source, 'funnelStep', 'funnelStep'),
    customSteps: Array.isArray(custom) ? custom : null,
    trends: typeof period === 'string' ? { period, dropOff } : null,
    bin: optionalNumber(source, 'funnelTimeToConvertBin', 'funnelTimeToConvertBin'),
    breakdown: breakdownValue(source.funnelStepBreakdown ?? source.breakdown, 'source__funnelStepBreakdown'),
  };
}

interface SourceActors {
  actors: ActorsSql;
  /** Whether the source asks for matched recordings. */
  recordings: boolean;
  /** Whether the actors are groups (keys), not persons. */
  groups: boolean;
}

/** The actors' SQL for the source node. */
async function sourceActors(ch: ClickHouse, source: Node, ctx: InsightContext): Promise<SourceActors> {
  const recordings = source.includeRecordings === true;
  if (source.kind === 'FunnelsActorsQuery' || (source.kind === 'InsightActorsQuery' && (source.source as Node | undefined)?.kind === 'FunnelsQuery')) {
    const input = parseFunnelsQuery(source.source, 'source__source');
    const actors = await funnelActorsSql(ch, { input, ...funnelPoint(source) }, ctx);
    return { actors, recordings, groups: input.aggregationGroupTypeIndex !== null };
  }
  if (source.kind !== 'InsightActorsQuery') {
    throw errors.validation(`${JSON.stringify(source.kind)} is not supported: use InsightActorsQuery or FunnelsActorsQuery.`, 'source__kind', 'invalid_choice');
  }
  const insight = source.source as Node | undefined;
  if (insight?.kind === 'RetentionQuery') {
    const input = parseRetentionQuery(insight, 'source__source');
    const interval = source.interval ?? 0;
    if (typeof interval !== 'number') throw errors.validation('Must be an integer.', 'source__interval');
    const actors = await retentionActorsSql(input, interval, breakdownValue(source.breakdown, 'source__breakdown'), ctx);
    return { actors, recordings, groups: input.aggregationGroupTypeIndex !== null };
  }
  if (insight?.kind === 'PathsQuery') {
    const input = parsePathsQuery(insight, 'source__source');
    const filter = (insight.pathsFilter ?? {}) as Node;
    const key = (name: string): string | null => {
      const value = filter[name];
      if (value === undefined || value === null) return null;
      if (typeof value !== 'string') throw errors.validation('Must be a node key like 2_/pricing.', `source__source__pathsFilter__${name}`);
      return value;
    };
    const point = { input, start: key('pathStartKey'), end: key('pathEndKey'), dropoff: key('pathDropoffKey') };
    return { actors: await pathActorsSql(ch, point, ctx, nodeRuleAttr), recordings, groups: false };
  }
  const request = parseInsightQuery(insight, 'source__source');
  const series = source.series ?? 0;
  if (typeof series !== 'number' || !Number.isInteger(series)) throw errors.validation('Must be an integer.', 'source__series');
  const day = source.day ?? null;
  if (day !== null && typeof day !== 'string' && typeof day !== 'number') throw errors.validation('Must be a date or a number.', 'source__day');
  const status = source.status ?? null;
  if (status !== null && !STATUSES.includes(status as LifecycleStatus)) throw errors.validation('Not a lifecycle status.', 'source__status', 'invalid_choice');
  const compare: unknown = source.compare ?? 'current';
  if (compare !== 'current' && compare !== 'previous') throw errors.validation('Must be current or previous.', 'source__compare', 'invalid_choice');
  const point = {
    request,
    series,
    day,
    breakdown: breakdownValue(source.breakdown, 'source__breakdown'),
    compare: compare === 'previous' ? ('previous' as const) : ('current' as const),
    status: status as LifecycleStatus | null,
  };
  return { actors: await seriesActorsSql(ch, point, ctx), recordings, groups: request.input.series[series]?.math === 'unique_group' };
}

export interface ActorsQueryResult {
  results: unknown[][];
  columns: string[];
  types: string[];
  hasMore: boolean;
  limit: number;
  offset: number;
  missing_actors_count: number;
}

/** The `person` cell: the person store's record, its uuid as `id` (PostHog's actor id). */
function personCell(person: Person): Record<string, unknown> {
  return { ...personBody(person), id: person.uuid };
}

/** The persons list of an ActorsQuery without a source: the project's persons matching `search` and `properties`. */
async function personsList(sql: Sql, node: Node, columns: string[], limit: number, offset: number, ctx: InsightContext): Promise<ActorsQueryResult> {
  if (!columns.every((column) => PERSON_COLUMNS.includes(column))) {
    throw errors.validation(`Without a source, select takes columns of ${PERSON_COLUMNS.join(', ')}.`, 'select');
  }
  const { search, properties } = node;
  if (search !== undefined && search !== null && (typeof search !== 'string' || search.length > MAX_SEARCH)) {
    throw errors.validation(`Must be a string of at most ${MAX_SEARCH} characters.`, 'search');
  }
  const orderBy = node.orderBy ?? ['created_at DESC'];
  if (!Array.isArray(orderBy) || orderBy.length !== 1 || typeof orderBy[0] !== 'string' || !(orderBy[0].trim() in PERSON_ORDERS)) {
    throw errors.validation(`orderBy takes one of ${Object.keys(PERSON_ORDERS).join(', ')}.`, 'orderBy');
  }
  const filter = {
    search: typeof search === 'string' ? search : undefined,
    properties: properties === undefined || properties === null ? undefined : JSON.stringify(properties),
  };
  const listed = await new PersonReads(sql).list(ctx.projectId, filter, { limit: limit + 1, offset, oldestFirst: PERSON_ORDERS[orderBy[0].trim()] });
  const results = listed.slice(0, limit).map((person) => {
    const cells: Record<string, unknown> = { id: person.uuid, created_at: person.createdAt.toISOString() };
    cells.person = cells.actor = personCell(person);
    return columns.map((column) => cells[column]);
  });
  return { results, columns, types: columns.map((column) => COLUMN_TYPES[column]!), hasMore: listed.length > limit, limit, offset, missing_actors_count: 0 };
}

/**
 * Runs an ActorsQuery node `{source?, select?, limit?, offset?}` (without a source also `search?`, `properties?`,
 * `orderBy?`). Persons come from the person store, one statement per page; an actor id without a person there
 * (merged away, personless events) keeps its row with `{id}` and counts in `missing_actors_count`.
 */
export async function runActorsQuery(ch: ClickHouse, sql: Sql, node: Node, ctx: InsightContext): Promise<ActorsQueryResult> {
  const select = node.select === undefined || node.select === null ? (node.source == null ? ['person', 'id', 'created_at'] : DEFAULT_SELECT) : node.select;
  if (!Array.isArray(select) || select.length === 0 || !select.every((column) => typeof column === 'string' && column in COLUMN_TYPES)) {
    throw errors.validation(`select takes columns of ${Object.keys(COLUMN_TYPES).join(', ')}.`, 'select');
  }
  const columns = select as string[];
  const limit = count(node, 'limit', DEFAULT_LIMIT, MAX_LIMIT);
  const offset = count(node, 'offset', 0, Number.MAX_SAFE_INTEGER);
  if (node.source === undefined || node.source === null) return personsList(sql, node, columns, limit, offset, ctx);
  const { actors, recordings, groups } = await sourceActors(ch, objectField(node, 'source', 'source'), ctx);
  const page = await actorsPage(ch, actors, limit, offset);
  const persons = groups
    ? new Map<string, Person>()
    : await new PersonReads(sql).byUuids(
        ctx.projectId,
        page.rows.map((row) => row.id),
      );
  const uuids = page.rows.flatMap((row) => row.uuids);
  const recorded = recordings || columns.includes('matched_recordings') ? await matchedRecordings(ch, uuids, ctx) : new Map<string, MatchedRecording>();
  const distinctIds = columns.includes('event_distinct_ids') ? await eventDistinctIds(ch, uuids, ctx) : new Map<string, string>();
  const results = page.rows.map((row) => {
    const person = persons.get(row.id.toLowerCase());
    const cells: Record<string, unknown> = {
      id: row.id,
      created_at: person?.createdAt.toISOString() ?? null,
      event_count: row.uuids.length,
      event_distinct_ids: [...new Set(row.uuids.flatMap((uuid) => distinctIds.get(uuid) ?? []))].sort(),
      appearances: row.appearances ?? [],
      matched_recordings: [...new Set(row.uuids.map((uuid) => recorded.get(uuid)).filter((recording) => recording !== undefined))],
    };
    cells.person = cells.actor = person === undefined ? { id: row.id } : personCell(person);
    return columns.map((column) => cells[column]);
  });
  return {
    results,
    columns,
    types: columns.map((column) => COLUMN_TYPES[column]!),
    hasMore: page.hasMore,
    limit,
    offset,
    missing_actors_count: groups ? 0 : page.rows.filter((row) => !persons.has(row.id.toLowerCase())).length,
  };
}
