import request from 'supertest';
import { insertSnapshotBatches } from '@plover/clickhouse';
import { uuidv7 } from '@plover/core';
import { PersonReads, PersonStore } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import type { World } from './app';
import { snapshotBatch } from '../../../../packages/clickhouse/test/support/snapshot-batch';

/**
 * Every management route with the scope it needs, the status a key holding that scope gets on a fresh
 * fixture, and a valid JSON body for the routes that read one. Shared by the scope matrix and the 415 suite.
 * Not listed: `/insights` (insights.test.ts checks its scopes) and the public `/api/schema/`.
 */
export type Method = 'get' | 'post' | 'patch' | 'put' | 'delete';

export interface Fixture {
  auth: Record<string, string>;
  organizationId: string;
  projectId: number;
  userId: number;
  /** A second project of the same organization (for keys limited to a project). */
  otherProjectId: number;
  person: { id: number; uuid: string };
  /** A playlist (collection) holding recording `s1` (stored in the world's ClickHouse, which must be a real one). */
  shortId: string;
  /** A remote-configuration flag with a payload. */
  flagId: number;
  cohortId: number;
  featureId: string;
  surveyId: string;
  /** A second personal key of the user, for the key routes: scope `personal_api_key:read`, within any key holding a key scope. */
  keyId: string;
}

export interface Route {
  method: Method;
  /** Path with placeholders `{project}`, `{person}`, `{playlist}`, `{flag}`, `{cohort}`, `{feature}`, `{survey}`, `{key}`. */
  path: string;
  scope: string;
  /** Status with the scope on a fresh fixture. */
  status: number;
  body?: Record<string, unknown>;
}

const P = '/api/projects/{project}';
const playlist = `${P}/session_recording_playlists/{playlist}/`;

export const ROUTES: Route[] = [
  { method: 'get', path: '/api/users/@me/', scope: 'user:read', status: 200 },
  { method: 'get', path: '/api/personal_api_keys/', scope: 'personal_api_key:read', status: 200 },
  {
    method: 'post',
    path: '/api/personal_api_keys/',
    scope: 'personal_api_key:write',
    status: 201,
    body: { label: 'minted', scopes: ['personal_api_key:read'] },
  },
  { method: 'get', path: '/api/personal_api_keys/{key}/', scope: 'personal_api_key:read', status: 200 },
  { method: 'delete', path: '/api/personal_api_keys/{key}/', scope: 'personal_api_key:write', status: 204 },
  { method: 'get', path: '/api/projects/', scope: 'project:read', status: 200 },
  { method: 'post', path: '/api/projects/', scope: 'project:write', status: 201, body: { name: 'Created' } },

  { method: 'get', path: `${P}/`, scope: 'project:read', status: 200 },
  { method: 'patch', path: `${P}/`, scope: 'project:write', status: 200, body: { name: 'Renamed' } },
  { method: 'put', path: `${P}/`, scope: 'project:write', status: 200, body: { name: 'Renamed' } },
  { method: 'patch', path: `${P}/reset_token/`, scope: 'project:write', status: 200 },
  { method: 'post', path: `${P}/reset_token/`, scope: 'project:write', status: 200 },

  { method: 'get', path: `${P}/persons/`, scope: 'person:read', status: 200 },
  { method: 'post', path: `${P}/persons/`, scope: 'person:write', status: 405 },
  { method: 'post', path: `${P}/persons/bulk_delete/`, scope: 'person:write', status: 202, body: { distinct_ids: ['alice'] } },
  { method: 'get', path: `${P}/persons/{person}/`, scope: 'person:read', status: 200 },
  { method: 'patch', path: `${P}/persons/{person}/`, scope: 'person:write', status: 200, body: { properties: { plan: 'enterprise' } } },
  { method: 'put', path: `${P}/persons/{person}/`, scope: 'person:write', status: 200, body: { properties: { plan: 'enterprise' } } },
  { method: 'delete', path: `${P}/persons/{person}/`, scope: 'person:write', status: 204 },

  { method: 'get', path: `${P}/session_recording_playlists/`, scope: 'session_recording_playlist:read', status: 200 },
  { method: 'post', path: `${P}/session_recording_playlists/`, scope: 'session_recording_playlist:write', status: 201, body: { name: 'New playlist' } },
  { method: 'get', path: playlist, scope: 'session_recording_playlist:read', status: 200 },
  { method: 'patch', path: playlist, scope: 'session_recording_playlist:write', status: 200, body: { name: 'Renamed' } },
  { method: 'put', path: playlist, scope: 'session_recording_playlist:write', status: 200, body: { name: 'Renamed' } },
  { method: 'delete', path: playlist, scope: 'session_recording_playlist:write', status: 405 },
  { method: 'get', path: `${playlist}access_controls/`, scope: 'access_control:read', status: 200 },
  { method: 'put', path: `${playlist}access_controls/`, scope: 'access_control:write', status: 200, body: { access_level: 'viewer' } },
  { method: 'get', path: `${playlist}recordings/`, scope: 'session_recording_playlist:read', status: 200 },
  { method: 'post', path: `${playlist}recordings/s2/`, scope: 'session_recording_playlist:write', status: 200 },
  { method: 'post', path: `${playlist}recordings/bulk_add/`, scope: 'session_recording_playlist:write', status: 200, body: { session_recording_ids: ['s3'] } },
  {
    method: 'post',
    path: `${playlist}recordings/bulk_delete/`,
    scope: 'session_recording_playlist:write',
    status: 200,
    body: { session_recording_ids: ['s1'] },
  },
  { method: 'delete', path: `${playlist}recordings/s1/`, scope: 'session_recording_playlist:write', status: 200 },
  { method: 'get', path: `${P}/session_recordings/`, scope: 'session_recording:read', status: 200 },
  { method: 'get', path: `${P}/session_recordings/s1/`, scope: 'session_recording:read', status: 200 },
  {
    method: 'patch',
    path: `${P}/session_recordings/s1/`,
    scope: 'session_recording:write',
    status: 200,
    body: { viewed: true, player_metadata: { source: 'web' } },
  },
  { method: 'delete', path: `${P}/session_recordings/s1/`, scope: 'session_recording:write', status: 204 },
  { method: 'get', path: `${P}/session_recordings/s1/snapshots/`, scope: 'session_recording:read', status: 200 },

  { method: 'get', path: `${P}/groups_types/`, scope: 'group:read', status: 200 },
  { method: 'get', path: `${P}/groups/?group_type_index=0`, scope: 'group:read', status: 200 },
  { method: 'get', path: `${P}/events/`, scope: 'query:read', status: 200 },
  { method: 'get', path: `${P}/ingestion_warnings/`, scope: 'project:read', status: 200 },

  { method: 'get', path: `${P}/feature_flags/`, scope: 'feature_flag:read', status: 200 },
  { method: 'post', path: `${P}/feature_flags/`, scope: 'feature_flag:write', status: 201, body: { key: 'new-flag', name: 'New' } },
  { method: 'get', path: `${P}/feature_flags/{flag}/`, scope: 'feature_flag:read', status: 200 },
  { method: 'patch', path: `${P}/feature_flags/{flag}/`, scope: 'feature_flag:write', status: 200, body: { name: 'Renamed' } },
  { method: 'put', path: `${P}/feature_flags/{flag}/`, scope: 'feature_flag:write', status: 200, body: { name: 'Renamed' } },
  { method: 'delete', path: `${P}/feature_flags/{flag}/`, scope: 'feature_flag:write', status: 405 },
  { method: 'get', path: `${P}/feature_flags/{flag}/access_controls/`, scope: 'access_control:read', status: 200 },
  { method: 'put', path: `${P}/feature_flags/{flag}/access_controls/`, scope: 'access_control:write', status: 200, body: { access_level: 'viewer' } },
  { method: 'get', path: `${P}/feature_flags/{flag}/remote_config/`, scope: 'feature_flag:read', status: 200 },
  { method: 'get', path: `${P}/cohorts/`, scope: 'cohort:read', status: 200 },
  { method: 'post', path: `${P}/cohorts/`, scope: 'cohort:write', status: 201, body: { name: 'New cohort' } },
  { method: 'get', path: `${P}/cohorts/{cohort}/`, scope: 'cohort:read', status: 200 },
  { method: 'patch', path: `${P}/cohorts/{cohort}/`, scope: 'cohort:write', status: 200, body: { name: 'Renamed' } },
  { method: 'put', path: `${P}/cohorts/{cohort}/`, scope: 'cohort:write', status: 200, body: { name: 'Renamed' } },
  { method: 'delete', path: `${P}/cohorts/{cohort}/`, scope: 'cohort:write', status: 405 },
  { method: 'get', path: `${P}/early_access_features/`, scope: 'early_access_feature:read', status: 200 },
  { method: 'post', path: `${P}/early_access_features/`, scope: 'early_access_feature:write', status: 201, body: { name: 'Beta thing' } },
  { method: 'get', path: `${P}/early_access_features/{feature}/`, scope: 'early_access_feature:read', status: 200 },
  { method: 'patch', path: `${P}/early_access_features/{feature}/`, scope: 'early_access_feature:write', status: 200, body: { stage: 'beta' } },
  { method: 'put', path: `${P}/early_access_features/{feature}/`, scope: 'early_access_feature:write', status: 200, body: { stage: 'beta' } },
  { method: 'delete', path: `${P}/early_access_features/{feature}/`, scope: 'early_access_feature:write', status: 405 },
  { method: 'get', path: `${P}/event_definitions/`, scope: 'event_definition:read', status: 200 },
  { method: 'get', path: `${P}/property_definitions/?type=person`, scope: 'property_definition:read', status: 200 },
  { method: 'get', path: `${P}/surveys/`, scope: 'survey:read', status: 200 },
  { method: 'post', path: `${P}/surveys/`, scope: 'survey:write', status: 201, body: { name: 'New survey' } },
  { method: 'get', path: `${P}/surveys/{survey}/`, scope: 'survey:read', status: 200 },
  { method: 'patch', path: `${P}/surveys/{survey}/`, scope: 'survey:write', status: 200, body: { name: 'Renamed' } },
  { method: 'put', path: `${P}/surveys/{survey}/`, scope: 'survey:write', status: 200, body: { name: 'Renamed' } },
  { method: 'delete', path: `${P}/surveys/{survey}/`, scope: 'survey:write', status: 405 },
];

/** `METHOD /path` as written in the table (the test name). */
export const label = (route: Route): string => `${route.method.toUpperCase()} ${route.path}`;

export const isProjectRoute = (route: Route): boolean => route.path.startsWith(P);

/** The route's URL for a fixture. */
export function urlOf(route: Route, f: Fixture): string {
  const values: Record<string, string | number> = {
    project: f.projectId,
    person: f.person.id,
    playlist: f.shortId,
    flag: f.flagId,
    cohort: f.cohortId,
    feature: f.featureId,
    survey: f.surveyId,
    key: f.keyId,
  };
  return route.path.replace(/\{([a-z]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no fixture value for {${name}}`);
    return String(value);
  });
}

/** A fresh tenant holding one object of every kind the routes name, created through the API where there is one. */
export async function seedFixture(world: World): Promise<Fixture> {
  const t = await world.tenant();
  const otherProject = await world.newProject(t.organizationId, 'Other');
  const store = new PersonStore(world.sql);
  await store.processEvent(t.projectId, {
    uuid: uuidv7(),
    event: '$identify',
    distinctId: 'alice',
    timestamp: new Date(),
    properties: { $set: { email: 'alice@example.com' } },
  });
  const person = (await new PersonReads(world.sql).getByDistinctId(t.projectId, 'alice'))!;
  await insertSnapshotBatches(world.clickhouse, [snapshotBatch(t.projectId, 's1', Date.now() - 60_000, { seconds: 30, distinct_id: 'alice' })]);

  const create = async (path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const res = await request(world.app).post(`/api/projects/${t.projectId}/${path}`).set(t.auth).send(body);
    if (res.status !== 201) throw new Error(`fixture ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as Record<string, unknown>;
  };
  const shortId = (await create('session_recording_playlists/', { name: 'Fixture' })).short_id as string;
  const added = await request(world.app).post(`/api/projects/${t.projectId}/session_recording_playlists/${shortId}/recordings/s1/`).set(t.auth);
  if (added.status !== 200) throw new Error(`fixture recording: ${added.status}`);
  const flagId = (
    await create('feature_flags/', {
      key: 'fixture-flag',
      is_remote_configuration: true,
      filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"theme":"dark"}' } },
    })
  ).id as number;
  const cohortId = (await create('cohorts/', { name: 'Fixture' })).id as number;
  const featureId = (await create('early_access_features/', { name: 'Fixture feature' })).id as string;
  const surveyId = (await create('surveys/', { name: 'Fixture survey' })).id as string;
  const key = await request(world.app)
    .post('/api/personal_api_keys/')
    .set(t.auth)
    .send({ label: 'fixture', scopes: ['personal_api_key:read'] });
  if (key.status !== 201) throw new Error(`fixture key: ${key.status}`);

  return {
    auth: t.auth,
    organizationId: t.organizationId,
    projectId: t.projectId,
    userId: t.userId,
    otherProjectId: otherProject.id,
    person: { id: person.id, uuid: person.uuid },
    shortId,
    flagId,
    cohortId,
    featureId,
    surveyId,
    keyId: (key.body as { id: string }).id,
  };
}

/**
 * Every row of every table of the database, as text (a key's `last_used_at`, which authentication itself
 * touches, left out): two equal snapshots mean the requests in between changed nothing.
 */
export async function snapshot(sql: Sql): Promise<string> {
  const tables = await sql.query<{ name: string }>(
    't.tables',
    `SELECT quote_ident(table_name) AS name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
  );
  const rows = tables.rows.map(({ name }) => `SELECT '${name}' AS t, (to_jsonb(x) - 'last_used_at')::text AS r FROM ${name} x`).join(' UNION ALL ');
  const dump = await sql.query<{ dump: string | null }>('t.dump', `SELECT string_agg(t || ' ' || r, E'\\n' ORDER BY t, r) AS dump FROM (${rows}) s`);
  return dump.rows[0]?.dump ?? '';
}
