import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import { AnyObject, component, Nullable, Types } from '../shared/schema';

export const QueryRequest = component(
  'QueryRequest',
  Type.Object({
    query: AnyObject({
      required: ['kind'],
      properties: { kind: { type: 'string', maxLength: 100 } },
      description: 'a query node: HogQLQuery `{kind, query, values?}`, HogQLMetadata, TrendsQuery, or a wrapper with a `source`',
    }),
    refresh: Type.Optional(
      Types<string | boolean>(['string', 'boolean'], { description: '`blocking` (default), `force_blocking`, `force_cache`, `async`, …' }),
    ),
    client_query_id: Type.Optional(Type.String({ maxLength: 128 })),
    name: Type.Optional(Type.String({ maxLength: 128 })),
    async: Type.Optional(Type.Boolean()),
    filters_override: Type.Optional(Types<Record<string, unknown> | null>(['object', 'null'])),
    variables_override: Type.Optional(Types<Record<string, unknown> | null>(['object', 'null'])),
    limit_context: Type.Optional(Types<string | null>(['string', 'null'])),
  }),
);

const dateTime = Type.String({ format: 'date-time' });
const Timings = Type.Array(Type.Object({ k: Type.String(), t: Type.Number() }), { description: '`[{k, t}]`: seconds per step' });

/** The cache fields the route adds to the answer of every cached kind. */
const CacheFields = Type.Object({
  is_cached: Type.Boolean(),
  last_refresh: dateTime,
  next_allowed_client_refresh: dateTime,
  cache_key: Type.String(),
  cache_target_age: Type.Null(),
  timezone: Type.String(),
  query_status: Type.Null(),
});
export type CacheField = keyof typeof CacheFields.properties;

/** The answer of a cached kind: its own fields and the {@link CacheFields}. */
const cached = <T extends TObject>(name: string, fields: T) => component(name, Type.Composite([fields, CacheFields]));

export const HogQLQueryResponse = cached(
  'HogQLQueryResponse',
  Type.Object({
    results: Type.Array(Type.Array(Type.Unknown()), { description: 'rows, one array of values per row' }),
    columns: Type.Array(Type.String()),
    types: Type.Array(Type.Tuple([Type.String(), Type.String()]), { description: '`[name, ClickHouse type]` per column' }),
    hogql: Type.String(),
    clickhouse: Type.String({ description: 'the printed SQL, parameters not inlined' }),
    hasMore: Type.Boolean(),
    limit: Type.Integer(),
    offset: Type.Integer(),
    timings: Timings,
    modifiers: AnyObject(),
    error: Type.Null(),
    explain: Type.Null(),
    metadata: Type.Null(),
    query: Type.String(),
  }),
);

export const EventsQueryResponse = cached(
  'EventsQueryResponse',
  Type.Object({
    results: Type.Array(Type.Array(Type.Unknown()), { description: 'rows; `*` and `person` columns as objects' }),
    columns: Type.Array(Type.String(), { description: 'the `select` items as given' }),
    types: Type.Array(Type.String(), { description: 'the ClickHouse type of each column' }),
    hogql: Type.String(),
    clickhouse: Type.String({ description: 'the printed SQL, parameters not inlined' }),
    hasMore: Type.Boolean(),
    limit: Type.Integer(),
    offset: Type.Integer(),
    timings: Timings,
    modifiers: AnyObject(),
    error: Type.Null(),
  }),
);

export const ActorsQueryResponse = cached(
  'ActorsQueryResponse',
  Type.Object({
    results: Type.Array(Type.Array(Type.Unknown()), { description: 'one row per actor, a value per `select` column' }),
    columns: Type.Array(Type.String()),
    types: Type.Array(Type.String()),
    hogql: Type.Null(),
    hasMore: Type.Boolean(),
    limit: Type.Integer(),
    offset: Type.Integer(),
    missing_actors_count: Type.Integer(),
    timings: Timings,
    modifiers: AnyObject(),
    error: Type.Null(),
  }),
);

const Position = Nullable(Type.Integer());

export const HogQLMetadataResponse = component(
  'HogQLMetadataResponse',
  Type.Object({
    isValid: Type.Boolean(),
    query: Type.String(),
    errors: Type.Array(Type.Object({ message: Type.String(), start: Position, end: Position, fix: Type.Null() })),
    warnings: Type.Tuple([]),
    notices: Type.Tuple([]),
    isUsingIndices: Type.String(),
    table_names: Type.Array(Type.String()),
    ch_table_names: Type.Array(Type.String()),
  }),
);

/** The fields every insight kind answers with around its `results`. */
export const insightResponse = <T extends TSchema>(name: string, results: T) =>
  cached(name, Type.Object({ results, hasMore: Type.Boolean(), timings: Timings, hogql: Type.Null(), modifiers: AnyObject(), error: Type.Null() }));

/** An object of any fields, typed as what a computation returns (interfaces, which have no index signature). */
const Row = (description: string) => Type.Unsafe<object>({ type: 'object', additionalProperties: true, description });

const Series = Type.Array(Row('one series: its label, action, data points and the fields PostHog sends with it'));

export const TrendsQueryResponse = insightResponse('TrendsQueryResponse', Series);
export const StickinessQueryResponse = insightResponse(
  'StickinessQueryResponse',
  Type.Array(Row('one series: `data[i]` the persons active in exactly i + 1 intervals, its labels, days and action')),
);
export const LifecycleQueryResponse = insightResponse(
  'LifecycleQueryResponse',
  Type.Array(Row('one status (new, returning, resurrecting, dormant): persons per interval, dormant negative')),
);

const CorrelationEntry = Type.Object({
  event: Type.Object({ event: Type.String(), properties: AnyObject(), elements: Type.Array(Type.Unknown()) }),
  success_count: Type.Integer(),
  failure_count: Type.Integer(),
  odds_ratio: Type.Number(),
  correlation_type: Type.Union([Type.Literal('success'), Type.Literal('failure')]),
});
export const FunnelCorrelationQueryResponse = cached(
  'FunnelCorrelationQueryResponse',
  Type.Object({
    results: Type.Object({ events: Type.Array(CorrelationEntry), skewed: Type.Boolean() }),
    columns: Type.Array(Type.String()),
    hasMore: Type.Boolean(),
    limit: Type.Integer(),
    offset: Type.Integer(),
    timings: Timings,
    hogql: Type.Null(),
    modifiers: AnyObject(),
    error: Type.Null(),
  }),
);
export const FunnelsQueryResponse = insightResponse(
  'FunnelsQueryResponse',
  Types<object>(['array', 'object'], {
    description: 'the steps, the steps per breakdown value, the time-to-convert histogram or the conversion trend',
  }),
);
export const RetentionQueryResponse = insightResponse('RetentionQueryResponse', Type.Array(Row('one cohort: its label, date and values per period')));

export const PathsQueryResponse = insightResponse(
  'PathsQueryResponse',
  Type.Array(Type.Object({ source: Type.String(), target: Type.String(), value: Type.Number(), average_conversion_time: Type.Number() })),
);

const SamplingRate = Type.Object({ numerator: Type.Number(), denominator: Nullable(Type.Number()) });
const Figure = Nullable(Type.Number());

export const WebOverviewQueryResponse = cached(
  'WebOverviewQueryResponse',
  Type.Object({
    results: Type.Array(
      Type.Object({
        key: Type.String({ description: '`visitors`, `views`, `sessions`, `session duration`, `bounce rate`' }),
        kind: Type.Union([Type.Literal('unit'), Type.Literal('duration_s'), Type.Literal('percentage')]),
        value: Figure,
        previous: Figure,
        changeFromPreviousPct: Nullable(Type.Integer()),
        isIncreaseBad: Type.Optional(Type.Boolean()),
      }),
    ),
    dateFrom: Type.String(),
    dateTo: Type.String(),
    samplingRate: SamplingRate,
    usedPreAggregatedTables: Type.Boolean(),
  }),
);

export const WebStatsTableQueryResponse = cached(
  'WebStatsTableQueryResponse',
  Type.Object({
    columns: Type.Array(Type.String()),
    results: Type.Array(
      Type.Array(Type.Unknown(), {
        description: '`[breakdown value, [visitors, previous], [views, previous], [bounce rate 0–1, previous]?]`; previous is null without compare',
      }),
    ),
    hasMore: Type.Boolean(),
    limit: Type.Integer(),
    offset: Type.Integer(),
    samplingRate: SamplingRate,
    usedPreAggregatedTables: Type.Boolean(),
  }),
);

export const WebGoalsQueryResponse = cached(
  'WebGoalsQueryResponse',
  Type.Object({
    columns: Type.Array(Type.String()),
    results: Type.Array(
      Type.Array(Type.Unknown(), {
        description:
          '`[action name, [converting persons, previous], [conversions, previous], [conversion rate 0–1, previous]]`; previous is null without compare',
      }),
    ),
    hasMore: Type.Boolean(),
    limit: Type.Integer(),
    offset: Type.Integer(),
    samplingRate: SamplingRate,
    usedPreAggregatedTables: Type.Boolean(),
  }),
);

export const WebExternalClicksTableQueryResponse = cached(
  'WebExternalClicksTableQueryResponse',
  Type.Object({
    columns: Type.Array(Type.String()),
    results: Type.Array(Type.Array(Type.Unknown(), { description: '`[link URL, visitors, clicks]`' })),
    hasMore: Type.Boolean(),
    limit: Type.Integer(),
    offset: Type.Integer(),
    samplingRate: SamplingRate,
    usedPreAggregatedTables: Type.Boolean(),
  }),
);

/** A query's progress (`GET /query/:id/`). */
export const QueryStatus = component(
  'QueryStatus',
  Type.Object({
    query_status: Type.Object({
      id: Type.String(),
      query_async: Type.Literal(true),
      team_id: Type.Integer(),
      insight_id: Type.Null(),
      dashboard_id: Type.Null(),
      complete: Type.Boolean(),
      error: Type.Boolean(),
      error_message: Nullable(Type.String()),
      results: Type.Unknown({ description: 'the response of the query once done' }),
      pickup_time: dateTime,
      start_time: dateTime,
      end_time: Nullable(Type.String({ format: 'date-time' })),
      expiration_time: dateTime,
      task_id: Type.Null(),
      labels: Type.Null(),
    }),
  }),
);

export const QueryCancelled = component('QueryCancelled', Type.Object({ message: Type.String() }));

export const ExperimentExposureQueryResponse = cached(
  'ExperimentExposureQueryResponse',
  Type.Object({
    kind: Type.Literal('ExperimentExposureQuery'),
    timeseries: Type.Array(
      Type.Object({
        variant: Type.String(),
        days: Type.Array(Type.String({ description: '`YYYY-MM-DD`, the project’s days from the start to the end date' })),
        exposure_counts: Type.Array(Type.Integer(), { description: 'cumulative exposed units by the end of each day' }),
      }),
    ),
    total_exposures: Type.Record(Type.String(), Type.Integer(), { description: 'exposed units per variant, `$multiple` included' }),
    date_range: Type.Object({ date_from: dateTime, date_to: Nullable(Type.String({ format: 'date-time' })) }),
    sample_ratio_mismatch: Type.Null(),
    bias_risk: Type.Null(),
  }),
);

export const ExperimentQueryResponse = cached(
  'ExperimentQueryResponse',
  Type.Object({
    kind: Type.Literal('ExperimentQuery'),
    metric: Row('the metric node computed'),
    baseline: Row('control: number_of_samples, sum, sum_squares (ratio and funnel extras) and validation_failures'),
    variant_results: Type.Array(Row('a test variant: its statistics and chance_to_win, credible_interval (Bayesian) or p_value, confidence_interval')),
  }),
);
