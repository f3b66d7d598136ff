import request from 'supertest';
import { openApiDocument } from '../src/openapi';
import { declaredTable } from './support/table';
import { SCOPE_OBJECTS } from '../src/accounts/routes';
import { backends, bearer, useWorld, type World } from './support/app';
import { ownProjectIds, useChdb } from './support/recordings';
import { isProjectRoute, label, ROUTES, seedFixture, snapshot, urlOf, type Fixture, type Method, type Route } from './support/routes';

/**
 * The scope matrix (docs/management.md#auth-and-scopes): for every management route, a key lacking its scope gets PostHog's 403 and
 * changes nothing; a key holding exactly that scope (or, for `:read`, only the `:write`) gets the route's
 * answer; a `*` key limited to another project gets 403 on every project route. Also: the table agrees with
 * the OpenAPI document, and every other method on a table path is a 405.
 */

// Opening and migrating PGlite alone takes 30-60 s on a loaded 2-core machine (the hooks' default limit is 60 s).
jest.setTimeout(180_000);

/** Every scope there is except the ones that grant `scope`; for a write scope the object's `:read` stays in. */
function allScopesBut(scope: string): string[] {
  const [object, action] = scope.split(':');
  const others = SCOPE_OBJECTS.filter((o) => o !== object).map((o) => `${o}:write`);
  return action === 'write' ? [...others, `${object}:read`] : others;
}

function call(world: World, route: Route, url: string, key: string): request.Test {
  const req = request(world.app)[route.method](url).set(bearer(key));
  return route.body ? req.send(route.body) : req;
}

const environments = (url: string) => url.replace(/^\/api\/projects\//, '/api/environments/');

describe('route table', () => {
  it('names every scope correctly and each route once', () => {
    const seen = new Set<string>();
    for (const route of ROUTES) {
      const [object, action, extra] = route.scope.split(':');
      expect((SCOPE_OBJECTS as readonly string[]).includes(object!) && (action === 'read' || action === 'write') && extra === undefined).toBe(true);
      expect(seen.has(label(route))).toBe(false);
      seen.add(label(route));
    }
  });
});

/** The table's path as the OpenAPI document spells it. */
function openApiPath(route: Route): string {
  const names: Record<string, string> = { project: 'project_id', playlist: 'short_id' };
  return route.path
    .split('?')[0]!
    .replace(/\/(recordings|session_recordings)\/s[0-9]\//, '/$1/{session_recording_id}/')
    .replace(/\{([a-z]+)\}/g, (_, name: string) => `{${names[name] ?? 'id'}}`);
}

describe('OpenAPI document', () => {
  it('names the same scope and success status as the table wherever it lists a route', () => {
    const paths = openApiDocument(declaredTable()).paths as Record<string, Record<string, { 'x-required-scope'?: string; responses: Record<string, unknown> }>>;
    const listed = ROUTES.flatMap((route) => {
      const operation = paths[openApiPath(route)]?.[route.method];
      return operation
        ? [{ route: label(route), scope: operation['x-required-scope'], status: Object.keys(operation.responses).find((s) => s !== 'default') }]
        : [];
    });
    expect(listed).toEqual(
      ROUTES.filter((route) => paths[openApiPath(route)]?.[route.method]).map((route) => ({
        route: label(route),
        scope: route.scope,
        status: String(route.status),
      })),
    );
    // Guard against a path mapping that matches nothing: the document lists most management routes.
    expect(listed.length).toBeGreaterThanOrEqual(25);
  });
});

/**
 * Every path of the table answers 405 `method_not_allowed` (scope or not) for the methods it does not serve.
 * Recording ids name one route pattern, so `recordings/s1/` and `recordings/s2/` are one path here.
 */
const METHODS: Method[] = ['get', 'post', 'patch', 'put', 'delete'];
const pathOf = (route: Route) => route.path.replace(/\/recordings\/s[0-9]\//, '/recordings/s1/');
const UNSERVED = [...new Set(ROUTES.map(pathOf))].flatMap((path) => {
  const served = new Set(ROUTES.filter((route) => pathOf(route) === path).map((route) => route.method));
  return METHODS.filter((method) => !served.has(method)).map((method) => ({ method, path, scope: '*', status: 405 }) satisfies Route);
});

const recordings = useChdb();

describe.each(backends.map((backend, index) => ({ ...backend, index })))('management routes on $name', (backend) => {
  const world = useWorld(backend, { clickhouse: recordings });
  beforeAll(() => ownProjectIds(world.sql, backend.index));

  describe.each(ROUTES.map((route) => [label(route), route] as const))('scope matrix: %s', (_name, route) => {
    const [object, action] = route.scope.split(':');
    // One fixture per route: the refused requests must leave it as it is; the granted ones (which may write,
    // e.g. delete the person) come last.
    let f: Fixture;
    beforeAll(async () => {
      f = await seedFixture(world);
    });

    it(`without ${route.scope} → 403 permission_denied, nothing changed`, async () => {
      const key = await world.newKey(f.userId, allScopesBut(route.scope));
      const before = await snapshot(world.sql);
      const urls = isProjectRoute(route) ? [urlOf(route, f), environments(urlOf(route, f))] : [urlOf(route, f)];
      for (const url of urls) {
        const res = await call(world, route, url, key);
        expect({ url, status: res.status, body: res.body as unknown }).toEqual({
          url,
          status: 403,
          body: { type: 'authentication_error', code: 'permission_denied', detail: `API key missing required scope '${route.scope}'`, attr: null },
        });
      }
      expect(await snapshot(world.sql)).toBe(before);
    });

    if (isProjectRoute(route)) {
      it('with * limited to another project → 403, nothing changed', async () => {
        const key = await world.newKey(f.userId, ['*'], { projects: [f.otherProjectId] });
        const before = await snapshot(world.sql);
        for (const url of [urlOf(route, f), environments(urlOf(route, f))]) {
          const res = await call(world, route, url, key);
          expect({ url, status: res.status, body: res.body as unknown }).toEqual({
            url,
            status: 403,
            body: {
              type: 'authentication_error',
              code: 'permission_denied',
              detail: `API key does not have access to the requested project: ID ${f.projectId}.`,
              attr: null,
            },
          });
        }
        expect(await snapshot(world.sql)).toBe(before);
      });
    }

    // For a read route the `:write` key goes first: both are reads, so it sees the same fixture.
    const granting = action === 'read' ? [`${object}:write`, route.scope] : [route.scope];
    it.each(granting)(`with only %s → ${route.status}`, async (scope) => {
      const key = await world.newKey(f.userId, [scope]);
      const res = await call(world, route, urlOf(route, f), key);
      expect(res.status).not.toBe(401);
      expect(res.status).not.toBe(403);
      expect({ status: res.status, body: res.body as unknown }).toEqual({ status: route.status, body: expect.anything() as unknown });
    });
  });

  describe('unsupported methods', () => {
    let f: Fixture;
    beforeAll(async () => {
      f = await seedFixture(world);
    });

    describe.each(UNSERVED.map((route) => [label(route), route] as const))('%s', (_name, route) => {
      it('→ 405 method_not_allowed, nothing changed', async () => {
        const before = await snapshot(world.sql);
        const res = await request(world.app)[route.method](urlOf(route, f)).set(f.auth).send({});
        expect({ status: res.status, body: res.body as unknown }).toEqual({
          status: 405,
          body: { type: 'invalid_request', code: 'method_not_allowed', detail: `Method "${route.method.toUpperCase()}" not allowed.`, attr: null },
        });
        expect(await snapshot(world.sql)).toBe(before);
      });
    });
  });
});
