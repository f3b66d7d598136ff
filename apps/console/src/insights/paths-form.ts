/**
 * The paths builder's state and the `PathsQuery` node it stands for (docs/insights.md, "Paths"): which kinds of
 * event make path items, an optional start and end point, how many steps and edges, cleaning rules that rewrite
 * items (`{regex, alias}`), filters and the date range. Reading a saved node back is lenient.
 */
import { asList, asObject, asText, isObject, sourceOfKind, wholeIn } from '../api/nodes';
import type { QueryNode } from '../api/types';
import { filterProblem, filtersOf, toApiFilters, type FilterForm } from '../filters/property-filter';
import type { RangeValue } from './query';

export type PathEventType = '$pageview' | '$screen' | 'custom_event';
export const PATH_EVENT_TYPES: ReadonlyArray<{ value: PathEventType; label: string }> = [
  { value: '$pageview', label: 'Page views (by URL)' },
  { value: '$screen', label: 'Screen views (by name)' },
  { value: 'custom_event', label: 'Custom events (by name)' },
];

/** The API's bounds (docs/insights.md). */
export const STEP_LIMITS = { min: 2, max: 20 } as const;
export const EDGE_LIMITS = { min: 1, max: 10_000 } as const;

/** A path cleaning rule: every match of `regex` (RE2) in an item is replaced by `alias`. */
export interface CleaningRule {
  regex: string;
  alias: string;
}

export interface PathsForm extends RangeValue {
  /** Empty for every event. */
  eventTypes: PathEventType[];
  /** Empty for none. */
  startPoint: string;
  endPoint: string;
  stepLimit: number;
  edgeLimit: number;
  cleaning: CleaningRule[];
  filters: FilterForm[];
}

export function defaultPathsForm(): PathsForm {
  return {
    eventTypes: ['$pageview'],
    startPoint: '',
    endPoint: '',
    stepLimit: 5,
    edgeLimit: 50,
    cleaning: [],
    filters: [],
    dateFrom: '-7d',
    dateTo: '',
    interval: 'day',
  };
}

const whole = (value: number, { min, max }: { min: number; max: number }) => Number.isInteger(value) && value >= min && value <= max;

export function pathsProblem(form: PathsForm): string | null {
  if (!whole(form.stepLimit, STEP_LIMITS)) return `The number of steps is a whole number from ${STEP_LIMITS.min} to ${STEP_LIMITS.max}.`;
  if (!whole(form.edgeLimit, EDGE_LIMITS)) return `The number of links is a whole number from ${EDGE_LIMITS.min} to ${EDGE_LIMITS.max}.`;
  if (form.startPoint.trim() !== '' && form.startPoint.trim() === form.endPoint.trim()) return 'The end point must differ from the start point.';
  const rule = form.cleaning.findIndex((each) => each.regex === '');
  if (rule >= 0) return `Cleaning rule ${rule + 1}: write the pattern to replace.`;
  return form.filters.map(filterProblem).find((problem) => problem !== null) ?? null;
}

export function pathsQuery(form: PathsForm): QueryNode {
  const properties = toApiFilters(form.filters);
  return {
    kind: 'PathsQuery',
    pathsFilter: {
      includeEventTypes: form.eventTypes,
      stepLimit: form.stepLimit,
      edgeLimit: form.edgeLimit,
      ...(form.startPoint.trim() !== '' && { startPoint: form.startPoint.trim() }),
      ...(form.endPoint.trim() !== '' && { endPoint: form.endPoint.trim() }),
      ...(form.cleaning.length > 0 && { localPathCleaningFilters: form.cleaning.map(({ regex, alias }) => ({ regex, alias })) }),
    },
    dateRange: { date_from: form.dateFrom, ...(form.dateTo.trim() !== '' && { date_to: form.dateTo.trim() }) },
    ...(properties.length > 0 && { properties }),
  };
}

/** The form of a saved `PathsQuery` (bare or in an `InsightVizNode`); null for any other node. */
export function pathsFormFromNode(node: QueryNode | null): PathsForm | null {
  const query = sourceOfKind(node, 'PathsQuery');
  if (!query) return null;
  const defaults = defaultPathsForm();
  const filter = asObject(query.pathsFilter);
  const range = asObject(query.dateRange);
  const types = PATH_EVENT_TYPES.map((type) => type.value);
  return {
    eventTypes: Array.isArray(filter.includeEventTypes) ? types.filter((type) => (filter.includeEventTypes as unknown[]).includes(type)) : defaults.eventTypes,
    startPoint: asText(filter.startPoint),
    endPoint: asText(filter.endPoint),
    stepLimit: wholeIn(filter.stepLimit, STEP_LIMITS.min, STEP_LIMITS.max, defaults.stepLimit),
    edgeLimit: wholeIn(filter.edgeLimit, EDGE_LIMITS.min, EDGE_LIMITS.max, defaults.edgeLimit),
    cleaning: asList(filter.localPathCleaningFilters)
      .filter(isObject)
      .map((rule) => ({ regex: asText(rule.regex), alias: asText(rule.alias) }))
      .filter((rule) => rule.regex !== ''),
    filters: filtersOf(query.properties),
    dateFrom: asText(range.date_from, defaults.dateFrom),
    dateTo: asText(range.date_to),
    interval: defaults.interval,
  };
}

export function describePaths(form: PathsForm): string {
  const start = form.startPoint.trim();
  const end = form.endPoint.trim();
  if (start && end) return `Paths from ${start} to ${end}`;
  if (start) return `Paths from ${start}`;
  if (end) return `Paths to ${end}`;
  return 'Paths';
}
