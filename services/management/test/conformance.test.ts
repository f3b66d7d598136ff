import request from 'supertest';
import { Type, type TSchema } from '@sinclair/typebox';
import { insertSnapshotBatches, type ClickHouse, type ClickHouseParams, type StatementSettings } from '@plover/clickhouse';
import { schemaValidator } from '@plover/contracts';
import { uuidv7 } from '@plover/core';
import { PersonReads, PersonStore } from '@plover/persons';
import type { Route } from '../src/http/route-table';
import { queryKinds } from '../src/query/kinds';
import { PROJECT_MOUNTS } from '../src/routes';
import { ErrorBody, type JsonSchema } from '../src/shared/schema';
import { snapshotBatch } from '../../../packages/clickhouse/test/support/snapshot-batch';
import { backends, bearer, useWorld } from './support/app';
import { useChdb } from './support/recordings';
import { declaredTable } from './support/table';

/**
 * Response conformance, generated from the route table: every route is called on its happy path and with each
 * error its declaration implies (no key → 401; a key without its scope → 403; a body or query its schemas refuse
 * → 400; a path naming nothing → 404), and every answer is validated against the schema the route declares
 * (errors against the Error schema). A new route is covered without touching this file; only a route whose happy
 * path needs an object or a body the schemas alone cannot give names it in EXAMPLES below. The data happy paths
 * read (a person, a recording) is ingested first, into Postgres and chDB; every query kind runs once through
 * `/query/` (KIND_EXAMPLES: a new kind without an example fails).
 */

jest.setTimeout(180_000);

const table = declaredTable();
const PROJECT = PROJECT_MOUNTS[0]!;
const mounted = [...table.api.map((route) => ({ route, mount: '' })), ...table.project.map((route) => ({ route, mount: PROJECT }))];
const label = (route: Route, mount: string) => `${route.method.toUpperCase()} ${mount}${route.path}`;

/** The schema of a successful answer, as the OpenAPI document declares it. */
function successSchema(route: Route): TSchema | undefined {
  const item = route.response.schema;
  if (route.paginated === 'has_next') return Type.Object({ results: Type.Array(item ?? Type.Object({})), has_next: Type.Boolean() });
  if (route.paginated === 'envelope') {
    return Type.Object({
      count: Type.Optional(Type.Integer()),
      next: Type.Union([Type.String(), Type.Null()]),
      previous: Type.Union([Type.String(), Type.Null()]),
      results: Type.Array(item ?? Type.Object({})),
    });
  }
  return item;
}

function conforms(schema: TSchema | JsonSchema, body: unknown): string | null {
  const result = schemaValidator(schema)(body);
  return result.ok ? null : `${result.violation.attr ?? '(root)'}: ${result.violation.detail}`;
}

/** A value of the wrong JSON type for `schema`. */
const wrongFor = (schema: JsonSchema): unknown => (JSON.stringify(schema.type ?? '').includes('object') || schema.anyOf ? 12345 : { wrong: true });

/** A body the route's schema refuses: its first property of the wrong type, or a required one missing. */
function refusedBody(schema: JsonSchema): unknown {
  const [first] = Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>);
  if (first) return { [first[0]]: wrongFor(first[1]) };
  return [];
}

/** A query string the route's query schema refuses, when one of its parameters is typed. */
function refusedQuery(route: Route): string | undefined {
  const query = route.query as { properties: Record<string, JsonSchema>; required?: string[] } | undefined;
  if (!query) return undefined;
  if (query.required?.length) return '';
  const typed = Object.entries(query.properties).find(([, schema]) => schema.type === 'integer' || schema.type === 'boolean' || schema.enum);
  return typed && `${typed[0]}=not-a-valid-value`;
}

/** What a happy path needs beyond the schemas: a body with the semantic fields, the ids its path names. */
interface Example {
  body?: unknown;
  query?: string;
  /** The path's ids, where they name no object a collection's POST created. */
  ids?: Record<string, string>;
  /** What a path naming nothing answers, where its id is not an object's (404 otherwise). */
  missing?: number;
}

const HOGQL = { kind: 'HogQLQuery', query: 'select event, count() from events group by event' };
const TRENDS = { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: '$pageview' }] };
const FUNNEL = {
  kind: 'FunnelsQuery',
  series: [
    { kind: 'EventsNode', event: '$pageview' },
    { kind: 'EventsNode', event: 'signup' },
  ],
};

/** A node of every query kind, run through `POST /query/` and validated against the kind's declared response. */
/** A query node: its kind, the node it wraps (`source`) and its other fields. */
interface QueryNode {
  kind: string;
  source?: QueryNode;
  [field: string]: unknown;
}

const KIND_EXAMPLES: Record<string, QueryNode> = {
  HogQLQuery: HOGQL,
  HogQLMetadata: { kind: 'HogQLMetadata', query: 'select nothing from events' },
  EventsQuery: { kind: 'EventsQuery', select: ['*', 'event', 'person', 'count()'], after: 'all' },
  TrendsQuery: TRENDS,
  StickinessQuery: { ...TRENDS, kind: 'StickinessQuery' },
  LifecycleQuery: { ...TRENDS, kind: 'LifecycleQuery' },
  FunnelsQuery: FUNNEL,
  ActorsQuery: { kind: 'ActorsQuery', source: { kind: 'InsightActorsQuery', source: { ...TRENDS, kind: 'StickinessQuery' }, day: 1, includeRecordings: true } },
  FunnelCorrelationQuery: { kind: 'FunnelCorrelationQuery', source: { kind: 'FunnelsActorsQuery', source: FUNNEL }, funnelCorrelationType: 'events' },
  RetentionQuery: { kind: 'RetentionQuery', retentionFilter: { targetEntity: { id: '$pageview', type: 'events' } } },
  PathsQuery: { kind: 'PathsQuery', pathsFilter: { includeEventTypes: ['$pageview'] } },
  WebOverviewQuery: { kind: 'WebOverviewQuery', dateRange: { date_from: '-7d' }, compareFilter: { compare: true }, properties: [] },
  WebStatsTableQuery: { kind: 'WebStatsTableQuery', breakdownBy: 'Page', dateRange: { date_from: '-7d' }, includeBounceRate: true, properties: [] },
  WebGoalsQuery: { kind: 'WebGoalsQuery', dateRange: { date_from: '-7d' }, compareFilter: { compare: true }, properties: [] },
  WebExternalClicksTableQuery: { kind: 'WebExternalClicksTableQuery', dateRange: { date_from: '-7d' }, stripQueryParams: true, properties: [] },
  InsightVizNode: { kind: 'InsightVizNode', source: TRENDS },
  DataTableNode: { kind: 'DataTableNode', source: HOGQL },
  DataVisualizationNode: { kind: 'DataVisualizationNode', source: HOGQL },
  // experiment_id: a launched experiment, created in beforeAll.
  ExperimentExposureQuery: { kind: 'ExperimentExposureQuery', experiment_id: 0 },
  ExperimentQuery: {
    kind: 'ExperimentQuery',
    experiment_id: 0,
    metric: { kind: 'ExperimentMetric', metric_type: 'funnel', series: [{ kind: 'EventsNode', event: 'purchase' }] },
  },
};

const EXAMPLES: Record<string, Example> = {
  'POST /personal_api_keys': { body: { label: 'conformance', scopes: ['*'] } },
  'POST /projects': { body: { name: 'Conformance' } },
  'PATCH /': { body: { name: 'Renamed' } },
  'PUT /': { body: { name: 'Renamed' } },
  'POST /persons/bulk_delete': { body: { distinct_ids: ['nobody'] } },
  'PATCH /persons/:id': { body: { properties: { a: 1 } } },
  'PUT /persons/:id': { body: { properties: { a: 1 } } },
  'POST /session_recording_playlists': { body: { name: 'Conformance' } },
  'POST /session_recording_playlists/:short_id/recordings/bulk_add': { body: { session_recording_ids: ['conformance-session'] } },
  'POST /session_recording_playlists/:short_id/recordings/bulk_delete': { body: { session_recording_ids: ['conformance-session'] } },
  'POST /insights': { body: { name: 'Conformance', query: { kind: 'TrendsQuery', series: [] } } },
  'POST /insights/viewed': { body: { insight_ids: [1] } },
  'PUT /insights/:id/access_controls': { body: { access_level: 'editor' } },
  'PUT /session_recording_playlists/:short_id/access_controls': { body: { access_level: 'editor' } },
  'PUT /feature_flags/:id/access_controls': { body: { access_level: 'editor' } },
  'PATCH /session_recordings/:session_recording_id': { body: { viewed: true } },
  'GET /groups': { query: 'group_type_index=0' },
  'GET /insights/funnel': { query: `events=${encodeURIComponent(JSON.stringify([{ id: 'signup' }, { id: 'purchase' }]))}` },
  'POST /insights/funnel': { body: { events: [{ id: 'signup' }, { id: 'purchase' }] } },
  'POST /feature_flags': {
    body: { key: 'conformance', is_remote_configuration: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '"x"' } } },
  },
  'POST /cohorts': { body: { name: 'Conformance', filters: { properties: { type: 'AND', values: [] } } } },
  'POST /early_access_features': { body: { name: 'Early access', stage: 'beta' } },
  'POST /actions': { body: { name: 'Conformance', steps: [{ event: '$autocapture', selector: 'form > button', text: 'Go' }] } },
  'POST /experiments': { body: { name: 'Conformance', feature_flag_key: 'conformance-experiment' } },
  'POST /experiments/:id/ship_variant': { body: { variant_key: 'test' } },
  'POST /surveys': { body: { name: 'Conformance', type: 'popover', questions: [{ type: 'open', question: 'Why?' }] } },
  'POST /surveys/:id/responses/:uuid/archive': { ids: { uuid: '018f0000-0000-7000-8000-000000000035' } },
  'POST /surveys/:id/responses/:uuid/unarchive': { ids: { uuid: '018f0000-0000-7000-8000-000000000035' } },
  'POST /query': { body: { query: HOGQL, client_query_id: 'conformance-query' } },
  // The path names the node's kind; a kind the body does not have is a 400.
  'POST /query/:id': { body: { query: HOGQL }, ids: { id: 'HogQLQuery' }, missing: 400 },
  'GET /query/:id': { ids: { id: 'conformance-query' } },
  'DELETE /query/:id': { ids: { id: 'conformance-query' } },
};

const errorCases = mounted.flatMap(({ route, mount }) => {
  const cases: Array<{ name: string; status: number; route: Route; mount: string; key?: 'none' | 'unscoped'; body?: unknown; query?: string; missing?: true }> =
    [];
  if (route.scope !== null) {
    cases.push({ name: '401 without a key', status: 401, route, mount, key: 'none' });
    cases.push({ name: `403 without ${route.scope}`, status: 403, route, mount, key: 'unscoped' });
  }
  if (route.body && route.response.status !== 405) cases.push({ name: '400 on a refused body', status: 400, route, mount, body: refusedBody(route.body) });
  const query = refusedQuery(route);
  if (query !== undefined && route.response.status !== 405) cases.push({ name: '400 on a refused query', status: 400, route, mount, query });
  if (/:(id|short_id|session_recording_id)\b/.test(route.path) && route.response.status !== 405) {
    const example = EXAMPLES[label(route, '')];
    const status = example?.missing ?? 404;
    cases.push({ name: `${status} on a path naming nothing`, status, route, mount, missing: true, body: example?.body ?? {} });
  }
  return cases.map((entry) => [`${label(route, mount)}: ${entry.name}`, entry] as const);
});

/** Every read the routes made, with its settings (the analysis limits must be among them: the last test). */
const statements: Array<{ name: string; settings: StatementSettings | undefined }> = [];
const chdb = useChdb();
const world = useWorld(backends[0]!, {
  clickhouse: () => {
    const clickhouse = chdb();
    return Object.assign(Object.create(clickhouse) as ClickHouse, {
      query: (name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings) => {
        statements.push({ name, settings });
        return clickhouse.query(name, sql, params, settings);
      },
      queryRows: (name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings) => {
        statements.push({ name, settings });
        return clickhouse.queryRows(name, sql, params, settings);
      },
      queryRaw: (name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings) => {
        statements.push({ name, settings });
        return clickhouse.queryRaw(name, sql, params, settings);
      },
    });
  },
});
let tenant: Awaited<ReturnType<typeof world.tenant>>;
let unscoped: string;
/** The ids of the ingested person and recording. */
const ingested: Record<string, Record<string, string>> = {};
beforeAll(async () => {
  tenant = await world.tenant();
  unscoped = await world.newKey(tenant.userId, ['webhook:read']);
  const timestamp = new Date(Date.now() - 3_600_000);
  await new PersonStore(world.sql).processEvent(tenant.projectId, {
    uuid: uuidv7(),
    event: '$identify',
    distinctId: 'conformance',
    timestamp,
    properties: { $set: { email: 'conformance@example.com' } },
  });
  const person = (await new PersonReads(world.sql).getByDistinctId(tenant.projectId, 'conformance'))!;
  ingested['/persons'] = { id: String(person.id) };
  await insertSnapshotBatches(world.clickhouse, [snapshotBatch(tenant.projectId, 'conformance-session', timestamp.getTime(), { distinct_id: 'conformance' })]);
  ingested['/session_recordings'] = { session_recording_id: 'conformance-session' };
  const definition = async (table: string, columns: string, values: string) =>
    (
      await world.sql.query<{ id: string }>('test.definition', `INSERT INTO ${table} (project_id, ${columns}) VALUES ($1, ${values}) RETURNING id`, [
        tenant.projectId,
      ])
    ).rows[0]!.id;
  ingested['/event_definitions'] = { id: await definition('event_definitions', 'name, last_seen_at', `'$pageview', now()`) };
  ingested['/property_definitions'] = { id: await definition('property_definitions', 'name, type, property_type', `'$browser', 1, 'String'`) };
  const experiment = await request(world.app)
    .post(`/api/projects/${tenant.projectId}/experiments/`)
    .set(bearer(tenant.key))
    .send({ name: 'Queried', feature_flag_key: 'queried-experiment' });
  await request(world.app).post(`/api/projects/${tenant.projectId}/experiments/${experiment.body.id}/launch/`).set(bearer(tenant.key));
  KIND_EXAMPLES.ExperimentExposureQuery!.experiment_id = experiment.body.id;
  KIND_EXAMPLES.ExperimentQuery!.experiment_id = experiment.body.id;
  // What the fixture's ingestion read is not a route's.
  statements.length = 0;
});

const pathOf = (route: Route, mount: string, ids: Record<string, string>) =>
  `/api${mount}${route.path}/`
    .replace(/\/\/$/, '/')
    .replace(/:([a-z_]+)/g, (_, name: string) => (name === 'project_id' ? String(tenant.projectId) : (ids[name] ?? 'missing')));

function call(route: Route, url: string, key: string | undefined, body: unknown) {
  const req = request(world.app)[route.method](url);
  if (key) void req.set(bearer(key));
  return route.method === 'get' || route.method === 'delete' ? req : req.send(body as object);
}

it.each(errorCases)('%s', async (_name, { status, route, mount, key, body, query, missing }) => {
  const ids: Record<string, string> = missing ? { id: '2147483000', short_id: 'Nothing0', session_recording_id: 'nothing' } : {};
  const credential = key === 'none' ? undefined : key === 'unscoped' ? unscoped : tenant.key;
  const url = pathOf(route, mount, ids) + (query !== undefined ? `?${query}` : '');
  const res = await call(route, url, credential, body ?? EXAMPLES[label(route, '')]?.body ?? {});
  expect({ status: res.status, violation: conforms(ErrorBody, res.body) }).toEqual({ status, violation: null });
});

/** Creates first, then reads, updates and actions, deletes last (each object is created by its collection's POST). */
const ORDER = (route: Route) => (route.method === 'post' && !route.path.includes(':') ? 0 : route.method === 'delete' ? 3 : route.method === 'get' ? 1 : 2);
const happy = [...mounted].sort((a, b) => ORDER(a.route) - ORDER(b.route));

describe('every route on its happy path', () => {
  const ids: Record<string, Record<string, string>> = {};
  /** The ids of the objects a path names, from the answers of their collections' POSTs. */
  const idsFor = (path: string): Record<string, string> => {
    const collection = path.split('/:')[0]!;
    return { ...ingested[collection], ...ids[collection] };
  };

  it.each(happy.map(({ route, mount }) => [label(route, mount), route, mount] as const))('%s', async (_name, route, mount) => {
    const example = EXAMPLES[label(route, '')] ?? {};
    const url = pathOf(route, mount, { ...idsFor(route.path), ...example.ids }) + (example.query ? `?${example.query}` : '');
    const res = await call(route, url, tenant.key, example.body ?? {});
    const schema = res.status === route.response.status ? successSchema(route) : ErrorBody;
    expect({ status: res.status, violation: schema && res.text ? conforms(schema, res.body) : null }).toEqual({
      status: route.response.status,
      violation: null,
    });
    if (route.method === 'post' && !route.path.includes(':') && res.status === 201) {
      const body = res.body as { id: number | string; short_id?: string };
      ids[route.path] = { id: String(body.id), ...(body.short_id ? { short_id: body.short_id } : {}) };
    }
  });
});

describe('every query kind through POST /query/', () => {
  const kinds = queryKinds();

  it('has an example of every registered kind', () => {
    expect([...kinds.keys()].filter((kind) => !(kind in KIND_EXAMPLES))).toEqual([]);
  });

  /** The kind's declared response; a wrapper's is its source's. */
  const declared = (node: QueryNode): TSchema => {
    const response = kinds.get(node.kind)!.response;
    return response === 'source' ? declared(node.source!) : response;
  };

  it.each([...kinds.keys()])('%s answers its declared response', async (kind) => {
    const node = KIND_EXAMPLES[kind]!;
    const res = await request(world.app).post(`/api/projects/${tenant.projectId}/query/`).set(bearer(tenant.key)).send({ query: node });
    expect({ status: res.status, violation: conforms(res.status === 200 ? declared(node) : ErrorBody, res.body) }).toEqual({
      status: 200,
      violation: null,
    });
  });
});

// Last: every route above ran, with every query kind (insights, dashboards and their refresh, paths, exports).
it('every ClickHouse read any route made carried the analysis limits (limitedClickHouse wraps the whole table)', () => {
  expect(statements.length).toBeGreaterThan(20);
  expect(
    statements.filter(({ settings }) => settings?.max_execution_time === undefined || settings.max_result_rows === undefined).map(({ name }) => name),
  ).toEqual([]);
});
