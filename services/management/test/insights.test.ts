import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { migrate as migrateClickHouse, type ClickHouse } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { silentLogger, uuidv7 } from '@plover/core';
import { PersonReads, PersonStore } from '@plover/persons';
import { CohortConditions } from '../src/shared/cohort-conditions';
import { cohortResolver } from '../src/shared/insight-context';
import { backends, bearer, useWorld } from './support/app';

const USER_FIELDS = ['id', 'uuid', 'distinct_id', 'first_name', 'last_name', 'email', 'is_email_verified', 'hedgehog_config', 'role_at_organization'];
const TRENDS_QUERY = { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: '$pageview' }] };

describe.each(backends)('saved insights on $name', (backend) => {
  const world = useWorld(backend);

  async function setup() {
    const t = await world.tenant();
    return { ...t, base: `/api/environments/${t.projectId}/insights` };
  }

  const create = async (s: { base: string; auth: Record<string, string> }, body: Record<string, unknown>) => {
    const res = await request(world.app).post(s.base).set(s.auth).send(body);
    expect(res.status).toBe(201);
    return res.body as Record<string, unknown> & { id: number; short_id: string };
  };

  it('creates (201) with an 8-char short_id and every field; retrieves by id and by short_id', async () => {
    const s = await setup();
    await world.sql.query('t.tz', `UPDATE projects SET timezone = 'Europe/Berlin' WHERE id = $1`, [s.projectId]);
    const res = await request(world.app)
      .post(`${s.base}/`)
      .set(s.auth)
      .send({
        name: 'Pageviews',
        derived_name: 'Pageview count',
        description: 'd',
        filters: { events: [{ id: '$pageview' }] },
        query: JSON.stringify(TRENDS_QUERY),
        order: 3,
        dashboards: [],
        tags: ['a', 'b,c'],
        favorited: true,
        saved: true,
      });
    expect(res.status).toBe(201);
    const body = res.body as Record<string, unknown> & { short_id: string; id: number };
    expect(body.short_id).toMatch(/^[A-Za-z0-9]{8}$/);
    expect(body).toMatchObject({
      name: 'Pageviews',
      derived_name: 'Pageview count',
      description: 'd',
      filters: { events: [{ id: '$pageview' }] },
      query: TRENDS_QUERY,
      order: 3,
      deleted: false,
      dashboards: [],
      dashboard_tiles: [],
      last_refresh: null,
      result: null,
      tags: ['a', 'b,c'],
      favorited: true,
      saved: true,
      is_sample: false,
      timezone: 'Europe/Berlin',
      user_access_level: 'editor',
    });
    expect(Object.keys(body.created_by as object).sort()).toEqual([...USER_FIELDS].sort());
    expect((body.created_by as { id: number }).id).toBe(s.userId);
    expect((body.last_modified_by as { id: number }).id).toBe(s.userId);
    // Creating counts as a view.
    expect(typeof body.last_viewed_at).toBe('string');
    for (const key of [body.id, body.short_id]) {
      const got = await request(world.app).get(`${s.base}/${key}/`).set(s.auth);
      expect(got.status).toBe(200);
      expect(got.body.id).toBe(body.id);
    }
    const bare = await create(s, {});
    expect(bare).toMatchObject({
      name: null,
      derived_name: null,
      description: null,
      filters: {},
      query: null,
      order: null,
      dashboards: [],
      tags: [],
      favorited: false,
      saved: false,
    });
    expect((await request(world.app).get(`${s.base}/nope1234`).set(s.auth)).status).toBe(404);
    expect((await request(world.app).get(`${s.base}/99999999999`).set(s.auth)).status).toBe(404);
  });

  it('a numeric path tries the id first, then the short_id', async () => {
    const s = await setup();
    const a = await create(s, { name: 'A' });
    const b = await create(s, { name: 'B' });
    await world.sql.query('t.short', 'UPDATE insights SET short_id = $1 WHERE id = $2', [String(a.id), b.id]);
    expect((await request(world.app).get(`${s.base}/${a.id}`).set(s.auth)).body.name).toBe('A');
    await world.sql.query('t.short', `UPDATE insights SET short_id = '98765432' WHERE id = $1`, [b.id]);
    expect((await request(world.app).get(`${s.base}/98765432`).set(s.auth)).body.name).toBe('B');
  });

  it.each([
    [{ name: 'x'.repeat(401) }, 'name'],
    [{ description: 5 }, 'description'],
    [{ filters: [1] }, 'filters'],
    [{ query: { series: [] } }, 'query'],
    [{ query: '{"kind": 1}' }, 'query'],
    [{ query: 'not json' }, 'query'],
    [{ query: [1] }, 'query'],
    [{ order: 'first' }, 'order'],
    [{ deleted: 'no' }, 'deleted'],
    [{ dashboards: ['x'] }, 'dashboards__0'],
    [{ dashboards: 3 }, 'dashboards'],
    // No dashboard of the project has this id.
    [{ dashboards: [999] }, 'dashboards'],
    [{ tags: [1] }, 'tags__0'],
    [{ favorited: 'yes' }, 'favorited'],
    [{ saved: null }, 'saved'],
  ])('create %j → 400 naming %s, nothing stored', async (body, attr) => {
    const s = await setup();
    const res = await request(world.app).post(s.base).set(s.auth).send(body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'validation_error', attr });
    const n = await world.sql.query<{ n: number }>('t.n', 'SELECT count(*)::int AS n FROM insights WHERE project_id = $1', [s.projectId]);
    expect(n.rows[0]!.n).toBe(0);
  });

  it('non-JSON bodies → 415; a top-level array → 400', async () => {
    const s = await setup();
    const form = await request(world.app).post(s.base).set(s.auth).type('form').send('name=x');
    expect(form.status).toBe(415);
    expect(form.body.code).toBe('unsupported_media_type');
    const text = await request(world.app).post(`${s.base}/timing`).set(s.auth).set('Content-Type', 'text/plain').send('{}');
    expect(text.status).toBe(415);
    expect((await request(world.app).post(s.base).set(s.auth).send([1])).status).toBe(400);
  });

  it('lists in `order`, then newest modified first; filters saved, favorited, search, short_id, created_by, user; paginates; CSV', async () => {
    const s = await setup();
    const other = await world.newUser(s.organizationId, 'member', s.projectId);
    const otherAuth = bearer(await world.newKey(other.id, ['*']));
    const a = await create(s, { name: 'Alpha funnel', saved: true });
    const b = await create({ ...s, auth: otherAuth }, { derived_name: 'Beta 100%', favorited: true });
    const c = await create(s, { name: 'Gamma', order: 1 });
    const gone = await create(s, { name: 'Deleted', deleted: true });
    const all = await request(world.app).get(s.base).set(s.auth);
    expect(all.status).toBe(200);
    expect(all.body.count).toBe(3);
    expect((all.body.results as Array<{ id: number }>).map((i) => i.id)).toEqual([c.id, b.id, a.id]);
    const ids = async (query: string) =>
      ((await request(world.app).get(`${s.base}?${query}`).set(s.auth)).body.results as Array<{ id: number }>).map((i) => i.id);
    expect(await ids('saved=true')).toEqual([a.id]);
    expect(await ids('favorited=1')).toEqual([b.id]);
    expect(await ids('search=FUNNEL')).toEqual([a.id]);
    expect(await ids('search=100%25')).toEqual([b.id]);
    expect(await ids('search=1_0')).toEqual([]);
    expect(await ids(`short_id=${c.short_id}`)).toEqual([c.id]);
    expect(await ids(`short_id=${gone.short_id}`)).toEqual([]);
    expect(await ids(`created_by=${other.id}`)).toEqual([b.id]);
    expect(await ids(`created_by=[${other.id},${s.userId}]`)).toEqual([c.id, b.id, a.id]);
    expect(await ids('user=true')).toEqual([c.id, a.id]);
    for (const query of ['created_by=abc', 'saved=maybe', 'limit=0']) {
      expect((await request(world.app).get(`${s.base}?${query}`).set(s.auth)).status).toBe(400);
    }
    const page = await request(world.app).get(`${s.base}?limit=2`).set(s.auth);
    expect(page.body.results).toHaveLength(2);
    expect(page.body.next).toMatch(/limit=2&offset=2$/);
    const csv = await request(world.app).get(`${s.base}?format=csv`).set(s.auth);
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    const [header, ...rows] = csv.text.trimEnd().split('\r\n');
    expect(header!.split(',')).toEqual(expect.arrayContaining(['created_by.email', 'short_id', 'name', 'user_access_level']));
    expect(rows).toHaveLength(3);
  });

  it('PATCH updates; last_modified moves only on name/description/filters/query; soft delete and restore; DELETE → 405 empty', async () => {
    const s = await setup();
    const created = await create(s, { name: 'A', filters: { a: 1, b: [1, 2] } });
    const url = `${s.base}/${created.short_id}`;
    const editor = await world.newUser(s.organizationId, 'member', s.projectId);
    const editorAuth = bearer(await world.newKey(editor.id, ['insight:write']));

    const favorited = await request(world.app)
      .patch(url)
      .set(editorAuth)
      .send({ favorited: true, tags: ['x'], order: 2, saved: true });
    expect(favorited.status).toBe(200);
    expect(favorited.body).toMatchObject({ favorited: true, tags: ['x'], order: 2, saved: true });
    expect(favorited.body.last_modified_at).toBe(created.last_modified_at);
    expect(favorited.body.updated_at > (created.updated_at as string)).toBe(true);
    // The same filters in another key order are no change.
    const same = await request(world.app)
      .patch(url)
      .set(editorAuth)
      .send({ name: 'A', filters: { b: [1, 2], a: 1 } });
    expect(same.body.last_modified_at).toBe(created.last_modified_at);
    const renamed = await request(world.app).patch(`${s.base}/${created.id}`).set(editorAuth).send({ name: 'B' });
    expect(renamed.body.name).toBe('B');
    expect(renamed.body.last_modified_at > (created.last_modified_at as string)).toBe(true);
    expect(renamed.body.last_modified_by.id).toBe(editor.id);
    expect(renamed.body.created_by.id).toBe(s.userId);
    const queried = await request(world.app).patch(url).set(s.auth).send({ query: TRENDS_QUERY });
    expect(queried.body.query).toEqual(TRENDS_QUERY);
    expect(queried.body.last_modified_at > renamed.body.last_modified_at).toBe(true);
    expect((await request(world.app).put(url).set(s.auth).send({ description: 'put' })).body.description).toBe('put');
    expect((await request(world.app).patch(url).set(s.auth).send({ query: 'x' })).body.attr).toBe('query');

    const del = await request(world.app).delete(url).set(s.auth);
    expect(del.status).toBe(405);
    expect(del.text).toBe('');
    const deleted = await request(world.app).patch(url).set(s.auth).send({ deleted: true });
    expect(deleted.body.deleted).toBe(true);
    expect((await request(world.app).get(url).set(s.auth)).status).toBe(404);
    expect((await request(world.app).get(`${url}/access_controls`).set(s.auth)).status).toBe(404);
    expect((await request(world.app).get(s.base).set(s.auth)).body.count).toBe(0);
    expect((await request(world.app).get(`${s.base}/my_last_viewed`).set(s.auth)).body).toEqual([]);
    expect((await request(world.app).patch(url).set(s.auth).send({ deleted: false })).body.deleted).toBe(false);
    expect((await request(world.app).get(url).set(s.auth)).status).toBe(200);
    expect((await request(world.app).patch(`${s.base}/nope1234`).set(s.auth).send({ name: 'x' })).status).toBe(404);
  });

  it('my_last_viewed: the caller’s 5 newest views, newest first; create, retrieve and POST viewed count', async () => {
    const s = await setup();
    const insights = [];
    for (let i = 0; i < 7; i++) insights.push(await create(s, { name: `I${i}` }));
    const names = async (auth = s.auth) => {
      const res = await request(world.app).get(`${s.base}/my_last_viewed/`).set(auth);
      expect(res.status).toBe(200);
      expect(Array.isArray(res.body)).toBe(true);
      return (res.body as Array<{ name: string }>).map((i) => i.name);
    };
    expect(await names()).toEqual(['I6', 'I5', 'I4', 'I3', 'I2']);
    const first = (await request(world.app).get(`${s.base}/my_last_viewed`).set(s.auth)).body[0] as Record<string, unknown>;
    expect(Object.keys(first).sort()).toEqual(
      [
        'id',
        'short_id',
        'name',
        'derived_name',
        'filters',
        'query',
        'dashboards',
        'dashboard_tiles',
        'description',
        'last_refresh',
        'refreshing',
        'saved',
        'tags',
        'updated_at',
        'created_by',
        'created_at',
        'last_modified_at',
        'favorited',
        'user_access_level',
        'last_viewed_at',
      ].sort(),
    );
    const viewed = await request(world.app).get(`${s.base}/${insights[0]!.id}`).set(s.auth);
    expect(viewed.body.last_viewed_at > (insights[0]!.last_viewed_at as string)).toBe(true);
    expect(await names()).toEqual(['I0', 'I6', 'I5', 'I4', 'I3']);

    // Views are per user: another member has seen nothing yet.
    const member = await world.newUser(s.organizationId, 'member', s.projectId);
    const memberAuth = bearer(await world.newKey(member.id, ['insight:read']));
    expect(await names(memberAuth)).toEqual([]);

    const other = await setup();
    const foreign = await create(other, { name: 'foreign' });
    const res = await request(world.app)
      .post(`${s.base}/viewed`)
      .set(s.auth)
      .send({ insight_ids: [insights[1]!.id, insights[2]!.id, foreign.id] });
    expect(res.status).toBe(201);
    expect(res.text).toBe('');
    expect((await names()).slice(0, 2).sort()).toEqual(['I1', 'I2']);
    await request(world.app).patch(`${s.base}/${insights[1]!.id}`).set(s.auth).send({ deleted: true });
    expect(await names()).toEqual(expect.not.arrayContaining(['I1']));
    expect(await names()).toHaveLength(5);

    for (const [body, attr] of [
      [{}, 'insight_ids'],
      [{ insight_ids: [] }, 'insight_ids'],
      [{ insight_ids: ['a'] }, 'insight_ids__0'],
      [{ insight_ids: [0] }, 'insight_ids__0'],
      [{ insight_ids: Array.from({ length: 2501 }, (_, i) => i + 1) }, 'insight_ids'],
    ] as const) {
      const bad = await request(world.app).post(`${s.base}/viewed`).set(s.auth).send(body);
      expect(bad.status).toBe(400);
      expect(bad.body.attr).toBe(attr);
    }
    for (const path of ['viewed', 'timing', 'trend', 'my_last_viewed']) {
      const wrong = await request(world.app).patch(`${s.base}/${path}`).set(s.auth).send({ name: 'x' });
      expect(wrong.status).toBe(405);
    }
    expect((await request(world.app).get(`${s.base}/viewed`).set(s.auth)).status).toBe(405);
    expect((await request(world.app).post(`${s.base}/my_last_viewed`).set(s.auth).send({})).status).toBe(405);
    expect((await request(world.app).post(`${s.base}/${insights[0]!.id}`).set(s.auth).send({})).status).toBe(405);
  });

  it('timing: 200 {"success": true}, stored as sent and counted', async () => {
    const s = await setup();
    const report = { insight: 'TRENDS', time_to_see_data_ms: 1250, cached: false, type: 'insight_load', insight_id: 'abc' };
    const res = await request(world.app).post(`${s.base}/timing/`).set(s.auth).send(report);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    const rows = await world.sql.query<{ payload: unknown; user_id: number }>(
      't.timing',
      'SELECT payload, user_id FROM insight_timings WHERE project_id = $1',
      [s.projectId],
    );
    expect(rows.rows).toEqual([{ payload: report, user_id: s.userId }]);
    const metrics = await request(world.app).get('/metrics');
    expect(metrics.text).toMatch(/plover_insight_timing_reports_total\{service="test"\} [1-9]/);
    expect(metrics.text).toContain('plover_insight_time_to_see_data_seconds_count');
    expect((await request(world.app).get(`${s.base}/timing`).set(s.auth)).status).toBe(405);
  });

  it('scopes: 401 without a key; 403 naming the missing scope on every route; other projects are 403/404', async () => {
    const s = await setup();
    const insight = await create(s, { name: 'A' });
    const url = `${s.base}/${insight.id}`;
    expect((await request(world.app).get(s.base)).status).toBe(401);
    expect((await request(world.app).get(`${s.base}/my_last_viewed`)).status).toBe(401);
    const none = bearer(await world.newKey(s.userId, ['person:read']));
    const read = bearer(await world.newKey(s.userId, ['insight:read']));
    const routes: Array<[method: 'get' | 'post' | 'patch' | 'put' | 'delete', path: string, scope: string]> = [
      ['get', s.base, 'insight:read'],
      ['get', url, 'insight:read'],
      ['get', `${s.base}/my_last_viewed`, 'insight:read'],
      ['post', `${s.base}/viewed`, 'insight:read'],
      ['get', `${s.base}/trend`, 'insight:read'],
      ['post', `${s.base}/trend`, 'insight:read'],
      ['get', `${s.base}/funnel`, 'insight:read'],
      ['get', `${s.base}/retention`, 'insight:read'],
      ['post', `${s.base}/retention`, 'insight:read'],
      ['post', `${s.base}/funnel`, 'insight:read'],
      ['get', `${s.base}/funnel/correlation`, 'insight:read'],
      ['post', `${s.base}/funnel/correlation`, 'insight:read'],
      ['post', s.base, 'insight:write'],
      ['patch', url, 'insight:write'],
      ['put', url, 'insight:write'],
      ['delete', url, 'insight:write'],
      ['post', `${s.base}/timing`, 'insight:write'],
      ['get', `${url}/access_controls`, 'access_control:read'],
      ['put', `${url}/access_controls`, 'access_control:write'],
    ];
    for (const [method, path, scope] of routes) {
      const key = scope === 'insight:write' ? read : none;
      const agent = request(world.app);
      const res = await agent[method](path)
        .set(key)
        .send({ insight_ids: [insight.id], access_level: 'viewer' });
      expect([method, path, res.status, res.body.detail]).toEqual([method, path, 403, `API key missing required scope '${scope}'`]);
    }
    expect((await request(world.app).get(url).set(read)).status).toBe(200);
    const other = await setup();
    expect((await request(world.app).get(`${other.base}/${insight.id}`).set(other.auth)).status).toBe(404);
    expect((await request(world.app).get(`${other.base}/${insight.short_id}`).set(other.auth)).status).toBe(404);
    expect((await request(world.app).get(s.base).set(other.auth)).status).toBe(403);
  });

  it('access_controls: GET/PUT on resource "insight", enforced on list, retrieve, views and writes', async () => {
    const s = await setup();
    const member = await world.newUser(s.organizationId, 'member', s.projectId);
    const memberAuth = bearer(await world.newKey(member.id, ['*']));
    const insight = await create(s, { name: 'Private' });
    const url = `${s.base}/${insight.short_id}`;
    const initial = await request(world.app).get(`${url}/access_controls/`).set(s.auth);
    expect(initial.status).toBe(200);
    expect(initial.body).toMatchObject({
      access_controls: [],
      available_access_levels: ['none', 'viewer', 'editor'],
      default_access_level: 'editor',
      user_access_level: 'editor',
    });
    const viewer = await request(world.app).put(`${url}/access_controls`).set(s.auth).send({ access_level: 'viewer' });
    expect(viewer.status).toBe(200);
    expect(viewer.body).toMatchObject({ access_level: 'viewer', resource: 'insight', resource_id: String(insight.id), organization_member: null });
    expect((await request(world.app).get(url).set(memberAuth)).body.user_access_level).toBe('viewer');
    const viewed = (await request(world.app).get(`${s.base}/my_last_viewed`).set(memberAuth)).body as Array<{ user_access_level: string }>;
    expect(viewed.map((i) => i.user_access_level)).toEqual(['viewer']);
    const denied = await request(world.app).patch(url).set(memberAuth).send({ name: 'mine' });
    expect(denied.status).toBe(403);
    expect(denied.body.detail).toBe('You do not have editor access to this resource.');
    expect((await request(world.app).put(`${url}/access_controls`).set(memberAuth).send({ access_level: 'editor' })).status).toBe(403);
    // The creator stays an editor.
    expect((await request(world.app).patch(url).set(s.auth).send({ name: 'still mine' })).status).toBe(200);

    const membership = await world.sql.query<{ id: string }>('t.m', 'SELECT id FROM organization_memberships WHERE user_id = $1', [member.id]);
    const hidden = await request(world.app)
      .put(`${url}/access_controls`)
      .set(s.auth)
      .send({ access_level: 'none', organization_member: membership.rows[0]!.id });
    expect(hidden.status).toBe(200);
    expect((await request(world.app).get(url).set(memberAuth)).status).toBe(404);
    expect((await request(world.app).get(s.base).set(memberAuth)).body.count).toBe(0);
    expect((await request(world.app).get(`${s.base}/my_last_viewed`).set(memberAuth)).body).toEqual([]);
    await request(world.app)
      .post(`${s.base}/viewed`)
      .set(memberAuth)
      .send({ insight_ids: [insight.id] });
    expect((await request(world.app).get(`${s.base}/my_last_viewed`).set(memberAuth)).body).toEqual([]);
    expect((await request(world.app).get(s.base).set(s.auth)).body.count).toBe(1);
    const removed = await request(world.app)
      .put(`${url}/access_controls`)
      .set(s.auth)
      .send({ access_level: null, organization_member: membership.rows[0]!.id });
    expect(removed.status).toBe(204);
    expect((await request(world.app).get(url).set(memberAuth)).status).toBe(200);
    expect((await request(world.app).put(`${url}/access_controls`).set(s.auth).send({ access_level: 'owner' })).body.attr).toBe('access_level');
  });
});

describe.each(backends)('insight cohort members on $name', (backend) => {
  const world = useWorld(backend);

  it('static, dynamic (with negation, not_in and nested cohorts) and the 400s', async () => {
    const t = await world.tenant();
    const store = new PersonStore(world.sql);
    const reads = new PersonReads(world.sql);
    const people: Record<string, { id: number; uuid: string }> = {};
    for (const [id, props] of Object.entries({
      ann: { plan: 'pro', country: 'DE' },
      bob: { plan: 'free', country: 'DE' },
      cid: { plan: 'pro', country: 'FR' },
      dan: {},
    })) {
      await store.processEvent(t.projectId, {
        uuid: uuidv7(),
        event: '$identify',
        distinctId: id,
        timestamp: new Date('2024-01-01T00:00:00Z'),
        properties: { $set: props },
      });
      people[id] = (await reads.getByDistinctId(t.projectId, id))!;
    }
    const cohort = async (filters: unknown, options: { isStatic?: boolean; deleted?: boolean; projectId?: number } = {}) =>
      (
        await world.sql.query<{ id: number }>(
          't.cohort',
          'INSERT INTO cohorts (project_id, name, filters, is_static, deleted) VALUES ($1, $2, $3, $4, $5) RETURNING id',
          [options.projectId ?? t.projectId, 'c', filters, options.isStatic ?? false, options.deleted ?? false],
        )
      ).rows[0]!.id;
    const members = cohortResolver(world.sql, t.projectId);
    const names = async (id: number) => {
      const uuids = new Set(await members(id));
      return Object.keys(people)
        .filter((name) => uuids.has(people[name]!.uuid))
        .sort();
    };

    const fixed = await cohort({}, { isStatic: true });
    await world.sql.query('t.cp', 'INSERT INTO cohort_people (cohort_id, person_id) VALUES ($1, $2), ($1, $3)', [fixed, people.bob!.id, people.dan!.id]);
    expect(await names(fixed)).toEqual(['bob', 'dan']);

    const pro = await cohort({ properties: { type: 'AND', values: [{ type: 'AND', values: [{ key: 'plan', value: 'pro', type: 'person' }] }] } });
    expect(await names(pro)).toEqual(['ann', 'cid']);
    const notGerman = await cohort({ properties: { type: 'OR', values: [{ key: 'country', value: 'DE', type: 'person', negation: true }] } });
    expect(await names(notGerman)).toEqual(['cid', 'dan']);
    const nested = await cohort({
      properties: {
        type: 'OR',
        values: [
          {
            type: 'AND',
            values: [
              { key: 'id', value: pro, type: 'cohort' },
              { key: 'country', value: ['DE'], operator: 'exact', type: 'person' },
            ],
          },
          { key: 'id', value: String(fixed), type: 'cohort' },
        ],
      },
    });
    expect(await names(nested)).toEqual(['ann', 'bob', 'dan']);
    const outside = await cohort({
      properties: {
        type: 'AND',
        values: [
          { key: 'id', value: fixed, type: 'cohort', operator: 'not_in' },
          { key: 'plan', operator: 'is_set', type: 'person' },
        ],
      },
    });
    expect(await names(outside)).toEqual(['ann', 'cid']);
    expect(await names(await cohort({}))).toEqual([]);
    expect(await names(await cohort({ properties: { type: 'AND', values: [] } }))).toEqual(['ann', 'bob', 'cid', 'dan']);

    const expect400 = async (id: number, detail: RegExp) => {
      await expect(cohortResolver(world.sql, t.projectId)(id)).rejects.toMatchObject({
        status: 400,
        attr: 'properties',
        detail: expect.stringMatching(detail) as unknown,
      });
    };
    await expect400(999_999, /does not exist/);
    await expect400(await cohort({}, { deleted: true }), /does not exist/);
    const other = await world.tenant();
    await expect400(await cohort({}, { projectId: other.projectId }), /does not exist/);
    const loop = await cohort({});
    await world.sql.query('t.loop', 'UPDATE cohorts SET filters = $1 WHERE id = $2', [
      { properties: { type: 'AND', values: [{ key: 'id', value: loop, type: 'cohort' }] } },
      loop,
    ]);
    await expect400(loop, /refers to itself/);
    await expect400(await cohort({ properties: { type: 'AND', values: [{ key: 'id', value: 999_999, type: 'cohort' }] } }), /does not exist/);
    await expect400(await cohort({ properties: { type: 'AND', values: [{ key: 'x', value: 1, type: 'other' }] } }), /not supported/);

    // A behavioral cohort is its stored members at the published version: none before its first calculation,
    // and never the rows of a version not yet published.
    const behavioral = await cohort({ properties: { type: 'AND', values: [{ key: 'x', value: 'performed_event', type: 'behavioral' }] } });
    const fresh = (id: number) => cohortResolver(world.sql, t.projectId)(id);
    expect(await fresh(behavioral)).toEqual([]);
    await world.sql.query('t.cp', 'INSERT INTO cohort_people (cohort_id, version, person_id) VALUES ($1, 1, $2), ($1, 2, $3)', [
      behavioral,
      people.ann!.id,
      people.bob!.id,
    ]);
    await world.sql.query('t.publish', 'UPDATE cohorts SET people_version = 1 WHERE id = $1', [behavioral]);
    expect(await fresh(behavioral)).toEqual([people.ann!.uuid]);
    expect(await names(await cohort({ properties: { type: 'OR', values: [{ key: 'id', value: behavioral, type: 'cohort' }] } }))).toEqual(['ann']);
    expect(await new CohortConditions(world.sql, t.projectId).ofCohort(behavioral)).toEqual({ storedCohort: behavioral });
  });
});

describe('insight computations with chDB', () => {
  let clickhouse: ClickHouse;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'plover-mgmt-insights-'));
    clickhouse = await ChdbClickHouse.open({ dataDir: dir });
    await migrateClickHouse(clickhouse, { logger: silentLogger() });
  });
  afterAll(async () => {
    await clickhouse.close();
    await rm(dir, { recursive: true, force: true });
  });

  describe.each(backends.map((backend, index) => ({ ...backend, index })))('on $name', (backend) => {
    const world = useWorld(backend, { clickhouse: () => clickhouse });
    // Both databases share one chDB: keep their project (team) ids apart.
    beforeAll(() => world.sql.query('t.ids', `ALTER TABLE projects ALTER COLUMN id RESTART WITH ${(backend.index + 1) * 100_000}`));

    /** A project whose persons ann and bob exist in Postgres, with `events` of theirs (`[distinct id, event, day of March 2024]`). */
    async function setup(events: Array<[string, string, number]>) {
      const t = await world.tenant();
      const store = new PersonStore(world.sql);
      const reads = new PersonReads(world.sql);
      const persons: Record<string, { id: number; uuid: string }> = {};
      for (const id of ['ann', 'bob']) {
        await store.processEvent(t.projectId, {
          uuid: uuidv7(),
          event: '$identify',
          distinctId: id,
          timestamp: new Date('2024-03-01T00:00:00Z'),
          properties: { $set: { name: id } },
        });
        persons[id] = (await reads.getByDistinctId(t.projectId, id))!;
      }
      const add = async (distinctId: string, event: string, day: number) =>
        clickhouse.command(
          't.event',
          `INSERT INTO events (uuid, team_id, event, distinct_id, person_id, timestamp)
           VALUES (generateUUIDv4(), {projectId:Int64}, {event:String}, {distinct:String}, {person:UUID}, {ts:DateTime64(6)})`,
          { projectId: t.projectId, event, distinct: distinctId, person: persons[distinctId]!.uuid, ts: `2024-03-0${day} 12:00:00` },
        );
      for (const [distinctId, event, day] of events) await add(distinctId, event, day);
      return { ...t, persons, add, base: `/api/projects/${t.projectId}/insights` };
    }

    const RANGE = { date_from: '2024-03-01', date_to: '2024-03-03', interval: 'day' };

    it('trend: GET legacy params and POST TrendsQuery agree; cached until the data changes or refresh; CSV', async () => {
      const s = await setup([
        ['ann', '$pageview', 1],
        ['bob', '$pageview', 1],
        ['ann', '$pageview', 3],
        ['ann', 'other', 2],
      ]);
      const legacy = new URLSearchParams({ ...RANGE, events: JSON.stringify([{ id: '$pageview', custom_name: 'Views, all' }]) });
      const first = await request(world.app).get(`${s.base}/trend/?${legacy.toString()}`).set(s.auth);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ timezone: 'UTC', is_cached: false, next: null });
      expect(first.body.result).toHaveLength(1);
      expect(first.body.result[0]).toMatchObject({ data: [2, 0, 1], labels: ['1-Mar-2024', '2-Mar-2024', '3-Mar-2024'], count: 3, label: '$pageview' });
      expect(Date.parse(first.body.last_refresh as string)).not.toBeNaN();

      const again = await request(world.app).get(`${s.base}/trend?${legacy.toString()}`).set(s.auth);
      expect(again.body).toMatchObject({ is_cached: true, last_refresh: first.body.last_refresh, result: first.body.result });

      const query = {
        kind: 'TrendsQuery',
        series: [{ kind: 'EventsNode', event: '$pageview', custom_name: 'Views, all' }],
        interval: 'day',
        dateRange: { date_from: RANGE.date_from, date_to: RANGE.date_to },
      };
      const posted = await request(world.app).post(`${s.base}/trend/`).set(s.auth).send({ query });
      expect(posted.status).toBe(200);
      expect(posted.body.result[0].data).toEqual([2, 0, 1]);

      await s.add('bob', '$pageview', 2);
      const fresh = await request(world.app).get(`${s.base}/trend?${legacy.toString()}`).set(s.auth);
      expect(fresh.body.is_cached).toBe(false);
      expect(fresh.body.result[0].data).toEqual([2, 1, 1]);
      const refreshed = await request(world.app).get(`${s.base}/trend?${legacy.toString()}&refresh=true`).set(s.auth);
      expect(refreshed.body.is_cached).toBe(false);
      expect(refreshed.body.last_refresh >= fresh.body.last_refresh).toBe(true);
      expect(
        (
          await request(world.app)
            .post(`${s.base}/trend`)
            .set(s.auth)
            .send({ ...RANGE, events: [{ id: '$pageview', custom_name: 'Views, all' }], refresh: 'blocking' })
        ).body.is_cached,
      ).toBe(false);

      const csv = await request(world.app).get(`${s.base}/trend?${legacy.toString()}&format=csv`).set(s.auth);
      expect(csv.status).toBe(200);
      expect(csv.headers['content-type']).toMatch(/^text\/csv/);
      expect(csv.headers['content-disposition']).toBe('attachment; filename="trends (2024-03-01 2024-03-03).csv"');
      expect(csv.text).toBe('series,1-Mar-2024,2-Mar-2024,3-Mar-2024\r\n"Views, all",2,1,1\r\n');

      const bad = await request(world.app)
        .get(`${s.base}/trend?events=${encodeURIComponent('[{"id": 3}]')}`)
        .set(s.auth);
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({ type: 'validation_error', code: 'invalid_input', detail: 'Must be a string.', attr: 'events__0__id' });
      expect((await request(world.app).post(`${s.base}/trend`).set(s.auth).type('form').send('events=x')).status).toBe(415);
    });

    it('trend without parameters: 200, no series, the rest of the response as usual', async () => {
      const s = await setup([['ann', '$pageview', 1]]);
      for (const res of [await request(world.app).get(`${s.base}/trend/`).set(s.auth), await request(world.app).post(`${s.base}/trend`).set(s.auth).send({})]) {
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ result: [], timezone: 'UTC', next: null });
        expect(typeof res.body.is_cached).toBe('boolean');
        expect(Date.parse(res.body.last_refresh as string)).not.toBeNaN();
        expect(res.body.timings).toEqual([{ k: expect.any(String) as unknown, t: expect.any(Number) as unknown }]);
      }
    });

    it('trend: stickiness and lifecycle through insight / shown_as; lifecycle refuses a breakdown', async () => {
      const s = await setup([
        ['ann', '$pageview', 1],
        ['ann', '$pageview', 2],
        ['bob', '$pageview', 2],
        ['ann', 'other', 3],
      ]);
      const events = JSON.stringify([{ id: '$pageview' }]);
      const get = (params: Record<string, string>) =>
        request(world.app)
          .get(`${s.base}/trend/?${new URLSearchParams({ ...RANGE, events, ...params }).toString()}`)
          .set(s.auth);
      for (const params of [{ insight: 'STICKINESS' }, { shown_as: 'Stickiness' }] as Record<string, string>[]) {
        const res = await get(params);
        expect(res.status).toBe(200);
        expect(res.body.result).toEqual([
          expect.objectContaining({ data: [1, 1, 0], labels: ['1 day', '2 days', '3 days'], days: [1, 2, 3], count: 2, label: '$pageview' }),
        ]);
      }
      for (const params of [{ insight: 'LIFECYCLE' }, { shown_as: 'Lifecycle' }] as Record<string, string>[]) {
        const res = await get(params);
        expect(res.status).toBe(200);
        // These events store no person created_at (the 1970 default), so nobody is new: first activity resurrects.
        expect((res.body.result as Array<{ status: string; data: number[] }>).map(({ status, data }) => [status, data])).toEqual([
          ['new', [0, 0, 0]],
          ['returning', [0, 1, 0]],
          ['resurrecting', [1, 1, 0]],
          ['dormant', [0, 0, -2]],
        ]);
      }
      const csv = await get({ insight: 'STICKINESS', format: 'csv' });
      expect(csv.text).toBe('series,1 day,2 days,3 days\r\n$pageview,1,1,0\r\n');
      const refused = await get({ insight: 'LIFECYCLE', breakdown: '$browser' });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ type: 'validation_error', attr: 'breakdown' });
    });

    it('trend: all events broken down by event name (PostHog’s event_metadata breakdown), legacy and TrendsQuery; other expressions → 400', async () => {
      const s = await setup([
        ['ann', '$pageview', 1],
        ['bob', '$pageview', 2],
        ['ann', '$pageview', 3],
        ['ann', 'signup', 2],
        ['bob', 'signup', 3],
        ['ann', 'purchase', 3],
      ]);
      const legacy = new URLSearchParams({
        ...RANGE,
        events: JSON.stringify([{ id: null, name: 'All events' }]),
        breakdown: 'event',
        breakdown_type: 'event_metadata',
        breakdown_limit: '2',
        display: 'ActionsTable',
      });
      const totals = await request(world.app).get(`${s.base}/trend/?${legacy.toString()}`).set(s.auth);
      expect(totals.status).toBe(200);
      expect(
        (totals.body.result as Array<Record<string, unknown>>).map(({ breakdown_value, aggregated_value }) => [breakdown_value, aggregated_value]),
      ).toEqual([
        ['$pageview', 3],
        ['signup', 2],
        ['$$_posthog_breakdown_other_$$', 1],
      ]);
      const query = {
        kind: 'TrendsQuery',
        series: [{ kind: 'EventsNode', event: null }],
        dateRange: { date_from: RANGE.date_from, date_to: RANGE.date_to },
        breakdownFilter: { breakdown: 'event', breakdown_type: 'hogql' },
      };
      const daily = await request(world.app).post(`${s.base}/trend/`).set(s.auth).send({ query });
      expect(daily.status).toBe(200);
      expect((daily.body.result as Array<Record<string, unknown>>).map(({ label, data }) => [label, data])).toEqual([
        ['$pageview', [1, 1, 1]],
        ['signup', [0, 1, 1]],
        ['purchase', [0, 0, 1]],
      ]);
      legacy.set('breakdown', 'distinct_id');
      const refused = await request(world.app).get(`${s.base}/trend/?${legacy.toString()}`).set(s.auth);
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({
        type: 'validation_error',
        code: 'invalid_input',
        detail: 'Event metadata breakdowns support only "event" (the event name).',
        attr: 'breakdown',
      });
    });

    it('trend: cohort filters use Postgres membership (a change of members is a new result); unknown cohort → 400', async () => {
      const s = await setup([
        ['ann', '$pageview', 1],
        ['bob', '$pageview', 1],
        ['bob', '$pageview', 2],
      ]);
      const cohort = (
        await world.sql.query<{ id: number }>('t.cohort', `INSERT INTO cohorts (project_id, name, is_static) VALUES ($1, 'c', true) RETURNING id`, [
          s.projectId,
        ])
      ).rows[0]!.id;
      await world.sql.query('t.cp', 'INSERT INTO cohort_people (cohort_id, person_id) VALUES ($1, $2)', [cohort, s.persons.bob!.id]);
      const params = (id: number) =>
        new URLSearchParams({
          ...RANGE,
          events: JSON.stringify([{ id: '$pageview' }]),
          properties: JSON.stringify([{ key: 'id', value: id, type: 'cohort' }]),
        });
      const members = await request(world.app)
        .get(`${s.base}/trend?${params(cohort).toString()}`)
        .set(s.auth);
      expect(members.status).toBe(200);
      expect(members.body.result[0].data).toEqual([1, 1, 0]);
      await world.sql.query('t.cp', 'INSERT INTO cohort_people (cohort_id, person_id) VALUES ($1, $2)', [cohort, s.persons.ann!.id]);
      const more = await request(world.app)
        .get(`${s.base}/trend?${params(cohort).toString()}`)
        .set(s.auth);
      expect(more.body).toMatchObject({ is_cached: false });
      expect(more.body.result[0].data).toEqual([2, 1, 0]);
      const unknown = await request(world.app)
        .get(`${s.base}/trend?${params(999_999).toString()}`)
        .set(s.auth);
      expect(unknown.status).toBe(400);
      expect(unknown.body).toMatchObject({ type: 'validation_error', attr: 'properties' });
    });

    it("funnel: PostHog's legacy steps result from legacy fields (GET and POST) and a FunnelsQuery; bad input is a 400 naming the field", async () => {
      const s = await setup([
        ['ann', 'signup', 1],
        ['ann', 'purchase', 2],
        ['bob', 'purchase', 1],
        ['bob', 'signup', 2],
      ]);
      const steps = [
        { id: 'signup', order: 0 },
        { id: 'purchase', order: 1, custom_name: 'Paid' },
      ];
      const posted = await request(world.app)
        .post(`${s.base}/funnel/`)
        .set(s.auth)
        .send({ ...RANGE, events: steps });
      expect(posted.status).toBe(200);
      expect(posted.body).toMatchObject({ is_cached: false, timezone: 'UTC' });
      expect(posted.body.result).toEqual([
        {
          action_id: 'signup',
          name: 'signup',
          custom_name: null,
          order: 0,
          type: 'events',
          count: 2,
          average_conversion_time: null,
          median_conversion_time: null,
          people: [],
        },
        {
          action_id: 'purchase',
          name: 'purchase',
          custom_name: 'Paid',
          order: 1,
          type: 'events',
          count: 1,
          average_conversion_time: 86400,
          median_conversion_time: 86400,
          people: [],
        },
      ]);
      const params = new URLSearchParams({ ...RANGE, events: JSON.stringify(steps) });
      const got = await request(world.app).get(`${s.base}/funnel?${params.toString()}`).set(s.auth);
      expect(got.body).toMatchObject({ is_cached: true, result: posted.body.result });
      const query = {
        kind: 'FunnelsQuery',
        series: [
          { kind: 'EventsNode', event: 'signup' },
          { kind: 'EventsNode', event: 'purchase', custom_name: 'Paid' },
        ],
        dateRange: { date_from: RANGE.date_from, date_to: RANGE.date_to },
      };
      const viaQuery = await request(world.app).post(`${s.base}/funnel/`).set(s.auth).send({ query, refresh: true });
      expect(viaQuery.body.result).toEqual(posted.body.result);
      const oneStep = await request(world.app)
        .post(`${s.base}/funnel/`)
        .set(s.auth)
        .send({ events: [{ id: 'signup' }] });
      expect(oneStep.status).toBe(400);
      expect(oneStep.body).toMatchObject({ type: 'validation_error', attr: 'events' });
      const noWindow = await request(world.app).get(`${s.base}/funnel/?${params.toString()}&funnel_window_interval=0`).set(s.auth);
      expect(noWindow.status).toBe(400);
      expect(noWindow.body).toMatchObject({ type: 'validation_error', attr: 'funnel_window_interval' });
    });

    it('retention: cohort rows from legacy fields (GET and POST) and a RetentionQuery; bad input is a 400 naming the field', async () => {
      const s = await setup([
        ['ann', '$pageview', 1],
        ['ann', '$pageview', 2],
        ['bob', '$pageview', 1],
        ['bob', '$pageview', 3],
      ]);
      const fields = { date_to: '2024-03-03', total_intervals: 3 };
      const posted = await request(world.app).post(`${s.base}/retention/`).set(s.auth).send(fields);
      expect(posted.status).toBe(200);
      expect(posted.body).toMatchObject({ is_cached: false, timezone: 'UTC' });
      const counts = (rows: Array<{ values: Array<{ count: number }> }>) => rows.map((row) => row.values.map((value) => value.count));
      expect(counts(posted.body.result)).toEqual([
        [2, 1, 1],
        [1, 0, 0],
        [1, 0, 0],
      ]);
      expect(posted.body.result[0]).toMatchObject({ label: 'Day 0', date: '2024-03-01T00:00:00Z', breakdown_value: null });
      const got = await request(world.app).get(`${s.base}/retention?date_to=2024-03-03&total_intervals=3`).set(s.auth);
      expect(got.body).toMatchObject({ is_cached: true, result: posted.body.result });
      const query = { kind: 'RetentionQuery', dateRange: { date_to: '2024-03-03' }, retentionFilter: { totalIntervals: 3 } };
      const viaQuery = await request(world.app).post(`${s.base}/retention/`).set(s.auth).send({ query });
      expect(viaQuery.body.result).toEqual(posted.body.result);
      const bad = await request(world.app).get(`${s.base}/retention?period=Year`).set(s.auth);
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ type: 'validation_error', attr: 'period' });
    });

    it('funnel correlation: {result: {events, skewed}, last_refresh, is_cached}, GET and POST, cached', async () => {
      const s = await setup([
        ['ann', 'signup', 1],
        ['ann', 'watched video', 2],
        ['ann', 'purchase', 3],
        ['bob', 'signup', 1],
        ['bob', 'left', 2],
      ]);
      const body = {
        ...RANGE,
        events: [
          { id: 'signup', order: 0 },
          { id: 'purchase', order: 1 },
        ],
      };
      const posted = await request(world.app).post(`${s.base}/funnel/correlation/`).set(s.auth).send(body);
      expect(posted.status).toBe(200);
      expect(posted.body).toMatchObject({ is_cached: false, result: { skewed: false } });
      expect(Date.parse(posted.body.last_refresh as string)).not.toBeNaN();
      const events = posted.body.result.events as Array<{ event: { event: string }; correlation_type: string; success_count: number; failure_count: number }>;
      expect(events.find((e) => e.event.event === 'watched video')).toMatchObject({ correlation_type: 'success', success_count: 1, failure_count: 0 });
      expect(events.find((e) => e.event.event === 'left')).toMatchObject({ correlation_type: 'failure', success_count: 0, failure_count: 1 });
      const params = new URLSearchParams({ ...RANGE, events: JSON.stringify(body.events) });
      const got = await request(world.app).get(`${s.base}/funnel/correlation?${params.toString()}`).set(s.auth);
      expect(got.body).toMatchObject({ is_cached: true, last_refresh: posted.body.last_refresh, result: posted.body.result });
      const bad = await request(world.app)
        .post(`${s.base}/funnel/correlation`)
        .set(s.auth)
        .send({ events: [{ id: 'signup' }] });
      expect(bad.status).toBe(400);
      expect(bad.body.attr).toBe('events');

      const funnel = {
        kind: 'FunnelsQuery',
        series: [
          { kind: 'EventsNode', event: 'signup' },
          { kind: 'EventsNode', event: 'purchase' },
        ],
        dateRange: { date_from: RANGE.date_from, date_to: RANGE.date_to },
      };
      const correlationQuery = { kind: 'FunnelCorrelationQuery', source: { kind: 'FunnelsActorsQuery', source: funnel }, funnelCorrelationType: 'events' };
      for (const query of [funnel, correlationQuery]) {
        const viaQuery = await request(world.app).post(`${s.base}/funnel/correlation/`).set(s.auth).send({ query, refresh: true });
        expect(viaQuery.status).toBe(200);
        expect(viaQuery.body.result).toEqual(posted.body.result);
        const inQueryString = await request(world.app)
          .get(`${s.base}/funnel/correlation/?query=${encodeURIComponent(JSON.stringify(query))}`)
          .set(s.auth);
        expect(inQueryString.body.result).toEqual(posted.body.result);
      }
      const malformed: Array<[unknown, string]> = [
        ['{"kind": ', 'query'],
        [{ series: [] }, 'query__kind'],
        [{ kind: 'TrendsQuery', series: [] }, 'query__kind'],
        [{ kind: 'FunnelsQuery' }, 'query__series'],
        [{ ...funnel, series: [{ kind: 'EventsNode', event: 5 }] }, 'query__series__0__event'],
        [{ ...funnel, funnelsFilter: { funnelWindowInterval: 'soon' } }, 'query__funnelsFilter__funnelWindowInterval'],
        [{ ...correlationQuery, funnelCorrelationType: 'sessions' }, 'query__funnelCorrelationType'],
        [{ ...correlationQuery, source: { kind: 'FunnelsActorsQuery', source: { ...funnel, dateRange: 'last week' } } }, 'query__source__source__dateRange'],
      ];
      for (const [query, attr] of malformed) {
        const res = await request(world.app).post(`${s.base}/funnel/correlation/`).set(s.auth).send({ query });
        expect([res.status, res.body.type, res.body.attr]).toEqual([400, 'validation_error', attr]);
        expect(Object.keys(res.body as object).sort()).toEqual(['attr', 'code', 'detail', 'type']);
      }
    });
  });
});
