/**
 * The trend builder's state and the request it stands for: PostHog's legacy trend fields, which are both the
 * body of `insights/trend/` and a saved insight's `filters` (docs/insights.md says what each counts). Reading
 * saved filters back is lenient: whatever this builder cannot show is left at its default.
 */
import type { Display, EventEntity, Interval, MathType, TrendRequest } from '../api/types';
import { filterProblem, fromApiFilter, toApiFilters, type FilterForm } from '../filters/property-filter';

export type Visualization = 'line' | 'bar' | 'number' | 'table';

const DISPLAYS: Record<Visualization, Display> = { line: 'ActionsLineGraph', bar: 'ActionsBar', number: 'BoldNumber', table: 'ActionsTable' };

/** The visualisation of a legacy `display`; a line for any other. */
export function visualizationOf(display: unknown): Visualization {
  return (Object.keys(DISPLAYS) as Visualization[]).find((kind) => DISPLAYS[kind] === display) ?? 'line';
}

/** The breakdown every builder shares (insights/fields.tsx edits it). */
export interface BreakdownValue {
  /** A property name; empty for no breakdown. */
  breakdown: string;
  breakdownType: 'event' | 'person';
}

/** The date range and interval every builder shares (insights/fields.tsx edits it). */
export interface RangeValue {
  /** The API's date grammar: `-7d`, `-24h`, `mStart`, an ISO date… */
  dateFrom: string;
  /** Empty for now. */
  dateTo: string;
  interval: Interval;
}

export interface SeriesForm {
  /** An event name; empty for every event. */
  event: string;
  math: MathType;
  /** The numeric event property of a property math (sum, avg, percentiles…). */
  mathProperty: string;
  /** The group type counted by `unique_group`. */
  groupTypeIndex: number;
}

/**
 * What the trend builder computes: counts over time, stickiness (persons by the number of intervals they were
 * active in) or lifecycle (persons new, returning, resurrecting and dormant per interval; one series).
 */
export type TrendKind = TrendRequest['insight'];

export const TREND_KINDS: ReadonlyArray<{ value: TrendKind; label: string }> = [
  { value: 'TRENDS', label: 'Trends' },
  { value: 'STICKINESS', label: 'Stickiness' },
  { value: 'LIFECYCLE', label: 'Lifecycle' },
];

/** The visualisations each kind offers, its default first. Lifecycle is always stacked bars. */
export const KIND_VISUALIZATIONS: Record<TrendKind, readonly Visualization[]> = {
  TRENDS: ['line', 'bar', 'number', 'table'],
  STICKINESS: ['line', 'bar'],
  LIFECYCLE: ['bar'],
};

/** Whether a kind takes a breakdown and a formula (only trends), and a comparison (not lifecycle). */
export const takesBreakdown = (kind: TrendKind): boolean => kind === 'TRENDS';
export const takesCompare = (kind: TrendKind): boolean => kind !== 'LIFECYCLE';

export interface TrendForm extends RangeValue, BreakdownValue {
  insight: TrendKind;
  series: SeriesForm[];
  /** Event, person and cohort filters (filters/property-filter.ts), all of which an event must match. */
  filters: FilterForm[];
  compare: boolean;
  /** Over the series letters A, B, …; empty for none. */
  formula: string;
  visualization: Visualization;
}

export const MATHS: ReadonlyArray<{ value: MathType; label: string }> = [
  { value: 'total', label: 'Total count' },
  { value: 'dau', label: 'Unique users' },
  { value: 'weekly_active', label: 'Weekly active users' },
  { value: 'monthly_active', label: 'Monthly active users' },
  { value: 'unique_group', label: 'Unique groups' },
  { value: 'sum', label: 'Property sum' },
  { value: 'avg', label: 'Property average' },
  { value: 'min', label: 'Property minimum' },
  { value: 'max', label: 'Property maximum' },
  { value: 'median', label: 'Property median' },
  { value: 'p75', label: 'Property 75th percentile' },
  { value: 'p90', label: 'Property 90th percentile' },
  { value: 'p95', label: 'Property 95th percentile' },
  { value: 'p99', label: 'Property 99th percentile' },
];

export const PROPERTY_MATHS: readonly MathType[] = ['sum', 'avg', 'min', 'max', 'median', 'p75', 'p90', 'p95', 'p99'];

export const INTERVALS: readonly Interval[] = ['minute', 'hour', 'day', 'week', 'month'];

/** An interval read from a saved node; `day` when it is none. */
export const oneOfIntervals = (value: unknown): Interval => oneOf(value, INTERVALS, 'day');

export const DATE_RANGES: ReadonlyArray<{ value: string; label: string; interval: Interval }> = [
  { value: '-1h', label: 'Last hour', interval: 'minute' },
  { value: '-24h', label: 'Last 24 hours', interval: 'hour' },
  { value: '-7d', label: 'Last 7 days', interval: 'day' },
  { value: '-14d', label: 'Last 14 days', interval: 'day' },
  { value: '-30d', label: 'Last 30 days', interval: 'day' },
  { value: '-90d', label: 'Last 90 days', interval: 'week' },
  { value: '-12m', label: 'Last 12 months', interval: 'month' },
  { value: 'mStart', label: 'This month', interval: 'day' },
  { value: 'all', label: 'All time', interval: 'month' },
];

export function newSeries(event = '$pageview'): SeriesForm {
  return { event, math: 'total', mathProperty: '', groupTypeIndex: 0 };
}

export function defaultForm(): TrendForm {
  return {
    insight: 'TRENDS',
    series: [newSeries()],
    interval: 'day',
    dateFrom: '-7d',
    dateTo: '',
    filters: [],
    breakdown: '',
    breakdownType: 'event',
    compare: false,
    formula: '',
    visualization: 'line',
  };
}

/** The letter a formula calls series `index` by: A, B, C… in series order. */
export function seriesLetter(index: number): string {
  return String.fromCharCode(65 + index);
}

/** What is wrong with the form before it is sent (the server checks the rest and names the field), or null. */
export function formProblem(form: TrendForm): string | null {
  for (const [index, series] of form.series.entries()) {
    if (PROPERTY_MATHS.includes(series.math) && series.mathProperty.trim() === '') return `Series ${seriesLetter(index)}: choose the property to aggregate.`;
  }
  return form.filters.map(filterProblem).find((problem) => problem !== null) ?? null;
}

/** The form as `kind`: a visualisation the kind does not offer becomes its default. */
export function withKind(form: TrendForm, kind: TrendKind): TrendForm {
  const offered = KIND_VISUALIZATIONS[kind];
  return { ...form, insight: kind, visualization: offered.includes(form.visualization) ? form.visualization : offered[0]! };
}

/**
 * The legacy trend request of a form; blank filters are left out, and so is what the kind does not take
 * (lifecycle reads the first series only).
 */
export function trendRequest(form: TrendForm): TrendRequest {
  const kind = form.insight;
  const series = kind === 'LIFECYCLE' ? form.series.slice(0, 1) : form.series;
  const events = series.map((series, order): EventEntity => {
    const event = series.event.trim();
    const entity: EventEntity = { id: event === '' ? null : event, type: 'events', order, name: event === '' ? 'All events' : event, math: series.math };
    if (PROPERTY_MATHS.includes(series.math)) entity.math_property = series.mathProperty.trim();
    if (series.math === 'unique_group') entity.math_group_type_index = series.groupTypeIndex;
    return entity;
  });
  const request: TrendRequest = { insight: kind, events, interval: form.interval, date_from: form.dateFrom, display: DISPLAYS[form.visualization] };
  if (form.dateTo.trim() !== '') request.date_to = form.dateTo.trim();
  const properties = toApiFilters(form.filters);
  if (properties.length > 0) request.properties = properties;
  if (takesBreakdown(kind) && form.breakdown.trim() !== '') {
    request.breakdown = form.breakdown.trim();
    request.breakdown_type = form.breakdownType;
  }
  if (takesCompare(kind) && form.compare) request.compare = true;
  if (takesBreakdown(kind) && form.formula.trim() !== '') request.formula = form.formula.trim();
  return request;
}

const text = (value: unknown, fallback: string): string => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : fallback);
const oneOf = <T extends string>(value: unknown, choices: readonly T[], fallback: T): T =>
  (choices as readonly unknown[]).includes(value) ? (value as T) : fallback;
const asList = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const asObject = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

/** The form of saved legacy `filters` (a saved insight), series in their `order`. */
export function formFromFilters(filters: Record<string, unknown>): TrendForm {
  const defaults = defaultForm();
  const entities = asList(filters.events)
    .map(asObject)
    .map((entity, index) => ({ entity, order: typeof entity.order === 'number' ? entity.order : index }))
    .sort((a, b) => a.order - b.order)
    .map(({ entity }): SeriesForm => ({
      event: typeof entity.id === 'string' ? entity.id : '',
      math: oneOf(
        entity.math,
        MATHS.map((math) => math.value),
        'total',
      ),
      mathProperty: text(entity.math_property, ''),
      groupTypeIndex: typeof entity.math_group_type_index === 'number' ? entity.math_group_type_index : 0,
    }));
  const filtersList = asList(filters.properties)
    .map(fromApiFilter)
    .filter((filter): filter is FilterForm => filter !== null && filter.type !== 'group');
  const form: TrendForm = {
    insight: 'TRENDS',
    series: entities.length > 0 ? entities : defaults.series,
    interval: oneOf(filters.interval, INTERVALS, defaults.interval),
    dateFrom: text(filters.date_from, defaults.dateFrom),
    dateTo: text(filters.date_to, ''),
    filters: filtersList,
    breakdown: text(filters.breakdown, ''),
    breakdownType: filters.breakdown_type === 'person' ? 'person' : 'event',
    compare: filters.compare === true || filters.compare === 'true',
    formula: text(filters.formula, ''),
    visualization: visualizationOf(filters.display),
  };
  return withKind(form, kindOf(filters));
}

/** The kind of saved filters: `shown_as` (Stickiness, Lifecycle) before `insight`, as the API reads them. */
function kindOf(filters: Record<string, unknown>): TrendKind {
  if (filters.shown_as === 'Stickiness') return 'STICKINESS';
  if (filters.shown_as === 'Lifecycle') return 'LIFECYCLE';
  return oneOf(
    filters.insight,
    TREND_KINDS.map((kind) => kind.value),
    'TRENDS',
  );
}

/** A name for an unnamed insight: `$pageview count by $browser`, `$pageview stickiness`, `signup lifecycle`. */
export function describeForm(form: TrendForm): string {
  if (form.insight === 'LIFECYCLE') return `${form.series[0]?.event.trim() || 'All events'} lifecycle`;
  if (form.insight === 'STICKINESS') return `${form.series.map((item) => item.event.trim() || 'All events').join(', ')} stickiness`;
  const series = form.series
    .map((item) => `${item.event.trim() || 'All events'} ${MATHS.find((math) => math.value === item.math)?.label.toLowerCase() ?? item.math}`)
    .join(', ');
  return form.breakdown.trim() === '' ? series : `${series} by ${form.breakdown.trim()}`;
}
