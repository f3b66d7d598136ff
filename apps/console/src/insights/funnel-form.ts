/**
 * The funnel builder's state and the `FunnelsQuery` node it stands for (docs/insights.md, "Funnels"): ordered
 * steps of events, each with its own property filters and name, filters on every step, the conversion window,
 * the step order, a breakdown, the date range and what to show. A saved insight keeps the node in an
 * `InsightVizNode`; reading one back is lenient (what the builder cannot show is left at its default).
 */
import { asList, asObject, asText as text, oneOf, sourceOfKind } from '../api/nodes';
import type { Interval, QueryNode } from '../api/types';
import { filterProblem, filtersOf, toApiFilters, type FilterForm } from '../filters/property-filter';
import { INTERVALS, type BreakdownValue, type RangeValue } from './query';

export type FunnelWindowUnit = 'minute' | 'hour' | 'day' | 'week' | 'month';
export const WINDOW_UNITS: readonly FunnelWindowUnit[] = ['minute', 'hour', 'day', 'week', 'month'];
export type FunnelOrder = 'ordered' | 'strict' | 'unordered';
export type FunnelVizType = 'steps' | 'time_to_convert' | 'trends';

export interface FunnelStepForm {
  event: string;
  /** The step's name on screen; empty for the event's. */
  customName: string;
  /** Property filters of this step's event only. */
  filters: FilterForm[];
}

export interface FunnelForm extends RangeValue, BreakdownValue {
  steps: FunnelStepForm[];
  /** Filters every step's events must match. */
  filters: FilterForm[];
  windowInterval: number;
  windowUnit: FunnelWindowUnit;
  order: FunnelOrder;
  vizType: FunnelVizType;
}

export const MIN_STEPS = 2;
export const MAX_STEPS = 20;

export function newStep(event = ''): FunnelStepForm {
  return { event, customName: '', filters: [] };
}

export function defaultFunnelForm(): FunnelForm {
  return {
    steps: [newStep('$pageview'), newStep()],
    filters: [],
    dateFrom: '-14d',
    dateTo: '',
    interval: 'day',
    breakdown: '',
    breakdownType: 'event',
    // PostHog's default conversion window.
    windowInterval: 14,
    windowUnit: 'day',
    order: 'ordered',
    vizType: 'steps',
  };
}

/** What is wrong with the form before it is sent (the server checks the rest and names the field), or null. */
export function funnelProblem(form: FunnelForm): string | null {
  if (form.steps.length < MIN_STEPS) return `A funnel needs at least ${MIN_STEPS} steps.`;
  const missing = form.steps.findIndex((step) => step.event.trim() === '');
  if (missing >= 0) return `Step ${missing + 1}: choose an event.`;
  if (!Number.isInteger(form.windowInterval) || form.windowInterval < 1) return 'The conversion window is a whole number of at least 1.';
  for (const [index, step] of form.steps.entries()) {
    const problem = step.filters.map(filterProblem).find((text) => text !== null);
    if (problem) return `Step ${index + 1}: ${problem}`;
  }
  return form.filters.map(filterProblem).find((problem) => problem !== null) ?? null;
}

/** The `FunnelsQuery` of a form (check {@link funnelProblem} first); blank filters are left out. */
export function funnelsQuery(form: FunnelForm): QueryNode {
  const series = form.steps.map((step) => {
    const event = step.event.trim();
    const properties = toApiFilters(step.filters);
    return {
      kind: 'EventsNode',
      event,
      name: event,
      ...(step.customName.trim() !== '' && { custom_name: step.customName.trim() }),
      ...(properties.length > 0 && { properties }),
    };
  });
  const properties = toApiFilters(form.filters);
  return {
    kind: 'FunnelsQuery',
    series,
    dateRange: { date_from: form.dateFrom, ...(form.dateTo.trim() !== '' && { date_to: form.dateTo.trim() }) },
    interval: form.interval,
    ...(properties.length > 0 && { properties }),
    funnelsFilter: {
      funnelVizType: form.vizType,
      funnelOrderType: form.order,
      funnelWindowInterval: form.windowInterval,
      funnelWindowIntervalUnit: form.windowUnit,
    },
    ...(form.breakdown.trim() !== '' && { breakdownFilter: { breakdown: form.breakdown.trim(), breakdown_type: form.breakdownType } }),
  };
}

/** The form of a saved `FunnelsQuery` (bare or in an `InsightVizNode`); null for any other node. */
export function funnelFormFromNode(node: QueryNode | null): FunnelForm | null {
  const query = sourceOfKind(node, 'FunnelsQuery');
  if (!query) return null;
  const defaults = defaultFunnelForm();
  const filter = asObject(query.funnelsFilter);
  const range = asObject(query.dateRange);
  const breakdown = asObject(query.breakdownFilter);
  const steps = asList(query.series)
    .map(asObject)
    .map((step): FunnelStepForm => ({ event: text(step.event), customName: text(step.custom_name), filters: filtersOf(step.properties) }));
  const window = Number(filter.funnelWindowInterval);
  return {
    steps: steps.length > 0 ? steps : defaults.steps,
    filters: filtersOf(query.properties),
    dateFrom: text(range.date_from, defaults.dateFrom),
    dateTo: text(range.date_to),
    interval: oneOf<Interval>(query.interval, INTERVALS, defaults.interval),
    breakdown: typeof breakdown.breakdown === 'string' ? breakdown.breakdown : '',
    breakdownType: breakdown.breakdown_type === 'person' ? 'person' : 'event',
    windowInterval: Number.isInteger(window) && window >= 1 ? window : defaults.windowInterval,
    windowUnit: oneOf(filter.funnelWindowIntervalUnit, WINDOW_UNITS, defaults.windowUnit),
    order: oneOf<FunnelOrder>(filter.funnelOrderType, ['ordered', 'strict', 'unordered'], defaults.order),
    vizType: oneOf<FunnelVizType>(filter.funnelVizType, ['steps', 'time_to_convert', 'trends'], defaults.vizType),
  };
}

/** A name for an unnamed funnel: `$pageview → signup → purchase`. */
export function describeFunnel(form: FunnelForm): string {
  return form.steps.map((step) => step.customName.trim() || step.event.trim() || '?').join(' → ');
}
