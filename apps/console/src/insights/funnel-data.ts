/**
 * From a funnel answer to what the funnel screen draws: per step the count, the conversion from the first and
 * from the previous step, the drop-off and the conversion times; one such series per breakdown value; the
 * time-to-convert histogram and the conversion trend as charts. No DOM here, for unit tests.
 */
import type { FunnelStep, FunnelTimeToConvert, FunnelTrend, Interval } from '../api/types';
import { duration } from '../format';
import { BREAKDOWN_OTHER, bucketLabel, type ChartModel } from './chart-data';

export interface StepRow {
  order: number;
  name: string;
  count: number;
  /** % of the first step's actors who reached this step. */
  fromFirst: number;
  /** % of the previous step's actors who reached this one (100 on the first step). */
  fromPrevious: number;
  /** Actors of the previous step who did not reach this one (0 on the first step). */
  droppedOff: number;
  averageTime: number | null;
  medianTime: number | null;
}

export interface FunnelSeries {
  /** The breakdown value, or `All` without a breakdown. */
  label: string;
  /** The breakdown value as the API names it (for the persons behind a step); undefined without a breakdown. */
  breakdownValue: string[] | string | undefined;
  steps: StepRow[];
}

const percent = (part: number, whole: number): number => (whole > 0 ? (part / whole) * 100 : 0);

/** A breakdown value as text: a list joined with commas, PostHog's marker for the rest as `Other`. */
export function breakdownLabel(value: string[] | string | undefined): string {
  const parts = (Array.isArray(value) ? value : [value ?? '']).map((part) => (part === BREAKDOWN_OTHER ? 'Other' : part === '' ? '(none)' : part));
  return parts.join(', ');
}

export function stepRows(steps: readonly FunnelStep[]): StepRow[] {
  const sorted = [...steps].sort((a, b) => a.order - b.order);
  const first = sorted[0]?.count ?? 0;
  return sorted.map((step, index) => {
    const previous = index === 0 ? step.count : sorted[index - 1]!.count;
    return {
      order: step.order,
      name: step.custom_name || step.name,
      count: step.count,
      fromFirst: percent(step.count, first),
      fromPrevious: index === 0 ? 100 : percent(step.count, previous),
      droppedOff: previous - step.count,
      averageTime: step.average_conversion_time,
      medianTime: step.median_conversion_time,
    };
  });
}

/** The `steps` answer as one series per breakdown value (one series, `All`, without a breakdown). */
export function funnelSeries(result: FunnelStep[] | FunnelStep[][]): FunnelSeries[] {
  if (result.length === 0) return [];
  if (!Array.isArray(result[0])) return [{ label: 'All', breakdownValue: undefined, steps: stepRows(result as FunnelStep[]) }];
  return (result as FunnelStep[][]).map((steps) => ({
    label: breakdownLabel(steps[0]?.breakdown_value),
    breakdownValue: steps[0]?.breakdown_value,
    steps: stepRows(steps),
  }));
}

/** The time-to-convert histogram: one bar per bin, labelled with its range (the last entry only closes the last bin). */
export function timeToConvertModel(answer: FunnelTimeToConvert): ChartModel {
  const bins = answer.bins.slice(0, -1);
  return {
    labels: bins.map(([start], index) => `${duration(start)}–${duration(answer.bins[index + 1]![0])}`),
    series: [{ label: 'Persons converted', values: bins.map(([, count]) => count), total: bins.reduce((sum, [, count]) => sum + count, 0), previous: false }],
  };
}

/** The conversion trend: % converted of those who entered in each period, one line per breakdown value. */
export function funnelTrendModel(trends: readonly FunnelTrend[], interval: Interval): ChartModel {
  return {
    labels: (trends[0]?.days ?? []).map((day) => bucketLabel(day, interval)),
    series: trends.map((trend) => ({
      label: trend.breakdown_value === undefined ? 'Conversion rate (%)' : breakdownLabel(trend.breakdown_value),
      values: trend.data,
      total: null,
      previous: false,
    })),
  };
}
