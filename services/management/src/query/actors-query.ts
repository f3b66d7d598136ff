/**
 * ActorsQuery with an InsightActorsQuery or FunnelsActorsQuery source: the persons behind one number of a trend,
 * stickiness, lifecycle or funnel, a page at a time, from the SQL the number comes from (packages/insights,
 * actors.ts). docs/query.md, "ActorsQuery".
 */
import {
  actorsPage,
  funnelActorsSql,
  matchedRecordings,
  parseFunnelsQuery,
  nodeRuleAttr,
  parseInsightQuery,
  parsePathsQuery,
  parseRetentionQuery,
  pathActorsSql,
  personDetails,
  retentionActorsSql,
  seriesActorsSql,
  type ActorsSql,
  type InsightContext,
  type LifecycleStatus,
  type MatchedRecording,
} from '@plover/insights';
import type { ClickHouse } from '@plover/clickhouse';
import { errors } from '../shared/errors';

const DEFAULT_SELECT = ['person', 'id', 'created_at', 'event_count'];
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

/** The actors' SQL for the source node, and whether the source asks for matched recordings. */
async function sourceActors(ch: ClickHouse, source: Node, ctx: InsightContext): Promise<{ actors: ActorsSql; recordings: boolean }> {
  const recordings = source.includeRecordings === true;
  if (source.kind === 'FunnelsActorsQuery' || (source.kind === 'InsightActorsQuery' && (source.source as Node | undefined)?.kind === 'FunnelsQuery')) {
    const input = parseFunnelsQuery(source.source, 'source__source');
    const step = source.funnelStep ?? 1;
    if (typeof step !== 'number') throw errors.validation('Must be an integer.', 'funnelStep');
    const breakdown = breakdownValue(source.funnelStepBreakdown ?? source.breakdown, 'source__funnelStepBreakdown');
    return { actors: await funnelActorsSql(ch, { input, step, breakdown }, ctx), recordings };
  }
  if (source.kind !== 'InsightActorsQuery') {
    throw errors.validation(`${JSON.stringify(source.kind)} is not supported: use InsightActorsQuery or FunnelsActorsQuery.`, 'source__kind', 'invalid_choice');
  }
  const insight = source.source as Node | undefined;
  if (insight?.kind === 'RetentionQuery') {
    const input = parseRetentionQuery(insight, 'source__source');
    const interval = source.interval ?? 0;
    if (typeof interval !== 'number') throw errors.validation('Must be an integer.', 'source__interval');
    return { actors: await retentionActorsSql(input, interval, breakdownValue(source.breakdown, 'source__breakdown'), ctx), recordings };
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
    return { actors: await pathActorsSql(ch, point, ctx, nodeRuleAttr), recordings };
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
  return { actors: await seriesActorsSql(ch, point, ctx), recordings };
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

/** Runs an ActorsQuery node `{source, select?, limit?, offset?}`. */
export async function runActorsQuery(ch: ClickHouse, node: Node, ctx: InsightContext): Promise<ActorsQueryResult> {
  const select = node.select === undefined || node.select === null ? DEFAULT_SELECT : node.select;
  if (!Array.isArray(select) || select.length === 0 || !select.every((column) => typeof column === 'string' && column in COLUMN_TYPES)) {
    throw errors.validation(`select takes columns of ${Object.keys(COLUMN_TYPES).join(', ')}.`, 'select');
  }
  const columns = select as string[];
  const limit = count(node, 'limit', DEFAULT_LIMIT, MAX_LIMIT);
  const offset = count(node, 'offset', 0, Number.MAX_SAFE_INTEGER);
  const { actors, recordings } = await sourceActors(ch, objectField(node, 'source', 'source'), ctx);
  const page = await actorsPage(ch, actors, limit, offset);
  const persons = await personDetails(
    ch,
    page.rows.map((row) => row.id),
    ctx,
  );
  const wantsRecordings = recordings || columns.includes('matched_recordings');
  const recorded = wantsRecordings
    ? await matchedRecordings(
        ch,
        page.rows.flatMap((row) => row.uuids),
        ctx,
      )
    : new Map<string, MatchedRecording>();
  const results = page.rows.map((row) => {
    const person = persons.get(row.id);
    const created = person?.created_at ?? null;
    const cells: Record<string, unknown> = {
      id: row.id,
      created_at: created,
      event_count: row.uuids.length,
      event_distinct_ids: person?.distinct_ids ?? [],
      appearances: row.appearances ?? [],
      matched_recordings: [...new Set(row.uuids.map((uuid) => recorded.get(uuid)).filter((recording) => recording !== undefined))],
    };
    cells.person = cells.actor = {
      id: row.id,
      uuid: row.id,
      distinct_ids: person?.distinct_ids ?? [],
      properties: person?.properties ?? {},
      is_identified: false,
      created_at: created,
    };
    return columns.map((column) => cells[column]);
  });
  return {
    results,
    columns,
    types: columns.map((column) => COLUMN_TYPES[column]!),
    hasMore: page.hasMore,
    limit,
    offset,
    missing_actors_count: 0,
  };
}
