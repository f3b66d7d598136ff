import { drfViolation, schemaValidator, type FieldViolation, type Validation } from '@plover/contracts';
import { sessionReplaySettingsSchema } from '@plover/accounts';
import { ApiError } from '@plover/core';

/**
 * JSON Schemas of the management API's request bodies and responses. Handlers validate bodies with these
 * (first error only, as PostHog), and /api/schema/ publishes the same objects in its OpenAPI document, so the
 * two cannot drift. Semantic rules that need the database or PostHog's exact wording stay in the handlers.
 */
export type JsonSchema = Record<string, unknown>;

const userBasic: JsonSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    uuid: { type: 'string', format: 'uuid' },
    distinct_id: { type: 'string' },
    first_name: { type: 'string' },
    last_name: { type: 'string' },
    email: { type: 'string', format: 'email' },
    is_email_verified: { type: 'boolean' },
    hedgehog_config: { type: ['object', 'null'], additionalProperties: true },
    role_at_organization: { type: 'string' },
  },
};

const propertiesObject: JsonSchema = { type: 'object', additionalProperties: true };

const nullable = (type: string): JsonSchema => ({ type: [type, 'null'] });
const stringList: JsonSchema = { type: ['array', 'null'], items: { type: 'string' } };
const propertyFilters: JsonSchema = { type: ['array', 'object', 'null'], description: 'property filters, or an AND/OR group of them' };

/** A funnel step or exclusion (PostHog's EventsNode; ActionsNode is refused: there are no actions). */
const eventsNode: JsonSchema = {
  type: 'object',
  required: ['kind'],
  properties: {
    kind: { enum: ['EventsNode', 'ActionsNode'] },
    event: nullable('string'),
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
export const funnelCorrelationNode: JsonSchema = {
  type: 'object',
  required: ['kind'],
  properties: { kind: { enum: ['FunnelsQuery', 'FunnelCorrelationQuery'] } },
  allOf: [
    { if: { properties: { kind: { const: 'FunnelsQuery' } } }, then: funnelsQuery },
    { if: { properties: { kind: { const: 'FunnelCorrelationQuery' } } }, then: funnelCorrelationQuery },
  ],
};

export const bodySchemas = {
  PersonalApiKeyCreate: {
    type: 'object',
    required: ['label', 'scopes'],
    properties: {
      label: { type: 'string', minLength: 1, maxLength: 40 },
      scopes: { type: 'array', minItems: 1, items: { type: 'string' }, description: '`*` or `<object>:read|write`' },
      scoped_teams: { type: ['array', 'null'], items: { type: 'integer', minimum: 1, maximum: 2147483647 } },
      scoped_organizations: { type: ['array', 'null'], items: { type: 'string', format: 'uuid' } },
    },
  },
  ProjectCreate: {
    type: 'object',
    required: ['name'],
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 200 },
      timezone: { type: 'string', description: 'IANA timezone; default UTC' },
      organization: { type: 'string', format: 'uuid' },
    },
  },
  ProjectUpdate: {
    type: 'object',
    description: 'Any subset of the fields; fields the API does not change (id, api_token, ...) are ignored',
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 200 },
      timezone: { type: 'string', description: 'IANA timezone' },
      ...sessionReplaySettingsSchema.properties,
    },
  },
  PersonPatch: {
    type: 'object',
    required: ['properties'],
    properties: { properties: { ...propertiesObject, description: 'merged into the person ($set)' } },
  },
  PersonBulkDelete: {
    type: 'object',
    properties: {
      distinct_ids: { type: ['array', 'null'], items: { type: 'string' }, description: 'at most 1000' },
      ids: { type: ['array', 'null'], items: { type: ['string', 'integer'] }, description: 'person uuids or ids; at most 1000' },
      delete_events: { type: 'boolean' },
      delete_recordings: { type: 'boolean' },
    },
  },
  SessionRecordingPlaylistWrite: {
    type: 'object',
    properties: {
      name: { type: ['string', 'null'], maxLength: 400 },
      derived_name: { type: ['string', 'null'], maxLength: 400 },
      description: { type: ['string', 'null'] },
      pinned: { type: 'boolean' },
      deleted: { type: 'boolean' },
      filters: { type: ['object', 'null'], additionalProperties: true },
      type: { type: ['string', 'null'], description: '`collection` or `filters`; create only' },
    },
  },
  InsightWrite: {
    type: 'object',
    properties: {
      name: { type: ['string', 'null'], maxLength: 400 },
      derived_name: { type: ['string', 'null'], maxLength: 400 },
      description: { type: ['string', 'null'], maxLength: 400 },
      filters: { type: ['object', 'null'], additionalProperties: true, description: 'legacy filter fields' },
      query: { type: ['object', 'string', 'null'], description: 'a query node `{"kind": …}`, or the same as a JSON string' },
      order: { type: ['integer', 'null'] },
      deleted: { type: 'boolean', description: '`true` soft-deletes, `false` restores' },
      dashboards: { type: 'array', items: { type: 'integer' }, description: 'deprecated; Plover has no dashboards, so only `[]` is valid' },
      tags: { type: 'array', items: { type: 'string' } },
      favorited: { type: 'boolean' },
      saved: { type: 'boolean' },
    },
  },
  InsightTiming: {
    type: 'object',
    description: "a client's time-to-see-data report, stored as sent; the fields PostHog's metrics table types are checked",
    properties: {
      session_id: { type: 'string' },
      primary_interaction_id: { type: 'string' },
      query_id: { type: 'string' },
      is_primary_interaction: { type: 'boolean' },
      type: { type: 'string' },
      context: { type: 'string' },
      time_to_see_data_ms: { type: 'number', minimum: 0 },
      status: { type: 'string' },
      api_response_bytes: { type: 'integer', minimum: 0 },
      current_url: { type: 'string' },
      api_url: { type: 'string' },
      insight: { type: 'string' },
      action: { type: 'string' },
      insights_fetched: { type: 'integer', minimum: 0 },
      insights_fetched_cached: { type: 'integer', minimum: 0 },
      min_last_refresh: { type: ['string', 'null'], format: 'date-time' },
      max_last_refresh: { type: ['string', 'null'], format: 'date-time' },
      is_frustrating: { type: 'boolean' },
    },
  },
  PlaylistRecordingAdd: { type: 'object', description: 'no fields: the recording is named by the path' },
  SessionRecordingUpdate: {
    type: 'object',
    properties: {
      viewed: { type: 'boolean', description: 'true marks the recording watched by the caller' },
      player_metadata: { type: ['object', 'null'], description: 'accepted as the web app sends it, not kept' },
    },
  },
  FeatureFlagWrite: {
    type: 'object',
    properties: {
      key: { type: 'string', maxLength: 400, description: 'letters, digits, `-` and `_`; required on create' },
      name: { type: ['string', 'null'] },
      filters: { type: 'object', additionalProperties: true },
      active: { type: 'boolean' },
      deleted: { type: 'boolean' },
      ensure_experience_continuity: { type: 'boolean' },
      is_remote_configuration: { type: 'boolean' },
      rollout_percentage: { type: ['number', 'null'], minimum: 0, maximum: 100 },
    },
  },
  CohortWrite: {
    type: 'object',
    properties: {
      name: { type: 'string', maxLength: 400 },
      description: { type: 'string', maxLength: 1000 },
      filters: { type: 'object', additionalProperties: true },
      is_static: { type: 'boolean', description: 'create only' },
      deleted: { type: 'boolean' },
      distinct_ids: { type: 'array', items: { type: ['string', 'integer'] }, description: 'members added to a static cohort' },
    },
  },
  EarlyAccessFeatureWrite: {
    type: 'object',
    properties: {
      name: { type: 'string', maxLength: 200, description: 'required on create' },
      description: { type: 'string' },
      stage: { type: 'string' },
      documentation_url: { type: 'string', maxLength: 800 },
      feature_flag_id: { type: 'integer', description: 'create only: an existing flag instead of a new one' },
      feature_flag_key: { type: 'string', maxLength: 400, description: "create only: the new flag's key" },
      deleted: { type: 'boolean' },
    },
  },
  SurveyWrite: {
    type: 'object',
    properties: {
      name: { type: 'string', maxLength: 400, description: 'required on create' },
      description: { type: 'string' },
      type: { type: 'string', description: 'create only' },
      questions: { type: 'array', items: { type: 'object', additionalProperties: true } },
      appearance: { type: ['object', 'null'], additionalProperties: true },
      conditions: { type: ['object', 'null'], additionalProperties: true },
      targeting_flag_filters: { type: ['object', 'null'], additionalProperties: true, description: 'create only' },
      linked_flag_id: { type: ['integer', 'null'], description: 'create only' },
      start_date: { type: ['string', 'null'], format: 'date-time' },
      end_date: { type: ['string', 'null'], format: 'date-time' },
      archived: { type: 'boolean' },
      deleted: { type: 'boolean' },
    },
  },
  FunnelRequest: {
    type: 'object',
    description: 'legacy funnel filter fields (also in the query string), or `query`: a FunnelsQuery, as an object or its JSON text',
    properties: { query: { anyOf: [funnelsQuery, { type: 'string', description: 'the same node as JSON text' }] } },
  },
  FunnelCorrelationRequest: {
    type: 'object',
    description:
      'legacy funnel filter fields (also in the query string), or `query`: a FunnelsQuery (with `funnel_correlation_*` beside it) or a FunnelCorrelationQuery, as an object or its JSON text',
    properties: { query: { anyOf: [funnelCorrelationNode, { type: 'string', description: 'the same node as JSON text' }] } },
  },
  InsightViewed: {
    type: 'object',
    required: ['insight_ids'],
    properties: { insight_ids: { type: 'array', minItems: 1, maxItems: 2500, items: { type: 'integer', minimum: 1, maximum: 2147483647 } } },
  },
  AccessControlPut: {
    type: 'object',
    required: ['access_level'],
    properties: {
      access_level: { type: ['string', 'null'], description: '`none`, `viewer`, `editor`; null removes the rule' },
      organization_member: { type: ['string', 'null'], format: 'uuid' },
      role: { type: 'null' },
    },
  },
  QueryRequest: {
    type: 'object',
    required: ['query'],
    properties: {
      query: {
        type: 'object',
        required: ['kind'],
        properties: { kind: { type: 'string', maxLength: 100 } },
        additionalProperties: true,
        description: 'a query node: HogQLQuery `{kind, query, values?}`, HogQLMetadata, TrendsQuery, or a wrapper with a `source`',
      },
      refresh: { type: ['string', 'boolean'], description: '`blocking` (default), `force_blocking`, `force_cache`, `async`, …' },
      client_query_id: { type: 'string', maxLength: 128 },
      name: { type: 'string', maxLength: 128 },
      async: { type: 'boolean' },
      filters_override: { type: ['object', 'null'] },
      variables_override: { type: ['object', 'null'] },
      limit_context: { type: ['string', 'null'] },
    },
  },
} satisfies Record<string, JsonSchema>;

export const responseSchemas = {
  Error: {
    type: 'object',
    required: ['type', 'code', 'detail', 'attr'],
    properties: { type: { type: 'string' }, code: { type: 'string' }, detail: { type: 'string' }, attr: { type: ['string', 'null'] } },
  },
  UserBasic: userBasic,
  Person: {
    type: 'object',
    properties: {
      id: { type: 'integer' },
      name: { type: 'string' },
      distinct_ids: { type: 'array', items: { type: 'string' } },
      properties: { type: ['object', 'null'], additionalProperties: true },
      created_at: { type: 'string', format: 'date-time' },
      uuid: { type: 'string', format: 'uuid' },
      is_identified: { type: 'boolean' },
    },
  },
  SessionRecording: {
    type: 'object',
    properties: {
      id: { type: 'string', description: 'the session id' },
      distinct_id: { type: 'string' },
      viewed: { type: 'boolean', description: 'by the caller' },
      viewers: { type: 'array', items: { type: 'string' }, description: 'the emails of the other users who watched it' },
      recording_duration: { type: 'integer', description: 'seconds' },
      active_seconds: { type: 'integer' },
      inactive_seconds: { type: 'integer' },
      start_time: { type: 'string', format: 'date-time' },
      end_time: { type: 'string', format: 'date-time' },
      click_count: { type: 'integer' },
      keypress_count: { type: 'integer' },
      mouse_activity_count: { type: 'integer' },
      console_log_count: { type: 'integer' },
      console_warn_count: { type: 'integer' },
      console_error_count: { type: 'integer' },
      start_url: { type: ['string', 'null'] },
      person: { type: 'object', description: 'the person (at most 10 distinct ids), or a stub with a null id when the distinct id has none' },
      retention_period_days: { type: 'integer' },
      expiry_time: { type: 'string', format: 'date-time' },
      recording_ttl: { type: 'integer', description: 'whole days until expiry' },
      snapshot_source: { type: 'string' },
      snapshot_library: { type: 'string' },
      ongoing: { type: 'boolean', description: 'data received in the last 5 minutes' },
      activity_score: { type: 'number' },
    },
  },
  Project: {
    type: 'object',
    properties: {
      id: { type: 'integer' },
      uuid: { type: 'string', format: 'uuid' },
      organization: { type: 'string', format: 'uuid' },
      name: { type: 'string' },
      api_token: { type: 'string' },
      timezone: { type: 'string' },
      ...sessionReplaySettingsSchema.properties,
    },
  },
  PersonalApiKey: {
    type: 'object',
    properties: {
      id: { type: 'string' },
      label: { type: 'string' },
      value: { type: ['string', 'null'], description: 'the key, on create only' },
      mask_value: { type: 'string' },
      scopes: { type: 'array', items: { type: 'string' } },
      scoped_teams: { type: 'array', items: { type: 'integer' } },
      scoped_organizations: { type: 'array', items: { type: 'string' } },
      created_at: { type: 'string', format: 'date-time' },
      last_used_at: { type: ['string', 'null'], format: 'date-time' },
    },
  },
  SessionRecordingPlaylist: {
    type: 'object',
    properties: {
      id: { type: 'integer' },
      short_id: { type: 'string' },
      name: { type: ['string', 'null'] },
      derived_name: { type: ['string', 'null'] },
      description: { type: 'string' },
      pinned: { type: 'boolean' },
      created_at: { type: 'string', format: 'date-time' },
      created_by: { oneOf: [{ $ref: '#/components/schemas/UserBasic' }, { type: 'null' }] },
      deleted: { type: 'boolean' },
      filters: { type: ['object', 'null'] },
      last_modified_at: { type: 'string', format: 'date-time' },
      last_modified_by: { oneOf: [{ $ref: '#/components/schemas/UserBasic' }, { type: 'null' }] },
      type: { type: 'string', enum: ['collection', 'filters'] },
      user_access_level: { type: 'string', enum: ['none', 'viewer', 'editor'] },
      recordings_counts: { type: 'object', additionalProperties: { type: 'object', additionalProperties: true } },
    },
  },
  Insight: {
    type: 'object',
    properties: {
      id: { type: 'integer' },
      short_id: { type: 'string' },
      name: { type: ['string', 'null'] },
      derived_name: { type: ['string', 'null'] },
      filters: { type: 'object' },
      query: { type: ['object', 'null'] },
      order: { type: ['integer', 'null'] },
      deleted: { type: 'boolean' },
      dashboards: { type: 'array', items: { type: 'integer' } },
      created_at: { type: 'string', format: 'date-time' },
      created_by: { oneOf: [{ $ref: '#/components/schemas/UserBasic' }, { type: 'null' }] },
      description: { type: ['string', 'null'] },
      updated_at: { type: 'string', format: 'date-time' },
      tags: { type: 'array', items: { type: 'string' } },
      favorited: { type: 'boolean' },
      saved: { type: 'boolean' },
      last_modified_at: { type: 'string', format: 'date-time' },
      last_modified_by: { oneOf: [{ $ref: '#/components/schemas/UserBasic' }, { type: 'null' }] },
      timezone: { type: 'string' },
      user_access_level: { type: 'string', enum: ['none', 'viewer', 'editor'] },
      last_viewed_at: { type: ['string', 'null'], format: 'date-time' },
    },
  },
  FeatureFlag: {
    type: 'object',
    properties: {
      id: { type: 'integer' },
      name: { type: 'string' },
      key: { type: 'string' },
      filters: {
        type: 'object',
        additionalProperties: true,
        description: '`groups`, `multivariate`, `payloads`, `super_groups`, `aggregation_group_type_index`',
      },
      deleted: { type: 'boolean' },
      active: { type: 'boolean' },
      created_by: { oneOf: [{ $ref: '#/components/schemas/UserBasic' }, { type: 'null' }] },
      created_at: { type: 'string', format: 'date-time' },
      updated_at: { type: 'string', format: 'date-time' },
      version: { type: 'integer' },
      is_simple_flag: { type: 'boolean' },
      rollout_percentage: { type: ['number', 'null'] },
      ensure_experience_continuity: { type: 'boolean' },
      is_remote_configuration: { type: 'boolean' },
      can_edit: { type: 'boolean' },
      status: { type: 'string', enum: ['ACTIVE', 'DELETED'] },
      user_access_level: { type: 'string', enum: ['none', 'viewer', 'editor'] },
    },
  },
  Cohort: {
    type: 'object',
    properties: {
      id: { type: 'integer' },
      name: { type: 'string' },
      description: { type: 'string' },
      filters: { type: 'object', additionalProperties: true, description: '`properties`: nested `{type: AND|OR, values}` groups' },
      is_static: { type: 'boolean' },
      deleted: { type: 'boolean' },
      version: { type: 'integer' },
      count: { type: ['integer', 'null'], description: 'members of a static cohort' },
      created_by: { type: ['object', 'null'] },
      created_at: { type: 'string', format: 'date-time' },
    },
  },
  EarlyAccessFeature: {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      name: { type: 'string' },
      description: { type: 'string' },
      stage: { type: 'string', enum: ['draft', 'concept', 'alpha', 'beta', 'general-availability', 'archived'] },
      documentation_url: { type: 'string' },
      created_at: { type: 'string', format: 'date-time' },
      feature_flag: { type: ['object', 'null'], description: '`{id, key, filters}`' },
    },
  },
  Survey: {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      name: { type: 'string' },
      description: { type: 'string' },
      type: { type: 'string', enum: ['popover', 'widget', 'api', 'external_survey'] },
      questions: { type: 'array', items: { type: 'object', additionalProperties: true } },
      appearance: { type: ['object', 'null'] },
      conditions: { type: ['object', 'null'] },
      start_date: { type: ['string', 'null'], format: 'date-time' },
      end_date: { type: ['string', 'null'], format: 'date-time' },
      archived: { type: 'boolean' },
      created_at: { type: 'string', format: 'date-time' },
      linked_flag: { type: ['object', 'null'], description: '`{id, key}`' },
      linked_flag_id: { type: ['integer', 'null'] },
      targeting_flag: { type: ['object', 'null'], description: '`{id, key, filters}`' },
    },
  },
} satisfies Record<string, JsonSchema>;

export type BodySchemaName = keyof typeof bodySchemas;
export type ResponseSchemaName = keyof typeof responseSchemas;

/** A JSON Schema's first violation as PostHog's 400. */
function refuse(violation: FieldViolation): ApiError {
  return ApiError.validation(violation.detail, violation.attr, violation.code);
}

const validators = new Map<BodySchemaName, (value: unknown) => Validation<unknown, FieldViolation>>();

/** Validates a request body against its schema; throws the first error as a 400 in PostHog's shape. */
export function validateBody(name: BodySchemaName, body: unknown): void {
  let validate = validators.get(name);
  if (!validate) {
    validate = schemaValidator<unknown, FieldViolation>(bodySchemas[name], drfViolation);
    validators.set(name, validate);
  }
  const result = validate(body);
  if (!result.ok) throw refuse(result.violation);
}

/** A validator of some other value (a route's query parameters), throwing as {@link validateBody} does. */
export function valueValidator(schema: JsonSchema): (value: unknown) => void {
  const validate = schemaValidator<unknown, FieldViolation>(schema, drfViolation);
  return (value) => {
    const result = validate(value);
    if (!result.ok) throw refuse(result.violation);
  };
}
