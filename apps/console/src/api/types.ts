/** The shapes of the management API's answers and bodies that the console reads and sends (docs/management.md). */

/** A listing page: `{count, next, previous, results}`. */
export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

export interface Project {
  id: number;
  uuid: string;
  name: string;
  api_token: string;
  timezone: string;
}

export interface User {
  email: string;
  first_name: string;
  team: Project | null;
}

/** The error body of every failed request. */
export interface ErrorBody {
  type: string;
  code: string;
  detail: string;
  attr: string | null;
}

export type Interval = 'minute' | 'hour' | 'day' | 'week' | 'month';

export type MathType =
  'total' | 'dau' | 'weekly_active' | 'monthly_active' | 'unique_group' | 'sum' | 'avg' | 'min' | 'max' | 'median' | 'p75' | 'p90' | 'p95' | 'p99';

export type PropertyOperator =
  | 'exact'
  | 'is_not'
  | 'icontains'
  | 'not_icontains'
  | 'regex'
  | 'not_regex'
  | 'gt'
  | 'gte'
  | 'lt'
  | 'lte'
  | 'is_set'
  | 'is_not_set'
  | 'is_date_before'
  | 'is_date_after'
  | 'is_date_exact';

export type Display = 'ActionsLineGraph' | 'ActionsBar' | 'BoldNumber' | 'ActionsTable';

export interface PropertyFilter {
  type: 'event' | 'person';
  key: string;
  operator: PropertyOperator;
  value?: string | number | (string | number)[];
}

/** One legacy series entity (`events[]`): `id` is the event name, null for every event. */
export interface EventEntity {
  id: string | null;
  type: 'events';
  order: number;
  name: string;
  math: MathType;
  math_property?: string;
  math_group_type_index?: number;
  custom_name?: string;
}

/** The legacy trend filter fields: the body of `insights/trend/` and a saved insight's `filters`. */
export interface TrendRequest {
  insight: 'TRENDS';
  events: EventEntity[];
  interval: Interval;
  date_from: string;
  date_to?: string;
  properties?: PropertyFilter[];
  breakdown?: string;
  breakdown_type?: 'event' | 'person';
  breakdown_limit?: number;
  compare?: boolean;
  formula?: string;
  display: Display;
}

/** One series of a trend answer. */
export interface TrendSeries {
  data: number[];
  labels: string[];
  days: string[];
  count: number;
  aggregated_value?: number;
  label: string;
  breakdown_value?: string | number;
  compare?: boolean;
  compare_label?: 'current' | 'previous';
  action: { id: string | null; order: number; name: string; custom_name: string | null; math: MathType } | null;
}

export interface TrendResponse {
  result: TrendSeries[];
  timezone: string;
  is_cached: boolean;
  last_refresh: string;
}

export type CorrelationType = 'events' | 'properties' | 'event_with_properties';

export type FunnelWindowUnit = 'second' | 'minute' | 'hour' | 'day' | 'week' | 'month';

/** The legacy funnel fields of `insights/funnel/correlation/`: ordered steps, the window, what to correlate. */
export interface CorrelationRequest {
  events: Array<{ id: string; type: 'events'; order: number; name: string }>;
  date_from: string;
  funnel_window_interval: number;
  funnel_window_interval_unit: FunnelWindowUnit;
  funnel_correlation_type: CorrelationType;
  funnel_correlation_names?: string[];
  funnel_correlation_event_names?: string[];
}

export interface CorrelationEntry {
  event: { event: string };
  success_count: number;
  failure_count: number;
  odds_ratio: number;
  correlation_type: 'success' | 'failure';
}

export interface CorrelationResult {
  events: CorrelationEntry[];
  skewed: boolean;
}

export interface Insight {
  id: number;
  short_id: string;
  name: string | null;
  derived_name: string | null;
  description: string | null;
  filters: Record<string, unknown>;
  saved: boolean;
  favorited: boolean;
  created_at: string;
  last_modified_at: string;
  last_viewed_at: string | null;
  created_by: { email: string; first_name: string } | null;
}

export interface InsightWrite {
  name?: string | null;
  description?: string | null;
  filters?: Record<string, unknown>;
  saved?: boolean;
}

export interface EventRow {
  id: string;
  event: string;
  distinct_id: string;
  timestamp: string;
  properties: Record<string, unknown>;
}
