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
import {
  isPropertyGroup,
  PROPERTY_MATH,
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
function activeDays(math: MathType, interval: Interval): number {
  if (interval === 'week' || interval === 'month') return 0;
  return math === 'weekly_active' ? 7 : math === 'monthly_active' ? 30 : 0;
}

function groupKeyColumn(series: Series): string {
  const column = GROUP_KEY_COLUMNS[series.mathGroupTypeIndex ?? -1];
  if (column === undefined) throw ApiError.validation('math_group_type_index must be between 0 and 4.', 'math_group_type_index', 'invalid');
  return column;
}

function bucketExpression(interval: Interval, tz: string): string {
  switch (interval) {
    case 'minute':
      return `formatDateTime(toStartOfMinute(e.timestamp, ${tz}), '%Y-%m-%d %H:%i:%S', ${tz})`;
    case 'hour':
      return `formatDateTime(toStartOfHour(e.timestamp, ${tz}), '%Y-%m-%d %H:%i:%S', ${tz})`;
    case 'day':
      return `concat(toString(toDate(e.timestamp, ${tz})), ' 00:00:00')`;
    case 'week':
      return `concat(toString(toStartOfWeek(e.timestamp, 0, ${tz})), ' 00:00:00')`;
    case 'month':
      return `concat(toString(toStartOfMonth(e.timestamp, ${tz})), ' 00:00:00')`;
  }
}

/** Per breakdown value (`''` without a breakdown): per bucket key (or `''` for a total) the math's value. */
type Aggregates = Map<string, Map<string, number>>;

/** One series over one period, ready to run: shared pieces of its queries. */
class SeriesQuery {
  readonly params = new Params();
  private readonly tz: string;
  private readonly needsPerson: boolean;

  constructor(
    private readonly series: Series,
    private readonly input: TrendsInput,
    private readonly ctx: InsightContext,
  ) {
    this.tz = this.params.add(ctx.timezone, 'String');
    this.params.values.teamId = ctx.teamId;
    this.needsPerson =
      ['dau', 'weekly_active', 'monthly_active'].includes(series.math) || hasCohort(input.properties) || hasCohort(series.properties);
  }

  private get from(): string {
    return this.needsPerson ? `events AS e FINAL LEFT JOIN (${PERSON_OVERRIDES_SUBQUERY}) AS o ON e.person_id = o.old_person_id` : 'events AS e FINAL';
  }

  /** The events of this series between two local wall clocks (both inclusive, to the second). */
  async where(fromWall: string, toWall: string): Promise<string> {
    const p = this.params;
    const scope = { personId: PERSON_ID_EXPRESSION, ctx: this.ctx };
    const conditions = [
      'e.team_id = {teamId:Int64}',
      `e.timestamp >= toDateTime64(${p.add(fromWall, 'String')}, 6, ${this.tz})`,
      `e.timestamp < toDateTime64(${p.add(toWall, 'String')}, 6, ${this.tz}) + INTERVAL 1 SECOND`,
    ];
    if (this.series.event !== null) conditions.push(`e.event = ${p.add(this.series.event, 'String')}`);
    conditions.push(await propertiesCondition(this.input.properties, p, scope, 'properties'));
    conditions.push(await propertiesCondition(this.series.properties, p, scope, `events__${this.series.order}__properties`));
    return conditions.filter((condition) => condition !== '1').join(' AND ');
  }

  breakdownValue(): string {
    const breakdown = this.input.breakdown;
    if (breakdown === null) return "''";
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
    return `concat(toString(addDays(toDate(e.timestamp, ${this.tz}), arrayJoin(range(${this.params.add(days, 'UInt16')})))), ' 00:00:00')`;
  }
}

interface Computed {
  /** Breakdown values in result order (`['']` without a breakdown). */
  values: string[];
  aggregates: Aggregates;
}

async function query(ch: ClickHouse, name: string, sql: string, params: Params): Promise<Record<string, string | number>[]> {
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
async function rankBreakdown(ch: ClickHouse, q: SeriesQuery, input: TrendsInput, range: ResolvedRange): Promise<{ top: string[]; other: boolean }> {
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

async function computeSeries(ch: ClickHouse, series: Series, input: TrendsInput, range: ResolvedRange, ctx: InsightContext): Promise<Computed> {
  const q = new SeriesQuery(series, input, ctx);
  let breakdown = q.breakdownValue();
  let values = [''];
  if (input.breakdown !== null) {
    const ranked = await rankBreakdown(ch, q, input, range);
    values = ranked.other ? [...ranked.top, BREAKDOWN_OTHER] : ranked.top;
    if (ranked.other) breakdown = `if(${breakdown} IN ${q.params.add(ranked.top, 'Array(String)')}, ${breakdown}, ${q.params.add(BREAKDOWN_OTHER, 'String')})`;
  }

  const totalValue = TOTAL_VALUE_DISPLAYS.includes(input.display);
  const active = activeDays(series.math, totalValue ? 'day' : range.interval);
  const firstSeen = !totalValue && input.display === 'ActionsLineGraphCumulative' && (series.math === 'dau' || series.math === 'unique_group');
  let sql: string;
  if (totalValue) {
    // Active users over the whole range: the 7 or 30 days ending with its last day.
    const where = await q.where(active > 0 ? daysBefore(range.to, active - 1) : range.from, range.to);
    sql = q.sql(`${breakdown} AS value, '' AS bucket, ${q.aggregate()} AS result`, where, 'value');
  } else if (active > 0) {
    // Each event counts on its day and the `active - 1` days after it; buckets read their day's figure.
    const where = await q.where(daysBefore(range.from, active - 1), range.to);
    sql = q.sql(`${breakdown} AS value, ${q.activeDay(active)} AS bucket, ${q.aggregate()} AS result`, where, 'value, bucket');
  } else if (firstSeen) {
    // Each person (group) counts once, in the first bucket they appear in; the display sums these up.
    const where = await q.where(range.from, range.to);
    const inner = q.sql(`${breakdown} AS value, ${q.counted()} AS who, min(${q.bucket(range.interval)}) AS bucket`, where, 'value, who');
    sql = `SELECT value, bucket, count() AS result FROM (${inner}) ${series.math === 'unique_group' ? "WHERE who != '' " : ''}GROUP BY value, bucket`;
  } else {
    const where = await q.where(range.from, range.to);
    sql = q.sql(`${breakdown} AS value, ${q.bucket(range.interval)} AS bucket, ${q.aggregate()} AS result`, where, 'value, bucket');
  }

  const aggregates: Aggregates = new Map();
  for (const row of await query(ch, `insights.trends.${series.math}`, sql, q.params)) {
    const value = String(row.value);
    let buckets = aggregates.get(value);
    if (buckets === undefined) aggregates.set(value, (buckets = new Map<string, number>()));
    buckets.set(String(row.bucket), Number(row.result));
  }
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
    breakdown: input.breakdown?.property ?? null,
    breakdown_type: input.breakdown?.type ?? null,
    events: input.series.map(actionOf.bind(null, range)),
  };
}

function actionOf(range: ResolvedRange, series: Series): TrendSeriesResult['action'] {
  return {
    days: range.buckets.map((bucket) => bucketDay(bucket, range.interval)),
    id: series.event,
    type: 'events',
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
      data: Array.from({ length: width }, (_, index) => evaluateFormula(formula, operands.map((operand) => operand?.data[index] ?? 0))),
    };
    if (TOTAL_VALUE_DISPLAYS.includes(input.display)) line.aggregated = evaluateFormula(formula, operands.map((operand) => operand?.aggregated ?? 0));
    return line;
  });
}

function render(line: Line, input: TrendsInput, period: Period, multipleSeries: boolean): TrendSeriesResult {
  const { range } = period;
  const totalValue = TOTAL_VALUE_DISPLAYS.includes(input.display);
  const name = line.series.name;
  const label = line.value === undefined ? name : multipleSeries ? `${name} - ${breakdownLabel(line.value)}` : breakdownLabel(line.value);
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
  if (line.value !== undefined) result.breakdown_value = breakdownLabel(line.value);
  if (period.compareLabel !== undefined) {
    result.compare = true;
    result.compare_label = period.compareLabel;
  }
  return result;
}

/** Computes a trend: PostHog's legacy `result` series, current period first, then the previous one when comparing. */
export async function runTrends(ch: ClickHouse, input: TrendsInput, ctx: InsightContext): Promise<TrendSeriesResult[]> {
  for (const series of input.series) {
    if (PROPERTY_MATH.includes(series.math) && series.mathProperty === null) {
      throw ApiError.validation('This field is required.', `events__${series.order}__math_property`, 'required');
    }
  }
  if (input.formula !== null) checkFormula(input.formula, input.series.length);
  const range = await insightRange(ch, input, input.interval, ctx);
  const periods: Period[] = input.compare ? [{ range, compareLabel: 'current' }, { range: previousRange(range), compareLabel: 'previous' }] : [{ range }];
  const results: TrendSeriesResult[] = [];
  for (const period of periods) {
    const perSeries: Line[][] = [];
    for (const series of input.series) perSeries.push(lines(series, input, period.range, await computeSeries(ch, series, input, period.range, ctx)));
    const shown = input.formula === null ? perSeries.flat() : withFormula(input.formula, input, perSeries);
    const multipleSeries = input.formula === null && input.series.length > 1;
    results.push(...shown.map((line) => render(line, input, period, multipleSeries)));
  }
  return results;
}
