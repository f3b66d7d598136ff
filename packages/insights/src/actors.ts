/**
 * The actors behind one number of an insight (PostHog's InsightActorsQuery / FunnelsActorsQuery): for each kind the
 * rows come from the same SQL its counts come from, so the actors listed for a point are exactly the ones counted
 * there (docs/query.md, "ActorsQuery").
 */
import type { ClickHouse } from '@plover/clickhouse';
import { ApiError } from '@plover/core';
import { bucketDay, daysBefore, formatWall, parseWall, previousRange } from './dates';
import { actorFunnelSql } from './funnel-sql';
import type { FunnelInput } from './funnel-input';
import { timeToConvertSql } from './funnels';
import { pathRowsSql, type PathsInput } from './paths';
import { retentionCellsSql, retentionRange, type RetentionInput } from './retention';
import { lifecycleStatusesSql, wallOrdinal } from './lifecycle';
import { Params } from './params';
import { insightRange } from './range';
import { stickinessTargetsSql } from './stickiness';
import { activeDays, BREAKDOWN_OTHER, cohortNarrowed, query, rankBreakdown, SeriesQuery } from './trends';
import { TOTAL_VALUE_DISPLAYS, type InsightContext, type InsightRequest, type LifecycleStatus, type ResolvedRange } from './types';

/** Which number of a series insight: the series, the bucket (`day` as in the result's `days`), breakdown, status. */
export interface SeriesPoint {
  request: InsightRequest;
  series: number;
  /** A `days` entry of the result (stickiness: the number of intervals); null: the whole range. */
  day: string | number | null;
  breakdown: string | null;
  compare: 'current' | 'previous';
  status: LifecycleStatus | null;
}

/**
 * Which actors of a funnel, one of: `step` (1-based: reached at least that step; negative: stopped just before step
 * |step|), `customSteps` (1-based furthest steps, exactly), `trends` (the entrance period of a funnel trend, as in
 * the result's `days`: its converted actors, or with `dropOff` those who entered and did not convert), `bin` (a
 * time-to-convert bin, by its start in seconds as in the result's `bins`). `breakdown` keeps one value.
 */
export interface FunnelPoint {
  input: FunnelInput;
  step: number | null;
  customSteps: readonly number[] | null;
  trends: { period: string; dropOff: boolean } | null;
  bin: number | null;
  breakdown: string | null;
}

/** SQL with one row per actor: `actor` (text) and `uuids` (the actor's events behind the number). */
export interface ActorsSql {
  sql: string;
  params: Params;
}

const ATTR = 'source';

function bucketIndex(range: ResolvedRange, day: string | number | null, attr: string): number | null {
  if (day === null) return null;
  const index = range.buckets.findIndex((bucket) => bucketDay(bucket, range.interval) === String(day) || bucket === String(day));
  if (index < 0) throw ApiError.validation(`${String(day)} is not a point of this insight.`, attr);
  return index;
}

/** The bucket's last second (the next bucket's start minus one second, or the range's end). */
function bucketEnd(range: ResolvedRange, index: number): string {
  const next = range.buckets[index + 1];
  return next === undefined ? range.to : formatWall(parseWall(next) - 1000);
}

/** A point of a cohort breakdown names its cohort (`all`, or an id): its actors are those of the narrowed trend. */
function cohortOfPoint(point: SeriesPoint): number | 'all' {
  if (point.breakdown === 'all') return 'all';
  const id = Number(point.breakdown);
  if (!Number.isSafeInteger(id) || id < 1) throw ApiError.validation('breakdown must be a cohort id of the breakdown, or "all".', `${ATTR}__breakdown`);
  return id;
}

async function trendActors(ch: ClickHouse, point: SeriesPoint, range: ResolvedRange, ctx: InsightContext): Promise<ActorsSql> {
  const requested = point.request.input;
  const input = requested.breakdown?.type === 'cohort' && point.breakdown !== null ? cohortNarrowed(requested, cohortOfPoint(point)) : requested;
  const series = input.series[point.series]!;
  const q = new SeriesQuery(series, input, ctx, series.math !== 'unique_group');
  const totalValue = TOTAL_VALUE_DISPLAYS.includes(input.display);
  const index = totalValue ? null : bucketIndex(range, point.day, `${ATTR}__day`);
  const from = index === null ? range.from : range.buckets[index]!;
  const to = index === null ? range.to : bucketEnd(range, index);
  const active = activeDays(series.math, totalValue ? 'day' : range.interval);
  const where = [await q.where(active > 0 ? daysBefore(index === null ? to : from, active - 1) : from, to)];
  if (series.math === 'unique_group') where.push(`${q.counted()} != ''`);
  if (input.breakdown !== null && point.breakdown !== null) {
    const value = q.breakdownValue();
    if (point.breakdown === BREAKDOWN_OTHER) {
      const { top } = await rankBreakdown(ch, q, input, range);
      where.push(`${value} NOT IN ${q.params.add(top, 'Array(String)')}`);
    } else where.push(`${value} = ${q.params.add(point.breakdown === 'none' ? '' : point.breakdown, 'String')}`);
  }
  return { sql: q.sql(`toString(${q.counted()}) AS actor, groupArray(e.uuid) AS uuids`, where.join(' AND '), 'actor'), params: q.params };
}

async function stickinessActors(point: SeriesPoint, range: ResolvedRange, ctx: InsightContext): Promise<ActorsSql> {
  const { input } = point.request;
  const targets = await stickinessTargetsSql(input.series[point.series]!, input, range, ctx);
  const intervals = Number(point.day);
  if (!Number.isInteger(intervals) || intervals < 1) throw ApiError.validation('day must be a number of intervals (1, 2, …).', `${ATTR}__day`);
  return {
    sql: `SELECT toString(target) AS actor, uuids FROM (${targets.sql}) WHERE intervals = ${targets.params.add(intervals, 'UInt32')}`,
    params: targets.params,
  };
}

async function lifecycleActors(point: SeriesPoint, range: ResolvedRange, ctx: InsightContext): Promise<ActorsSql> {
  if (point.status === null)
    throw ApiError.validation('status is required for a lifecycle: new, returning, resurrecting or dormant.', `${ATTR}__status`, 'required');
  const statuses = await lifecycleStatusesSql(point.request.input, range, ctx);
  const index = bucketIndex(range, point.day, `${ATTR}__day`);
  const ordinals = (index === null ? range.buckets : [range.buckets[index]!]).map((bucket) => wallOrdinal(bucket, range.interval));
  const p = statuses.params;
  return {
    sql: `SELECT toString(person) AS actor, groupArrayArray(uuids) AS uuids FROM (${statuses.sql})
      WHERE status = ${p.add(point.status, 'String')} AND ordinal IN ${p.add(ordinals, 'Array(Int64)')} GROUP BY actor`,
    params: p,
  };
}

/** The actors behind one number of a trend, stickiness or lifecycle result. */
export async function seriesActorsSql(ch: ClickHouse, point: SeriesPoint, ctx: InsightContext): Promise<ActorsSql> {
  const { insight, input } = point.request;
  if (input.series[point.series] === undefined) throw ApiError.validation(`There is no series ${point.series}.`, `${ATTR}__series`);
  const current = await insightRange(ch, input, input.interval, ctx);
  const range = point.compare === 'previous' ? previousRange(current) : current;
  if (insight === 'STICKINESS') return stickinessActors(point, range, ctx);
  if (insight === 'LIFECYCLE') return lifecycleActors(point, range, ctx);
  return trendActors(ch, point, range, ctx);
}

function funnelStepCondition(point: FunnelPoint): string {
  const n = point.input.steps.length;
  if (point.customSteps !== null) {
    if (point.customSteps.length === 0 || point.customSteps.some((step) => !Number.isInteger(step) || step < 1 || step > n)) {
      throw ApiError.validation(`funnelCustomSteps takes steps 1…${n}.`, 'funnelCustomSteps');
    }
    return `reached IN (${[...new Set(point.customSteps)].map((step) => step - 1).join(', ')})`;
  }
  const step = point.step ?? 1;
  if (!Number.isInteger(step) || step === 0 || step === -1 || Math.abs(step) > n) {
    throw ApiError.validation(`funnelStep must be 1…${n}, or -2…-${n} for those who dropped off before that step.`, 'funnelStep');
  }
  return step > 0 ? `reached >= ${step - 1}` : `reached = ${-step - 2}`;
}

/**
 * The actors behind a funnel number: a step (converted: reached at least that step; dropped off: stopped just
 * before it), a trend point (an entrance period's converted or dropped-off actors) or a time-to-convert bin, each
 * from the rows that number is counted from.
 */
export async function funnelActorsSql(ch: ClickHouse, point: FunnelPoint, ctx: InsightContext): Promise<ActorsSql> {
  const { input } = point;
  if (point.bin !== null) {
    const { sql, params } = await timeToConvertSql(ch, input, ctx);
    return { sql: `SELECT actor, uuids FROM (${sql}) WHERE abs(low + bin * width - ${params.add(point.bin, 'Float64')}) < 1e-6`, params };
  }
  const interval = point.trends !== null || input.vizType === 'trends' ? input.interval : 'day';
  const range = await insightRange(ch, input, interval, ctx);
  const params = new Params();
  params.values.projectId = ctx.projectId;
  const bounds = { from: range.from, to: range.to, tz: params.add(ctx.timezone, 'String') };
  const where: string[] = [];
  if (point.trends !== null) {
    const bucket = range.buckets[bucketIndex(range, point.trends.period, 'funnelTrendsEntrancePeriodStart')!]!;
    const from = params.add(input.fromStep, 'Int8');
    const to = params.add(input.toStep, 'Int8');
    where.push(`period = ${params.add(bucket, 'String')}`, point.trends.dropOff ? `reached >= ${from} AND reached < ${to}` : `reached >= ${to}`);
  } else where.push(funnelStepCondition(point));
  if (point.breakdown !== null) where.push(`val = ${params.add(point.breakdown, 'String')}`);
  const actors = await actorFunnelSql(input, params, ctx, bounds, { byPeriod: point.trends !== null });
  return { sql: `SELECT actor, groupArrayArray(uuids) AS uuids FROM (${actors}) WHERE ${where.join(' AND ')} GROUP BY actor`, params };
}

/** The cohort of one retention row (`interval`, 0-based), with the columns each actor counts in (`appearances`). */
export async function retentionActorsSql(input: RetentionInput, interval: number, breakdown: string | null, ctx: InsightContext): Promise<ActorsSql> {
  const range = retentionRange(input, ctx);
  if (!Number.isInteger(interval) || interval < 0 || interval >= range.buckets.length) {
    throw ApiError.validation(`interval must be a cohort row, 0…${range.buckets.length - 1}.`, `${ATTR}__interval`);
  }
  const params = new Params();
  params.values.projectId = ctx.projectId;
  const cells = await retentionCellsSql(input, params, ctx, range);
  const value = breakdown === null ? '' : ` AND bd = ${params.add(breakdown, 'String')}`;
  return {
    sql: `SELECT actor, CAST([], 'Array(UUID)') AS uuids, arraySort(groupArray(k)) AS appearances FROM (${cells})
      WHERE r = ${params.add(interval, 'Int64')}${value} GROUP BY actor HAVING has(appearances, 0)`,
    params,
  };
}

/** Path node keys as PostHog's paths modal sends them (`2_/pricing`). */
export interface PathPoint {
  input: PathsInput;
  start: string | null;
  end: string | null;
  dropoff: string | null;
}

/**
 * The persons who walked a path edge (`start` → `end`), reached a node (`end`), left from a node (`start`) or whose
 * path ended at a node (`dropoff`), from the path rows the edges are counted from.
 */
export async function pathActorsSql(ch: ClickHouse, point: PathPoint, ctx: InsightContext, attr: (i: number) => string): Promise<ActorsSql> {
  if (point.start === null && point.end === null && point.dropoff === null) {
    throw ApiError.validation('Name a node: pathStartKey, pathEndKey or pathDropoffKey.', `${ATTR}__source__pathsFilter`, 'required');
  }
  const { sql, params } = await pathRowsSql(ch, point.input, ctx, attr);
  const where = [
    point.start === null ? null : `last_path_key = ${params.add(point.start, 'String')}`,
    point.end === null ? null : `path_key = ${params.add(point.end, 'String')}`,
    point.dropoff === null ? null : `path_key = ${params.add(point.dropoff, 'String')} AND dropoff_key = path_key`,
  ].filter((condition) => condition !== null);
  return {
    sql: `SELECT actor, groupArrayArray(arrayMap(x -> x.1, events)) AS uuids FROM (${sql}) WHERE ${where.join(' AND ')} GROUP BY actor`,
    params,
  };
}

export interface ActorRow {
  id: string;
  uuids: string[];
  /** Retention: the columns (intervals after the cohort's, 0 = the cohort itself) the actor counts in. */
  appearances?: number[];
}

/** One page of actors (ordered by id), and whether more follow. */
export async function actorsPage(ch: ClickHouse, actors: ActorsSql, limit: number, offset: number): Promise<{ rows: ActorRow[]; hasMore: boolean }> {
  const p = actors.params;
  const rows = await query(
    ch,
    'insights.actors',
    `SELECT * FROM (${actors.sql}) ORDER BY actor LIMIT ${p.add(limit + 1, 'UInt32')} OFFSET ${p.add(offset, 'UInt64')}`,
    p,
  );
  const page = rows.map((row): ActorRow => {
    const actor: ActorRow = { id: String(row.actor), uuids: (row.uuids as unknown as string[]).map(String) };
    if (row.appearances !== undefined) actor.appearances = (row.appearances as unknown as number[]).map(Number);
    return actor;
  });
  return { rows: page.slice(0, limit), hasMore: page.length > limit };
}

/** The distinct id each of the given events was captured with (PostHog's `event_distinct_ids`), by event uuid. */
export async function eventDistinctIds(ch: ClickHouse, uuids: readonly string[], ctx: InsightContext): Promise<Map<string, string>> {
  if (uuids.length === 0) return new Map();
  const p = new Params();
  p.values.projectId = ctx.projectId;
  const rows = await query(
    ch,
    'insights.actors.distinctIds',
    `SELECT toString(e.uuid) AS event_uuid, any(e.distinct_id) AS distinct_id FROM events AS e
      WHERE e.team_id = {projectId:Int64} AND toString(e.uuid) IN ${p.add(uuids, 'Array(String)')} GROUP BY event_uuid`,
    p,
  );
  return new Map(rows.map((row) => [String(row.event_uuid), String(row.distinct_id)]));
}

export interface MatchedRecording {
  session_id: string;
  events: { timestamp: string; uuid: string; window_id: string }[];
}

/** Of the given events, those in a session that has a recording, grouped by session (PostHog's `matched_recordings`). */
export async function matchedRecordings(ch: ClickHouse, uuids: readonly string[], ctx: InsightContext): Promise<Map<string, MatchedRecording>> {
  if (uuids.length === 0) return new Map();
  const p = new Params();
  p.values.projectId = ctx.projectId;
  const rows = await query(
    ch,
    'insights.actors.recordings',
    `SELECT toString(e.uuid) AS event_uuid, e.session_id AS sid, e.window_id AS wid, toString(e.timestamp) AS ts
      FROM events AS e FINAL
      WHERE e.team_id = {projectId:Int64} AND toString(e.uuid) IN ${p.add(uuids, 'Array(String)')} AND e.session_id != ''
        AND e.session_id IN (SELECT r.session_id FROM session_replay_summaries AS r WHERE r.team_id = {projectId:Int64})
      ORDER BY ts, event_uuid`,
    p,
  );
  const byEvent = new Map<string, MatchedRecording>();
  const sessions = new Map<string, MatchedRecording>();
  for (const row of rows) {
    const id = String(row.sid);
    let recording = sessions.get(id);
    if (recording === undefined) sessions.set(id, (recording = { session_id: id, events: [] }));
    recording.events.push({ timestamp: String(row.ts), uuid: String(row.event_uuid), window_id: String(row.wid) });
    byEvent.set(String(row.event_uuid), recording);
  }
  return byEvent;
}
