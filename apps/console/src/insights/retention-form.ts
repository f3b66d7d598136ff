/**
 * The retention builder's state and the `RetentionQuery` node it stands for (docs/insights.md, "Retention"):
 * who starts a cohort (the target event), what counts as coming back (the returning event), first-time or
 * recurring cohorts, the period and how many, calendar periods or 24-hour windows from each person's first event,
 * cumulative or not, and filters. Reading a saved node back is lenient.
 */
import { asObject, sourceOfKind } from '../api/nodes';
import type { QueryNode } from '../api/types';
import { filterProblem, filtersOf, toApiFilters, type FilterForm } from '../filters/property-filter';

export type RetentionType = 'retention_first_time' | 'retention_recurring';
export type RetentionPeriod = 'Hour' | 'Day' | 'Week' | 'Month';
export const RETENTION_PERIODS: readonly RetentionPeriod[] = ['Hour', 'Day', 'Week', 'Month'];
/** The API's bounds on the number of periods. */
export const MAX_INTERVALS = 100;

export interface RetentionForm {
  targetEvent: string;
  returningEvent: string;
  retentionType: RetentionType;
  period: RetentionPeriod;
  /** Cohort rows, and periods in each row. */
  totalIntervals: number;
  cumulative: boolean;
  /** Periods counted from each person's first target event (`24_hour_windows`) instead of the calendar's. */
  rollingWindows: boolean;
  filters: FilterForm[];
}

export function defaultRetentionForm(): RetentionForm {
  return {
    targetEvent: '$pageview',
    returningEvent: '$pageview',
    retentionType: 'retention_first_time',
    period: 'Day',
    totalIntervals: 7,
    cumulative: false,
    rollingWindows: false,
    filters: [],
  };
}

export function retentionProblem(form: RetentionForm): string | null {
  if (form.targetEvent.trim() === '') return 'Choose the event that starts a cohort.';
  if (form.returningEvent.trim() === '') return 'Choose the event that counts as coming back.';
  if (!Number.isInteger(form.totalIntervals) || form.totalIntervals < 1 || form.totalIntervals > MAX_INTERVALS)
    return `The number of periods is a whole number from 1 to ${MAX_INTERVALS}.`;
  if (form.cumulative && form.rollingWindows) return 'Cumulative retention is counted in calendar periods only.';
  return form.filters.map(filterProblem).find((problem) => problem !== null) ?? null;
}

const entity = (event: string) => ({ id: event.trim(), name: event.trim(), type: 'events' });

export function retentionQuery(form: RetentionForm): QueryNode {
  const properties = toApiFilters(form.filters);
  return {
    kind: 'RetentionQuery',
    retentionFilter: {
      targetEntity: entity(form.targetEvent),
      returningEntity: entity(form.returningEvent),
      retentionType: form.retentionType,
      period: form.period,
      totalIntervals: form.totalIntervals,
      cumulative: form.cumulative,
      ...(form.rollingWindows && { timeWindowMode: '24_hour_windows' }),
      meanRetentionCalculation: 'simple',
    },
    ...(properties.length > 0 && { properties }),
  };
}

const eventOf = (value: unknown, fallback: string): string => {
  const id = asObject(value).id;
  return typeof id === 'string' ? id : fallback;
};

/** The form of a saved `RetentionQuery` (bare or in an `InsightVizNode`); null for any other node. */
export function retentionFormFromNode(node: QueryNode | null): RetentionForm | null {
  const query = sourceOfKind(node, 'RetentionQuery');
  if (!query) return null;
  const defaults = defaultRetentionForm();
  const filter = asObject(query.retentionFilter);
  const intervals = Number(filter.totalIntervals);
  return {
    targetEvent: eventOf(filter.targetEntity, defaults.targetEvent),
    returningEvent: eventOf(filter.returningEntity, defaults.returningEvent),
    retentionType: filter.retentionType === 'retention_recurring' ? 'retention_recurring' : 'retention_first_time',
    period: RETENTION_PERIODS.find((period) => period === filter.period) ?? defaults.period,
    totalIntervals: Number.isInteger(intervals) && intervals >= 1 && intervals <= MAX_INTERVALS ? intervals : defaults.totalIntervals,
    cumulative: filter.cumulative === true,
    rollingWindows: filter.timeWindowMode === '24_hour_windows',
    filters: filtersOf(query.properties),
  };
}

export function describeRetention(form: RetentionForm): string {
  const target = form.targetEvent.trim() || '?';
  const returning = form.returningEvent.trim() || '?';
  return target === returning ? `Retention of ${target}` : `Retention: ${target} then ${returning}`;
}
