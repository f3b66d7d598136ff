import { Type } from '@sinclair/typebox';
import { AnyObject, component, Nullable, Types, type JsonSchema } from '../shared/schema';
import { Insight } from '../shared/insight-record';

const nullable = (type: string): JsonSchema => ({ type: [type, 'null'] });
const stringList: JsonSchema = { type: ['array', 'null'], items: { type: 'string' } };
const propertyFilters: JsonSchema = { type: ['array', 'object', 'null'], description: 'property filters, or an AND/OR group of them' };

/** A funnel step or exclusion (PostHog's EventsNode, or an ActionsNode: funnel correlation refuses those). */
const eventsNode: JsonSchema = {
  type: 'object',
  required: ['kind'],
  properties: {
    kind: { enum: ['EventsNode', 'ActionsNode'] },
    event: nullable('string'),
    id: { type: ['integer', 'string', 'null'] },
    name: nullable('string'),
    custom_name: nullable('string'),
    properties: propertyFilters,
  },
};

/** PostHog's FunnelsQuery, the fields funnel correlation reads (others are accepted and ignored). */
const funnelsQuery: JsonSchema = {
  type: 'object',
  required: ['kind', 'series'],
  properties: {
    kind: { enum: ['FunnelsQuery'] },
    series: { type: 'array', items: eventsNode },
    dateRange: { type: ['object', 'null'], properties: { date_from: nullable('string'), date_to: nullable('string') } },
    properties: propertyFilters,
    aggregation_group_type_index: nullable('integer'),
    breakdownFilter: { type: ['object', 'null'], description: 'accepted; correlation does not break down' },
    funnelsFilter: {
      type: ['object', 'null'],
      properties: {
        funnelWindowInterval: nullable('integer'),
        funnelWindowIntervalUnit: { enum: ['second', 'minute', 'hour', 'day', 'week', 'month', null] },
        funnelOrderType: nullable('string'),
        exclusions: {
          type: ['array', 'null'],
          items: {
            ...eventsNode,
            properties: { ...(eventsNode.properties as JsonSchema), funnelFromStep: nullable('integer'), funnelToStep: nullable('integer') },
          },
        },
      },
    },
  },
};

/** PostHog's FunnelCorrelationQuery: the funnel wrapped in a FunnelsActorsQuery, with the correlation settings. */
const funnelCorrelationQuery: JsonSchema = {
  type: 'object',
  required: ['kind', 'source', 'funnelCorrelationType'],
  properties: {
    kind: { enum: ['FunnelCorrelationQuery'] },
    source: { type: 'object', required: ['kind', 'source'], properties: { kind: { enum: ['FunnelsActorsQuery'] }, source: funnelsQuery } },
    funnelCorrelationType: { enum: ['events', 'properties', 'event_with_properties'] },
    funnelCorrelationNames: stringList,
    funnelCorrelationExcludeNames: stringList,
    funnelCorrelationEventNames: stringList,
    funnelCorrelationExcludeEventNames: stringList,
    funnelCorrelationEventExcludePropertyNames: stringList,
  },
};

/** The `query` of a funnel correlation request, decoded when sent as JSON text. */
export const funnelCorrelationNode = Type.Unsafe<Record<string, unknown>>({
  type: 'object',
  required: ['kind'],
  properties: { kind: { enum: ['FunnelsQuery', 'FunnelCorrelationQuery'] } },
  allOf: [
    { if: { properties: { kind: { const: 'FunnelsQuery' } } }, then: funnelsQuery },
    { if: { properties: { kind: { const: 'FunnelCorrelationQuery' } } }, then: funnelCorrelationQuery },
  ],
});

export const FunnelRequest = component(
  'FunnelRequest',
  Type.Object(
    { query: Type.Optional(Type.Union([Type.Unsafe<Record<string, unknown>>(funnelsQuery), Type.String({ description: 'the same node as JSON text' })])) },
    { description: 'legacy funnel filter fields (also in the query string), or `query`: a FunnelsQuery, as an object or its JSON text' },
  ),
);

export const RetentionRequest = component(
  'RetentionRequest',
  Type.Object(
    { query: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.String({ description: 'the same node as JSON text' })])) },
    { description: 'legacy retention fields (also in the query string), or `query`: a RetentionQuery, as an object or its JSON text' },
  ),
);

export const PathRequest = component(
  'PathRequest',
  Type.Object(
    { query: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.String({ description: 'the same node as JSON text' })])) },
    { description: 'legacy path fields (also in the query string), or `query`: a PathsQuery, as an object or its JSON text' },
  ),
);

export const FunnelCorrelationRequest = component(
  'FunnelCorrelationRequest',
  Type.Object(
    { query: Type.Optional(Type.Union([funnelCorrelationNode, Type.String({ description: 'the same node as JSON text' })])) },
    {
      description:
        'legacy funnel filter fields (also in the query string), or `query`: a FunnelsQuery (with `funnel_correlation_*` beside it) or a FunnelCorrelationQuery, as an object or its JSON text',
    },
  ),
);

export const InsightWrite = component(
  'InsightWrite',
  Type.Object({
    name: Type.Optional(Nullable(Type.String({ maxLength: 400 }))),
    derived_name: Type.Optional(Nullable(Type.String({ maxLength: 400 }))),
    description: Type.Optional(Nullable(Type.String({ maxLength: 400 }))),
    filters: Type.Optional(Types<Record<string, unknown> | null>(['object', 'null'], { additionalProperties: true, description: 'legacy filter fields' })),
    query: Type.Optional(Types<unknown>(['object', 'string', 'null'], { description: 'a query node `{"kind": …}`, or the same as a JSON string' })),
    order: Type.Optional(Nullable(Type.Integer())),
    deleted: Type.Optional(Type.Boolean({ description: '`true` soft-deletes, `false` restores' })),
    dashboards: Type.Optional(
      Type.Array(Type.Integer(), {
        maxItems: 100,
        description: 'the dashboards to show it on: a tile is added on each new one and removed from each left out',
      }),
    ),
    tags: Type.Optional(Type.Array(Type.String())),
    favorited: Type.Optional(Type.Boolean()),
    saved: Type.Optional(Type.Boolean()),
  }),
);

export const InsightTiming = component(
  'InsightTiming',
  Type.Object(
    {
      session_id: Type.Optional(Type.String()),
      primary_interaction_id: Type.Optional(Type.String()),
      query_id: Type.Optional(Type.String()),
      is_primary_interaction: Type.Optional(Type.Boolean()),
      type: Type.Optional(Type.String()),
      context: Type.Optional(Type.String()),
      time_to_see_data_ms: Type.Optional(Type.Number({ minimum: 0 })),
      status: Type.Optional(Type.String()),
      api_response_bytes: Type.Optional(Type.Integer({ minimum: 0 })),
      current_url: Type.Optional(Type.String()),
      api_url: Type.Optional(Type.String()),
      insight: Type.Optional(Type.String()),
      action: Type.Optional(Type.String()),
      insights_fetched: Type.Optional(Type.Integer({ minimum: 0 })),
      insights_fetched_cached: Type.Optional(Type.Integer({ minimum: 0 })),
      min_last_refresh: Type.Optional(Types<string | null>(['string', 'null'], { format: 'date-time' })),
      max_last_refresh: Type.Optional(Types<string | null>(['string', 'null'], { format: 'date-time' })),
      is_frustrating: Type.Optional(Type.Boolean()),
    },
    { description: "a client's time-to-see-data report, stored as sent; the fields PostHog's metrics table types are checked" },
  ),
);

export const InsightViewed = component(
  'InsightViewed',
  Type.Object({ insight_ids: Type.Array(Type.Integer({ minimum: 1, maximum: 2147483647 }), { minItems: 1, maxItems: 2500 }) }),
);

/** InsightBasicSerializer's fields (`my_last_viewed`), in its order (a CSV's columns); `refreshing` is the only one the full body lacks. */
export const InsightBasic = component(
  'InsightBasic',
  Type.Object({
    ...Type.Pick(Insight, ['id', 'short_id', 'name', 'derived_name', 'filters', 'query', 'dashboards', 'dashboard_tiles', 'description', 'last_refresh'])
      .properties,
    refreshing: Type.Boolean(),
    ...Type.Pick(Insight, ['saved', 'tags', 'updated_at', 'created_by', 'created_at', 'last_modified_at', 'favorited', 'user_access_level', 'last_viewed_at'])
      .properties,
  }),
);

/** What a computation answers: its result and the fields PostHog sends with it. */
export const InsightResult = component('InsightResult', AnyObject({ description: 'the computation: `result` and the fields PostHog sends with it' }));
