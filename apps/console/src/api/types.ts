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

export type Display = 'ActionsLineGraph' | 'ActionsBar' | 'BoldNumber' | 'ActionsTable';

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
  insight: 'TRENDS' | 'STICKINESS' | 'LIFECYCLE';
  events: EventEntity[];
  interval: Interval;
  date_from: string;
  date_to?: string;
  properties?: AnyPropertyFilter[];
  /** A property name; with `breakdown_type: event_metadata`, `event` (the event's name). */
  breakdown?: string;
  breakdown_type?: 'event' | 'person' | 'event_metadata';
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
  /** A lifecycle series: which persons it counts (dormant ones negative). */
  status?: 'new' | 'returning' | 'resurrecting' | 'dormant';
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
  /** The query node of an insight saved from a query screen (SQL, funnel, retention); null for a legacy trend. */
  query: QueryNode | null;
  saved: boolean;
  favorited: boolean;
  created_at: string;
  last_modified_at: string;
  last_viewed_at: string | null;
  created_by: { email: string; first_name: string } | null;
  /** The dashboards it is on. */
  dashboards: number[];
  /** On a dashboard's tile: the query's results from the cache (legacy trends: the series), null when none. */
  result?: unknown;
}

export interface InsightWrite {
  name?: string | null;
  description?: string | null;
  filters?: Record<string, unknown>;
  query?: QueryNode | null;
  saved?: boolean;
  /** Every dashboard it is to be on: a tile is added on each new one and removed from those left out. */
  dashboards?: number[];
}

/** A dashboard in the listing. */
export interface DashboardBasic {
  id: number;
  name: string | null;
  description: string;
  pinned: boolean;
  created_at: string;
  is_shared: boolean;
  last_refresh: string | null;
}

/** A tile's place in the grid: columns of 12 on wide screens (`sm`). */
export interface TileLayout {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface DashboardTile {
  id: number;
  insight: Insight | null;
  text: { id: number; body: string } | null;
  layouts: Record<string, unknown>;
  order: number;
  last_refresh: string | null;
  is_cached: boolean;
  error: { type: string; detail: string } | null;
}

export interface Dashboard extends DashboardBasic {
  tiles: DashboardTile[];
  /** The filters in effect (`date_from`, `date_to`, `properties`…). */
  filters: Record<string, unknown>;
}

export interface TileWrite {
  /** An existing tile; absent: a new text card. */
  id?: number;
  text?: { body: string };
  layouts?: Record<string, TileLayout>;
  deleted?: boolean;
}

export interface DashboardWrite {
  name?: string | null;
  filters?: Record<string, unknown>;
  tiles?: TileWrite[];
}

/** A dashboard's public link: `/shared/<access_token>.json` while enabled. */
export interface Sharing {
  created_at: string;
  enabled: boolean;
  access_token: string;
}

export interface SharingWrite {
  enabled?: boolean;
}

export interface EventRow {
  id: string;
  event: string;
  distinct_id: string;
  timestamp: string;
  properties: Record<string, unknown>;
  /** The uuid of the event's person. */
  person_id?: string | null;
}

/** A property filter of persons, events and flag conditions, as the API stores it (operators beyond the insight builder's included). */
export interface AnyPropertyFilter {
  type: 'event' | 'person' | 'cohort' | 'group';
  key: string;
  operator?: string;
  value?: string | number | (string | number)[];
  group_type_index?: number;
}

export interface Person {
  id: number;
  /** The display name: an email or name property, else the first distinct id. */
  name: string;
  distinct_ids: string[];
  /** Null for a person whose properties were never set. */
  properties: Record<string, unknown> | null;
  created_at: string;
  uuid: string;
  is_identified: boolean;
}

/** A listing that says whether more follows instead of counting (`session_recordings/`). */
export interface NextPage<T> {
  results: T[];
  has_next: boolean;
}

export interface Recording {
  id: string;
  distinct_id: string;
  viewed: boolean;
  recording_duration: number;
  active_seconds: number;
  start_time: string;
  end_time: string;
  click_count: number;
  keypress_count: number;
  console_error_count: number;
  start_url: string | null;
  person: { id: number | null; name: string | null; uuid: string | null; distinct_ids: string[] };
  ongoing: boolean;
  activity_score: number;
}

export interface Playlist {
  id: number;
  short_id: string;
  name: string | null;
  derived_name: string | null;
  description: string;
  pinned: boolean;
  type: 'collection' | 'filters';
  created_at: string;
  last_modified_at: string;
  recordings_counts: { collection?: { count: number | null; watched_count: number } };
}

export interface PlaylistWrite {
  name?: string | null;
  description?: string | null;
  pinned?: boolean;
  deleted?: boolean;
  type?: 'collection';
}

/** A flag's `filters`: condition groups, variants, payloads and what the console leaves as it found it. */
export interface FlagFilters {
  groups?: Array<{ properties?: unknown[]; rollout_percentage?: number | null; variant?: string | null; [key: string]: unknown }>;
  multivariate?: { variants: Array<{ key: string; name?: string; rollout_percentage: number }> } | null;
  payloads?: Record<string, unknown> | null;
  aggregation_group_type_index?: number | null;
  [key: string]: unknown;
}

export interface FeatureFlag {
  id: number;
  key: string;
  name: string;
  filters: FlagFilters;
  active: boolean;
  deleted: boolean;
  ensure_experience_continuity: boolean;
  created_at: string;
  created_by: { email: string; first_name: string } | null;
  can_edit: boolean;
}

export interface FeatureFlagWrite {
  key?: string;
  name?: string;
  filters?: FlagFilters;
  active?: boolean;
  deleted?: boolean;
  ensure_experience_continuity?: boolean;
}

export interface Cohort {
  id: number;
  name: string;
  description: string;
  is_static: boolean;
  /** Members: of a fixed list, or of a dynamic cohort as last calculated (null before). */
  count: number | null;
  is_calculating: boolean;
  last_calculation: string | null;
  errors_calculating: number;
  created_at: string;
}

/** A condition on what a person did: `value` is the kind, `key` the event, the window `time_value` `time_interval`s back. */
export interface BehavioralFilter {
  type: 'behavioral';
  key: string;
  event_type: 'events';
  value: string;
  time_value: number;
  time_interval: string;
  negation?: boolean;
  operator?: string;
  operator_value?: number;
  seq_time_value?: number;
  seq_time_interval?: string;
}

/** A new cohort: dynamic (`filters.properties`, one AND or OR group) or a fixed list of persons (`is_static`). */
export interface CohortCreate {
  name: string;
  description?: string;
  is_static: boolean;
  filters?: { properties: { type: 'AND' | 'OR'; values: (AnyPropertyFilter | BehavioralFilter)[] } };
  /** The members of a fixed list, by distinct id. */
  distinct_ids?: string[];
  /** A fixed list of the persons an actors query lists (the persons behind a chart's point). */
  query?: QueryNode;
}

export interface EarlyAccessFeature {
  id: string;
  name: string;
  description: string;
  stage: string;
  created_at: string;
  feature_flag: { id: number; key: string } | null;
}

/** A new early access feature; the server creates its flag (`feature_flag_key`, else one made from the name). */
export interface EarlyAccessFeatureCreate {
  name: string;
  description?: string;
  stage: string;
  documentation_url?: string;
  feature_flag_key?: string;
}

/** One question of a survey, as posthog-js shows it. */
export interface SurveyQuestion {
  type: 'open';
  question: string;
}

export interface SurveyCreate {
  name: string;
  description?: string;
  type: string;
  questions: SurveyQuestion[];
  /** Set: the survey runs from then; null: a draft. */
  start_date: string | null;
}

export interface Survey {
  id: string;
  name: string;
  type: string;
  start_date: string | null;
  end_date: string | null;
  archived: boolean;
  created_at: string;
  questions: unknown[];
}

/** One event's counts in a survey's stats. */
export interface SurveyEventStats {
  total_count: number;
  unique_persons: number;
  first_seen: string | null;
  last_seen: string | null;
  unique_persons_only_seen: number;
  total_count_only_seen: number;
}

/** `GET surveys/:id/stats/`: shown, dismissed and sent counts and the rates over shown (percentages). */
export interface SurveyStats {
  survey_id: string;
  start_date: string;
  end_date: string | null;
  stats: { 'survey shown': SurveyEventStats; 'survey dismissed': SurveyEventStats; 'survey sent': SurveyEventStats };
  rates: { response_rate: number; dismissal_rate: number; unique_users_response_rate: number; unique_users_dismissal_rate: number };
}

/** `GET surveys/:id/questions/`: each question's results. */
export interface SurveyQuestionResults {
  survey_id: string;
  submissions: number;
  questions: Array<{
    id: string;
    index: number;
    question: string;
    type: string;
    response_count: number;
    distribution?: Record<string, number>;
    average?: number | null;
    answers?: Array<{ value: string; timestamp: string; distinct_id: string }>;
  }>;
}

/** A survey's response (one submission), as `GET surveys/:id/responses/` lists it. */
export interface SurveyResponse {
  uuid: string;
  timestamp: string;
  distinct_id: string;
  answers: Record<string, unknown>;
}

export interface GroupType {
  group_type: string;
  group_type_index: number;
  name_singular: string | null;
  name_plural: string | null;
}

export interface PersonalApiKey {
  id: string;
  label: string;
  /** The whole key: in the answer to its creation only. */
  value: string | null;
  mask_value: string;
  scopes: string[];
  created_at: string;
  last_used_at: string | null;
}

export interface PersonalApiKeyCreate {
  label: string;
  scopes: string[];
}

/** A project's session replay settings (a change is any subset of them). */
export interface ReplaySettings {
  session_recording_opt_in: boolean;
  /** 0 to 1; null records every session. */
  session_recording_sample_rate: number | null;
  /** 0 to 30,000; null sends every session. */
  session_recording_minimum_duration_milliseconds: number | null;
  session_recording_linked_flag: { id: number; key: string; variant?: string | null } | null;
  session_recording_masking_config: { maskAllInputs?: boolean; maskTextSelector?: string | null; blockSelector?: string | null } | null;
  session_replay_config: { record_canvas?: boolean } | null;
  capture_console_log_opt_in: boolean;
  capture_performance_opt_in: boolean;
  session_recording_retention_period: '30d' | '90d' | '1y' | '5y';
  /** `capture_console_logs`: posthog-js sends the browser console to the logs table. */
  logs_settings: { capture_console_logs?: boolean } | null;
}

/** A project with the settings the settings screen edits (a server without them answers the project alone). */
export type ProjectSettings = Project & Partial<ReplaySettings>;

export type ProjectPatch = Partial<Pick<Project, 'name' | 'timezone'> & ReplaySettings>;

/** A node of the query API: `kind` picks what runs (docs/query.md); the other fields are the kind's own. */
export interface QueryNode {
  kind: string;
  [field: string]: unknown;
}

/** The body of `query/`. */
export interface QueryRequest {
  query: QueryNode;
  /** `force_blocking` computes afresh; absent, a cached answer serves while the data is unchanged. */
  refresh?: string;
  client_query_id?: string;
}

/** One figure of a `WebOverviewQuery` answer; `previous` and the change are null without a comparison. */
export interface WebOverviewItem {
  key: string;
  kind: 'unit' | 'duration_s' | 'percentage';
  value: number | null;
  previous: number | null;
  changeFromPreviousPct: number | null;
  isIncreaseBad?: boolean;
}

export interface WebOverviewResponse {
  results: WebOverviewItem[];
  dateFrom: string;
  dateTo: string;
}

/** A `WebStatsTableQuery` answer: rows `[value, [visitors, previous], [views, previous], [bounce rate 0–1, previous]?]`. */
export interface WebStatsTableResponse {
  columns: string[];
  results: unknown[][];
  hasMore: boolean;
}

/** A HogQLQuery's answer: rows as arrays, with the column names and ClickHouse types. */
export interface HogQLResponse {
  results: unknown[][];
  columns: string[];
  types: [string, string][];
  /** The query returned more rows than its limit (100 without a `LIMIT`). */
  hasMore: boolean;
  limit: number;
}

/** A problem HogQLMetadata found, at character offsets of the query text when it has a position. */
export interface HogQLNotice {
  message: string;
  start: number | null;
  end: number | null;
}

export interface HogQLMetadataResponse {
  isValid: boolean;
  errors: HogQLNotice[];
}

/** One step of a funnel's `steps` answer (one list per breakdown value with a breakdown). */
export interface FunnelStep {
  name: string;
  custom_name: string | null;
  order: number;
  count: number;
  /** Seconds from the previous step over the actors who reached this one; null on the first step. */
  average_conversion_time: number | null;
  median_conversion_time: number | null;
  breakdown_value?: string[] | string;
}

/** A funnel's `time_to_convert` answer: `[bin start in seconds, actors]`, the last entry the upper bound. */
export interface FunnelTimeToConvert {
  bins: [number, number][];
  average_conversion_time: number | null;
}

/** One line of a funnel's `trends` answer: conversion in % per entrance period. */
export interface FunnelTrend {
  count: number;
  data: number[];
  days: string[];
  labels: string[];
  breakdown_value?: string[] | string;
}

/** One cohort row of a retention answer: its size first, then the actors returning in each later period. */
export interface RetentionRow {
  values: { count: number; label: string }[];
  label: string;
  date: string;
  breakdown_value: string | null;
}

/** One edge of a paths answer: from item k to item k+1 (`<k>_<item>`), how often, and the mean time between, in ms. */
export interface PathEdge {
  source: string;
  target: string;
  value: number;
  average_conversion_time: number;
}

/** The body every insight kind of `query/` answers with. */
export interface InsightQueryResponse<Results> {
  results: Results;
}
