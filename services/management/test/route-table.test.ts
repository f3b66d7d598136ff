import request from 'supertest';
import type { Method, Route } from '../src/http/route-table';
import { openApiDocument, openApiPath } from '../src/openapi';
import { PROJECT_MOUNTS } from '../src/routes';
import { backends, useWorld } from './support/app';
import { declaredTable } from './support/table';

/**
 * What the route table guarantees for every route it declares, checked on the table itself so that a new route
 * is covered without touching this file: the OpenAPI document lists it with its scope under every mount, each
 * of its paths answers 405 for the methods it does not declare, and a paginated route refuses a bad `limit`.
 */

jest.setTimeout(180_000);

const table = declaredTable();
const METHODS: Method[] = ['get', 'post', 'patch', 'put', 'delete'];

interface Mounted {
  route: Route;
  /** The Express mount (`/api`, `/api/projects/:project_id`, …). */
  mount: string;
}

const mounted: Mounted[] = [
  ...table.api.map((route) => ({ route, mount: '/api' })),
  ...PROJECT_MOUNTS.flatMap((mount) => table.project.map((route) => ({ route, mount: `/api${mount}` }))),
];
const label = ({ route, mount }: Mounted) => `${route.method.toUpperCase()} ${mount}${route.path}`;

describe('the route table', () => {
  it('declares the routes everyone relies on (so the generated checks below cannot pass on an empty table)', () => {
    const declared = (routes: Route[]) => routes.map((route) => `${route.method} ${route.path} ${route.scope} ${route.paginated ?? '-'}`);
    expect(declared(table.api)).toEqual(
      expect.arrayContaining(['get /users/@me user:read -', 'post /personal_api_keys personal_api_key:write -', 'get /projects project:read envelope']),
    );
    expect(declared(table.project)).toEqual(
      expect.arrayContaining([
        'get / project:read -',
        'post /reset_token project:write -',
        'get /persons person:read envelope',
        'post /persons person:write -',
        'get /session_recording_playlists/:short_id/recordings session_recording_playlist:read has_next',
        'get /insights/my_last_viewed insight:read -',
        'delete /feature_flags/:id feature_flag:write -',
        'get /events query:read envelope',
      ]),
    );
  });

  it('names each method of a path once', () => {
    for (const routes of [table.api, table.project]) {
      const keys = routes.map((route) => `${route.method} ${route.path}`);
      expect(keys).toEqual([...new Set(keys)]);
    }
  });
});

describe('the OpenAPI document', () => {
  const paths = openApiDocument(table).paths as Record<string, Record<string, { 'x-required-scope'?: string; responses: Record<string, unknown> }>>;

  it.each(mounted.map((entry) => [label(entry), entry] as const))('lists %s with its scope and status', (_label, { route, mount }) => {
    const operation = paths[openApiPath(mount, route.path)]?.[route.method];
    expect(operation?.['x-required-scope']).toBe(route.scope);
    expect(Object.keys(operation?.responses ?? {})).toEqual([String(route.response.status), 'default']);
  });

  it('lists the project routes under both mounts', () => {
    expect(Object.keys(paths)).toEqual(expect.arrayContaining(['/api/projects/{project_id}/reset_token/', '/api/environments/{project_id}/reset_token/']));
  });
});

/** Every path of the table with the methods it does not serve. */
const unserved = [...new Map(mounted.map(({ route, mount }) => [`${mount}${route.path}`, { mount, path: route.path }])).values()].flatMap(({ mount, path }) => {
  const served = new Set(mounted.filter((entry) => entry.mount === mount && entry.route.path === path).map((entry) => entry.route.method));
  return METHODS.filter((method) => !served.has(method)).map((method) => ({ method, mount, path }));
});
const paginated = mounted.filter(({ route }) => route.paginated !== undefined);

describe.each(backends)('the routes on $name', (backend) => {
  const world = useWorld(backend);
  let tenant: Awaited<ReturnType<typeof world.tenant>>;
  beforeAll(async () => {
    tenant = await world.tenant();
  });

  /** A URL of a table path: the fixture's project, any other parameter `p1`. */
  const urlOf = (mount: string, path: string) =>
    `${mount}${path}`.replace(/:([a-z_]+)/g, (_, name: string) => (name === 'project_id' ? String(tenant.projectId) : 'p1'));

  it('has paths with unserved methods and paginated routes to check', () => {
    expect(unserved.length).toBeGreaterThan(10);
    expect(paginated.map(label)).toEqual(
      expect.arrayContaining(['GET /api/projects', 'GET /api/projects/:project_id/persons', 'GET /api/environments/:project_id/surveys']),
    );
  });

  it.each(unserved.map((entry) => [`${entry.method.toUpperCase()} ${entry.mount}${entry.path}`, entry] as const))(
    '%s → 405 method_not_allowed',
    async (_label, { method, mount, path }) => {
      const res = await request(world.app)[method](urlOf(mount, path)).set(tenant.auth).send({});
      expect({ status: res.status, body: res.body as unknown }).toEqual({
        status: 405,
        body: { type: 'invalid_request', code: 'method_not_allowed', detail: `Method "${method.toUpperCase()}" not allowed.`, attr: null },
      });
    },
  );

  it('answers format=csv with 404 where the route declares no CSV shape', async () => {
    const flag = await request(world.app)
      .post(`/api/projects/${tenant.projectId}/feature_flags/`)
      .set(tenant.auth)
      .send({ key: 'remote', is_remote_configuration: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '"x"' } } });
    const url = `/api/projects/${tenant.projectId}/feature_flags/${(flag.body as { id: number }).id}/remote_config/`;
    expect((await request(world.app).get(url).set(tenant.auth)).status).toBe(200);
    const res = await request(world.app).get(`${url}?format=csv`).set(tenant.auth);
    expect({ status: res.status, code: (res.body as { code: string }).code }).toEqual({ status: 404, code: 'not_found' });
  });

  it.each(paginated.map((entry) => [label(entry), entry] as const))('%s refuses a bad limit or offset with 400 naming it', async (_label, { mount, route }) => {
    for (const [query, attr] of [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=banana', 'limit'],
      ['offset=-1', 'offset'],
    ]) {
      const res = await request(world.app)
        .get(`${urlOf(mount, route.path)}?${query}`)
        .set(tenant.auth);
      expect({ query, status: res.status, type: (res.body as { type: string }).type, attr: (res.body as { attr: string }).attr }).toEqual({
        query,
        status: 400,
        type: 'validation_error',
        attr,
      });
    }
  });
});
