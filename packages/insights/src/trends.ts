/**
 * Trends (docs/insights.md): one ClickHouse aggregation per series and period — plus one ranking query per
 * series with a breakdown — assembled into PostHog's legacy trend series. All filtering, bucketing (in the
 * project's timezone) and counting happens in SQL; JavaScript only fills empty buckets and applies the display
 * (running totals, comparison labels, formulas).
 */
import { PERSON_ID_EXPRESSION, PERSON_OVERRIDES_SUBQUERY, type ClickHouse } from '@plover/clickhouse';
import { ApiError, StorageError } from '@plover/core';
import { bucketDay, bucketLabel, daysBefore, previousRange } from './dates';
import { checkFormula, evaluateFormula } from './formula';
import { Params } from './params';
import { insightRange } from './range';
import { propertiesCondition, propertyColumn, propertyNumber, propertyText } from './properties';
import { seriesEventCondition, seriesReference, withActionNames } from './series';
import {
  isPropertyGroup,
  PROPERTY_MATH,
  type CohortBreakdown,
  type PropertyFilter,
  TOTAL_VALUE_DISPLAYS,
  type InsightContext,
  type Interval,
  type MathType,
  type PropertyGroup,
  type ResolvedRange,
  type Series,
  type TrendSeriesResult,
  type TrendsInput,
} from './types';

/** The breakdown value of the series that sums every value beyond `breakdown_limit`. */
export const BREAKDOWN_OTHER = '$$_posthog_breakdown_other_$$';
const GROUP_KEY_COLUMNS = ['e.`$group_0`', 'e.`$group_1`', 'e.`$group_2`', 'e.`$group_3`', 'e.`$group_4`'] as const;
const QUANTILES: Partial<Record<MathType, number>> = { median: 0.5, p75: 0.75, p90: 0.9, p95: 0.95, p99: 0.99 };
/** ClickHouse's CANNOT_COMPILE_REGEXP: a `regex` filter's pattern is invalid. */
const INVALID_REGEXP = '427';

function hasCohort(group: PropertyGroup | null): boolean {
  return group !== null && group.values.some((value) => (isPropertyGroup(value) ? hasCohort(value) : value.type === 'cohort'));
}

/** Days an active-user math looks back from a day (that day included); 0 for the other maths. */
export function activeDays(math: MathType, interval: Interval): number {
  if (interval === 'week' || interval === 'month') return 0;
  return math === 'weekly_active' ? 7 : math === 'monthly_active' ? 30 : 0;
}

function groupKeyColumn(series: Series): string {
  const column = GROUP_KEY_COLUMNS[series.mathGroupTypeIndex ?? -1];
  if (column === undefined) throw ApiError.validation('math_group_type_index must be between 0 and 4.', 'math_group_type_index', 'invalid');
  return column;
}

/**
 * The bucket an event falls in. Day, week and month buckets are Dates (cheap to group by; rendered as
 * `YYYY-MM-DD`); hour and minute buckets are grouped by their local text, so that the two instants of a DST
 * fall-back hour share one bucket.
 */
function bucketExpression(interval: Interval, tz: string): string {
  switch (interval) {
    case 'minute':
      return `formatDateTime(toStartOfMinute(e.timestamp, ${tz}), '%Y-%m-%d %H:%i:%S', ${tz})`;
    case 'hour':
      return `formatDateTime(toStartOfHour(e.timestamp, ${tz}), '%Y-%m-%d %H:%i:%S', ${tz})`;
    case 'day':
      return `toDate(e.timestamp, ${tz})`;
    case 'week':
      return `toStartOfWeek(e.timestamp, 0, ${tz})`;
    case 'month':
      return `toStartOfMonth(e.timestamp, ${tz})`;
  }
}

/** A bucket as ClickHouse returns it (a Date is `YYYY-MM-DD`) → the range's `YYYY-MM-DD HH:MM:SS` key. */
function bucketKey(raw: string): string {
  return raw.length === 10 ? `${raw} 00:00:00` : raw;
}

/** Per breakdown value (`''` without a breakdown): per bucket key (or `''` for a total) the math's value. */
type Aggregates = Map<string, Map<string, number>>;

/** One series over one period, ready to run: shared pieces of its queries (stickiness and lifecycle use them too). */
export class SeriesQuery {
  readonly params = new Params();
  private readonly tz: string;
  private readonly needsPerson: boolean;

  /** `countsPersons`: the query reads PERSON_ID_EXPRESSION whatever the series' math. */
  constructor(
    private readonly series: Series,
    private readonly input: TrendsInput,
    private readonly ctx: InsightContext,
    countsPersons = false,
  ) {
    this.tz = this.params.add(ctx.timezone, 'String');
    this.params.values.projectId = ctx.projectId;
    this.needsPerson =
      countsPersons || ['dau', 'weekly_active', 'monthly_active'].includes(series.math) || hasCohort(input.properties) || hasCohort(series.properties);
  }

  /** The bound timezone. */
  get timezone(): string {
    return this.tz;
  }

  private get from(): string {
    return this.needsPerson ? `events AS e FINAL LEFT JOIN (${PERSON_OVERRIDES_SUBQUERY}) AS o ON e.person_id = o.old_person_id` : 'events AS e FINAL';
  }

  /** The events of this series between two local wall clocks (both inclusive, to the second). */
  async where(fromWall: string, toWall: string): Promise<string> {
    const p = this.params;
    const scope = { personId: PERSON_ID_EXPRESSION, ctx: this.ctx };
    const conditions = [
      'e.team_id = {projectId:Int64}',
      `e.timestamp >= toDateTime64(${p.add(fromWall, 'String')}, 6, ${this.tz})`,
      `e.timestamp < toDateTime64(${p.add(toWall, 'String')}, 6, ${this.tz}) + INTERVAL 1 SECOND`,
    ];
    conditions.push(await seriesEventCondition(this.series, p, scope));
    conditions.push(await propertiesCondition(this.input.properties, p, scope, 'properties'));
    conditions.push(await propertiesCondition(this.series.properties, p, scope, `events__${this.series.order}__properties`));
    return conditions.filter((condition) => condition !== '1').join(' AND ');
  }

  breakdownValue(): string {
    const breakdown = this.input.breakdown;
    // A cohort breakdown never reaches the SQL: each cohort is a query of its own, unbroken (cohortSeries).
    if (breakdown === null || breakdown.type === 'cohort') return "''";
    if (breakdown.type === 'event_metadata') return 'e.event';
    return propertyText(propertyColumn(breakdown.type, breakdown.groupTypeIndex), breakdown.property, this.params);
  }

  /** The aggregate of the series' math over the rows of a group. */
  aggregate(): string {
    const math = this.series.math;
    if (math === 'total') return 'count()';
    if (math === 'dau' || math === 'weekly_active' || math === 'monthly_active') return `uniqExact(${PERSON_ID_EXPRESSION})`;
    if (math === 'unique_group') {
      const column = groupKeyColumn(this.series);
      return `uniqExactIf(${column}, ${column} != '')`;
    }
    const value = propertyNumber('properties', this.series.mathProperty ?? '', this.params);
    const quantile = QUANTILES[math];
    const aggregate = quantile === undefined ? `${math}(${value})` : `quantileExactInclusive(${quantile})(${value})`;
    return `ifNull(${aggregate}, 0)`;
  }

  /**
   * The math as a partial aggregate (`-State`) and how to finish it (`-Merge` of column `st`), so that the
   * rows of breakdown values past the limit can be folded into "other" after grouping.
   */
  aggregateState(): { state: string; merge: string } {
    const math = this.series.math;
    if (math === 'total') return { state: 'countState()', merge: 'countMerge(st)' };
    if (math === 'dau' || math === 'weekly_active' || math === 'monthly_active' || math === 'unique_group') {
      const counted = math === 'unique_group' ? `nullIf(${groupKeyColumn(this.series)}, '')` : PERSON_ID_EXPRESSION;
      return { state: `uniqExactState(${counted})`, merge: 'uniqExactMerge(st)' };
    }
    const value = propertyNumber('properties', this.series.mathProperty ?? '', this.params);
    const quantile = QUANTILES[math];
    const name = quantile === undefined ? math : `quantileExactInclusive`;
    const level = quantile === undefined ? '' : `(${quantile})`;
    return { state: `${name}State${level}(${value})`, merge: `ifNull(${name}Merge${level}(st), 0)` };
  }

  /** Who a distinct-count math counts, for "seen so far" running totals. */
  counted(): string {
    return this.series.math === 'unique_group' ? groupKeyColumn(this.series) : PERSON_ID_EXPRESSION;
  }

  sql(select: string, where: string, groupBy: string): string {
    return `SELECT ${select} FROM ${this.from} WHERE ${where}${groupBy === '' ? '' : ` GROUP BY ${groupBy}`}`;
  }

  bucket(interval: Interval): string {
    return bucketExpression(interval, this.tz);
  }

  /** `DATE + n days` for each of the `days` days an event counts in (active-user maths). */
  activeDay(days: number): string {
    return `addDays(toDate(e.timestamp, ${this.tz}), arrayJoin(range(${this.params.add(days, 'UInt16')})))`;
  }
}

interface Computed {
  /** Breakdown values in result order (`['']` without a breakdown). */
  values: string[];
  aggregates: Aggregates;
}

export async function query(ch: ClickHouse, name: string, sql: string, params: Params): Promise<Record<string, string | number>[]> {
  try {
    return await ch.query<Record<string, string | number>>(name, sql, params.values);
  } catch (error) {
    if (error instanceof StorageError && error.code === INVALID_REGEXP) {
      throw ApiError.validation('A regex filter has an invalid regular expression.', 'properties', 'invalid');
    }
    throw error;
  }
}

/**
 * The breakdown values a series shows over a range, ranked by matching events (ties by value), and whether
 * more values exist than `breakdown_limit` (then an "other" series follows them).
 */
export async function rankBreakdown(ch: ClickHouse, q: SeriesQuery, input: TrendsInput, range: ResolvedRange): Promise<{ top: string[]; other: boolean }> {
  const limit = input.breakdown?.limit ?? 0;
  const where = await q.where(range.from, range.to);
  const rows = await query(
    ch,
    'insights.trends.breakdownValues',
    `${q.sql(`${q.breakdownValue()} AS value, count() AS events`, where, 'value')} ORDER BY events DESC, value ASC LIMIT ${q.params.add(limit + 1, 'UInt32')}`,
    q.params,
  );
  const values = rows.map((row) => String(row.value));
  return { top: values.slice(0, limit), other: values.length > limit };
}

/**
 * A breakdown in one scan: per value and bucket a partial aggregate and the events counted, each value ranked by
 * its events over the range (ties by value), and the values past `breakdown_limit` merged into "other".
 */
function rankedBreakdownSql(q: SeriesQuery, input: TrendsInput, where: string, bucket: string): string {
  const { state, merge } = q.aggregateState();
  const limit = q.params.add(input.breakdown?.limit ?? 0, 'UInt32');
  const grouped = q.sql(`${q.breakdownValue()} AS value, ${bucket} AS bucket, ${state} AS st, count() AS events`, where, 'value, bucket');
  const ranked = `SELECT value, bucket, st, dense_rank() OVER (ORDER BY value_events DESC, value ASC) AS value_rank
    FROM (SELECT value, bucket, st, sum(events) OVER (PARTITION BY value) AS value_events FROM (${grouped}))`;
  return `SELECT if(value_rank <= ${limit}, value, ${q.params.add(BREAKDOWN_OTHER, 'String')}) AS shown, bucket, ${merge} AS result, min(value_rank) AS shown_rank
    FROM (${ranked}) GROUP BY shown, bucket`;
}

/** The input narrowed to one value of a cohort breakdown: its members' events (`all`: every event), unbroken. */
export function cohortNarrowed(input: TrendsInput, cohort: number | 'all'): TrendsInput {
  if (cohort === 'all') return { ...input, breakdown: null };
  const member: PropertyFilter = { type: 'cohort', key: 'id', operator: 'in', value: cohort };
  return { ...input, breakdown: null, properties: { type: 'AND', values: input.properties === null ? [member] : [input.properties, member] } };
}

/** A cohort breakdown: one unbroken computation per cohort, each a line whose value is the cohort (its id's text, or `all`). */
async function cohortSeries(
  ch: ClickHouse,
  series: Series,
  input: TrendsInput,
  cohorts: CohortBreakdown['cohorts'],
  range: ResolvedRange,
  ctx: InsightContext,
) {
  const aggregates: Aggregates = new Map();
  for (const cohort of cohorts) {
    const computed = await computeSeries(ch, series, cohortNarrowed(input, cohort), range, ctx);
    aggregates.set(String(cohort), computed.aggregates.get('') ?? new Map<string, number>());
  }
  return { values: cohorts.map(String), aggregates };
}

async function computeSeries(ch: ClickHouse, series: Series, input: TrendsInput, range: ResolvedRange, ctx: InsightContext): Promise<Computed> {
  if (input.breakdown?.type === 'cohort') return cohortSeries(ch, series, input, input.breakdown.cohorts, range, ctx);
  const q = new SeriesQuery(series, input, ctx);
  const totalValue = TOTAL_VALUE_DISPLAYS.includes(input.display);
  const active = activeDays(series.math, totalValue ? 'day' : range.interval);
  const firstSeen = !totalValue && input.display === 'ActionsLineGraphCumulative' && (series.math === 'dau' || series.math === 'unique_group');
  const bucket = totalValue ? "''" : q.bucket(range.interval);
  const grouping = input.breakdown === null ? (totalValue ? '' : 'bucket') : totalValue ? 'value' : 'value, bucket';

  let sql: string;
  // Without a breakdown one line; with one, the values found (none when no event matches).
  let values = input.breakdown === null ? [''] : [];
  if (input.breakdown !== null && active === 0 && !firstSeen) {
    sql = rankedBreakdownSql(q, input, await q.where(range.from, range.to), bucket);
  } else {
    // Active users and first-seen counts read other rows than the range's events, so the values are ranked first.
    let breakdown = q.breakdownValue();
    if (input.breakdown !== null) {
      const ranked = await rankBreakdown(ch, q, input, range);
      values = ranked.other ? [...ranked.top, BREAKDOWN_OTHER] : ranked.top;
      if (ranked.other)
        breakdown = `if(${breakdown} IN ${q.params.add(ranked.top, 'Array(String)')}, ${breakdown}, ${q.params.add(BREAKDOWN_OTHER, 'String')})`;
    }
    if (totalValue) {
      // Active users over the whole range: the 7 or 30 days ending with its last day.
      const where = await q.where(active > 0 ? daysBefore(range.to, active - 1) : range.from, range.to);
      sql = q.sql(`${breakdown} AS shown, ${bucket} AS bucket, ${q.aggregate()} AS result`, where, grouping.replace('value', 'shown'));
    } else if (active > 0) {
      // Each event counts on its day and the `active - 1` days after it; buckets read their day's figure.
      const where = await q.where(daysBefore(range.from, active - 1), range.to);
      sql = q.sql(`${breakdown} AS shown, ${q.activeDay(active)} AS bucket, ${q.aggregate()} AS result`, where, grouping.replace('value', 'shown'));
    } else if (firstSeen) {
      // Each person (group) counts once, in the first bucket they appear in; the display sums these up.
      const where = await q.where(range.from, range.to);
      const inner = q.sql(`${breakdown} AS shown, ${q.counted()} AS who, min(${bucket}) AS bucket`, where, 'shown, who');
      sql = `SELECT shown, bucket, count() AS result FROM (${inner}) ${series.math === 'unique_group' ? "WHERE who != '' " : ''}GROUP BY shown, bucket`;
    } else {
      sql = q.sql(`${breakdown} AS shown, ${bucket} AS bucket, ${q.aggregate()} AS result`, await q.where(range.from, range.to), grouping);
    }
  }

  const aggregates: Aggregates = new Map();
  const ranks = new Map<string, number>();
  for (const row of await query(ch, `insights.trends.${series.math}`, sql, q.params)) {
    const value = String(row.shown);
    let buckets = aggregates.get(value);
    if (buckets === undefined) aggregates.set(value, (buckets = new Map<string, number>()));
    buckets.set(bucketKey(String(row.bucket)), Number(row.result));
    if (row.shown_rank !== undefined) ranks.set(value, Math.min(ranks.get(value) ?? Infinity, Number(row.shown_rank)));
  }
  if (ranks.size > 0) values = [...ranks.keys()].sort((a, b) => (ranks.get(a) ?? 0) - (ranks.get(b) ?? 0));
  return { values, aggregates };
}

function breakdownLabel(value: string): string {
  return value === '' ? 'none' : value;
}

function legacyFilter(input: TrendsInput, range: ResolvedRange): Record<string, unknown> {
  return {
    insight: 'TRENDS',
    interval: input.interval,
    date_from: range.from,
    date_to: range.to,
    display: input.display,
    compare: input.compare,
    formula: input.formula,
    breakdown: input.breakdown === null ? null : input.breakdown.type === 'cohort' ? input.breakdown.cohorts : input.breakdown.property,
    breakdown_type: input.breakdown?.type ?? null,
    events: input.series.map(actionOf.bind(null, range)),
  };
}

function actionOf(range: ResolvedRange, series: Series): TrendSeriesResult['action'] {
  return {
    days: range.buckets.map((bucket) => bucketDay(bucket, range.interval)),
    ...seriesReference(series),
    order: series.order,
    name: series.name,
    custom_name: series.customName,
    math: series.math,
    math_property: series.mathProperty,
    math_hogql: null,
    math_group_type_index: series.mathGroupTypeIndex,
    properties: {},
  };
}

interface Period {
  range: ResolvedRange;
  compareLabel?: 'current' | 'previous';
}

interface Line {
  series: Series;
  /** Breakdown value, or undefined without a breakdown. */
  value?: string;
  data: number[];
  aggregated?: number;
}

function lines(series: Series, input: TrendsInput, range: ResolvedRange, computed: Computed): Line[] {
  const active = activeDays(series.math, range.interval);
  const totalValue = TOTAL_VALUE_DISPLAYS.includes(input.display);
  return computed.values.map((value) => {
    const buckets = computed.aggregates.get(value) ?? new Map<string, number>();
    const line: Line = { series, ...(input.breakdown === null ? {} : { value }), data: [] };
    if (totalValue) {
      line.aggregated = buckets.get('') ?? 0;
      return line;
    }
    line.data = range.buckets.map((bucket) => buckets.get(active > 0 ? `${bucket.slice(0, 10)} 00:00:00` : bucket) ?? 0);
    if (input.display === 'ActionsLineGraphCumulative') {
      let total = 0;
      line.data = line.data.map((count) => (total += count));
    }
    return line;
  });
}

function withFormula(formula: string, input: TrendsInput, perSeries: Line[][]): Line[] {
  const values: (string | undefined)[] = [];
  for (const seriesLines of perSeries) for (const line of seriesLines) if (!values.includes(line.value)) values.push(line.value);
  const first = input.series[0] as Series;
  const formulaSeries: Series = { ...first, name: `Formula (${formula})`, customName: null };
  return values.map((value) => {
    const operands = perSeries.map((seriesLines) => seriesLines.find((line) => line.value === value));
    const width = Math.max(0, ...operands.map((line) => line?.data.length ?? 0));
    const line: Line = {
      series: formulaSeries,
      ...(value === undefined ? {} : { value }),
      data: Array.from({ length: width }, (_, index) =>
        evaluateFormula(
          formula,
          operands.map((operand) => operand?.data[index] ?? 0),
        ),
      ),
    };
    if (TOTAL_VALUE_DISPLAYS.includes(input.display))
      line.aggregated = evaluateFormula(
        formula,
        operands.map((operand) => operand?.aggregated ?? 0),
      );
    return line;
  });
}

/** A cohort breakdown's values as PostHog shows them: the cohort id (`all` stays), and its name for the label (`all users`). */
async function cohortValues(input: TrendsInput, ctx: InsightContext): Promise<Map<string, { value: number | 'all'; name: string }>> {
  const shown = new Map<string, { value: number | 'all'; name: string }>();
  if (input.breakdown?.type !== 'cohort') return shown;
  for (const cohort of input.breakdown.cohorts) {
    const name = cohort === 'all' ? 'all users' : ctx.cohortName ? await ctx.cohortName(cohort) : `Cohort ${cohort}`;
    shown.set(String(cohort), { value: cohort, name });
  }
  return shown;
}

function render(
  line: Line,
  input: TrendsInput,
  period: Period,
  multipleSeries: boolean,
  cohorts: ReadonlyMap<string, { value: number | 'all'; name: string }>,
): TrendSeriesResult {
  const { range } = period;
  const totalValue = TOTAL_VALUE_DISPLAYS.includes(input.display);
  const name = line.series.name;
  const cohort = line.value === undefined ? undefined : cohorts.get(line.value);
  const label =
    line.value === undefined
      ? name
      : cohort !== undefined
        ? `${name} - ${cohort.name}`
        : multipleSeries
          ? `${name} - ${breakdownLabel(line.value)}`
          : breakdownLabel(line.value);
  const count = totalValue
    ? 0
    : input.display === 'ActionsLineGraphCumulative'
      ? (line.data[line.data.length - 1] ?? 0)
      : line.data.reduce((sum, value) => sum + value, 0);
  const result: TrendSeriesResult = {
    data: line.data,
    labels: totalValue
      ? []
      : range.buckets.map((bucket, index) => (period.compareLabel === undefined ? bucketLabel(bucket, range.interval) : `${range.interval} ${index}`)),
    days: totalValue ? [] : range.buckets.map((bucket) => bucketDay(bucket, range.interval)),
    count,
    label,
    action: actionOf(range, line.series),
    filter: legacyFilter(input, range),
  };
  if (totalValue) result.aggregated_value = line.aggregated ?? 0;
  if (line.value !== undefined) result.breakdown_value = cohort?.value ?? breakdownLabel(line.value);
  if (period.compareLabel !== undefined) {
    result.compare = true;
    result.compare_label = period.compareLabel;
  }
  return result;
}

/** Computes a trend: PostHog's legacy `result` series, current period first, then the previous one when comparing. */
export async function runTrends(ch: ClickHouse, request: TrendsInput, ctx: InsightContext): Promise<TrendSeriesResult[]> {
  if (request.series.length === 0) return [];
  const input = { ...request, series: await withActionNames(request.series, ctx) };
  for (const series of input.series) {
    if (PROPERTY_MATH.includes(series.math) && series.mathProperty === null) {
      throw ApiError.validation('This field is required.', `events__${series.order}__math_property`, 'required');
    }
  }
  if (input.formula !== null) checkFormula(input.formula, input.series.length);
  const range = await insightRange(ch, input, input.interval, ctx);
  const periods: Period[] = input.compare
    ? [
        { range, compareLabel: 'current' },
        { range: previousRange(range), compareLabel: 'previous' },
      ]
    : [{ range }];
  const cohorts = await cohortValues(input, ctx);
  const results: TrendSeriesResult[] = [];
  for (const period of periods) {
    const perSeries: Line[][] = [];
    for (const series of input.series) perSeries.push(lines(series, input, period.range, await computeSeries(ch, series, input, period.range, ctx)));
    const shown = input.formula === null ? perSeries.flat() : withFormula(input.formula, input, perSeries);
    const multipleSeries = input.formula === null && input.series.length > 1;
    results.push(...shown.map((line) => render(line, input, period, multipleSeries, cohorts)));
  }
  return results;
}
