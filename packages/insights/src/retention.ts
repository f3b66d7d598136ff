/**
 * Retention (docs/insights.md, "Retention"): cohorts of actors by the interval of a target event, and how many
 * of each cohort did a returning event 1, 2, … intervals later. Requests are PostHog's legacy retention fields or
 * a `RetentionQuery`; the counting is one ClickHouse query with bound parameters.
 */
import { ApiError, fromWallClock } from '@plover/core';
import { PERSON_ID_EXPRESSION, PERSON_OVERRIDES_SUBQUERY, type ClickHouse } from '@plover/clickhouse';
import { parseWall, resolveIntervalsRange } from './dates';
import { bodyFields, choice, integer, isAbsent, object, optionalString, required, type Fields } from './fields';
import { parseEntities, parsePropertyFilters } from './filters';
import { BREAKDOWN_FIELDS, kindOf, parsePropertyBreakdown, withNodeAttrs, type FunnelBreakdown } from './funnel-input';
import { actorExpression, entityCondition, periodExpression } from './funnel-sql';
import { Params } from './params';
import { propertiesCondition, propertyColumn, propertyText, type FilterScope } from './properties';
import { BREAKDOWN_OTHER, query } from './trends';
import type { InsightContext, Interval, PropertyGroup, ResolvedRange, Series } from './types';

export type RetentionType = 'retention_recurring' | 'retention_first_time';
const RETENTION_TYPES: readonly RetentionType[] = ['retention_recurring', 'retention_first_time'];
export type RetentionPeriod = 'Hour' | 'Day' | 'Week' | 'Month';
const PERIODS: readonly RetentionPeriod[] = ['Hour', 'Day', 'Week', 'Month'];
const INTERVAL_OF: Record<RetentionPeriod, Interval> = { Hour: 'hour', Day: 'day', Week: 'week', Month: 'month' };
const MAX_INTERVALS = 400;
const MAX_OCCURRENCES = 1000;

export interface RetentionInput {
  /** The event that puts an actor in a cohort (null: any event). */
  target: Series;
  /** The event that counts as coming back. */
  returning: Series;
  retentionType: RetentionType;
  period: RetentionPeriod;
  /** Columns per cohort row, and cohort rows when no `dateFrom` is given. */
  totalIntervals: number;
  dateFrom: string | null;
  dateTo: string | null;
  properties: PropertyGroup | null;
  breakdown: FunnelBreakdown | null;
  /** Count an actor in every column up to the furthest one they came back in. */
  cumulative: boolean;
  /** A return interval counts with at least this many returning events in it (calendar intervals only). */
  minimumOccurrences: number;
  /**
   * `strict_calendar_dates`: intervals are the calendar's (a return the next day is "Day 1"); `24_hour_windows`:
   * they are counted from each actor's first target event (a return 24–48 hours after it is "Day 1").
   */
  timeWindowMode: TimeWindowMode;
  aggregationGroupTypeIndex: number | null;
}

export type TimeWindowMode = 'strict_calendar_dates' | '24_hour_windows';
const TIME_WINDOW_MODES: readonly TimeWindowMode[] = ['strict_calendar_dates', '24_hour_windows'];

export interface RetentionRow {
  values: { count: number; label: string }[];
  label: string;
  /** The row's interval start, ISO with the project's offset. */
  date: string;
  breakdown_value: string | null;
}

// ---------------------------------------------------------------------------------------------------------
// Parsing

/** Where a legacy field sits in a RetentionQuery. */
const RETENTION_FIELDS: Record<string, string> = {
  target_entity: 'retentionFilter__targetEntity',
  returning_entity: 'retentionFilter__returningEntity',
  retention_type: 'retentionFilter__retentionType',
  period: 'retentionFilter__period',
  total_intervals: 'retentionFilter__totalIntervals',
  cumulative: 'retentionFilter__cumulative',
  minimum_occurrences: 'retentionFilter__minimumOccurrences',
  time_window_mode: 'retentionFilter__timeWindowMode',
  date_from: 'dateRange__date_from',
  date_to: 'dateRange__date_to',
  properties: 'properties',
  ...BREAKDOWN_FIELDS,
};

/** The newest runner's default; the legacy endpoint's was 11. */
const NODE_TOTAL_INTERVALS = 7;
const LEGACY_TOTAL_INTERVALS = 11;

/** A retention request: legacy fields (query string under the JSON body), or a RetentionQuery `query` node. */
export function parseRetentionRequest(queryFields: Record<string, unknown>, body: unknown): RetentionInput {
  const fields: Fields = { ...queryFields, ...bodyFields(body) };
  if (isAbsent(fields.query)) return parseRetentionFields(fields, LEGACY_TOTAL_INTERVALS);
  return parseRetentionQuery(fields.query, 'query');
}

/** A RetentionQuery node (object or JSON text) at `attr`. */
export function parseRetentionQuery(raw: unknown, attr: string): RetentionInput {
  const node = object(raw, attr);
  if (node === null) throw required(attr);
  kindOf(node, ['RetentionQuery'], attr);
  const filter = object(node.retentionFilter, `${attr}__retentionFilter`) ?? {};
  const dateRange = object(node.dateRange, `${attr}__dateRange`) ?? {};
  const breakdown = object(node.breakdownFilter, `${attr}__breakdownFilter`) ?? {};
  const fields: Fields = {
    target_entity: filter.targetEntity,
    returning_entity: filter.returningEntity,
    retention_type: filter.retentionType,
    period: filter.period,
    total_intervals: filter.totalIntervals,
    cumulative: filter.cumulative,
    minimum_occurrences: filter.minimumOccurrences,
    time_window_mode: filter.timeWindowMode,
    date_from: dateRange.date_from,
    date_to: dateRange.date_to,
    properties: node.properties,
    breakdown: breakdown.breakdown,
    breakdown_type: breakdown.breakdown_type,
    breakdown_limit: breakdown.breakdown_limit,
    breakdown_group_type_index: breakdown.breakdown_group_type_index,
    breakdowns: breakdown.breakdowns,
    aggregation_group_type_index: node.aggregation_group_type_index,
  };
  return withNodeAttrs({ fields, funnels: attr }, () => parseRetentionFields(fields, NODE_TOTAL_INTERVALS), RETENTION_FIELDS);
}

/** A target or returning entity `{id, type, properties}` (default: `$pageview`). */
function entity(raw: unknown, attr: string): Series {
  const fields = object(raw, attr);
  if (fields === null) return parseEntities([{ id: '$pageview', type: 'events' }], attr)[0]!;
  return parseEntities([fields], attr)[0]!;
}

function bounded(raw: unknown, attr: string, min: number, max: number, fallback: number): number {
  const value = integer(raw, attr);
  if (value === null) return fallback;
  if (value < min || value > max) throw ApiError.validation(`Must be between ${min} and ${max}.`, attr);
  return value;
}

function parseRetentionFields(fields: Fields, defaultIntervals: number): RetentionInput {
  const cumulative = fields.cumulative === true || fields.cumulative === 'true';
  if (!isAbsent(fields.cumulative) && !cumulative && fields.cumulative !== false && fields.cumulative !== 'false') {
    throw ApiError.validation('Must be a valid boolean.', 'cumulative');
  }
  const timeWindowMode = choice(fields.time_window_mode, TIME_WINDOW_MODES, 'time_window_mode') ?? 'strict_calendar_dates';
  if (cumulative && timeWindowMode === '24_hour_windows') {
    throw ApiError.validation('Cumulative retention is not supported for 24 hour windows.', 'cumulative');
  }
  const groupIndex = integer(fields.aggregation_group_type_index, 'aggregation_group_type_index');
  if (groupIndex !== null && (groupIndex < 0 || groupIndex > 4)) throw ApiError.validation('Must be between 0 and 4.', 'aggregation_group_type_index');
  return {
    target: entity(fields.target_entity, 'target_entity'),
    returning: entity(fields.returning_entity, 'returning_entity'),
    retentionType: choice(fields.retention_type, RETENTION_TYPES, 'retention_type') ?? 'retention_recurring',
    period: choice(fields.period, PERIODS, 'period') ?? 'Day',
    totalIntervals: bounded(fields.total_intervals, 'total_intervals', 1, MAX_INTERVALS, defaultIntervals),
    dateFrom: optionalString(fields.date_from, 'date_from'),
    dateTo: optionalString(fields.date_to, 'date_to'),
    properties: parsePropertyFilters(fields.properties, 'properties'),
    breakdown: parsePropertyBreakdown(fields),
    cumulative,
    minimumOccurrences: bounded(fields.minimum_occurrences, 'minimum_occurrences', 1, MAX_OCCURRENCES, 1),
    timeWindowMode,
    aggregationGroupTypeIndex: groupIndex,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Computing

/** The range of a retention input: one bucket per cohort row. */
export function retentionRange(input: RetentionInput, ctx: InsightContext): ResolvedRange {
  return resolveIntervalsRange(input.dateFrom, input.dateTo, INTERVAL_OF[input.period], input.totalIntervals, ctx);
}

/**
 * Per (actor, breakdown value, cohort row, column): one row — `bd`, `r` (0-based cohort row), `k` (0 = in the
 * cohort, k ≥ 1 = came back k intervals later) and `actor`.
 */
export async function retentionCellsSql(input: RetentionInput, params: Params, ctx: InsightContext, range: ResolvedRange): Promise<string> {
  const scope: FilterScope = { personId: PERSON_ID_EXPRESSION, ctx };
  const tz = params.add(ctx.timezone, 'String');
  const interval = INTERVAL_OF[input.period];
  const global = await propertiesCondition(input.properties, params, scope, 'properties');
  const target = await entityCondition(input.target, params, scope, 'target_entity');
  const returning = await entityCondition(input.returning, params, scope, 'returning_entity');
  const firstTime = input.retentionType === 'retention_first_time';
  const inRange = `e.timestamp >= toDateTime64(${params.add(range.from, 'String')}, 6, ${tz}) AND e.timestamp < toDateTime64(${params.add(range.to, 'String')}, 6, ${tz}) + INTERVAL 1 SECOND`;
  const group = input.aggregationGroupTypeIndex;
  const actor = actorExpression(group);
  const value =
    input.breakdown === null ? "''" : propertyText(propertyColumn(input.breakdown.type, input.breakdown.groupTypeIndex), input.breakdown.property, params);
  const index = `indexOf(${params.add(range.buckets, 'Array(String)')}, ${periodExpression(interval, tz)}) - 1`;
  const rolling = input.timeWindowMode === '24_hour_windows';
  // Calendar first-time retention looks for each actor's first target event over all time, and for returns only in
  // the range; 24-hour windows take returns over all time too, as PostHog's rolling query does.
  const relevant = firstTime
    ? rolling
      ? `(${target} OR ${returning})`
      : `(${target} OR (${inRange} AND ${returning}))`
    : `(${inRange} AND (${target} OR ${returning}))`;
  const events = `SELECT ${actor} AS actor, e.timestamp AS ts, ${value} AS bd, ${target} AS is_target, ${returning} AS is_return, if(${inRange}, ${index}, -1) AS idx
    FROM events AS e FINAL LEFT JOIN (${PERSON_OVERRIDES_SUBQUERY}) AS o ON e.person_id = o.old_person_id
    WHERE e.team_id = {projectId:Int64} AND ${global} AND ${relevant} ${group === null ? '' : "AND actor != ''"}`;
  const lookahead = params.add(input.totalIntervals, 'Int64');
  if (rolling) return rollingCellsSql(events, input.period, params.add(range.from, 'String'), tz, params.add(range.buckets.length, 'Int64'), lookahead);
  const starts = firstTime ? 'if(argMinIf(idx, ts, is_target) >= 0, [argMinIf(idx, ts, is_target)], [])' : 'groupUniqArrayIf(idx, is_target AND idx >= 0)';
  const occurrences = params.add(input.minimumOccurrences, 'UInt32');
  const returns = input.minimumOccurrences === 1 ? 'arrayDistinct(rets)' : `arrayDistinct(arrayFilter(i -> countEqual(rets, i) >= ${occurrences}, rets))`;
  const offsets = `arrayFilter(k -> k > 0 AND k < ${lookahead}, arrayMap(i -> toInt64(i) - r, ${returns}))`;
  const columns = input.cumulative ? `range(toInt64(arrayMax(arrayPushBack(${offsets}, 0))) + 1)` : `arrayPushFront(${offsets}, 0)`;
  return `SELECT actor, bd, r, k FROM (
      SELECT actor, bd, ${starts} AS starts, groupArrayIf(idx, is_return AND idx >= 0) AS rets
      FROM (${events})
      GROUP BY actor, bd
    )
    ARRAY JOIN starts AS r
    ARRAY JOIN ${columns} AS k`;
}

/** The unit and length of a 24-hour window of each period, PostHog's: weeks are 7 days, months 30. */
const WINDOWS: Record<RetentionPeriod, { unit: 'hour' | 'day'; length: number }> = {
  Hour: { unit: 'hour', length: 1 },
  Day: { unit: 'hour', length: 24 },
  Week: { unit: 'day', length: 7 },
  Month: { unit: 'day', length: 30 },
};

/**
 * Retention cells in 24-hour windows: each actor's `t0` is their first target event (in the range when recurring,
 * ever when first-time); their one cohort row is the window of `t0` counted from the range's start, and a returning
 * event at or after `t0` falls in window `floor(dateDiff(unit, t0, ts) / length)`. `dateDiff` counts the unit's
 * boundaries crossed in the project's timezone, as ClickHouse does for PostHog. An actor split by a breakdown
 * value starts a cohort with each value of their events from `t0` on, as in PostHog's query.
 */
function rollingCellsSql(events: string, period: RetentionPeriod, from: string, tz: string, rows: string, lookahead: string): string {
  const { unit, length } = WINDOWS[period];
  const windowOf = (start: string, end: string) => `toInt64(floor(dateDiff('${unit}', ${start}, ${end}, ${tz}) / ${length}))`;
  return `SELECT actor, bd, r, k FROM (
      SELECT ev.actor AS actor, ev.bd AS bd, ${windowOf(`toDateTime64(${from}, 6, ${tz})`, 'a.t0')} AS r,
        arrayDistinct(arrayConcat([0], arrayFilter(x -> x >= 0, groupUniqArray(if(ev.is_return, ${windowOf('a.t0', 'ev.ts')}, -1))))) AS ks
      FROM (${events}) AS ev
      INNER JOIN (SELECT actor, minIf(ts, is_target) AS t0 FROM (${events}) GROUP BY actor HAVING countIf(is_target) > 0) AS a ON ev.actor = a.actor
      WHERE ev.ts >= a.t0
      GROUP BY ev.actor, a.t0, ev.bd
    )
    ARRAY JOIN ks AS k
    WHERE r >= 0 AND r < ${rows} AND k < ${lookahead}`;
}

/** `YYYY-MM-DDTHH:MM:SS` of a local wall clock with the timezone's offset then (`Z` for none). */
function isoWithOffset(bucket: string, timezone: string): string {
  const wall = parseWall(bucket);
  const instant = fromWallClock(wall, timezone) ?? fromWallClock(wall + 3_600_000, timezone) ?? wall;
  const minutes = Math.round((wall - instant) / 60_000);
  const offset =
    minutes === 0
      ? 'Z'
      : `${minutes < 0 ? '-' : '+'}${String(Math.floor(Math.abs(minutes) / 60)).padStart(2, '0')}:${String(Math.abs(minutes) % 60).padStart(2, '0')}`;
  return `${bucket.replace(' ', 'T')}${offset}`;
}

export async function runRetention(ch: ClickHouse, input: RetentionInput, ctx: InsightContext): Promise<RetentionRow[]> {
  const range = retentionRange(input, ctx);
  const params = new Params();
  params.values.projectId = ctx.projectId;
  const cells = await retentionCellsSql(input, params, ctx, range);
  const rows = await query(ch, 'insights.retention', `SELECT bd, r, k, count() AS actors FROM (${cells}) GROUP BY bd, r, k`, params);
  const sizes = new Map<string, number>();
  for (const row of rows) if (Number(row.k) === 0) sizes.set(String(row.bd), (sizes.get(String(row.bd)) ?? 0) + Number(row.actors));
  const ranked = [...sizes.keys()].sort((a, b) => sizes.get(b)! - sizes.get(a)! || (a < b ? -1 : a > b ? 1 : 0));
  const limit = input.breakdown?.limit ?? 1;
  const shownOf = (value: string) => (ranked.indexOf(value) < limit ? value : BREAKDOWN_OTHER);
  const shown = input.breakdown === null ? [''] : [...new Set(ranked.map(shownOf))];
  const counts = new Map<string, number>();
  for (const row of rows) {
    const key = `${shownOf(String(row.bd))}\u0000${String(row.r)}\u0000${String(row.k)}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(row.actors));
  }
  return shown.flatMap((value) =>
    range.buckets.map((bucket, r) => ({
      values: Array.from({ length: input.totalIntervals }, (_, k) => ({
        count: counts.get(`${value}\u0000${r}\u0000${k}`) ?? 0,
        label: `${input.period} ${k}`,
      })),
      label: `${input.period} ${r}`,
      date: isoWithOffset(bucket, ctx.timezone),
      breakdown_value: input.breakdown === null ? null : value,
    })),
  );
}
