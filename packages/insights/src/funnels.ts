/**
 * Funnels (docs/insights.md, "Funnels"): the per-actor funnel of funnel-sql.ts aggregated in ClickHouse into
 * PostHog's three visualisations — steps (counts and conversion times per step, per breakdown value), time to
 * convert (a histogram) and trends (conversion rate per entrance period).
 */
import type { ClickHouse } from '@plover/clickhouse';
import { bucketDay, bucketLabel } from './dates';
import type { FunnelInput } from './funnel-input';
import { actorFunnelSql, type FunnelBounds } from './funnel-sql';
import { Params } from './params';
import { insightRange } from './range';
import { seriesReference, withActionNames } from './series';
import { query } from './trends';
import type { InsightContext, ResolvedRange } from './types';

/** The breakdown value standing for every value past the breakdown limit. */
export const FUNNEL_BREAKDOWN_OTHER = 'Other';

/** How a funnel result names a step: by its event or action (an unordered funnel by its position). */
interface StepIdentity {
  action_id: string | number | null;
  name: string;
  custom_name: string | null;
  order: number;
  type: 'events' | 'actions';
}

function stepIdentity(input: FunnelInput, i: number): StepIdentity {
  const step = input.steps[i]!;
  const reference = seriesReference(step);
  if (input.orderType === 'unordered')
    return { action_id: null, name: `Completed ${i + 1} step${i > 0 ? 's' : ''}`, custom_name: null, order: i, type: reference.type };
  return { action_id: reference.id, name: step.name, custom_name: step.customName, order: i, type: reference.type };
}

/** One step of PostHog's funnel `steps` result. */
export interface FunnelStepResult extends StepIdentity {
  count: number;
  /** Seconds from the previous step, over the actors who reached this one (null on the first step, or none). */
  average_conversion_time: number | null;
  median_conversion_time: number | null;
  people: [];
  breakdown?: string[];
  breakdown_value?: string[];
}

export interface FunnelTimeToConvertResult {
  /** `[bin start in seconds, actors]`, the last entry marking the upper bound. */
  bins: [number, number][];
  average_conversion_time: number | null;
}

export interface FunnelTrendResult {
  count: number;
  /** Conversion in % per entrance period. */
  data: number[];
  days: string[];
  labels: string[];
  breakdown_value?: string[];
}

export type FunnelResult = FunnelStepResult[] | FunnelStepResult[][] | FunnelTimeToConvertResult | FunnelTrendResult[];

/** Converts a number ClickHouse returned (maybe as text, maybe NaN/null when nothing was averaged). */
function numberOrNull(raw: unknown): number | null {
  if (raw === null || raw === undefined) return null;
  const value = Number(raw);
  return Number.isFinite(value) ? value : null;
}

interface Prepared {
  params: Params;
  bounds: FunnelBounds;
  range: ResolvedRange;
}

async function prepare(ch: ClickHouse, input: FunnelInput, ctx: InsightContext): Promise<Prepared> {
  const range = await insightRange(ch, input, input.vizType === 'trends' ? input.interval : 'day', ctx);
  const params = new Params();
  params.values.projectId = ctx.projectId;
  const bounds = { from: range.from, to: range.to, tz: params.add(ctx.timezone, 'String') };
  return { params, bounds, range };
}

/** Seconds between the events of steps `from` and `to` (0-based) of an actor's reported chain. */
function secondsBetween(from: number, to: number): string {
  return `(times[${to + 1}] - times[${from + 1}]) / 1e6`;
}

async function stepsResult(ch: ClickHouse, input: FunnelInput, ctx: InsightContext): Promise<FunnelStepResult[] | FunnelStepResult[][]> {
  const { params, bounds } = await prepare(ch, input, ctx);
  const n = input.steps.length;
  const actors = await actorFunnelSql(input, params, ctx, bounds, { byPeriod: false });
  const indexes = Array.from({ length: n }, (_, i) => i);
  const later = indexes.slice(1);
  const perValue = `SELECT val,
      ${indexes.map((i) => `countIf(reached = ${i}) AS e${i}`).join(', ')},
      ${later.map((k) => `avgStateIf(d${k}, d${k} > 0) AS a${k}, quantileExactInclusiveStateIf(0.5)(d${k}, d${k} > 0) AS m${k}`).join(', ')}
    FROM (SELECT val, reached, ${later.map((k) => `if(reached >= ${k}, ${secondsBetween(k - 1, k)}, 0) AS d${k}`).join(', ')} FROM (${actors}))
    GROUP BY val`;
  const ranked = `SELECT *, row_number() OVER (ORDER BY ${[...indexes]
    .reverse()
    .map((i) => `e${i} DESC`)
    .join(', ')}, val ASC) AS rank FROM (${perValue})`;
  const limit = params.add(input.breakdown?.limit ?? 1, 'UInt32');
  const sql = `SELECT if(rank <= ${limit}, val, ${params.add(FUNNEL_BREAKDOWN_OTHER, 'String')}) AS shown, min(rank) AS shown_rank,
      ${indexes.map((i) => `sum(e${i}) AS e${i}`).join(', ')},
      ${later.map((k) => `avgMerge(a${k}) AS avg${k}, quantileExactInclusiveMerge(0.5)(m${k}) AS median${k}`).join(', ')}
    FROM (${ranked}) GROUP BY shown ORDER BY shown_rank`;
  const rows = await query(ch, 'insights.funnel.steps', sql, params);
  const groups = rows.map((row) => {
    let reachedAtLeast = 0;
    const counts = [...indexes]
      .reverse()
      .map((i) => (reachedAtLeast += Number(row[`e${i}`])))
      .reverse();
    return indexes.map((i): FunnelStepResult => {
      const result: FunnelStepResult = {
        ...stepIdentity(input, i),
        count: counts[i]!,
        average_conversion_time: i === 0 ? null : numberOrNull(row[`avg${i}`]),
        median_conversion_time: i === 0 ? null : numberOrNull(row[`median${i}`]),
        people: [],
      };
      if (input.breakdown !== null) {
        result.breakdown = [String(row.shown)];
        result.breakdown_value = [String(row.shown)];
      }
      return result;
    });
  });
  if (input.breakdown !== null) return groups;
  return groups[0] ?? emptySteps(input);
}

/** The steps of a funnel nobody entered. */
function emptySteps(input: FunnelInput): FunnelStepResult[] {
  return input.steps.map((_, i) => ({
    ...stepIdentity(input, i),
    count: 0,
    average_conversion_time: null,
    median_conversion_time: null,
    people: [],
  }));
}

/** Automatic bins: the cube root of the converters, 1 to 60. */
const MAX_AUTO_BINS = 60;
/** The width of the one bin when every conversion took the same time. */
const SAME_TIME_BIN_SECONDS = 60;

/**
 * One row per actor who converted from `fromStep` to `toStep` (breakdown ignored): `actor`, `uuids`, `t` (seconds
 * between the two steps) and its histogram bin — `bin` (0-based), and the histogram's `bins`, `width`, `low`
 * (the first bin's start) and `average` — so that a bin's count and its actors come from the same rows.
 */
export async function timeToConvertSql(ch: ClickHouse, input: FunnelInput, ctx: InsightContext): Promise<{ sql: string; params: Params }> {
  const unbroken: FunnelInput = { ...input, breakdown: null };
  const { params, bounds } = await prepare(ch, unbroken, ctx);
  const actors = await actorFunnelSql(unbroken, params, ctx, bounds, { byPeriod: false });
  const bins = input.binCount === null ? `least(${MAX_AUTO_BINS}, greatest(1, ceil(cbrt(n))))` : params.add(input.binCount, 'UInt32');
  const sql = `SELECT actor, uuids, t, count() OVER () AS n, min(t) OVER () AS low, max(t) OVER () AS high, avg(t) OVER () AS average,
      ${bins} AS bins, if(high = low, ${SAME_TIME_BIN_SECONDS}, ceil((high - low) / bins)) AS width, floor((t - low) / width) AS bin
    FROM (SELECT actor, uuids, ${secondsBetween(input.fromStep, input.toStep)} AS t FROM (${actors}) WHERE reached >= ${params.add(input.toStep, 'Int8')})`;
  return { sql, params };
}

async function timeToConvertResult(ch: ClickHouse, input: FunnelInput, ctx: InsightContext): Promise<FunnelTimeToConvertResult> {
  const { sql: binned, params } = await timeToConvertSql(ch, input, ctx);
  const sql = `SELECT bin, count() AS actors, any(bins) AS bins, any(width) AS width, any(low) AS low, any(average) AS average
    FROM (${binned}) GROUP BY bin ORDER BY bin`;
  const rows = await query(ch, 'insights.funnel.timeToConvert', sql, params);
  const [first] = rows;
  if (first === undefined) return { bins: [], average_conversion_time: null };
  const counts = new Map(rows.map((row) => [Number(row.bin), Number(row.actors)]));
  const [count, width, low] = [Number(first.bins), Number(first.width), Number(first.low)];
  return {
    bins: Array.from({ length: count + 1 }, (_, i): [number, number] => [low + i * width, counts.get(i) ?? 0]),
    average_conversion_time: numberOrNull(first.average),
  };
}

async function trendsResult(ch: ClickHouse, input: FunnelInput, ctx: InsightContext): Promise<FunnelTrendResult[]> {
  const { params, bounds, range } = await prepare(ch, input, ctx);
  const actors = await actorFunnelSql(input, params, ctx, bounds, { byPeriod: true });
  const sql = `SELECT val, period, countIf(reached >= ${params.add(input.fromStep, 'Int8')}) AS entered, countIf(reached >= ${params.add(input.toStep, 'Int8')}) AS converted
    FROM (${actors}) GROUP BY val, period`;
  const rows = await query(ch, 'insights.funnel.trends', sql, params);
  const totals = new Map<string, number>();
  for (const row of rows) totals.set(String(row.val), (totals.get(String(row.val)) ?? 0) + Number(row.entered));
  const ranked = [...totals.keys()].sort((a, b) => totals.get(b)! - totals.get(a)! || (a < b ? -1 : a > b ? 1 : 0));
  const limit = input.breakdown?.limit ?? 1;
  const shownOf = (value: string) => (ranked.indexOf(value) < limit ? value : FUNNEL_BREAKDOWN_OTHER);
  const shown = input.breakdown === null ? [''] : [...new Set(ranked.map(shownOf))];
  const cells = new Map<string, { entered: number; converted: number }>();
  for (const row of rows) {
    const key = `${shownOf(String(row.val))}\u0000${String(row.period)}`;
    const cell = cells.get(key) ?? { entered: 0, converted: 0 };
    cell.entered += Number(row.entered);
    cell.converted += Number(row.converted);
    cells.set(key, cell);
  }
  return shown.map((value) => {
    const data = range.buckets.map((bucket) => {
      const cell = cells.get(`${value}\u0000${bucket}`);
      return cell === undefined || cell.entered === 0 ? 0 : Math.round((cell.converted / cell.entered) * 10_000) / 100;
    });
    const result: FunnelTrendResult = {
      count: range.buckets.length,
      data,
      days: range.buckets.map((bucket) => bucketDay(bucket, range.interval)),
      labels: range.buckets.map((bucket) => bucketLabel(bucket, range.interval)),
    };
    if (input.breakdown !== null) result.breakdown_value = [value];
    return result;
  });
}

/** Computes a funnel in the visualisation it asks for. */
export async function runFunnel(ch: ClickHouse, request: FunnelInput, ctx: InsightContext): Promise<FunnelResult> {
  const input = { ...request, steps: await withActionNames(request.steps, ctx) };
  if (input.vizType === 'time_to_convert') return timeToConvertResult(ch, input, ctx);
  if (input.vizType === 'trends') return trendsResult(ch, input, ctx);
  return stepsResult(ch, input, ctx);
}
