import request from 'supertest';
import { hashPersonalApiKey } from '@plover/accounts';
import { SCOPE_OBJECTS } from '../src/accounts/routes';
import { backends, bearer, useWorld, type World } from './support/app';

/**
 * Personal API keys never reach past the key that made or manages them. Generated matrix: keys of every
 * combination of scope set × project limit × organization limit, each
 * - minting a key for every request body (scopes × scoped_teams × scoped_organizations, limits omitted or given),
 * - listing, viewing and revoking every other key of the matrix (wider, equal, narrower, incomparable),
 * - reading the account routes (`/users/@me`, `/projects/`, `/projects/:id/`),
 * with the expected answer derived from a small oracle: a key's powers as sets, and "within" as set inclusion.
 */

// Thousands of requests per backend; PGlite on a loaded 2-core machine is slow.
jest.setTimeout(900_000);

type ProjectName = 'A' | 'B' | 'C';
type OrganizationName = 'O1' | 'O2';
interface Shape {
  scopes: string[];
  teams: ProjectName[] | null;
  orgs: OrganizationName[] | null;
}

const PROJECT_ORGANIZATION: Record<ProjectName, OrganizationName> = { A: 'O1', B: 'O1', C: 'O2' };
const PROJECTS: ProjectName[] = ['A', 'B', 'C'];
const ORGANIZATIONS: OrganizationName[] = ['O1', 'O2'];
/** The users' current project (what `/users/@me` shows as `team`). */
const CURRENT: ProjectName = 'A';

const SCOPE_SETS = [
  ['*'],
  ['personal_api_key:write'],
  ['personal_api_key:read'],
  ['personal_api_key:write', 'project:read', 'user:read'],
  ['person:read', 'project:write'],
];
const TEAM_LIMITS: Array<ProjectName[] | null> = [null, ['B'], ['A', 'B']];
const ORGANIZATION_LIMITS: Array<OrganizationName[] | null> = [null, ['O1'], ['O2']];
const SHAPES: Shape[] = SCOPE_SETS.flatMap((scopes) => TEAM_LIMITS.flatMap((teams) => ORGANIZATION_LIMITS.map((orgs) => ({ scopes, teams, orgs }))));

/** Request bodies' limits: `undefined` leaves the field out. */
const REQUESTED_TEAMS: Array<ProjectName[] | undefined> = [undefined, [], ['A'], ['B'], ['A', 'B']];
const REQUESTED_ORGANIZATIONS: Array<OrganizationName[] | undefined> = [undefined, [], ['O1'], ['O2']];

const show = (shape: Shape) => `[${shape.scopes.join(' ')}] teams=${shape.teams?.join('+') ?? '-'} orgs=${shape.orgs?.join('+') ?? '-'}`;

// The oracle. Powers are sets; a limit or `*` also covers what does not exist yet (FUTURE), which no list names.
const FUTURE = '(future)';
function scopePowers(scopes: string[]): Set<string> {
  const every = [...SCOPE_OBJECTS, FUTURE].flatMap((object) => [`${object}:read`, `${object}:write`]);
  if (scopes.length === 0 || scopes.includes('*')) return new Set(every);
  return new Set(scopes.flatMap((scope) => (scope.endsWith(':write') ? [scope, scope.replace(/:write$/, ':read')] : [scope])));
}
const limitPowers = (limit: string[] | null, universe: string[]) => new Set(limit === null || limit.length === 0 ? [...universe, FUTURE] : limit);
const subset = (inner: Set<string>, outer: Set<string>) => [...inner].every((item) => outer.has(item));
const within = (inner: Shape, outer: Shape) =>
  subset(scopePowers(inner.scopes), scopePowers(outer.scopes)) &&
  subset(limitPowers(inner.teams, PROJECTS), limitPowers(outer.teams, PROJECTS)) &&
  subset(limitPowers(inner.orgs, ORGANIZATIONS), limitPowers(outer.orgs, ORGANIZATIONS));
const grants = (shape: Shape, scope: string) => scopePowers(shape.scopes).has(scope);
const reaches = (shape: Shape, project: ProjectName) =>
  limitPowers(shape.teams, PROJECTS).has(project) && limitPowers(shape.orgs, ORGANIZATIONS).has(PROJECT_ORGANIZATION[project]);
const reachedOrganizations = (shape: Shape) => ORGANIZATIONS.filter((org) => PROJECTS.some((p) => PROJECT_ORGANIZATION[p] === org && reaches(shape, p)));

interface Ids {
  projects: Record<ProjectName, { id: number; api_token: string }>;
  organizations: Record<OrganizationName, string>;
}

/** A user who owns both organizations, with project A current. */
async function newUser(world: World, ids: Ids): Promise<number> {
  const user = await world.newUser(ids.organizations.O1, 'owner', ids.projects[CURRENT].id);
  await world.sql.query('t.member', `INSERT INTO organization_memberships (organization_id, user_id, level) VALUES ($1, $2, 'owner')`, [
    ids.organizations.O2,
    user.id,
  ]);
  return user.id;
}

const keyOptions = (shape: Shape, ids: Ids) => ({
  projects: shape.teams?.map((p) => ids.projects[p].id),
  organizations: shape.orgs?.map((o) => ids.organizations[o]),
});

/** The shape a key body describes, in names. */
function shapeOf(body: { scopes: string[]; scoped_teams: number[]; scoped_organizations: string[] }, ids: Ids): Shape {
  const project = (id: number) => PROJECTS.find((p) => ids.projects[p].id === id)!;
  const organization = (id: string) => ORGANIZATIONS.find((o) => ids.organizations[o] === id)!;
  return { scopes: body.scopes, teams: body.scoped_teams.map(project), orgs: body.scoped_organizations.map(organization) };
}

/** Runs `run` for every item, `width` at a time (each minter or caller has a user of its own). */
async function inParallel<T>(items: T[], width: number, run: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let item = queue.shift(); item; item = queue.shift()) await run(item);
    }),
  );
}
const WIDTH = 8;

describe.each(backends)('personal API key limits on $name', (backend) => {
  const world = useWorld(backend);
  const ids = {} as Ids;
  const newKey = async (userId: number, shape: Shape) => {
    const value = await world.newKey(userId, shape.scopes, keyOptions(shape, ids));
    const row = await world.sql.query<{ id: string }>('t.keyId', 'SELECT id FROM personal_api_keys WHERE secure_value = $1', [hashPersonalApiKey(value)]);
    return { id: row.rows[0]!.id, value };
  };

  beforeAll(async () => {
    ids.organizations = { O1: await world.newOrganization(), O2: await world.newOrganization() };
    ids.projects = {
      A: await world.newProject(ids.organizations.O1, 'A'),
      B: await world.newProject(ids.organizations.O1, 'B'),
      C: await world.newProject(ids.organizations.O2, 'C'),
    };
  });

  it(`minting: ${SHAPES.length} minters × ${SCOPE_SETS.length * REQUESTED_TEAMS.length * REQUESTED_ORGANIZATIONS.length} bodies; no key exceeds its minter`, async () => {
    const mismatches: unknown[] = [];
    const outcomes = new Set<number>();
    let requests = 0;
    await inParallel(SHAPES, WIDTH, async (minter) => {
      const userId = await newUser(world, ids);
      const key = await world.newKey(userId, minter.scopes, keyOptions(minter, ids));
      for (const scopes of SCOPE_SETS) {
        for (const teams of REQUESTED_TEAMS) {
          for (const orgs of REQUESTED_ORGANIZATIONS) {
            const body = {
              label: 'minted',
              scopes,
              ...(teams && { scoped_teams: teams.map((p) => ids.projects[p].id) }),
              ...(orgs && { scoped_organizations: orgs.map((o) => ids.organizations[o]) }),
            };
            // Omitted limits are the minter's.
            const asked: Shape = { scopes, teams: teams ?? minter.teams, orgs: orgs ?? minter.orgs };
            const expected = grants(minter, 'personal_api_key:write') && within(asked, minter) ? 201 : 403;
            outcomes.add(expected);
            const res = await request(world.app).post('/api/personal_api_keys/').set(bearer(key)).send(body);
            requests++;
            const made = res.status === 201 ? shapeOf(res.body as never, ids) : undefined;
            if (res.status !== expected || (made && !(within(made, asked) && within(asked, made) && within(made, minter)))) {
              mismatches.push({ minter: show(minter), asked: show(asked), status: res.status, expected, made: made && show(made) });
            }
            if (made) await world.sql.query('t.unmint', 'DELETE FROM personal_api_keys WHERE id = $1', [(res.body as { id: string }).id]);
          }
        }
      }
      const left = await world.sql.query<{ n: number }>('t.count', 'SELECT count(*)::int AS n FROM personal_api_keys WHERE user_id = $1', [userId]);
      if (left.rows[0]!.n !== 1) mismatches.push({ minter: show(minter), keysLeft: left.rows[0]!.n });
    });
    expect(mismatches).toEqual([]);
    expect(outcomes).toEqual(new Set([201, 403]));
    expect(requests).toBe(SHAPES.length * SCOPE_SETS.length * REQUESTED_TEAMS.length * REQUESTED_ORGANIZATIONS.length);
  });

  it(`managing: ${SHAPES.length} callers × ${SHAPES.length} keys × list, view, revoke`, async () => {
    const mismatches: unknown[] = [];
    const outcomes = new Set<number>();
    // Each caller's user holds one key of every shape besides the caller's own.
    await inParallel(SHAPES, WIDTH, async (caller) => {
      const userId = await newUser(world, ids);
      const own = await newKey(userId, caller);
      const auth = bearer(own.value);
      const keys = new Map<Shape, string>();
      const insert = async (shape: Shape) => keys.set(shape, (await newKey(userId, shape)).id);
      for (const shape of SHAPES) await insert(shape);

      const list = await request(world.app).get('/api/personal_api_keys/').set(auth);
      const listed = list.status === 200 ? (list.body as Array<{ id: string }>).map((k) => k.id).sort() : list.status;
      const visible = grants(caller, 'personal_api_key:read')
        ? [...SHAPES.filter((target) => within(target, caller)).map((t) => keys.get(t)!), own.id].sort()
        : 403;
      if (JSON.stringify(listed) !== JSON.stringify(visible)) mismatches.push({ caller: show(caller), route: 'list', listed, visible });
      for (const target of SHAPES) {
        const view = await request(world.app)
          .get(`/api/personal_api_keys/${keys.get(target)}/`)
          .set(auth);
        const viewExpected = grants(caller, 'personal_api_key:read') && within(target, caller) ? 200 : 403;
        if (view.status !== viewExpected)
          mismatches.push({ caller: show(caller), route: 'view', target: show(target), status: view.status, expected: viewExpected });
        const revoke = await request(world.app)
          .delete(`/api/personal_api_keys/${keys.get(target)}/`)
          .set(auth);
        const revokeExpected = grants(caller, 'personal_api_key:write') && within(target, caller) ? 204 : 403;
        outcomes.add(viewExpected).add(revokeExpected);
        const exists = await world.sql.query('t.exists', 'SELECT 1 FROM personal_api_keys WHERE id = $1', [keys.get(target)]);
        if (revoke.status !== revokeExpected || exists.rowCount !== (revokeExpected === 204 ? 0 : 1)) {
          mismatches.push({
            caller: show(caller),
            route: 'revoke',
            target: show(target),
            status: revoke.status,
            expected: revokeExpected,
            exists: exists.rowCount,
          });
        }
        if (exists.rowCount === 0) await insert(target);
      }
    });
    expect(mismatches).toEqual([]);
    expect(outcomes).toEqual(new Set([200, 204, 403]));
  });

  it(`account routes: ${SHAPES.length} keys × /users/@me, /projects/, /projects/:id/ show only what the key reaches`, async () => {
    const userId = await newUser(world, ids);
    const mismatches: unknown[] = [];
    const tokenOf = (p: ProjectName) => ids.projects[p].api_token;
    for (const shape of SHAPES) {
      const auth = bearer(await world.newKey(userId, shape.scopes, keyOptions(shape, ids)));
      const hidden = PROJECTS.filter((p) => !reaches(shape, p));
      const leaks = (body: unknown) => hidden.filter((p) => JSON.stringify(body).includes(tokenOf(p)));

      const me = await request(world.app).get('/api/users/@me/').set(auth);
      if (!grants(shape, 'user:read')) {
        if (me.status !== 403) mismatches.push({ key: show(shape), route: '@me', status: me.status, expected: 403 });
      } else {
        const body = me.body as { team: { id: number } | null; organization: { id: string } | null; organizations: Array<{ id: string }> };
        const got = {
          status: me.status,
          team: body.team?.id ?? null,
          organizations: body.organizations.map((o) => o.id),
          organization: body.organization?.id ?? null,
          leaks: leaks(body),
        };
        const organizations = reachedOrganizations(shape).map((o) => ids.organizations[o]);
        const team = reaches(shape, CURRENT) ? ids.projects[CURRENT].id : null;
        const expected = {
          status: 200,
          team,
          organizations,
          organization: team === null ? (organizations[0] ?? null) : ids.organizations[PROJECT_ORGANIZATION[CURRENT]],
          leaks: [],
        };
        if (JSON.stringify(got) !== JSON.stringify(expected)) mismatches.push({ key: show(shape), route: '@me', got, expected });
      }

      const list = await request(world.app).get('/api/projects/').set(auth);
      const listed =
        list.status === 200 ? { ids: (list.body as { results: Array<{ id: number }> }).results.map((p) => p.id), leaks: leaks(list.body) } : list.status;
      const listExpected = grants(shape, 'project:read') ? { ids: PROJECTS.filter((p) => reaches(shape, p)).map((p) => ids.projects[p].id), leaks: [] } : 403;
      if (JSON.stringify(listed) !== JSON.stringify(listExpected)) mismatches.push({ key: show(shape), route: 'projects', listed, expected: listExpected });

      for (const project of PROJECTS) {
        const res = await request(world.app).get(`/api/projects/${ids.projects[project].id}/`).set(auth);
        const expected = grants(shape, 'project:read') && reaches(shape, project) ? 200 : 403;
        if (res.status !== expected) mismatches.push({ key: show(shape), route: `project ${project}`, status: res.status, expected });
      }
    }
    expect(mismatches).toEqual([]);
  });
});
