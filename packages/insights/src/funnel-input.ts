/**
 * Funnel requests: PostHog's legacy funnel filter fields (query string and/or JSON body) and the `FunnelsQuery`
 * node both become one `FunnelInput` (docs/insights.md, "Funnels"). A node is first rewritten into the legacy
 * fields, so both forms go through one validation; an error found in a node's field is renamed to that field's
 * path in the node (`query__funnelsFilter__funnelWindowInterval`).
 */
import { ApiError } from '@plover/core';
import { bodyFields, choice, decode, describe, integer, isAbsent, isObject, list, object, optionalString, required, tryJson, type Fields } from './fields';
import { seriesActionsOf } from './series';
import { parseEntities, parsePropertyFilters } from './filters';
import { INTERVALS, type Interval, type PropertyBreakdown, type PropertyGroup, type Series } from './types';

export type FunnelWindowUnit = 'second' | 'minute' | 'hour' | 'day' | 'week' | 'month';
export const FUNNEL_WINDOW_UNITS: readonly FunnelWindowUnit[] = ['second', 'minute', 'hour', 'day', 'week', 'month'];
/** A window unit in seconds; PostHog's fixed lengths (a week is 7 days, a month 31). */
export const WINDOW_UNIT_SECONDS: Record<FunnelWindowUnit, number> = { second: 1, minute: 60, hour: 3600, day: 86_400, week: 604_800, month: 2_678_400 };

export type FunnelOrderType = 'ordered' | 'strict' | 'unordered';
export const FUNNEL_ORDER_TYPES: readonly FunnelOrderType[] = ['ordered', 'strict', 'unordered'];
export type FunnelVizType = 'steps' | 'time_to_convert' | 'trends';
export const FUNNEL_VIZ_TYPES: readonly FunnelVizType[] = ['steps', 'time_to_convert', 'trends'];
export type AttributionType = 'first_touch' | 'last_touch' | 'all_events' | 'step';
export const ATTRIBUTION_TYPES: readonly AttributionType[] = ['first_touch', 'last_touch', 'all_events', 'step'];

/** An event that disqualifies a funnel attempt when it happens between steps `fromStep` and `toStep` (0-based). */
export interface FunnelExclusion {
  series: Series;
  fromStep: number;
  toStep: number;
}

/** The funnel itself: what correlation needs too. */
export interface FunnelCore {
  /** The steps in order (an event name, null = any event, and the step's own filters). */
  steps: readonly Series[];
  exclusions: readonly FunnelExclusion[];
  /** How long after entering the funnel an actor has to reach the last step. */
  window: { amount: number; unit: FunnelWindowUnit };
  /** The trend date grammar, unresolved (see TrendsInput). */
  dateFrom: string | null;
  dateTo: string | null;
  /** Filters every step and exclusion event must match too. */
  properties: PropertyGroup | null;
}

export type FunnelBreakdown = PropertyBreakdown & { type: 'event' | 'person' | 'group' };

export interface FunnelInput extends FunnelCore {
  orderType: FunnelOrderType;
  vizType: FunnelVizType;
  /** Event, person or group property; null: none. */
  breakdown: FunnelBreakdown | null;
  attribution: AttributionType;
  /** The step whose event gives the breakdown value under `step` attribution. */
  attributionStep: number;
  /** Count groups of this type instead of persons. */
  aggregationGroupTypeIndex: number | null;
  /** time_to_convert and trends: the steps compared (0-based). */
  fromStep: number;
  toStep: number;
  /** time_to_convert: bins wanted (null = automatic). */
  binCount: number | null;
  /** trends: the entrance period. */
  interval: Interval;
}

const DEFAULT_WINDOW_DAYS = 14;
export const MAX_STEPS = 20;
/** At most about ten years, so that a window never leaves DateTime64's range. */
const MAX_WINDOW: Record<FunnelWindowUnit, number> = { second: 315_360_000, minute: 5_256_000, hour: 87_600, day: 3_650, week: 521, month: 120 };
const DEFAULT_BREAKDOWN_LIMIT = 25;
const MAX_BREAKDOWN_LIMIT = 1000;
const MAX_BIN_COUNT = 90;

// ---------------------------------------------------------------------------------------------------------
// The query form

/** Where the legacy breakdown and aggregation fields sit in an insight query node (funnels, retention). */
export const BREAKDOWN_FIELDS: Record<string, string> = {
  breakdown: 'breakdownFilter__breakdown',
  breakdown_type: 'breakdownFilter__breakdown_type',
  breakdown_limit: 'breakdownFilter__breakdown_limit',
  breakdown_group_type_index: 'breakdownFilter__breakdown_group_type_index',
  breakdowns: 'breakdownFilter__breakdowns',
  aggregation_group_type_index: 'aggregation_group_type_index',
};

/** Where a legacy field sits in a FunnelsQuery (relative to it). */
const FUNNEL_FIELDS: Record<string, string> = {
  events: 'series',
  exclusions: 'funnelsFilter__exclusions',
  date_from: 'dateRange__date_from',
  date_to: 'dateRange__date_to',
  properties: 'properties',
  interval: 'interval',
  funnel_window_interval: 'funnelsFilter__funnelWindowInterval',
  funnel_window_interval_unit: 'funnelsFilter__funnelWindowIntervalUnit',
  funnel_order_type: 'funnelsFilter__funnelOrderType',
  funnel_viz_type: 'funnelsFilter__funnelVizType',
  funnel_from_step: 'funnelsFilter__funnelFromStep',
  funnel_to_step: 'funnelsFilter__funnelToStep',
  bin_count: 'funnelsFilter__binCount',
  breakdown_attribution_type: 'funnelsFilter__breakdownAttributionType',
  breakdown_attribution_value: 'funnelsFilter__breakdownAttributionValue',
  ...BREAKDOWN_FIELDS,
};

/** Fields of a series or exclusion entity that a node names differently. */
const ENTITY_FIELDS: Record<string, string> = { id: 'event', funnel_from_step: 'funnelFromStep', funnel_to_step: 'funnelToStep' };

export interface ConvertedQuery {
  fields: Fields;
  /** The node's attr path. */
  funnels: string;
}

/** A legacy error attr renamed to its path in a node at `prefix` whose fields `map` places (null: not the node's). */
export function nodeAttr(attr: string, prefix: string, map: Record<string, string>): string | null {
  const [head = '', ...rest] = attr.split('__');
  const field = map[head];
  if (field === undefined) return null;
  const [index, name, ...more] = rest;
  const entity = index === undefined ? [] : [index, ...(name === undefined ? [] : [ENTITY_FIELDS[name] ?? name]), ...more];
  return [prefix, field, ...entity].join('__');
}

export function kindOf(node: Fields, kinds: readonly string[], attr: string): string {
  if (typeof node.kind === 'string' && kinds.includes(node.kind)) return node.kind;
  throw ApiError.validation(`${describe(node.kind)} is not a valid choice: expected ${kinds.join(' or ')}.`, `${attr}__kind`, 'invalid_choice');
}

/** An EventsNode (event name in `event`) or an ActionsNode (action id in `id`) as a legacy entity. */
function entityOf(raw: unknown, attr: string): Fields {
  const node = object(raw, attr);
  if (node === null) throw required(attr);
  const actions = kindOf(node, ['EventsNode', 'ActionsNode'], attr) === 'ActionsNode';
  const { kind: _kind, event, id, funnelFromStep, funnelToStep, ...rest } = node;
  return { ...rest, type: actions ? 'actions' : 'events', id: actions ? id : event, funnel_from_step: funnelFromStep, funnel_to_step: funnelToStep };
}

/** The legacy fields a FunnelsQuery node at `attr` stands for. */
export function funnelsQueryFields(funnels: Fields, attr: string): Fields {
  kindOf(funnels, ['FunnelsQuery'], attr);
  const dateRange = object(funnels.dateRange, `${attr}__dateRange`) ?? {};
  const filter = object(funnels.funnelsFilter, `${attr}__funnelsFilter`) ?? {};
  const breakdown = object(funnels.breakdownFilter, `${attr}__breakdownFilter`) ?? {};
  return {
    events: list(funnels.series, `${attr}__series`).map((item, index) => entityOf(item, `${attr}__series__${index}`)),
    exclusions: list(filter.exclusions, `${attr}__funnelsFilter__exclusions`).map((item, index) =>
      entityOf(item, `${attr}__funnelsFilter__exclusions__${index}`),
    ),
    date_from: dateRange.date_from,
    date_to: dateRange.date_to,
    properties: funnels.properties,
    interval: funnels.interval,
    funnel_window_interval: filter.funnelWindowInterval,
    funnel_window_interval_unit: filter.funnelWindowIntervalUnit,
    funnel_order_type: filter.funnelOrderType,
    funnel_viz_type: filter.funnelVizType,
    funnel_from_step: filter.funnelFromStep,
    funnel_to_step: filter.funnelToStep,
    bin_count: filter.binCount,
    breakdown_attribution_type: filter.breakdownAttributionType,
    breakdown_attribution_value: filter.breakdownAttributionValue,
    breakdown: breakdown.breakdown,
    breakdown_type: breakdown.breakdown_type,
    breakdown_limit: breakdown.breakdown_limit,
    breakdown_group_type_index: breakdown.breakdown_group_type_index,
    breakdowns: breakdown.breakdowns,
    aggregation_group_type_index: funnels.aggregation_group_type_index,
  };
}

/**
 * Parses with `parse`, renaming a failing field to its place in the node, and likewise where each action series
 * will report an unknown action (its `id` in the node).
 */
export function withNodeAttrs<T>(converted: ConvertedQuery, parse: () => T, map = FUNNEL_FIELDS): T {
  let parsed: T;
  try {
    parsed = parse();
  } catch (error) {
    if (!(error instanceof ApiError) || error.attr === null) throw error;
    const attr = nodeAttr(error.attr, converted.funnels, map);
    if (attr === null) throw error;
    throw new ApiError(error.status, error.type, error.code, error.detail, attr);
  }
  for (const action of seriesActionsOf(parsed)) {
    const entity = nodeAttr(action.attr.replace(/__id$/, ''), converted.funnels, map);
    if (entity !== null) action.attr = `${entity}__id`;
  }
  return parsed;
}

/**
 * A funnel request: legacy funnel filter fields from the query string, overridden by the JSON body; or a
 * FunnelsQuery `query` node (object or JSON text), which replaces them.
 */
export function parseFunnelRequest(query: Record<string, unknown>, body: unknown): FunnelInput {
  const fields: Fields = { ...query, ...bodyFields(body) };
  if (isAbsent(fields.query)) return parseFunnelFields(fields);
  return parseFunnelsQuery(fields.query, 'query');
}

/** A FunnelsQuery node (object or JSON text) at `attr`. */
export function parseFunnelsQuery(raw: unknown, attr: string): FunnelInput {
  const node = object(raw, attr);
  if (node === null) throw required(attr);
  const converted = { fields: funnelsQueryFields(node, attr), funnels: attr };
  return withNodeAttrs(converted, () => parseFunnelFields(converted.fields));
}

// ---------------------------------------------------------------------------------------------------------
// The legacy fields

/** The funnel steps, exclusions, window, dates and filters of legacy fields. */
export function parseFunnelCore(fields: Fields, allowNoSteps = false): FunnelCore {
  const steps = parseEntities(fields.events, 'events', fields.actions);
  if (steps.length < 2 && !(allowNoSteps && steps.length === 0)) throw ApiError.validation('A funnel needs at least 2 steps.', 'events', 'min_length');
  if (steps.length > MAX_STEPS) throw ApiError.validation(`A funnel has at most ${MAX_STEPS} steps.`, 'events', 'max_length');
  return {
    steps,
    exclusions: parseExclusions(fields.exclusions, steps),
    window: parseWindow(fields),
    dateFrom: optionalString(fields.date_from, 'date_from'),
    dateTo: optionalString(fields.date_to, 'date_to'),
    properties: parsePropertyFilters(fields.properties, 'properties'),
  };
}

function parseFunnelFields(fields: Fields): FunnelInput {
  const core = parseFunnelCore(fields);
  const last = core.steps.length - 1;
  const orderType = choice(fields.funnel_order_type, FUNNEL_ORDER_TYPES, 'funnel_order_type') ?? 'ordered';
  const attribution = choice(fields.breakdown_attribution_type, ATTRIBUTION_TYPES, 'breakdown_attribution_type') ?? 'first_touch';
  const attributionStep = attribution === 'step' ? stepIndex(fields.breakdown_attribution_value, 0, last, 'breakdown_attribution_value', 0) : 0;
  const fromStep = stepIndex(fields.funnel_from_step, 0, last - 1, 'funnel_from_step', 0);
  const toStep = stepIndex(fields.funnel_to_step, fromStep + 1, last, 'funnel_to_step', last);
  if (orderType === 'unordered') {
    const partial = core.exclusions.findIndex((exclusion) => exclusion.fromStep !== 0 || exclusion.toStep !== last);
    if (partial >= 0) throw ApiError.validation('Partial exclusions are not allowed in unordered funnels.', `exclusions__${partial}__funnel_from_step`);
    if (fields.funnel_viz_type === 'trends') throw ApiError.validation('Unordered funnels have no conversion trends.', 'funnel_viz_type');
    if (attributionStep !== 0)
      throw ApiError.validation('Only the first step can be used for breakdown attribution in unordered funnels.', 'breakdown_attribution_value');
  }
  const binCount = integer(fields.bin_count, 'bin_count');
  const groupIndex = integer(fields.aggregation_group_type_index, 'aggregation_group_type_index');
  if (groupIndex !== null && (groupIndex < 0 || groupIndex > 4)) throw ApiError.validation('Must be between 0 and 4.', 'aggregation_group_type_index');
  return {
    ...core,
    orderType,
    vizType: choice(fields.funnel_viz_type, FUNNEL_VIZ_TYPES, 'funnel_viz_type') ?? 'steps',
    breakdown: parsePropertyBreakdown(fields),
    attribution,
    attributionStep,
    aggregationGroupTypeIndex: groupIndex,
    fromStep,
    toStep,
    binCount: binCount === null ? null : Math.min(Math.max(binCount, 1), MAX_BIN_COUNT),
    interval: choice(fields.interval, INTERVALS, 'interval') ?? 'day',
  };
}

function stepIndex(raw: unknown, min: number, max: number, attr: string, fallback: number): number {
  const value = integer(raw, attr);
  if (value === null) return fallback;
  if (value < min || value > max) throw ApiError.validation(`Must be between ${min} and ${max}.`, attr);
  return value;
}

/**
 * `breakdown` (a property name, or a list holding one) of `breakdown_type` event, person or group (funnels and
 * retention); funnel results box each value in a list, as PostHog does.
 */
export function parsePropertyBreakdown(fields: Fields): FunnelBreakdown | null {
  if (list(fields.breakdowns, 'breakdowns').length > 0) throw ApiError.validation('Multiple breakdowns are not supported.', 'breakdowns');
  let property: unknown = fields.breakdown;
  if (typeof property === 'string' && property.startsWith('[')) property = tryJson(property) ?? property;
  if (Array.isArray(property)) {
    if (property.length !== 1) throw ApiError.validation('Only one breakdown property is supported.', 'breakdown');
    property = (property as unknown[])[0];
  }
  if (isAbsent(property)) return null;
  if (typeof property !== 'string') throw ApiError.validation('Breakdown must be a property name: cohort breakdowns are not supported.', 'breakdown');
  const type = choice(fields.breakdown_type, ['event', 'person', 'group'] as const, 'breakdown_type') ?? 'event';
  let groupTypeIndex: number | null = null;
  if (type === 'group') {
    groupTypeIndex = integer(fields.breakdown_group_type_index, 'breakdown_group_type_index');
    if (groupTypeIndex === null) throw required('breakdown_group_type_index');
    if (groupTypeIndex < 0 || groupTypeIndex > 4) throw ApiError.validation('Must be between 0 and 4.', 'breakdown_group_type_index');
  }
  const limit = integer(fields.breakdown_limit, 'breakdown_limit') ?? DEFAULT_BREAKDOWN_LIMIT;
  if (limit < 1 || limit > MAX_BREAKDOWN_LIMIT) throw ApiError.validation(`Must be between 1 and ${MAX_BREAKDOWN_LIMIT}.`, 'breakdown_limit');
  return { property, type, groupTypeIndex, limit };
}

/** `funnel_window_interval` + `funnel_window_interval_unit` (default day), else `funnel_window_days` (default 14). */
function parseWindow(fields: Fields): FunnelCore['window'] {
  if (!isAbsent(fields.funnel_window_interval)) {
    const unit = choice(fields.funnel_window_interval_unit, FUNNEL_WINDOW_UNITS, 'funnel_window_interval_unit') ?? 'day';
    return { amount: windowAmount(fields.funnel_window_interval, unit, 'funnel_window_interval'), unit };
  }
  if (!isAbsent(fields.funnel_window_days)) return { amount: windowAmount(fields.funnel_window_days, 'day', 'funnel_window_days'), unit: 'day' };
  return { amount: DEFAULT_WINDOW_DAYS, unit: 'day' };
}

function windowAmount(raw: unknown, unit: FunnelWindowUnit, attr: string): number {
  const amount = requiredInteger(raw, attr);
  if (amount < 1 || amount > MAX_WINDOW[unit]) throw ApiError.validation(`Must be between 1 and ${MAX_WINDOW[unit]} ${unit}s.`, attr);
  return amount;
}

/** Legacy exclusion entities: an event (with filters) and the steps it must not happen between (default: all). */
function parseExclusions(raw: unknown, steps: readonly Series[]): FunnelExclusion[] {
  const items = list(raw, 'exclusions').map((item, index) => {
    const entity = decode(item, `exclusions__${index}`);
    if (!isObject(entity)) throw ApiError.validation('Must be an object.', `exclusions__${index}`);
    return entity;
  });
  // Without `order`, parseEntities keeps request order, so its series line up with the items.
  const series = parseEntities(
    items.map(({ order: _order, ...entity }) => entity),
    'exclusions',
  );
  const stepKeys = new Set(steps.map(seriesKey));
  return items.map((item, index) => {
    const attr = `exclusions__${index}`;
    const exclusion = series[index]!;
    if (exclusion.event === null && exclusion.action === null) throw ApiError.validation('An exclusion must name an event.', `${attr}__id`, 'required');
    if (stepKeys.has(seriesKey(exclusion))) {
      throw ApiError.validation("Exclusion steps cannot contain an event that's part of funnel steps.", `${attr}__id`);
    }
    const last = steps.length - 1;
    const fromStep = isAbsent(item.funnel_from_step) ? 0 : requiredInteger(item.funnel_from_step, `${attr}__funnel_from_step`);
    const toStep = isAbsent(item.funnel_to_step) ? last : requiredInteger(item.funnel_to_step, `${attr}__funnel_to_step`);
    if (fromStep < 0 || fromStep >= last) throw ApiError.validation(`Must be between 0 and ${last - 1}.`, `${attr}__funnel_from_step`);
    if (toStep <= fromStep || toStep > last) throw ApiError.validation(`Must be between ${fromStep + 1} and ${last}.`, `${attr}__funnel_to_step`);
    return { series: exclusion, fromStep, toStep };
  });
}

/** What a step or an exclusion counts: an event name or an action id. */
function seriesKey(series: Series): string {
  return series.action === null ? `event ${series.event}` : `action ${series.action.id}`;
}

export function requiredInteger(raw: unknown, attr: string): number {
  const value = integer(raw, attr);
  if (value === null) throw required(attr);
  return value;
}
