import request from 'supertest';
import { backends, bearer, useWorld } from './support/app';

describe.each(backends)('feature flags on the management API on $name', (backend) => {
  const world = useWorld(backend);

  async function setup() {
    const t = await world.tenant();
    const base = `/api/projects/${t.projectId}/feature_flags`;
    const create = async (body: Record<string, unknown>) => {
      const res = await request(world.app).post(`${base}/`).set(t.auth).send(body);
      expect(res.status).toBe(201);
      return res.body as { id: number; key: string };
    };
    return { ...t, base, create };
  }

  it.each(['feature_flags', 'cohorts', 'early_access_features', 'surveys'])(
    '%s: a limit or offset out of range is a 400 naming it, like every listing',
    async (resource) => {
      const t = await world.tenant();
      for (const query of ['limit=0', 'limit=1001', 'limit=banana', 'offset=-1']) {
        const res = await request(world.app).get(`/api/projects/${t.projectId}/${resource}/?${query}`).set(t.auth);
        expect({ query, status: res.status, attr: res.body.attr }).toEqual({ query, status: 400, attr: query.split('=')[0] });
      }
      const page = await request(world.app).get(`/api/projects/${t.projectId}/${resource}/?limit=1000`).set(t.auth);
      expect(page.body).toMatchObject({ count: 0, next: null, previous: null, results: [] });
    },
  );

  it('access_controls: GET/PUT, user_access_level on list and retrieve, viewer cannot PATCH, none hides the flag', async () => {
    const s = await setup();
    const member = await world.newUser(s.organizationId, 'member', s.projectId);
    const memberAuth = bearer(await world.newKey(member.id, ['*']));
    const flag = await s.create({ key: 'private-flag' });
    const url = `${s.base}/${flag.id}`;

    const initial = await request(world.app).get(`${url}/access_controls/`).set(s.auth);
    expect(initial.status).toBe(200);
    expect(initial.body).toEqual({
      access_controls: [],
      available_access_levels: ['none', 'viewer', 'editor'],
      default_access_level: 'editor',
      user_access_level: 'editor',
      user_can_edit_access_levels: true,
    });
    expect((await request(world.app).get(url).set(memberAuth)).body).toMatchObject({ user_access_level: 'editor', can_edit: true });

    const def = await request(world.app).put(`${url}/access_controls`).set(s.auth).send({ access_level: 'viewer' });
    expect(def.status).toBe(200);
    expect(def.body).toMatchObject({ access_level: 'viewer', organization_member: null, resource: 'feature_flag', resource_id: String(flag.id) });
    expect((await request(world.app).get(url).set(memberAuth)).body).toMatchObject({ user_access_level: 'viewer', can_edit: false });
    expect((await request(world.app).get(s.base).set(memberAuth)).body.results[0]).toMatchObject({ key: 'private-flag', user_access_level: 'viewer' });
    // The creator stays an editor whatever the default.
    expect((await request(world.app).get(url).set(s.auth)).body.user_access_level).toBe('editor');

    const denied = await request(world.app).patch(url).set(memberAuth).send({ active: false });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ type: 'authentication_error', code: 'permission_denied', detail: 'You do not have editor access to this resource.' });
    expect((await request(world.app).get(url).set(s.auth)).body).toMatchObject({ active: true, version: 1 });
    expect((await request(world.app).put(`${url}/access_controls`).set(memberAuth).send({ access_level: 'editor' })).status).toBe(403);

    const membership = await world.sql.query<{ id: string }>('t.m', 'SELECT id FROM organization_memberships WHERE user_id = $1', [member.id]);
    const memberId = membership.rows[0]!.id;
    const none = await request(world.app).put(`${url}/access_controls`).set(s.auth).send({ access_level: 'none', organization_member: memberId });
    expect(none.body).toMatchObject({ access_level: 'none', organization_member: memberId });
    expect((await request(world.app).get(url).set(memberAuth)).status).toBe(404);
    expect((await request(world.app).get(`${url}/access_controls`).set(memberAuth)).status).toBe(404);
    expect((await request(world.app).get(s.base).set(memberAuth)).body.count).toBe(0);
    expect((await request(world.app).get(s.base).set(s.auth)).body.count).toBe(1);
    const rules = await request(world.app).get(`${url}/access_controls`).set(s.auth);
    expect(rules.body.default_access_level).toBe('viewer');
    expect((rules.body.access_controls as Array<{ access_level: string }>).map((rule) => rule.access_level)).toEqual(['viewer', 'none']);

    expect((await request(world.app).put(`${url}/access_controls`).set(s.auth).send({ access_level: null, organization_member: memberId })).status).toBe(204);
    expect((await request(world.app).get(url).set(memberAuth)).body.user_access_level).toBe('viewer');
    expect((await request(world.app).put(`${url}/access_controls`).set(s.auth).send({ access_level: null })).status).toBe(204);
    const patched = await request(world.app).patch(url).set(memberAuth).send({ active: false });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ active: false, user_access_level: 'editor' });

    const bad = await request(world.app).put(`${url}/access_controls`).set(s.auth).send({ access_level: 'owner' });
    expect(bad.status).toBe(400);
    expect(bad.body.attr).toBe('access_level');
    const scopeless = bearer(await world.newKey(s.userId, ['feature_flag:write']));
    expect((await request(world.app).get(`${url}/access_controls`).set(scopeless)).body.detail).toBe("API key missing required scope 'access_control:read'");
    expect((await request(world.app).put(`${url}/access_controls`).set(scopeless).send({ access_level: 'viewer' })).body.detail).toBe(
      "API key missing required scope 'access_control:write'",
    );
    expect((await request(world.app).post(`${url}/access_controls`).set(s.auth).send({})).status).toBe(405);
    expect((await request(world.app).get(`${s.base}/999999/access_controls`).set(s.auth)).status).toBe(404);
  });

  it('format=csv: the list as flattened rows with a sorted header, a flag as one row', async () => {
    const s = await setup();
    const alpha = await s.create({ key: 'alpha', name: 'Alpha, "quoted"', filters: { groups: [{ properties: [], rollout_percentage: 30 }] } });
    await s.create({
      key: 'beta',
      filters: { groups: [{ properties: [{ key: 'plan', value: ['pro'], operator: 'exact', type: 'person' }], rollout_percentage: null }] },
    });
    const res = await request(world.app).get(`${s.base}/?format=csv`).set(s.auth);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe('attachment; filename="feature_flags.csv"');
    const lines = res.text.split('\r\n');
    const header = lines[0]!.split(',');
    expect(header).toEqual([...header].sort());
    expect(header).toEqual(
      expect.arrayContaining([
        'key',
        'name',
        'filters.groups.0.rollout_percentage',
        'filters.groups.0.properties.0.value.0',
        'created_by.email',
        'user_access_level',
      ]),
    );
    expect(header).not.toContain('count');
    expect(lines).toHaveLength(4);
    expect(lines[3]).toBe('');
    const cells = (line: string) => Object.fromEntries(header.map((column, i) => [column, line.split(',')[i]]));
    expect(cells(lines[1]!)).toMatchObject({ key: 'beta', 'filters.groups.0.properties.0.value.0': 'pro', user_access_level: 'editor' });
    expect(lines[2]).toContain('"Alpha, ""quoted"""');
    expect((await request(world.app).get(`${s.base}/?format=csv&search=beta`).set(s.auth)).text.split('\r\n')).toHaveLength(3);
    const one = await request(world.app).get(`${s.base}/${alpha.id}/?format=csv`).set(s.auth);
    expect(one.headers['content-disposition']).toBe('attachment; filename="feature_flag.csv"');
    expect(one.text.split('\r\n')).toHaveLength(3);
    expect(one.text.split('\r\n')[1]).toContain('alpha');
    expect((await request(world.app).get(`${s.base}/?format=xml`).set(s.auth)).status).toBe(404);
  });

  it('remote_config: the "true" payload of a remote-config flag by key or id, JSON-encoded once more', async () => {
    const s = await setup();
    const payload = JSON.stringify({ color: 'blue', sizes: [1, 2] });
    const remote = await s.create({
      key: 'site-config',
      is_remote_configuration: true,
      filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: payload } },
    });
    for (const path of [
      `${s.base}/site-config/remote_config`,
      `${s.base}/${remote.id}/remote_config/`,
      `/api/projects/@current/feature_flags/site-config/remote_config?token=phc_x`,
    ]) {
      const res = await request(world.app).get(path).set(s.auth);
      expect(res.status).toBe(200);
      expect(res.text).toBe(JSON.stringify(payload));
      expect(JSON.parse(JSON.parse(res.text) as string)).toEqual({ color: 'blue', sizes: [1, 2] });
    }
    const empty = await s.create({ key: 'empty-config', is_remote_configuration: true });
    expect((await request(world.app).get(`${s.base}/${empty.id}/remote_config`).set(s.auth)).text).toBe('null');
    await s.create({ key: 'ordinary', filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: payload } } });
    expect((await request(world.app).get(`${s.base}/ordinary/remote_config`).set(s.auth)).status).toBe(404);
    expect((await request(world.app).get(`${s.base}/missing/remote_config`).set(s.auth)).status).toBe(404);
    await request(world.app).patch(`${s.base}/${remote.id}`).set(s.auth).send({ deleted: true }).expect(200);
    expect((await request(world.app).get(`${s.base}/site-config/remote_config`).set(s.auth)).status).toBe(404);
    const other = await world.tenant();
    expect((await request(world.app).get(`/api/projects/${other.projectId}/feature_flags/${empty.id}/remote_config`).set(other.auth)).status).toBe(404);
    const noScope = bearer(await world.newKey(s.userId, ['cohort:read']));
    expect((await request(world.app).get(`${s.base}/${empty.id}/remote_config`).set(noScope)).body.detail).toBe(
      "API key missing required scope 'feature_flag:read'",
    );
  });
});
