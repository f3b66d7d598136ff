/**
 * docs/insights.md computed in plain TypeScript over events already read back (no SQL): the oracle the trends
 * property tests compare the engine with. Local time comes from Intl.DateTimeFormat (core's toWallClock);
 * a local wall-clock time goes back to an instant as ClickHouse's `toDateTime64(text, 6, tz)` does (what the
 * engine uses): in a repeated fall-back hour the earlier instant, in a skipped spring-forward hour the
 * post-transition offset.
 *
 * Where the contract's words allow two readings, the reference takes the engine's:
 * `-Nh` / `-NM` are wall-clock arithmetic on now (as PostHog's timezone-aware datetimes); "the 7 / 30 days ending
 * at `to`" of total-value active users are local days, `to`'s day included; a formula over breakdowns lists the
 * values in order of appearance, series by series.
 *
 * Wall-clock times are held as "wall milliseconds": Date.UTC of the local fields, so calendar arithmetic is
 * plain UTC arithmetic on them.
 */
import { ApiError, toWallClock } from '@plover/core';
import type { Interval, JsonValue, MathType, PropertyFilter, PropertyGroup, Series, TrendSeriesResult, TrendsInput } from '../../src/types';
import { isPropertyGroup, TOTAL_VALUE_DISPLAYS } from '../../src/types';

/** One stored event in plain form: its person already resolved through person_overrides. */
export interface PlainEvent {
  uuid: string;
  event: string;
  distinctId: string;
  /** Epoch milliseconds. */
  timestamp: number;
  person: string;
  properties: Record<string, JsonValue>;
  personProperties: Record<string, JsonValue>;
  /** `$group_0` … `$group_4` ('' = none). */
  groups: readonly string[];
  groupProperties: readonly Record<string, JsonValue>[];
}

export interface ReferenceContext {
  timezone: string;
  now: Date;
  /** Cohort id → member person uuids. */
  cohorts: ReadonlyMap<number, readonly string[]>;
}

/** The fields of a result series the contract defines. */
export type ComparedSeries = Pick<
  TrendSeriesResult,
  'data' | 'labels' | 'days' | 'count' | 'aggregated_value' | 'label' | 'breakdown_value' | 'compare' | 'compare_label'
>;

const BREAKDOWN_OTHER = '$$_posthog_breakdown_other_$$';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const MAX_BUCKETS = 5000;

// ---------------------------------------------------------------------------------------------------------
// Local time

/** The instant of a local wall-clock time, resolved as ClickHouse resolves it (see the file comment). */
export function instantOf(wall: number, timezone: string): number {
  const candidates = [wall - DAY, wall + DAY].map((probe) => wall - (toWallClock(probe, timezone) - probe));
  const valid = candidates.filter((instant) => toWallClock(instant, timezone) === wall);
  return Math.min(...(valid.length > 0 ? valid : candidates));
}

const pad = (value: number, width = 2) => String(value).padStart(width, '0');
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

export function wallDate(wall: number): string {
  const date = new Date(wall);
  return `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}`;
}

export function wallDateTime(wall: number): string {
  const date = new Date(wall);
  return `${wallDate(wall)} ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}`;
}

const hasTime = (interval: Interval) => interval === 'hour' || interval === 'minute';

export function dayLabel(wall: number, interval: Interval): string {
  const date = new Date(wall);
  const day = `${date.getUTCDate()}-${MONTHS[date.getUTCMonth()]!}-${date.getUTCFullYear()}`;
  return hasTime(interval) ? `${day} ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}` : day;
}

const startOfDay = (wall: number) => Math.floor(wall / DAY) * DAY;

/** Calendar months added, the day clamped to the target month's length (31 March − 1 month = 28 February). */
function addMonths(wall: number, months: number): number {
  const date = new Date(wall);
  const target = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + months, 1);
  const length = new Date(Date.UTC(new Date(target).getUTCFullYear(), new Date(target).getUTCMonth() + 1, 0)).getUTCDate();
  return target + (Math.min(date.getUTCDate(), length) - 1) * DAY + (wall - startOfDay(wall));
}

export function bucketStart(wall: number, interval: Interval): number {
  switch (interval) {
    case 'minute':
      return Math.floor(wall / MINUTE) * MINUTE;
    case 'hour':
      return Math.floor(wall / HOUR) * HOUR;
    case 'day':
      return startOfDay(wall);
    case 'week':
      return startOfDay(wall) - new Date(wall).getUTCDay() * DAY;
    case 'month': {
      const date = new Date(wall);
      return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
    }
  }
}

export function addIntervals(wall: number, interval: Interval, count: number): number {
  switch (interval) {
    case 'minute':
      return wall + count * MINUTE;
    case 'hour':
      return wall + count * HOUR;
    case 'day':
      return wall + count * DAY;
    case 'week':
      return wall + count * 7 * DAY;
    case 'month':
      return addMonths(wall, count);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Date range

const RELATIVE = /^-(\d+)([hdwmqyM])$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;
const OFFSET = /(Z|[+-]\d{2}:?\d{2})$/;

/** An ISO date-time: with an offset → that instant's local time, without → that wall-clock time. */
function parseDateTime(text: string, timezone: string): number {
  if (OFFSET.test(text)) return toWallClock(Date.parse(text), timezone);
  return Date.parse(`${text.replace(' ', 'T')}Z`);
}

/** `-Nh` / `-NM`: the wall clock of now minus N hours or minutes (wall-clock arithmetic, as PostHog's aware datetimes do). */
function hoursOrMinutesAgo(nowWall: number, n: number, unit: string): number | undefined {
  if (unit === 'h') return nowWall - n * HOUR;
  if (unit === 'M') return nowWall - n * MINUTE;
  return undefined;
}

function resolveTo(dateTo: string | null, nowWall: number, timezone: string): number {
  if (dateTo === null) return nowWall;
  const relative = RELATIVE.exec(dateTo);
  if (relative) {
    const [, amount, unit] = relative;
    return hoursOrMinutesAgo(nowWall, Number(amount), unit!) ?? startOfDay(subtractCalendar(nowWall, Number(amount), unit!)) + DAY - SECOND;
  }
  if (ISO_DATE.test(dateTo)) return Date.parse(`${dateTo}T00:00:00Z`) + DAY - SECOND;
  return parseDateTime(dateTo, timezone);
}

function subtractCalendar(wall: number, n: number, unit: string): number {
  switch (unit) {
    case 'd':
      return wall - n * DAY;
    case 'w':
      return wall - 7 * n * DAY;
    case 'm':
      return addMonths(wall, -n);
    case 'q':
      return addMonths(wall, -3 * n);
    case 'y':
      return addMonths(wall, -12 * n);
    default:
      throw new Error(`unknown unit ${unit}`);
  }
}

function resolveFrom(dateFrom: string | null, nowWall: number, timezone: string, events: readonly PlainEvent[]): number {
  const text = dateFrom ?? '-7d';
  const relative = RELATIVE.exec(text);
  if (relative) {
    const [, amount, unit] = relative;
    const ago = hoursOrMinutesAgo(nowWall, Number(amount), unit!);
    if (ago !== undefined) return bucketStart(ago, unit === 'h' ? 'hour' : 'minute');
    return startOfDay(subtractCalendar(nowWall, Number(amount), unit!));
  }
  switch (text) {
    case 'dStart':
      return startOfDay(nowWall);
    case 'wStart':
      return bucketStart(nowWall, 'week');
    case 'mStart':
      return bucketStart(nowWall, 'month');
    case 'yStart':
      return Date.UTC(new Date(nowWall).getUTCFullYear(), 0, 1);
    case 'all': {
      const first = Math.min(...events.map((event) => event.timestamp));
      return startOfDay(events.length > 0 ? toWallClock(first, timezone) : nowWall);
    }
  }
  if (ISO_DATE.test(text)) return Date.parse(`${text}T00:00:00Z`);
  return parseDateTime(text, timezone);
}

/** One period: bucket starts (wall) and the instants its events fall in. */
interface Period {
  buckets: readonly number[];
  /** Wall ms of the period's end (inclusive, to the second). */
  toWall: number;
  fromInstant: number;
  /** Exclusive. */
  endInstant: number;
}

export interface ResolvedPeriods {
  current: Period;
  previous: Period;
}

/** The current and previous periods; an ApiError 400 (`date_from`, `interval`) where the engine must refuse. */
export function resolvePeriods(input: TrendsInput, ctx: ReferenceContext, events: readonly PlainEvent[]): ResolvedPeriods {
  const { timezone } = ctx;
  const nowWall = Math.floor(toWallClock(ctx.now.getTime(), timezone) / SECOND) * SECOND;
  const from = bucketStart(resolveFrom(input.dateFrom, nowWall, timezone, events), input.interval);
  const to = resolveTo(input.dateTo, nowWall, timezone);
  if (from > to) throw ApiError.validation('date_from is after date_to', 'date_from');
  const buckets: number[] = [];
  for (let bucket = from; bucket <= to; bucket = addIntervals(bucket, input.interval, 1)) {
    if (buckets.length === MAX_BUCKETS) throw ApiError.validation('too many buckets', 'interval');
    buckets.push(bucket);
  }
  const previousFrom = addIntervals(from, input.interval, -buckets.length);
  return {
    current: { buckets, toWall: to, fromInstant: instantOf(from, timezone), endInstant: instantOf(to, timezone) + SECOND },
    previous: {
      buckets: buckets.map((_, i) => addIntervals(previousFrom, input.interval, i)),
      toWall: from - SECOND,
      fromInstant: instantOf(previousFrom, timezone),
      endInstant: instantOf(from, timezone),
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Properties

/** A property's text: strings as they are, numbers and booleans as JSON literals; undefined = not set. */
export function propertyText(value: JsonValue | undefined): string | undefined {
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

const NUMERIC = /^-?\d+(\.\d+)?$/;

/** A JSON number, or a string holding a plain decimal number. */
function numericValue(value: JsonValue | undefined): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && NUMERIC.test(value)) return Number(value);
  return undefined;
}

function propertySource(event: PlainEvent, type: 'event' | 'person' | 'group', groupTypeIndex: number | null | undefined): Record<string, JsonValue> {
  if (type === 'event') return event.properties;
  if (type === 'person') return event.personProperties;
  return event.groupProperties[groupTypeIndex ?? 0] ?? {};
}

function matchesFilter(event: PlainEvent, filter: PropertyFilter, ctx: ReferenceContext): boolean {
  if (filter.type === 'cohort') {
    const members = ctx.cohorts.get(Number(filter.value));
    if (!members) throw new Error(`unknown cohort ${JSON.stringify(filter.value)}`);
    return members.includes(event.person) === (filter.operator === 'in');
  }
  const text = propertyText(propertySource(event, filter.type, filter.groupTypeIndex)[filter.key]);
  const values = (Array.isArray(filter.value) ? filter.value : [filter.value]) as JsonValue[];
  const texts = values.map(propertyText);
  /** The value of the operators that take one. */
  const operand = texts[0] ?? '';
  const contains = () => text!.toLowerCase().includes(operand.toLowerCase());
  const pattern = () => new RegExp(operand);
  const numeric = (compare: (a: number, b: number) => boolean) => {
    const value = numericValue(text);
    return value !== undefined && compare(value, Number(operand));
  };
  switch (filter.operator) {
    case 'exact':
      return text !== undefined && texts.includes(text);
    case 'is_not':
      return text === undefined || !texts.includes(text);
    case 'icontains':
      return text !== undefined && contains();
    case 'not_icontains':
      return text === undefined || !contains();
    case 'regex':
      return text !== undefined && pattern().test(text);
    case 'not_regex':
      return text === undefined || !pattern().test(text);
    case 'gt':
      return numeric((a, b) => a > b);
    case 'gte':
      return numeric((a, b) => a >= b);
    case 'lt':
      return numeric((a, b) => a < b);
    case 'lte':
      return numeric((a, b) => a <= b);
    case 'is_set':
      return text !== undefined;
    case 'is_not_set':
      return text === undefined;
    default:
      throw new Error(`the reference does not implement ${filter.operator}`);
  }
}

export function matchesGroup(event: PlainEvent, group: PropertyGroup | null, ctx: ReferenceContext): boolean {
  if (!group) return true;
  const results = group.values.map((value) => (isPropertyGroup(value) ? matchesGroup(event, value, ctx) : matchesFilter(event, value, ctx)));
  return group.type === 'AND' ? results.every(Boolean) : results.some(Boolean);
}

// ---------------------------------------------------------------------------------------------------------
// Math

/** R-7 (numpy's default): linear between the closest ranks. */
function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const h = (sorted.length - 1) * p;
  const lower = Math.floor(h);
  return sorted[lower]! + (h - lower) * ((sorted[Math.min(lower + 1, sorted.length - 1)] ?? 0) - sorted[lower]!);
}

const PERCENTILES: Partial<Record<MathType, number>> = { median: 0.5, p75: 0.75, p90: 0.9, p95: 0.95, p99: 0.99 };
const ACTIVE_DAYS: Partial<Record<MathType, number>> = { weekly_active: 7, monthly_active: 30 };

/** The math of a series over events that are all in its window. */
function aggregate(series: Series, events: readonly PlainEvent[]): number {
  switch (series.math) {
    case 'total':
      return events.length;
    case 'dau':
    case 'weekly_active':
    case 'monthly_active':
      return new Set(events.map((event) => event.person)).size;
    case 'unique_group':
      return distinctGroups(series, events).size;
  }
  const values = events.flatMap((event) => {
    const value = numericValue(event.properties[series.mathProperty ?? '']);
    return value === undefined ? [] : [value];
  });
  if (values.length === 0) return 0;
  switch (series.math) {
    case 'sum':
      return values.reduce((a, b) => a + b, 0);
    case 'avg':
      return values.reduce((a, b) => a + b, 0) / values.length;
    case 'min':
      return Math.min(...values);
    case 'max':
      return Math.max(...values);
    default:
      return percentile(values, PERCENTILES[series.math]!);
  }
}

function distinctGroups(series: Series, events: readonly PlainEvent[]): Set<string> {
  return new Set(events.map((event) => event.groups[series.mathGroupTypeIndex ?? 0] ?? '').filter((key) => key !== ''));
}

const inWindow = (event: PlainEvent, from: number, end: number) => event.timestamp >= from && event.timestamp < end;

interface SeriesValues {
  data: number[];
  aggregated: number;
}

/**
 * The math of one series (one breakdown value) over one period. `events` already match the series and are
 * limited to the period's end; they may reach back before its start for active-user math.
 */
function compute(series: Series, events: readonly PlainEvent[], period: Period, input: TrendsInput, timezone: string): SeriesValues {
  const activeDays = ACTIVE_DAYS[series.math];
  const interval = input.interval;
  const slidingWindow = activeDays !== undefined && interval !== 'week' && interval !== 'month';
  const inPeriod = events.filter((event) => inWindow(event, period.fromInstant, period.endInstant));
  const perBucket = period.buckets.map((bucket) => {
    if (slidingWindow) {
      const dayStart = startOfDay(bucket);
      const start = instantOf(dayStart - (activeDays - 1) * DAY, timezone);
      const end = instantOf(dayStart + DAY, timezone);
      return events.filter((event) => inWindow(event, start, end));
    }
    return inPeriod.filter((event) => bucketStart(toWallClock(event.timestamp, timezone), interval) === bucket);
  });
  let aggregatedEvents = inPeriod;
  if (activeDays !== undefined) {
    const start = instantOf(startOfDay(period.toWall) - (activeDays - 1) * DAY, timezone);
    aggregatedEvents = events.filter((event) => inWindow(event, start, period.endInstant));
  }
  const aggregated = aggregate(series, aggregatedEvents);
  if (input.display !== 'ActionsLineGraphCumulative') return { data: perBucket.map((bucket) => aggregate(series, bucket)), aggregated };
  if (series.math === 'dau' || series.math === 'unique_group') {
    return { data: perBucket.map((_, i) => aggregate(series, perBucket.slice(0, i + 1).flat())), aggregated };
  }
  let running = 0;
  return { data: perBucket.map((bucket) => (running += aggregate(series, bucket))), aggregated };
}

// ---------------------------------------------------------------------------------------------------------
// Breakdown, formula, shapes

interface Computed extends SeriesValues {
  seriesIndex: number;
  breakdownValue?: string;
}

function breakdownText(event: PlainEvent, input: TrendsInput): string {
  const breakdown = input.breakdown!;
  if (breakdown.type === 'cohort') throw new Error('The reference computes property breakdowns only.');
  if (breakdown.type === 'event_metadata') return event.event;
  return propertyText(propertySource(event, breakdown.type, breakdown.groupTypeIndex)[breakdown.property]) ?? 'none';
}

function computePeriod(input: TrendsInput, ctx: ReferenceContext, events: readonly PlainEvent[], period: Period): Computed[] {
  const lookback = Math.max(0, ...input.series.map((series) => ACTIVE_DAYS[series.math] ?? 0));
  const readFrom = instantOf(startOfDay(period.buckets[0]!) - lookback * DAY, ctx.timezone);
  return input.series.flatMap((series, seriesIndex) => {
    const matching = events.filter(
      (event) =>
        inWindow(event, Math.min(readFrom, period.fromInstant), period.endInstant) &&
        (series.event === null || event.event === series.event) &&
        matchesGroup(event, input.properties, ctx) &&
        matchesGroup(event, series.properties, ctx),
    );
    if (!input.breakdown) return [{ seriesIndex, ...compute(series, matching, period, input, ctx.timezone) }];
    const counts = new Map<string, number>();
    for (const event of matching) {
      if (!inWindow(event, period.fromInstant, period.endInstant)) continue;
      const value = breakdownText(event, input);
      counts.set(value, (counts.get(value) ?? 0) + 1);
    }
    // Ties by value, the unset value (`none`) first: the engine ranks the unset value as ''.
    const rankText = (value: string) => (value === 'none' ? '' : value);
    const ranked = [...counts]
      .sort(([a, countA], [b, countB]) => countB - countA || (rankText(a) < rankText(b) ? -1 : rankText(a) > rankText(b) ? 1 : 0))
      .map(([value]) => value);
    const kept = ranked.slice(0, input.breakdown.limit);
    const values = ranked.length > kept.length ? [...kept, BREAKDOWN_OTHER] : kept;
    return values.map((breakdownValue) => {
      const selected = matching.filter((event) => {
        const value = breakdownText(event, input);
        return breakdownValue === BREAKDOWN_OTHER ? !kept.includes(value) : value === breakdownValue;
      });
      return { seriesIndex, breakdownValue, ...compute(series, selected, period, input, ctx.timezone) };
    });
  });
}

/** Evaluates `formula` (letters, numbers, + - * /, parentheses) with `value(letterIndex)`; x/0 = 0. */
function evaluateFormula(formula: string, value: (seriesIndex: number) => number): number {
  const tokens = formula.replace(/\s+/g, '').match(/[A-Z]|\d+(\.\d+)?|[-+*/()]/g) ?? [];
  let position = 0;
  const primary = (): number => {
    const token = tokens[position++];
    if (token === '(') {
      const result = sum();
      position++;
      return result;
    }
    if (token !== undefined && /^[A-Z]$/.test(token)) return value(token.charCodeAt(0) - 65);
    return Number(token);
  };
  const product = (): number => {
    let result = primary();
    while (tokens[position] === '*' || tokens[position] === '/') {
      const operator = tokens[position++];
      const right = primary();
      result = operator === '*' ? result * right : right === 0 ? 0 : result / right;
    }
    return result;
  };
  const sum = (): number => {
    let result = product();
    while (tokens[position] === '+' || tokens[position] === '-') {
      const operator = tokens[position++];
      const right = product();
      result = operator === '+' ? result + right : result - right;
    }
    return result;
  };
  return sum();
}

function applyFormula(formula: string, computed: readonly Computed[], bucketCount: number): Computed[] {
  const values = [...new Set(computed.map((entry) => entry.breakdownValue))];
  return values.map((breakdownValue) => {
    const find = (seriesIndex: number) => computed.find((entry) => entry.seriesIndex === seriesIndex && entry.breakdownValue === breakdownValue);
    return {
      seriesIndex: 0,
      breakdownValue,
      data: Array.from({ length: bucketCount }, (_, i) => evaluateFormula(formula, (seriesIndex) => find(seriesIndex)?.data[i] ?? 0)),
      aggregated: evaluateFormula(formula, (seriesIndex) => find(seriesIndex)?.aggregated ?? 0),
    };
  });
}

/** The trend result docs/insights.md defines for `input` over `events` (all of one project). */
export function referenceTrends(input: TrendsInput, ctx: ReferenceContext, events: readonly PlainEvent[]): ComparedSeries[] {
  const periods = resolvePeriods(input, ctx, events);
  const totalValue = TOTAL_VALUE_DISPLAYS.includes(input.display);
  const cumulative = input.display === 'ActionsLineGraphCumulative';
  const shape = (period: Period, compareLabel: 'current' | 'previous' | undefined): ComparedSeries[] => {
    const computed = computePeriod(input, ctx, events, period);
    const series = input.formula ? applyFormula(input.formula, computed, period.buckets.length) : computed;
    return series.map((entry) => {
      const name = input.series[entry.seriesIndex]!.name;
      const breakdownLabel = () => (input.series.length > 1 ? `${name} - ${entry.breakdownValue}` : entry.breakdownValue!);
      const label = input.formula ? (entry.breakdownValue ?? `Formula (${input.formula})`) : entry.breakdownValue === undefined ? name : breakdownLabel();
      const result: ComparedSeries = totalValue
        ? { data: [], labels: [], days: [], count: 0, aggregated_value: entry.aggregated, label }
        : {
            data: entry.data,
            labels: period.buckets.map((bucket, i) => (compareLabel ? `${input.interval} ${i}` : dayLabel(bucket, input.interval))),
            days: period.buckets.map((bucket) => (hasTime(input.interval) ? wallDateTime(bucket) : wallDate(bucket))),
            count: cumulative ? (entry.data.at(-1) ?? 0) : entry.data.reduce((a, b) => a + b, 0),
            label,
          };
      if (entry.breakdownValue !== undefined) result.breakdown_value = entry.breakdownValue;
      if (compareLabel) Object.assign(result, { compare: true, compare_label: compareLabel });
      return result;
    });
  };
  if (!input.compare) return shape(periods.current, undefined);
  return [...shape(periods.current, 'current'), ...shape(periods.previous, 'previous')];
}
