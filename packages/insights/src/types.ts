/**
 * The normalized insight inputs every computation in this package works from. Requests arrive as PostHog's
 * legacy filter fields or as a `TrendsQuery` node (filters.ts parses both into these), so the SQL side has one
 * shape to handle and "legacy parameter and query twin give identical results" holds by construction.
 */
import type { PropertyValueOperator } from '@plover/core';

export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

export type Interval = 'minute' | 'hour' | 'day' | 'week' | 'month';
export const INTERVALS: readonly Interval[] = ['minute', 'hour', 'day', 'week', 'month'];

export type MathType =
  'total' | 'dau' | 'weekly_active' | 'monthly_active' | 'unique_group' | 'sum' | 'avg' | 'min' | 'max' | 'median' | 'p75' | 'p90' | 'p95' | 'p99';
export const MATH_TYPES: readonly MathType[] = [
  'total',
  'dau',
  'weekly_active',
  'monthly_active',
  'unique_group',
  'sum',
  'avg',
  'min',
  'max',
  'median',
  'p75',
  'p90',
  'p95',
  'p99',
];
/** Math types that aggregate a numeric property and need `math_property`. */
export const PROPERTY_MATH: readonly MathType[] = ['sum', 'avg', 'min', 'max', 'median', 'p75', 'p90', 'p95', 'p99'];

/** A value operator, or `in`/`not_in` (cohort filters only). */
export type PropertyOperator = PropertyValueOperator | 'in' | 'not_in';

/**
 * Where a filter's property lives: `event` → the event's properties, `person` → the person properties stored
 * with the event (as they were after that event), `group` → group `group_type_index`'s properties stored with
 * the event, `cohort` → membership of the event's person (merged persons resolved) in cohort `value`.
 */
export type PropertyType = 'event' | 'person' | 'group' | 'cohort';

export interface PropertyFilter {
  type: PropertyType;
  /** The property name (`"id"` for cohort filters, whose cohort id is `value`). */
  key: string;
  /** A scalar or a list of scalars; absent for is_set / is_not_set. Dates: ISO or relative (`-7d`). */
  value?: JsonValue;
  operator: PropertyOperator;
  /** Group filters only: 0–4. */
  groupTypeIndex?: number;
}

export interface PropertyGroup {
  type: 'AND' | 'OR';
  values: readonly (PropertyGroup | PropertyFilter)[];
}

export function isPropertyGroup(value: PropertyGroup | PropertyFilter): value is PropertyGroup {
  return 'values' in value;
}

/** The action a series counts, and where the request named it (the attr an unknown action is reported at). */
export interface SeriesAction {
  id: number;
  attr: string;
}

/**
 * One series (a legacy entity / an EventsNode or ActionsNode): an event (null = all events) or an action, its math
 * and its own filters.
 */
export interface Series {
  /** null: every event ("All events"), or the series is an action's. */
  event: string | null;
  /** Set: the series counts the events matching this action of the project (and `event` is null). */
  action: SeriesAction | null;
  /** PostHog's `name` (defaults to the event name; an action's name once `withActionNames` resolved it). */
  name: string;
  customName: string | null;
  /** Position in the request (entities are sorted by their `order`); letters of a formula map to it. */
  order: number;
  math: MathType;
  /** For property math. */
  mathProperty: string | null;
  /** For `unique_group`. */
  mathGroupTypeIndex: number | null;
  properties: PropertyGroup | null;
}

/**
 * Where a breakdown's value comes from: a property of the event, the person or a group, or (`event_metadata`) a
 * field of the event row itself — the event's name, PostHog's `{breakdown: "event", breakdown_type:
 * "event_metadata"}` (also accepted as a `hogql` breakdown of the expression `event`).
 */
export type BreakdownType = 'event' | 'person' | 'group' | 'event_metadata';

/** A trend broken down by cohorts: one series per cohort id (its members' events), `all` for every event. */
export interface CohortBreakdown {
  type: 'cohort';
  cohorts: readonly (number | 'all')[];
  /** Every cohort gets its own series: the number of cohorts less one (nothing is summed into "other"). */
  limit: number;
}

export type Breakdown = PropertyBreakdown | CohortBreakdown;

export interface PropertyBreakdown {
  /** A property name; for `event_metadata` always `event`. */
  property: string;
  type: BreakdownType;
  /** Group breakdowns only. */
  groupTypeIndex: number | null;
  /** How many values get their own series; the rest are summed into one "other" series. */
  limit: number;
}

export type Display =
  | 'ActionsLineGraph'
  | 'ActionsLineGraphCumulative'
  | 'ActionsAreaGraph'
  | 'ActionsBar'
  | 'ActionsBarValue'
  | 'ActionsPie'
  | 'ActionsTable'
  | 'WorldMap'
  | 'BoldNumber';
export const DISPLAYS: readonly Display[] = [
  'ActionsLineGraph',
  'ActionsLineGraphCumulative',
  'ActionsAreaGraph',
  'ActionsBar',
  'ActionsBarValue',
  'ActionsPie',
  'ActionsTable',
  'WorldMap',
  'BoldNumber',
];
/** Displays that show one number per series over the whole range (`aggregated_value`, empty `data`). */
export const TOTAL_VALUE_DISPLAYS: readonly Display[] = ['ActionsBarValue', 'ActionsPie', 'ActionsTable', 'WorldMap', 'BoldNumber'];

export interface TrendsInput {
  series: readonly Series[];
  /** The request's date grammar, unresolved: `-7d`, `-24h`, `mStart`, `yStart`, `dStart`, `all`, ISO date or date-time. null = default (`-7d`). */
  dateFrom: string | null;
  /** Same grammar; null = now. */
  dateTo: string | null;
  interval: Interval;
  /** Filters applied to every series (AND-ed with each series' own). */
  properties: PropertyGroup | null;
  breakdown: Breakdown | null;
  compare: boolean;
  /** e.g. `A+B*2`: letters are series in order. */
  formula: string | null;
  display: Display;
}

/**
 * What the trend endpoint computes (`insight`, or `shown_as: Stickiness`/`Lifecycle`): all three read the same
 * series, dates and filters; stickiness and lifecycle ignore the settings they have no use for.
 */
export type InsightKind = 'TRENDS' | 'STICKINESS' | 'LIFECYCLE';
export const INSIGHT_KINDS: readonly InsightKind[] = ['TRENDS', 'STICKINESS', 'LIFECYCLE'];

export interface InsightRequest {
  insight: InsightKind;
  input: TrendsInput;
}

/**
 * A date range resolved for a project's timezone and an interval. Wall-clock strings are local time in the
 * project timezone, `YYYY-MM-DD HH:MM:SS`; ClickHouse turns them into instants with the timezone
 * (`toDateTime64({from:String}, 6, {tz:String})`), so DST is ClickHouse's business, not ours.
 */
export interface ResolvedRange {
  timezone: string;
  interval: Interval;
  /** Inclusive start: the start of the first bucket. */
  from: string;
  /** Inclusive end (a date-only `date_to` means the end of that day, `… 23:59:59`). */
  to: string;
  /** Bucket starts in order, each the local wall-clock start of one interval, same format. */
  buckets: readonly string[];
}

/** What a computation needs to know about the project and the moment. */
export interface InsightContext {
  projectId: number;
  /** IANA name, e.g. `Europe/Berlin`. */
  timezone: string;
  now: Date;
  /** Members (person uuids) of a cohort of this project; unknown cohort → an ApiError 400 naming the filter. */
  cohortMembers(cohortId: number): Promise<readonly string[]>;
  /** A cohort's name, for the labels of a cohort breakdown; absent: `Cohort <id>`. */
  cohortName?(cohortId: number): Promise<string>;
  /**
   * A live action of this project by id (or, given a string, by name: HogQL's `matchesAction`), loaded once per
   * context (make one per request); unknown, deleted or another project's → an ApiError 400 at `attr`.
   */
  action(ref: number | string, attr: string): Promise<ActionDefinition>;
  /** The project's first live actions as web analytics' goals (`WebGoalsQuery`); none where the caller keeps no actions. */
  goalActions?(): Promise<readonly ActionDefinition[]>;
}

/** How a result names the series it counts: PostHog's `action.id` and `action.type`. */
export interface SeriesReference {
  id: string | number | null;
  type: 'events' | 'actions';
}

/** One series of PostHog's legacy trend response (`posthog/api/insight.py`, the `trend` action). */
export interface TrendSeriesResult {
  data: number[];
  labels: string[];
  days: string[];
  count: number;
  aggregated_value?: number;
  label: string;
  breakdown_value?: string | number;
  compare?: boolean;
  compare_label?: 'current' | 'previous';
  action: {
    days: string[];
    id: string | number | null;
    type: 'events' | 'actions';
    order: number;
    name: string;
    custom_name: string | null;
    math: MathType;
    math_property: string | null;
    math_hogql: null;
    math_group_type_index: number | null;
    properties: Record<string, never>;
  };
  filter: Record<string, unknown>;
}

/** One series of a stickiness result: `data[i]` persons (or groups) active in exactly `i + 1` intervals. */
export interface StickinessSeriesResult {
  data: number[];
  /** `1 day`, `2 days`, … */
  labels: string[];
  /** 1, 2, … N: the number of intervals each entry counts. */
  days: number[];
  count: number;
  label: string;
  compare?: boolean;
  compare_label?: 'current' | 'previous';
  action: SeriesReference & { order: number; name: string; custom_name: string | null };
}

export type LifecycleStatus = 'new' | 'returning' | 'resurrecting' | 'dormant';

/** One status of a lifecycle result: persons per interval (dormant ones negative). */
export interface LifecycleSeriesResult {
  data: number[];
  labels: string[];
  days: string[];
  count: number;
  /** `<event> - <status>`. */
  label: string;
  status: LifecycleStatus;
  action: SeriesReference & { order: 0; name: string; custom_name: string | null; math: 'total' };
}

/** Any series the trend endpoint answers with. */
export type InsightSeriesResult = TrendSeriesResult | StickinessSeriesResult | LifecycleSeriesResult;

export type StringMatching = 'exact' | 'contains' | 'regex';
/** One step of an action, as PostHog's ActionStepJSON: every field optional. */
export interface ActionStep {
  event?: string | null;
  url?: string | null;
  /** Default `contains`. */
  url_matching?: StringMatching | null;
  selector?: string | null;
  tag_name?: string | null;
  text?: string | null;
  /** Default `exact`. */
  text_matching?: StringMatching | null;
  href?: string | null;
  /** Default `exact`. */
  href_matching?: StringMatching | null;
  properties?: unknown[] | null;
}

export interface ActionDefinition {
  id: number;
  name: string | null;
  steps: readonly ActionStep[];
}
