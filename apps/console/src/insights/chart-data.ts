/**
 * From a trend answer to what the console draws: the x-axis labels, one line (or bar group) per series with
 * its legend label and total, and the rows of the number and table displays. No DOM here, so the mapping is
 * unit-tested on its own.
 */
import type { Interval, MathType, TrendSeries } from '../api/types';

/** The breakdown value of the series that sums the values past `breakdown_limit` (docs/insights.md). */
export const BREAKDOWN_OTHER = '$$_posthog_breakdown_other_$$';

export interface ChartSeries {
  label: string;
  values: number[];
  /**
   * The series' `count` for the legend, when adding up its buckets means something (counts of events, sums of
   * a property); null for distinct counts and averages, whose buckets do not add up to the range's figure.
   */
  total: number | null;
  /** A previous-period series of a comparison: drawn dashed. */
  previous: boolean;
  /** The palette entry (`--series-N`) to draw it in; by default its position. */
  colour?: number;
}

export interface ChartModel {
  /** One label per bucket, for the x axis. */
  labels: string[];
  series: ChartSeries[];
}

export interface TotalRow {
  label: string;
  value: number;
  previous: boolean;
}

/** Maths whose bucket values add up to the range's value. */
const ADDITIVE: ReadonlySet<MathType> = new Set(['total', 'sum']);

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * A bucket's start (`YYYY-MM-DD`, or `YYYY-MM-DD HH:MM:SS` for hours and minutes, in the project's timezone) as
 * an axis label: `12 Nov`, `12 Nov 13:00`, `Nov 2026` for months.
 */
export function bucketLabel(day: string, interval: Interval): string {
  const match = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}))?/.exec(day);
  if (!match) return day;
  const [, year, month, date, hour, minute] = match;
  const monthName = MONTHS[Number(month) - 1] ?? month!;
  if (interval === 'month') return `${monthName} ${year}`;
  const dayLabel = `${Number(date)} ${monthName}`;
  return (interval === 'hour' || interval === 'minute') && hour !== undefined ? `${dayLabel} ${hour}:${minute}` : dayLabel;
}

/** What the legend calls a series: its custom name, its breakdown value (`Other` for the rest), `(previous)` for a comparison's earlier period. */
export function seriesLabel(series: TrendSeries): string {
  const base =
    series.breakdown_value === undefined && series.action?.custom_name ? series.action.custom_name : series.label.split(BREAKDOWN_OTHER).join('Other');
  return series.compare_label === 'previous' ? `${base} (previous period)` : base;
}

/**
 * The chart of a time-series answer. Buckets are labelled from the first current-period series (a previous
 * period's buckets are the same number of intervals earlier, so its points share the x positions).
 */
export function chartModel(result: readonly TrendSeries[], interval: Interval): ChartModel {
  const reference = result.find((series) => series.compare_label !== 'previous') ?? result[0];
  return modelOf(
    result,
    (reference?.days ?? []).map((day) => bucketLabel(day, interval)),
    (series) => (series.action && !ADDITIVE.has(series.action.math) ? null : series.count),
  );
}

function modelOf(result: readonly TrendSeries[], labels: string[], total: (series: TrendSeries) => number | null): ChartModel {
  return {
    labels,
    series: result.map((series) => ({
      label: seriesLabel(series),
      values: labels.map((_, index) => series.data[index] ?? 0),
      total: total(series),
      previous: series.compare_label === 'previous',
    })),
  };
}

/**
 * The chart of a stickiness answer: the x axis is the number of intervals active (`1 day`, `2 days`…, the
 * answer's labels), each series' total the persons it counts.
 */
export function stickinessModel(result: readonly TrendSeries[]): ChartModel {
  const reference = result.find((series) => series.compare_label !== 'previous') ?? result[0];
  return modelOf(result, [...(reference?.labels ?? [])], (series) => series.count);
}

/** Lifecycle statuses in stacking order, with their legend labels and palette entries (green, blue, purple, orange). */
export const LIFECYCLE_STATUSES = [
  { status: 'new', label: 'New', colour: 2 },
  { status: 'returning', label: 'Returning', colour: 0 },
  { status: 'resurrecting', label: 'Resurrecting', colour: 4 },
  { status: 'dormant', label: 'Dormant', colour: 1 },
] as const;

/** The chart of a lifecycle answer: a series per status in the order above (dormant counts are negative). */
export function lifecycleModel(result: readonly TrendSeries[], interval: Interval): ChartModel {
  const labels = (result[0]?.days ?? []).map((day) => bucketLabel(day, interval));
  return {
    labels,
    series: LIFECYCLE_STATUSES.flatMap(({ status, label, colour }) => {
      const series = result.find((each) => each.status === status);
      return series ? [{ label, values: labels.map((_, index) => series.data[index] ?? 0), total: series.count, previous: false, colour }] : [];
    }),
  };
}

/**
 * Stacked bars: per bucket, each series' outer edge — the running sum of the values before it and its own, the
 * positive ones upwards from 0 and the negative ones downwards, each side on its own; 0 for a 0 (no bar).
 */
export function stackedValues(series: readonly (readonly number[])[]): number[][] {
  const buckets = Math.max(0, ...series.map((values) => values.length));
  const up = new Array<number>(buckets).fill(0);
  const down = new Array<number>(buckets).fill(0);
  return series.map((values) =>
    Array.from({ length: buckets }, (_, index) => {
      const value = values[index] ?? 0;
      if (value < 0) return (down[index]! += value);
      return value > 0 ? (up[index]! += value) : 0;
    }),
  );
}

/**
 * The rows of a total-value answer (number and table displays): one per series, with `aggregated_value` (the
 * math over the whole range), largest first within each period; the answer's own order breaks ties.
 */
export function totalRows(result: readonly TrendSeries[]): TotalRow[] {
  return result
    .map((series, index) => ({
      row: { label: seriesLabel(series), value: series.aggregated_value ?? series.count, previous: series.compare_label === 'previous' },
      index,
    }))
    .sort((a, b) => Number(a.row.previous) - Number(b.row.previous) || b.row.value - a.row.value || a.index - b.index)
    .map(({ row }) => row);
}

/** Bars of `count` series side by side in each bucket: the left edge and width of series `index`, in buckets. */
export function barSlot(index: number, count: number, groupWidth = 0.8): { offset: number; width: number } {
  const width = groupWidth / count;
  return { offset: -groupWidth / 2 + index * width, width };
}

/** Axis numbers: 950, 9999, 12.5k, 3.4M. */
export function compactNumber(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 1e9) return `${trim(value / 1e9)}B`;
  if (abs >= 1e6) return `${trim(value / 1e6)}M`;
  if (abs >= 1e4) return `${trim(value / 1e3)}k`;
  return trim(value);
}

function trim(value: number): string {
  return String(Math.round(value * 100) / 100);
}
