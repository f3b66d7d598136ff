/**
 * Experiments (docs/experiments.md): who was exposed to which variant of an experiment's flag, and each exposed
 * unit's value of a metric after its first exposure, reduced in ClickHouse to per-variant sufficient statistics
 * (count, sum, sum of squares; ratio and funnel extras). Every user-supplied value is a bound parameter.
 */
import { PERSON_ID_EXPRESSION, PERSON_OVERRIDES_SUBQUERY, type ClickHouse } from '@plover/clickhouse';
import { ApiError } from '@plover/core';
import { choice, integer, isAbsent, list, object, optionalString, type Fields } from './fields';
import { eventsNode, parsePropertyFilters } from './filters';
import { actorExpression, entityCondition } from './funnel-sql';
import { FUNNEL_WINDOW_UNITS, WINDOW_UNIT_SECONDS, type FunnelWindowUnit } from './funnel-input';
import { Params } from './params';
import { propertiesCondition, propertyNumber, propertyText, type FilterScope } from './properties';
import type { VariantSufficientStats } from './experiment-stats';
import type { InsightContext, PropertyGroup, Series } from './types';
import { TEST_ACCOUNT_FILTER } from './web';

/** The variant of a unit exposed to several variants when they are excluded; never part of the results. */
export const MULTIPLE_VARIANT_KEY = '$multiple';
export const CONTROL_VARIANT_KEY = 'control';

export type MultipleVariantHandling = 'exclude' | 'first_seen';
const HANDLINGS: readonly MultipleVariantHandling[] = ['exclude', 'first_seen'];

/** Who counts as exposed: `$feature_flag_called` for the flag by default, or a custom event. */
export interface ExposureCriteria {
  /** null: the default `$feature_flag_called` exposure, the variant in `$feature_flag_response`. */
  event: string | null;
  /** Filters on the custom exposure event. */
  properties: PropertyGroup | null;
  filterTestAccounts: boolean;
  multipleVariantHandling: MultipleVariantHandling;
}

/** What the engine needs of an experiment. */
export interface ExperimentTarget {
  flagKey: string;
  /** The flag's variant keys, in the flag's order (control first). */
  variants: readonly string[];
  start: Date;
  /** The end date, or now for a running experiment. */
  end: Date;
  /** Units are this group type's keys instead of persons. */
  groupTypeIndex: number | null;
  exposure: ExposureCriteria;
}

/** A conversion window in seconds, or null for "until the end of the experiment". */
type Window = number | null;

export type ExperimentMetric =
  | { type: 'mean'; source: MetricSource; lowerPercentile: number | null; upperPercentile: number | null; window: Window }
  | { type: 'funnel'; steps: MetricSource[]; window: Window }
  | { type: 'ratio'; numerator: MetricSource; denominator: MetricSource; window: Window };

const MEAN_MATHS = ['total', 'sum', 'unique_session'] as const;
export type MetricMath = (typeof MEAN_MATHS)[number];

/** A metric's events (an EventsNode): which events, and what each unit's value of them is. */
export type MetricSource = Omit<Series, 'math'> & { math: MetricMath };
const METRIC_TYPES = ['mean', 'funnel', 'ratio'] as const;

/** `exposure_criteria` of an experiment (absent fields: the defaults). */
export function parseExposureCriteria(raw: unknown, attr = 'exposure_criteria'): ExposureCriteria {
  const fields = object(raw, attr) ?? {};
  const handling = choice(fields.multiple_variant_handling, HANDLINGS, `${attr}__multiple_variant_handling`) ?? 'exclude';
  const filterTestAccounts = fields.filterTestAccounts === true;
  const config = object(fields.exposure_config, `${attr}__exposure_config`);
  if (config === null) return { event: null, properties: null, filterTestAccounts, multipleVariantHandling: handling };
  const event = optionalString(config.event, `${attr}__exposure_config__event`);
  if (event === null) throw ApiError.validation('This field is required.', `${attr}__exposure_config__event`, 'required');
  return {
    event: event === '$feature_flag_called' && isAbsent(config.properties) ? null : event,
    properties: parsePropertyFilters(config.properties, `${attr}__exposure_config__properties`),
    filterTestAccounts,
    multipleVariantHandling: handling,
  };
}

function windowOf(fields: Fields, attr: string): Window {
  const amount = integer(fields.conversion_window, `${attr}__conversion_window`);
  if (amount === null) return null;
  if (amount <= 0) throw ApiError.validation('Must be a positive integer.', `${attr}__conversion_window`);
  const unit = choice(fields.conversion_window_unit, FUNNEL_WINDOW_UNITS, `${attr}__conversion_window_unit`) ?? ('day' satisfies FunnelWindowUnit);
  return amount * WINDOW_UNIT_SECONDS[unit];
}

function percentile(raw: unknown, attr: string): number | null {
  if (isAbsent(raw)) return null;
  if (typeof raw !== 'number' || !(raw >= 0 && raw <= 1)) throw ApiError.validation('Must be a number between 0 and 1.', attr);
  return raw;
}

/** A metric's source or step: an EventsNode whose math experiments can count. */
function metricSource(raw: unknown, attr: string): MetricSource {
  const node = object(raw, attr) ?? {};
  const math = choice(node.math ?? 'total', MEAN_MATHS, `${attr}__math`)!;
  // unique_session is an experiments-only math: the node parser checks the rest as a total.
  const series = eventsNode({ ...node, math: math === 'unique_session' ? 'total' : math }, attr, 0);
  return { ...series, math };
}

/** An `ExperimentMetric` node: mean, funnel or ratio. */
export function parseExperimentMetric(raw: unknown, attr = 'metric'): ExperimentMetric {
  const fields = object(raw, attr);
  if (fields === null) throw ApiError.validation('This field is required.', attr, 'required');
  if (fields.kind !== 'ExperimentMetric') throw ApiError.validation('Only ExperimentMetric metrics are supported.', `${attr}__kind`, 'invalid_choice');
  const type = choice(fields.metric_type, METRIC_TYPES, `${attr}__metric_type`);
  const window = windowOf(fields, attr);
  switch (type) {
    case 'mean':
      return {
        type,
        source: metricSource(fields.source, `${attr}__source`),
        lowerPercentile: percentile(fields.lower_bound_percentile, `${attr}__lower_bound_percentile`),
        upperPercentile: percentile(fields.upper_bound_percentile, `${attr}__upper_bound_percentile`),
        window,
      };
    case 'funnel': {
      const steps = list(fields.series, `${attr}__series`).map((step, i) => metricSource(step, `${attr}__series__${i}`));
      if (steps.length === 0) throw ApiError.validation('A funnel metric needs at least one step.', `${attr}__series`);
      if (steps.length > 20) throw ApiError.validation('A funnel metric has at most 20 steps.', `${attr}__series`);
      return { type, steps, window };
    }
    case 'ratio':
      return {
        type,
        numerator: metricSource(fields.numerator, `${attr}__numerator`),
        denominator: metricSource(fields.denominator, `${attr}__denominator`),
        window,
      };
    default:
      throw ApiError.validation(`metric_type must be one of ${METRIC_TYPES.join(', ')}.`, `${attr}__metric_type`, 'invalid_choice');
  }
}

const EVENTS_FROM = `events AS e FINAL LEFT JOIN (${PERSON_OVERRIDES_SUBQUERY}) AS o ON e.person_id = o.old_person_id`;

/** The experiment's events: the project's, within [start, end], without test accounts when asked. */
async function eventsWhere(target: ExperimentTarget, params: Params, scope: FilterScope): Promise<string> {
  const testAccounts = target.exposure.filterTestAccounts
    ? await propertiesCondition({ type: 'AND', values: [TEST_ACCOUNT_FILTER] }, params, scope, 'exposure_criteria__filterTestAccounts')
    : '1';
  return `e.team_id = {projectId:Int64}
      AND e.timestamp >= fromUnixTimestamp64Milli(${params.add(target.start.getTime(), 'Int64')}, 'UTC')
      AND e.timestamp <= fromUnixTimestamp64Milli(${params.add(target.end.getTime(), 'Int64')}, 'UTC')
      AND ${testAccounts}`;
}

/**
 * One row per exposed unit: `unit`, `variant` (`$multiple` for a unit seen with several variants, unless the
 * first seen is kept) and `first_ts`, its first exposure. Only values that are variant keys of the flag count.
 */
async function exposuresSql(target: ExperimentTarget, params: Params, scope: FilterScope): Promise<string> {
  const custom = target.exposure.event !== null;
  const variant = propertyText('properties', custom ? `$feature/${target.flagKey}` : '$feature_flag_response', params);
  const matches = custom
    ? `e.event = ${params.add(target.exposure.event, 'String')} AND ${await propertiesCondition(target.exposure.properties, params, scope, 'exposure_criteria__exposure_config__properties')}`
    : `e.event = '$feature_flag_called' AND ${propertyText('properties', '$feature_flag', params)} = ${params.add(target.flagKey, 'String')}`;
  const chosen =
    target.exposure.multipleVariantHandling === 'first_seen' ? 'argMin(v, ts)' : `if(uniqExact(v) > 1, ${params.add(MULTIPLE_VARIANT_KEY, 'String')}, any(v))`;
  return `SELECT u AS unit, ${chosen} AS variant, min(ts) AS first_ts FROM (
      SELECT ${actorExpression(target.groupTypeIndex)} AS u, ${variant} AS v, e.timestamp AS ts
      FROM ${EVENTS_FROM}
      WHERE ${await eventsWhere(target, params, scope)} AND ${matches}
    )
    WHERE u != '' AND v IN ${params.add(target.variants, 'Array(String)')}
    GROUP BY u`;
}

function scopeOf(ctx: InsightContext): FilterScope {
  return { personId: PERSON_ID_EXPRESSION, ctx };
}

export interface ExposureSeries {
  variant: string;
  days: string[];
  /** Cumulative exposed units by the end of each day. */
  exposure_counts: number[];
}

/** `YYYY-MM-DD` of an instant in a timezone. */
function dayIn(instant: Date, timezone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: timezone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(instant);
}

/** Every day from `from` to `to` (both `YYYY-MM-DD`, inclusive). */
function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  for (let day = new Date(`${from}T00:00:00Z`); dayIn(day, 'UTC') <= to; day = new Date(day.getTime() + 86_400_000)) days.push(dayIn(day, 'UTC'));
  return days;
}

/**
 * Exposed units per variant, cumulated per day of first exposure (the project's days, from the start to the end
 * date), variants in the flag's order then `$multiple`; and each variant's total.
 */
export async function runExperimentExposures(
  ch: ClickHouse,
  target: ExperimentTarget,
  ctx: InsightContext,
): Promise<{ timeseries: ExposureSeries[]; total_exposures: Record<string, number> }> {
  const params = new Params();
  const exposures = await exposuresSql(target, params, scopeOf(ctx));
  const rows = await ch.query<{ day: string; variant: string; n: string }>(
    'insights.experimentExposures',
    `SELECT toString(toDate(first_ts, ${params.add(ctx.timezone, 'String')})) AS day, variant, count() AS n FROM (${exposures}) GROUP BY day, variant`,
    { ...params.values, projectId: ctx.projectId },
  );
  const days = daysBetween(dayIn(target.start, ctx.timezone), dayIn(target.end, ctx.timezone));
  const daily = new Map<string, Map<string, number>>();
  for (const row of rows) {
    const perDay = daily.get(row.variant) ?? new Map<string, number>();
    perDay.set(row.day, Number(row.n));
    daily.set(row.variant, perDay);
  }
  const timeseries: ExposureSeries[] = [];
  const total_exposures: Record<string, number> = {};
  for (const variant of [...target.variants, MULTIPLE_VARIANT_KEY]) {
    const perDay = daily.get(variant);
    if (!perDay) continue;
    let running = 0;
    const exposure_counts = days.map((day) => (running += perDay.get(day) ?? 0));
    timeseries.push({ variant, days, exposure_counts });
    total_exposures[variant] = running;
  }
  return { timeseries, total_exposures };
}

/** Per-event value of a mean/ratio source: 1 per event, the property's number, or the session id. */
function valueExpression(series: MetricSource, params: Params): string {
  if (series.math === 'sum') return `ifNull(${propertyNumber('properties', series.mathProperty!, params)}, 0)`;
  return '1';
}

/** A unit's value of one source over its events in the window (`ok`), from the joined columns `m.<prefix>`. */
function unitAggregate(series: MetricSource, prefix: string, ok: string): string {
  const matched = `${ok} AND m.${prefix}_match`;
  if (series.math === 'unique_session') return `toFloat64(uniqExactIf(m.session, ${matched} AND m.session != ''))`;
  return `toFloat64(sumIf(m.${prefix}_value, ${matched}))`;
}

/**
 * Per-variant sufficient statistics of `metric`: every variant of the flag (none exposed: zeros), in the flag's
 * order; `$multiple` is left out.
 */
export async function experimentStatistics(
  ch: ClickHouse,
  target: ExperimentTarget,
  metric: ExperimentMetric,
  ctx: InsightContext,
): Promise<VariantSufficientStats[]> {
  const params = new Params();
  const scope = scopeOf(ctx);
  const exposures = await exposuresSql(target, params, scope);
  const sources = metric.type === 'mean' ? [metric.source] : metric.type === 'ratio' ? [metric.numerator, metric.denominator] : metric.steps;
  const conditions = await Promise.all(sources.map((series, i) => entityCondition({ ...series, math: 'total' }, params, scope, `metric__${i}`)));
  const columns = conditions.map((condition, i) => `${condition} AS s${i}_match, ${valueExpression(sources[i]!, params)} AS s${i}_value`);
  const metricEvents = `SELECT ${actorExpression(target.groupTypeIndex)} AS unit, e.timestamp AS ts, toString(e.uuid) AS id,
        ${propertyText('properties', '$session_id', params)} AS session, ${columns.join(', ')}
      FROM ${EVENTS_FROM}
      WHERE ${await eventsWhere(target, params, scope)} AND (${conditions.join(' OR ')})`;
  const window = metric.window === null ? '' : ` AND m.ts < x.first_ts + toIntervalSecond(${params.add(metric.window, 'Int64')})`;
  const ok = `m.unit = x.unit AND m.ts >= x.first_ts${window}`;

  let unitValues: string;
  let aggregates: string;
  let bounds: string | null = null;
  if (metric.type === 'funnel') {
    const n = metric.steps.length;
    const stepFlags = `[${metric.steps.map((_, i) => `m.s${i}_match`).join(', ')}]`;
    // The unit's events in its window by time (then id, so that ties have one order), each moving it at most one step.
    const ordered = `arrayMap(t -> t.3, arraySort(t -> (t.1, t.2), groupArrayIf((m.ts, m.id, ${stepFlags}), ${ok})))`;
    unitValues = `arrayFold((reached, flags) -> if(reached < ${n} AND flags[reached + 1], toUInt32(reached + 1), reached), ${ordered}, toUInt32(0)) AS reached`;
    const steps = metric.steps.map((_, i) => `countIf(reached >= ${i + 1})`).join(', ');
    aggregates = `toFloat64(countIf(reached = ${n})) AS sum, toFloat64(countIf(reached = ${n})) AS sum_squares, [${steps}] AS step_counts`;
  } else {
    unitValues = `${unitAggregate(sources[0]!, 's0', ok)} AS value${metric.type === 'ratio' ? `, ${unitAggregate(sources[1]!, 's1', ok)} AS den` : ''}`;
    let clipped = 'value';
    if (metric.type === 'mean' && (metric.lowerPercentile !== null || metric.upperPercentile !== null)) {
      const bound = (level: number | null, fallback: string) =>
        level === null ? `${fallback}(value)` : `quantileExact(${params.add(level, 'Float64')})(value)`;
      // Percentiles over every exposed unit (those seen in several variants too), as PostHog clips.
      bounds = `(SELECT (${bound(metric.lowerPercentile, 'min')}, ${bound(metric.upperPercentile, 'max')}) FROM units)`;
      clipped = 'least(greatest(value, bounds.1), bounds.2)';
    }
    aggregates = `sum(${clipped}) AS sum, sum(${clipped} * ${clipped}) AS sum_squares`;
    if (metric.type === 'ratio') {
      aggregates += ', sum(den) AS denominator_sum, sum(den * den) AS denominator_sum_squares, sum(value * den) AS numerator_denominator_sum_product';
    }
  }
  return readStatistics(ch, target, params, ctx, {
    exposures,
    metricEvents,
    unitValues,
    aggregates,
    bounds,
    steps: metric.type === 'funnel' ? metric.steps.length : null,
  });
}

interface StatisticsSql {
  exposures: string;
  metricEvents: string;
  /** Per unit, from the exposure `x` LEFT JOINed to its metric events `m`. */
  unitValues: string;
  /** Per variant, over `units`. */
  aggregates: string;
  /** A `(lower, upper)` tuple scalar subquery when values are clipped. */
  bounds: string | null;
  /** A funnel's step count (the rows then carry step_counts). */
  steps: number | null;
}

type StatisticsRow = { variant: string; n: string; sum: number; sum_squares: number } & Partial<
  Record<'denominator_sum' | 'denominator_sum_squares' | 'numerator_denominator_sum_product', number> & { step_counts: string[] }
>;

async function readStatistics(
  ch: ClickHouse,
  target: ExperimentTarget,
  params: Params,
  ctx: InsightContext,
  parts: StatisticsSql,
): Promise<VariantSufficientStats[]> {
  const bounds = parts.bounds === null ? '' : `, ${parts.bounds} AS bounds`;
  const rows = await ch.query<StatisticsRow>(
    'insights.experimentStatistics',
    `WITH units AS (
        SELECT x.unit AS unit, x.variant AS variant, ${parts.unitValues}
        FROM (${parts.exposures}) AS x LEFT JOIN (${parts.metricEvents}) AS m ON m.unit = x.unit
        GROUP BY x.unit, x.variant
      )
      SELECT variant, count() AS n, ${parts.aggregates}
      FROM (SELECT *${bounds} FROM units)
      WHERE variant != ${params.add(MULTIPLE_VARIANT_KEY, 'String')}
      GROUP BY variant`,
    { ...params.values, projectId: ctx.projectId },
  );
  const byVariant = new Map(rows.map((row) => [row.variant, row]));
  return target.variants.map((key) => {
    const row = byVariant.get(key);
    const statistics: VariantSufficientStats = {
      key,
      number_of_samples: Number(row?.n ?? 0),
      sum: Number(row?.sum ?? 0),
      sum_squares: Number(row?.sum_squares ?? 0),
    };
    if (parts.aggregates.includes('denominator_sum')) {
      statistics.denominator_sum = Number(row?.denominator_sum ?? 0);
      statistics.denominator_sum_squares = Number(row?.denominator_sum_squares ?? 0);
      statistics.numerator_denominator_sum_product = Number(row?.numerator_denominator_sum_product ?? 0);
    }
    if (parts.steps !== null) statistics.step_counts = row?.step_counts?.map(Number) ?? new Array<number>(parts.steps).fill(0);
    return statistics;
  });
}
