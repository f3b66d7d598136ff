import { Router } from 'express';
import { MAX_LIMIT } from './http/render';
import type { Route } from './http/route-table';
import { PROJECT_MOUNTS, type RouteTable } from './routes';
import { bodySchemas, responseSchemas, type BodySchemaName, type JsonSchema } from './schemas';

/**
 * OpenAPI 3.1 for the routes this service serves, derived from the route table (http/route-table.ts) and the
 * schemas the routes validate with (schemas/index.ts). Served without authentication at /api/schema/, as
 * PostHog does.
 */
interface Operation {
  method: 'get' | 'post' | 'patch' | 'put' | 'delete';
  path: string;
  scope?: string;
  summary: string;
  body?: BodySchemaName;
  response?: { status: number; schema?: string; paginated?: boolean; array?: boolean };
  query?: string[];
}

const P = '/api/projects/{project_id}';
const E = '/api/environments/{project_id}';
const PAGE = ['limit', 'offset', 'format'];

/** PATCH and PUT of one object: wherever PUT is served it is the same partial update as PATCH. */
const updates = (op: Omit<Operation, 'method'>): Operation[] => (['patch', 'put'] as const).map((method) => ({ ...op, method }));

/**
 * A flag-side object under `base` (feature-flags/): list (newest first), create, retrieve, update (`deleted: true`
 * soft-deletes), and DELETE refused with 405. `body` checks the field types; the handlers add the rules that
 * need the database or PostHog's wording.
 */
function flagResource(base: string, object: string, schema: string, body: BodySchemaName, [one, many]: [string, string], listQuery = PAGE): Operation[] {
  const item = `${base}/{id}/`;
  return [
    {
      method: 'get',
      path: `${base}/`,
      scope: `${object}:read`,
      summary: `List ${many}, newest first`,
      query: listQuery,
      response: { status: 200, schema, paginated: true },
    },
    { method: 'post', path: `${base}/`, scope: `${object}:write`, summary: `Create ${one}`, body, response: { status: 201, schema } },
    { method: 'get', path: item, scope: `${object}:read`, summary: `Retrieve ${one}`, response: { status: 200, schema } },
    ...updates({ path: item, scope: `${object}:write`, summary: `Update ${one}; \`deleted: true\` soft-deletes`, body, response: { status: 200, schema } }),
    { method: 'delete', path: item, scope: `${object}:write`, summary: 'Hard delete is not allowed: 405', response: { status: 405 } },
  ];
}

const OPERATIONS: Operation[] = [
  ...[P, E].flatMap((prefix): Operation[] => [
    {
      method: 'get',
      path: `${prefix}/persons/`,
      scope: 'person:read',
      summary: 'List persons, newest first',
      query: [...PAGE, 'distinct_id', 'email', 'search', 'properties', 'include_total'],
      response: { status: 200, schema: 'Person', paginated: true },
    },
    {
      method: 'get',
      path: `${prefix}/persons/{id}/`,
      scope: 'person:read',
      summary: 'A person by integer id or uuid',
      response: { status: 200, schema: 'Person' },
    },
    ...updates({
      path: `${prefix}/persons/{id}/`,
      scope: 'person:write',
      summary: 'Merge properties into a person ($set)',
      body: 'PersonPatch',
      response: { status: 200, schema: 'Person' },
    }),
    {
      method: 'delete',
      path: `${prefix}/persons/{id}/`,
      scope: 'person:write',
      summary: 'Delete a person; `delete_events=true` queues deletion of its events',
      query: ['delete_events'],
      response: { status: 204 },
    },
    {
      method: 'post',
      path: `${prefix}/persons/bulk_delete/`,
      scope: 'person:write',
      summary: 'Delete up to 1000 persons',
      body: 'PersonBulkDelete',
      response: { status: 202 },
    },
    {
      method: 'get',
      path: `${prefix}/session_recording_playlists/`,
      scope: 'session_recording_playlist:read',
      summary: 'List playlists',
      query: [...PAGE, 'created_by', 'short_id', 'search', 'pinned', 'type', 'user'],
      response: { status: 200, schema: 'SessionRecordingPlaylist', paginated: true },
    },
    {
      method: 'post',
      path: `${prefix}/session_recording_playlists/`,
      scope: 'session_recording_playlist:write',
      summary: 'Create a playlist',
      body: 'SessionRecordingPlaylistWrite',
      response: { status: 201, schema: 'SessionRecordingPlaylist' },
    },
    {
      method: 'get',
      path: `${prefix}/session_recording_playlists/{short_id}/`,
      scope: 'session_recording_playlist:read',
      summary: 'A playlist',
      response: { status: 200, schema: 'SessionRecordingPlaylist' },
    },
    ...updates({
      path: `${prefix}/session_recording_playlists/{short_id}/`,
      scope: 'session_recording_playlist:write',
      summary: 'Update a playlist; `deleted: true` soft-deletes',
      body: 'SessionRecordingPlaylistWrite',
      response: { status: 200, schema: 'SessionRecordingPlaylist' },
    }),
    {
      method: 'delete',
      path: `${prefix}/session_recording_playlists/{short_id}/`,
      scope: 'session_recording_playlist:write',
      summary: 'Hard delete is not allowed: 405, empty body',
      response: { status: 405 },
    },
    {
      method: 'get',
      path: `${prefix}/session_recording_playlists/{short_id}/recordings/`,
      scope: 'session_recording_playlist:read',
      summary: 'Recordings in a playlist',
      query: PAGE,
      response: { status: 200 },
    },
    {
      method: 'post',
      path: `${prefix}/session_recording_playlists/{short_id}/recordings/{session_recording_id}/`,
      scope: 'session_recording_playlist:write',
      summary: 'Add a recording (idempotent)',
      body: 'PlaylistRecordingAdd',
      response: { status: 200 },
    },
    {
      method: 'delete',
      path: `${prefix}/session_recording_playlists/{short_id}/recordings/{session_recording_id}/`,
      scope: 'session_recording_playlist:write',
      summary: 'Remove a recording',
      response: { status: 204 },
    },
    {
      method: 'get',
      path: `${prefix}/session_recording_playlists/{short_id}/access_controls/`,
      scope: 'access_control:read',
      summary: 'Access rules of a playlist',
      response: { status: 200 },
    },
    {
      method: 'put',
      path: `${prefix}/session_recording_playlists/{short_id}/access_controls/`,
      scope: 'access_control:write',
      summary: 'Set or remove an access rule',
      body: 'AccessControlPut',
      response: { status: 200 },
    },
    {
      method: 'get',
      path: `${prefix}/session_recordings/{session_recording_id}/`,
      scope: 'session_recording:read',
      summary: 'Recording metadata; marks it watched',
      response: { status: 200 },
    },
    {
      method: 'get',
      path: `${prefix}/insights/`,
      scope: 'insight:read',
      summary: 'List saved insights by `order`, then last modified',
      query: [...PAGE, 'saved', 'favorited', 'search', 'short_id', 'created_by', 'user'],
      response: { status: 200, schema: 'Insight', paginated: true },
    },
    {
      method: 'post',
      path: `${prefix}/insights/`,
      scope: 'insight:write',
      summary: 'Create a saved insight (counts as a view)',
      body: 'InsightWrite',
      response: { status: 201, schema: 'Insight' },
    },
    {
      method: 'get',
      path: `${prefix}/insights/{id}/`,
      scope: 'insight:read',
      summary: 'A saved insight by id or short_id; records a view',
      response: { status: 200, schema: 'Insight' },
    },
    ...updates({
      path: `${prefix}/insights/{id}/`,
      scope: 'insight:write',
      summary: 'Update a saved insight; `deleted: true` soft-deletes',
      body: 'InsightWrite',
      response: { status: 200, schema: 'Insight' },
    }),
    {
      method: 'delete',
      path: `${prefix}/insights/{id}/`,
      scope: 'insight:write',
      summary: 'Hard delete is not allowed: 405, empty body',
      response: { status: 405 },
    },
    {
      method: 'get',
      path: `${prefix}/insights/{id}/access_controls/`,
      scope: 'access_control:read',
      summary: 'Access rules of an insight',
      response: { status: 200 },
    },
    {
      method: 'put',
      path: `${prefix}/insights/{id}/access_controls/`,
      scope: 'access_control:write',
      summary: 'Set or remove an access rule',
      body: 'AccessControlPut',
      response: { status: 200 },
    },
    {
      method: 'get',
      path: `${prefix}/insights/my_last_viewed/`,
      scope: 'insight:read',
      summary: 'Your 5 most recently viewed insights, newest first',
      response: { status: 200, schema: 'Insight', array: true },
    },
    {
      method: 'post',
      path: `${prefix}/insights/viewed/`,
      scope: 'insight:read',
      summary: 'Record views of insights',
      body: 'InsightViewed',
      response: { status: 201 },
    },
    {
      method: 'post',
      path: `${prefix}/insights/timing/`,
      scope: 'insight:write',
      summary: 'Record a client timing report',
      body: 'InsightTiming',
      response: { status: 200 },
    },
    ...(['get', 'post'] as const).flatMap((method): Operation[] => [
      {
        method,
        path: `${prefix}/insights/trend/`,
        scope: 'insight:read',
        summary:
          'Legacy trend: series per interval (legacy filter fields or a TrendsQuery `query`); `insight` STICKINESS or LIFECYCLE (or `shown_as` Stickiness / Lifecycle) for stickiness or lifecycle; no series → `result: []`',
        query: ['format', 'refresh', 'insight', 'shown_as'],
        response: { status: 200 },
      },
      {
        method,
        path: `${prefix}/insights/funnel/correlation/`,
        scope: 'insight:read',
        summary: 'Legacy funnel correlation: odds ratios of events or properties (legacy funnel fields, or a FunnelsQuery / FunnelCorrelationQuery `query`)',
        query: ['format', 'refresh', 'query'],
        ...(method === 'post' ? { body: 'FunnelCorrelationRequest' as const } : {}),
        response: { status: 200 },
      },
    ]),
    { method: 'get', path: `${prefix}/groups_types/`, scope: 'group:read', summary: 'Group types', response: { status: 200 } },
    {
      method: 'get',
      path: `${prefix}/groups/`,
      scope: 'group:read',
      summary: 'Groups of one type',
      query: [...PAGE, 'group_type_index', 'search'],
      response: { status: 200, paginated: true },
    },
    {
      method: 'get',
      path: `${prefix}/events/`,
      scope: 'query:read',
      summary: 'Events, newest first',
      query: [...PAGE, 'event', 'distinct_id', 'person_id', 'properties', 'after', 'before'],
      response: { status: 200, paginated: true },
    },
    {
      method: 'get',
      path: `${prefix}/ingestion_warnings/`,
      scope: 'project:read',
      summary: 'Ingestion warnings, newest first',
      query: PAGE,
      response: { status: 200, paginated: true },
    },
    ...flagResource(
      `${prefix}/feature_flags`,
      'feature_flag',
      'FeatureFlag',
      'FeatureFlagWrite',
      ['a feature flag', 'feature flags'],
      [...PAGE, 'search', 'active'],
    ),
    {
      method: 'get',
      path: `${prefix}/feature_flags/{id}/access_controls/`,
      scope: 'access_control:read',
      summary: 'Access rules of a feature flag',
      response: { status: 200 },
    },
    {
      method: 'put',
      path: `${prefix}/feature_flags/{id}/access_controls/`,
      scope: 'access_control:write',
      summary: 'Set or remove an access rule',
      body: 'AccessControlPut',
      response: { status: 200 },
    },
    {
      method: 'get',
      path: `${prefix}/feature_flags/{id}/remote_config/`,
      scope: 'feature_flag:read',
      summary: 'The payload of a remote-configuration flag, by id or key, JSON-encoded',
      response: { status: 200 },
    },
    ...flagResource(`${prefix}/cohorts`, 'cohort', 'Cohort', 'CohortWrite', ['a cohort', 'cohorts']),
    ...flagResource(`${prefix}/early_access_features`, 'early_access_feature', 'EarlyAccessFeature', 'EarlyAccessFeatureWrite', [
      'an early access feature',
      'early access features',
    ]),
    ...flagResource(`${prefix}/surveys`, 'survey', 'Survey', 'SurveyWrite', ['a survey', 'surveys']),
  ]),
];

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const queryParam = (name: string, schema: JsonSchema, required = false) => ({ name, in: 'query', required, schema });
const pathParams = (path: string) => [...path.matchAll(/\{([a-z_]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
const errorResponse = { description: 'Error', content: { 'application/json': { schema: ref('Error') } } };

/** `/api/projects/:project_id` + `/persons/:id` → `/api/projects/{project_id}/persons/{id}/`. */
export function openApiPath(mount: string, path: string): string {
  return `${mount}${path === '/' ? '' : path}/`.replace(/:([A-Za-z_]+)/g, '{$1}');
}

function successBody(route: Route): JsonSchema | undefined {
  const { schema, array } = route.response;
  if (!schema && !route.paginated) return undefined;
  const item = schema ? ref(schema) : { type: 'object' };
  if (route.paginated === 'has_next') return { type: 'object', properties: { results: { type: 'array', items: item }, has_next: { type: 'boolean' } } };
  if (route.paginated === 'envelope') {
    return {
      type: 'object',
      properties: {
        count: { type: 'integer' },
        next: { type: ['string', 'null'] },
        previous: { type: ['string', 'null'] },
        results: { type: 'array', items: item },
      },
    };
  }
  return array ? { type: 'array', items: item } : item;
}

function operationOf(route: Route, path: string): Record<string, unknown> {
  const query = route.query;
  const parameters = [
    ...pathParams(path),
    ...(route.paginated
      ? [queryParam('limit', { type: 'integer', minimum: 1, maximum: MAX_LIMIT }), queryParam('offset', { type: 'integer', minimum: 0 })]
      : []),
    ...(route.csv ? [queryParam('format', { enum: ['json', 'csv'] })] : []),
    ...Object.entries(query?.properties ?? {}).map(([name, schema]) => queryParam(name, schema, query?.required?.includes(name))),
  ];
  const schema = successBody(route);
  const content = schema && { 'application/json': { schema }, ...(route.csv ? { 'text/csv': { schema: { type: 'string' } } } : {}) };
  return {
    summary: route.summary,
    ...(route.scope ? { 'x-required-scope': route.scope } : {}),
    parameters,
    ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: ref(route.body) } } } } : {}),
    responses: { [String(route.response.status)]: { description: 'Success', ...(content ? { content } : {}) }, default: errorResponse },
  };
}

/** The OpenAPI 3.1 document of a route table: every route under each of its mounts. */
export function openApiDocument(table: RouteTable): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const mounted: Array<[mount: string, routes: Route[]]> = [
    ['/api', table.api],
    ...PROJECT_MOUNTS.map((mount): [string, Route[]] => [`/api${mount}`, table.project]),
  ];
  for (const [mount, routes] of mounted) {
    for (const route of routes) {
      const path = openApiPath(mount, route.path);
      (paths[path] ??= {})[route.method] = operationOf(route, path);
    }
  }
  for (const op of OPERATIONS) {
    const queryParams = (op.query ?? ['format']).map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } }));
    const response = op.response ?? { status: 200 };
    let content: unknown;
    if (response.schema || response.paginated) {
      const item = response.schema ? ref(response.schema) : { type: 'object' };
      const schema = response.paginated
        ? {
            type: 'object',
            properties: {
              count: { type: 'integer' },
              next: { type: ['string', 'null'] },
              previous: { type: ['string', 'null'] },
              results: { type: 'array', items: item },
            },
          }
        : response.array
          ? { type: 'array', items: item }
          : item;
      content = { 'application/json': { schema }, 'text/csv': { schema: { type: 'string' } } };
    }
    (paths[op.path] ??= {})[op.method] = {
      summary: op.summary,
      ...(op.scope ? { 'x-required-scope': op.scope } : {}),
      parameters: [...pathParams(op.path), ...queryParams],
      ...(op.body ? { requestBody: { required: true, content: { 'application/json': { schema: ref(op.body) } } } } : {}),
      responses: {
        [String(response.status)]: { description: 'Success', ...(content ? { content } : {}) },
        default: errorResponse,
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Plover management API', version: '0.1.0' },
    components: {
      schemas: { ...bodySchemas, ...responseSchemas },
      securitySchemes: { PersonalAPIKey: { type: 'http', scheme: 'bearer', description: '`phx_…` personal API key' } },
    },
    security: [{ PersonalAPIKey: [] }],
    paths,
  };
}

/** `/api/schema/`: the document of `table`, built once. */
export function schemaRoutes(table: RouteTable): Router {
  const router = Router();
  const document = JSON.stringify(openApiDocument(table));
  router.get('/schema', (_req, res) => {
    res.type('application/vnd.oai.openapi+json').send(document);
  });
  return router;
}
