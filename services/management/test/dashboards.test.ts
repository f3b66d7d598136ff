import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { migrate as migrateClickHouse, type ClickHouse } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { silentLogger } from '@plover/core';
import { backends, bearer, useWorld, type World } from './support/app';

type Body = Record<string, unknown>;
type Tile = Body & { id: number; insight: (Body & { id: number; result: unknown }) | null; text: (Body & { body: string }) | null };

/** A tenant with helpers for its dashboards and insights (under /api/projects or /api/environments). */
async function tenantOf(world: World) {
  const t = await world.tenant();
  const base = `/api/projects/${t.projectId}`;
  const call = (method: 'get' | 'post' | 'patch' | 'delete', url: string, body?: Body, key = t.key) => {
    const req = request(world.app)[method](`${base}${url}`).set(bearer(key));
    return body === undefined ? req : req.send(body);
  };
  const dashboard = async (body: Body = {}) => {
    const res = await call('post', '/dashboards/', body);
    expect(res.status).toBe(201);
    return res.body as Body & { id: number; tiles: Tile[] };
  };
  const insight = async (body: Body = {}) => {
    const res = await call('post', '/insights/', body);
    expect(res.status).toBe(201);
    return res.body as Body & { id: number; short_id: string; dashboards: number[] };
  };
  return { ...t, base, call, dashboard, insight };
}

describe.each(backends)('dashboards on $name', (backend) => {
  const world = useWorld(backend);

  it('creates, lists (pinned first, then name), retrieves under both prefixes, updates; soft delete hides and PATCH restores; DELETE → 405', async () => {
    const s = await tenantOf(world);
    const created = await s.dashboard({ name: 'Growth', description: 'd', tags: ['a'], filters: { date_from: '-30d' } });
    expect(created).toMatchObject({
      name: 'Growth',
      description: 'd',
      pinned: false,
      deleted: false,
      creation_mode: 'default',
      restriction_level: 21,
      effective_restriction_level: 21,
      effective_privilege_level: 37,
      user_access_level: 'editor',
      access_control_version: 'v2',
      is_shared: false,
      tags: ['a'],
      team_id: s.projectId,
      tiles: [],
      filters: { date_from: '-30d' },
      persisted_filters: { date_from: '-30d' },
      last_refresh: null,
    });
    expect((created.created_by as { id: number }).id).toBe(s.userId);
    await s.dashboard({ name: 'Alpha' });
    await s.dashboard({ name: 'Zeta', pinned: true });
    const list = await s.call('get', '/dashboards/');
    expect(list.status).toBe(200);
    expect(list.body.count).toBe(3);
    expect((list.body.results as Body[]).map((row) => row.name)).toEqual(['Zeta', 'Alpha', 'Growth']);
    expect(list.body.results[0]).not.toHaveProperty('tiles');
    expect((await s.call('get', '/dashboards/?pinned=true')).body.count).toBe(1);
    expect(((await s.call('get', '/dashboards/?search=grow')).body.results as Body[]).map((row) => row.name)).toEqual(['Growth']);

    const env = await request(world.app).get(`/api/environments/${s.projectId}/dashboards/${created.id}/`).set(s.auth);
    expect(env.status).toBe(200);
    expect(typeof env.body.last_accessed_at).toBe('string');

    const patched = await s.call('patch', `/dashboards/${created.id}/`, { name: 'Growth 2', pinned: true, restriction_level: 37 });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'Growth 2', pinned: true, restriction_level: 37, access_control_version: 'v1', effective_privilege_level: 37 });

    expect((await s.call('delete', `/dashboards/${created.id}/`)).status).toBe(405);
    expect((await s.call('patch', `/dashboards/${created.id}/`, { deleted: true })).body.deleted).toBe(true);
    expect((await s.call('get', `/dashboards/${created.id}/`)).status).toBe(404);
    expect((await s.call('get', '/dashboards/')).body.count).toBe(2);
    expect((await s.call('patch', `/dashboards/${created.id}/`, { deleted: false })).body.deleted).toBe(false);
    expect((await s.call('get', `/dashboards/${created.id}/`)).status).toBe(200);

    for (const [body, attr] of [
      [{ name: 'x'.repeat(401) }, 'name'],
      [{ restriction_level: 30 }, 'restriction_level'],
      [{ filters: { interval: 'fortnight' } }, 'filters__interval'],
      [{ tiles: [{ layouts: { sm: { x: 'left' } } }] }, 'tiles__0__layouts__sm__x'],
      [{ tiles: [{ color: 'blue' }] }, 'tiles__0'],
    ] as const) {
      const res = await s.call('patch', `/dashboards/${created.id}/`, body);
      expect({ status: res.status, attr: res.body.attr }).toEqual({ status: 400, attr });
    }
    expect((await s.call('get', `/dashboards/${created.id}/?filters_override=nope`)).status).toBe(400);
    expect((await s.call('get', `/dashboards/${created.id}/?refresh=sometimes`)).status).toBe(400);
  });

  it("insight `dashboards` adds and removes tiles (re-adding undeletes the same tile); `dashboard_tiles`; text cards; layout order; the dashboard's deletion", async () => {
    const s = await tenantOf(world);
    const one = await s.dashboard({ name: 'One' });
    const two = await s.dashboard({ name: 'Two' });
    const insight = await s.insight({ name: 'Views', dashboards: [one.id, two.id] });
    expect(insight.dashboards).toEqual([one.id, two.id]);
    expect(insight.dashboard_tiles).toEqual([
      { id: expect.any(Number), dashboard_id: one.id, deleted: false },
      { id: expect.any(Number), dashboard_id: two.id, deleted: false },
    ]);
    const [tileOne] = insight.dashboard_tiles as Array<{ id: number }>;

    const removed = await s.call('patch', `/insights/${insight.id}/`, { dashboards: [two.id] });
    expect(removed.body.dashboards).toEqual([two.id]);
    expect((await s.call('get', `/dashboards/${one.id}/`)).body.tiles).toEqual([]);
    const readded = await s.call('patch', `/insights/${insight.id}/`, { dashboards: [one.id, two.id] });
    expect(readded.body.dashboards).toEqual([one.id, two.id]);
    expect((readded.body.dashboard_tiles as Array<{ id: number }>)[0]!.id).toBe(tileOne!.id);

    // Text cards are added through the dashboard; display fields change by tile id; tiles come in layout order.
    const withText = await s.call('patch', `/dashboards/${one.id}/`, {
      tiles: [
        { text: { body: '## Notes' }, layouts: { sm: { x: 0, y: 0, w: 6, h: 2 } } },
        { id: tileOne!.id, color: 'blue', layouts: { sm: { x: 0, y: 5, w: 6, h: 5 }, xs: { x: 0, y: 5, w: 1, h: 5 } } },
      ],
    });
    expect(withText.status).toBe(200);
    const tiles = withText.body.tiles as Tile[];
    expect(tiles.map((tile) => [tile.order, tile.text?.body ?? null, tile.insight?.id ?? null, tile.color])).toEqual([
      [0, '## Notes', null, null],
      [1, null, insight.id, 'blue'],
    ]);
    expect(tiles[1]).toMatchObject({
      layouts: { sm: { x: 0, y: 5, w: 6, h: 5 }, xs: { x: 0, y: 5, w: 1, h: 5 } },
      button_tile: null,
      is_cached: false,
      last_refresh: null,
    });
    expect(tiles[1]!.insight).toMatchObject({ id: insight.id, name: 'Views', dashboards: [one.id, two.id], result: null });
    const textId = tiles[0]!.id;
    const edited = await s.call('patch', `/dashboards/${one.id}/`, { tiles: [{ id: textId, text: { body: 'Edited' } }] });
    expect((edited.body.tiles as Tile[])[0]!.text!.body).toBe('Edited');
    const hidden = await s.call('patch', `/dashboards/${one.id}/`, { tiles: [{ id: textId, deleted: true }] });
    expect((hidden.body.tiles as Tile[]).map((tile) => tile.id)).toEqual([tileOne!.id]);
    // A tile id of another dashboard names nothing here; an insight's tile cannot take a body.
    expect((await s.call('patch', `/dashboards/${two.id}/`, { tiles: [{ id: textId, color: 'red' }] })).body.attr).toBe('tiles__0__id');
    expect((await s.call('patch', `/dashboards/${one.id}/`, { tiles: [{ id: tileOne!.id, text: { body: 'x' } }] })).status).toBe(400);

    // A deleted dashboard leaves the insight's `dashboards`; with delete_insights, insights on no other dashboard go too.
    const only = await s.insight({ name: 'Only on two', dashboards: [two.id] });
    await s.call('patch', `/dashboards/${two.id}/`, { deleted: true, delete_insights: true });
    expect((await s.call('get', `/insights/${insight.id}/`)).body).toMatchObject({ dashboards: [one.id], deleted: false });
    expect((await s.call('get', `/insights/${only.id}/`)).status).toBe(404);
    await s.call('patch', `/dashboards/${two.id}/`, { deleted: false });
    expect((await s.call('get', `/insights/${only.id}/`)).body).toMatchObject({ dashboards: [two.id], deleted: false });
  });

  it('duplicates a dashboard: the same insights, or copies of them with duplicate_tiles; text cards copied', async () => {
    const s = await tenantOf(world);
    const source = await s.dashboard({ name: 'Source', filters: { date_from: '-7d' } });
    const insight = await s.insight({ name: 'Views', query: { kind: 'TrendsQuery', series: [] }, dashboards: [source.id] });
    await s.call('patch', `/dashboards/${source.id}/`, { tiles: [{ text: { body: 'hello' } }] });
    const same = await s.dashboard({ name: 'Copy', use_dashboard: source.id });
    expect(same).toMatchObject({ creation_mode: 'duplicate', filters: { date_from: '-7d' } });
    expect(same.tiles.map((tile) => tile.insight?.id ?? tile.text?.body)).toEqual([insight.id, 'hello']);
    const copied = await s.dashboard({ name: 'Deep copy', use_dashboard: source.id, duplicate_tiles: true });
    const copy = copied.tiles[0]!.insight!;
    expect(copy.id).not.toBe(insight.id);
    expect(copy).toMatchObject({ name: 'Views', query: { kind: 'TrendsQuery', series: [] }, dashboards: [copied.id] });
    expect((await s.call('post', '/dashboards/', { use_dashboard: 2147483000 })).body).toMatchObject({ attr: 'use_dashboard' });
  });

  it('restriction level 37: only the creator and admins edit it or add insights to it; others view; other projects see nothing', async () => {
    const s = await tenantOf(world);
    const member = await world.newUser(s.organizationId, 'member', s.projectId);
    const memberKey = await world.newKey(member.id, ['*']);
    const locked = await s.dashboard({ name: 'Locked', restriction_level: 37 });
    const seen = await s.call('get', `/dashboards/${locked.id}/`, undefined, memberKey);
    expect(seen.body).toMatchObject({ effective_privilege_level: 21, user_access_level: 'viewer' });
    expect((await s.call('patch', `/dashboards/${locked.id}/`, { name: 'Mine' }, memberKey)).status).toBe(403);
    const added = await s.call('post', '/insights/', { name: 'x', dashboards: [locked.id] }, memberKey);
    expect(added.status).toBe(403);
    expect(added.body.detail).toBe(`You don't have permission to add insights to dashboard: ${locked.id}`);
    // Nothing was stored by the refused create.
    expect((await s.call('get', '/insights/?search=x', undefined, memberKey)).body.count).toBe(0);
    const open = await s.dashboard({ name: 'Open' });
    expect((await s.call('patch', `/dashboards/${open.id}/`, { name: 'Renamed' }, memberKey)).status).toBe(200);
    expect((await s.call('patch', `/dashboards/${open.id}/`, { restriction_level: 37 }, memberKey)).status).toBe(403);

    const other = await tenantOf(world);
    expect((await other.call('get', `/dashboards/${locked.id}/`)).status).toBe(404);
    expect((await other.call('post', '/insights/', { dashboards: [locked.id] })).body).toMatchObject({ attr: 'dashboards', detail: 'Dashboard not found' });
    expect((await request(world.app).get(`${other.base}/dashboards/${locked.id}/`).set(s.auth)).status).toBe(403);
  });

  it('scopes: dashboard:read reads only; sharing_configuration:* for links; no key → 401', async () => {
    const s = await tenantOf(world);
    const board = await s.dashboard({ name: 'Board' });
    const reader = await world.newKey(s.userId, ['dashboard:read']);
    expect((await s.call('get', `/dashboards/${board.id}/`, undefined, reader)).status).toBe(200);
    const write = await s.call('patch', `/dashboards/${board.id}/`, { name: 'no' }, reader);
    expect(write.body).toMatchObject({ code: 'permission_denied', detail: "API key missing required scope 'dashboard:write'" });
    expect((await s.call('get', `/dashboards/${board.id}/sharing/`, undefined, reader)).body.detail).toBe(
      "API key missing required scope 'sharing_configuration:read'",
    );
    expect((await request(world.app).get(`${s.base}/dashboards/`)).status).toBe(401);
  });
});

describe('dashboard results and sharing links with chDB', () => {
  let clickhouse: ClickHouse;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'plover-dashboards-'));
    clickhouse = await ChdbClickHouse.open({ dataDir: dir });
    await migrateClickHouse(clickhouse, { logger: silentLogger() });
  });
  afterAll(async () => {
    await clickhouse.close();
    await rm(dir, { recursive: true, force: true });
  });

  describe.each(backends.map((backend, index) => ({ ...backend, index })))('on $name', (backend) => {
    const world = useWorld(backend, { clickhouse: () => clickhouse });
    // Both databases share one chDB: keep their project ids apart.
    beforeAll(() => world.sql.query('t.ids', `ALTER TABLE projects ALTER COLUMN id RESTART WITH ${(backend.index + 1) * 200_000}`));

    const add = (projectId: number, event: string, day: number, browser = 'Chrome') =>
      clickhouse.command(
        't.event',
        `INSERT INTO events (uuid, team_id, event, distinct_id, person_id, timestamp, properties)
         VALUES (generateUUIDv4(), {projectId:Int64}, {event:String}, 'ann', generateUUIDv4(), {ts:DateTime64(6)}, {properties:String})`,
        { projectId, event, ts: `2024-03-0${day} 12:00:00`, properties: JSON.stringify({ $browser: browser }) },
      );
    const TRENDS = {
      kind: 'InsightVizNode',
      source: {
        kind: 'TrendsQuery',
        series: [{ kind: 'EventsNode', event: '$pageview' }],
        interval: 'day',
        dateRange: { date_from: '2024-03-01', date_to: '2024-03-03' },
      },
    };
    const dataOf = (tile: Tile) => (tile.insight!.result as Array<{ data: number[] }>)[0]!.data;

    it('a plain GET never computes (cached or null, even when stale); refresh computes; dashboard filters, tile overrides and filters_override apply', async () => {
      const s = await tenantOf(world);
      await add(s.projectId, '$pageview', 1);
      await add(s.projectId, '$pageview', 2, 'Firefox');
      const board = await s.dashboard({ name: 'Board' });
      const insight = await s.insight({ name: 'Views', query: TRENDS, dashboards: [board.id] });

      const cold = await s.call('get', `/dashboards/${board.id}/`);
      expect(cold.body.tiles[0]).toMatchObject({ last_refresh: null, is_cached: false, insight: { result: null, last_refresh: null } });
      expect(cold.body.last_refresh).toBeNull();
      expect((await s.call('get', `/insights/${insight.id}/`)).body.result).toBeNull();

      const refreshed = await s.call('get', `/dashboards/${board.id}/?refresh=true`);
      const tile = refreshed.body.tiles[0] as Tile;
      expect(dataOf(tile)).toEqual([1, 1, 0]);
      expect(tile.is_cached).toBe(false);
      expect(typeof tile.last_refresh).toBe('string');
      expect(typeof refreshed.body.last_refresh).toBe('string');

      // New data: a plain GET still answers the cached (now stale) result with its time; blocking recomputes.
      await add(s.projectId, '$pageview', 3);
      const stale = await s.call('get', `/dashboards/${board.id}/`);
      expect(dataOf(stale.body.tiles[0] as Tile)).toEqual([1, 1, 0]);
      expect(stale.body.tiles[0]).toMatchObject({ is_cached: true, last_refresh: tile.last_refresh });
      const fresh = await s.call('get', `/dashboards/${board.id}/?refresh=blocking`);
      expect(dataOf(fresh.body.tiles[0] as Tile)).toEqual([1, 1, 1]);
      // The insight's own GET shares the cache: the dashboard computed this query at this data already.
      expect((await s.call('get', `/insights/${insight.id}/?refresh=blocking`)).body).toMatchObject({ is_cached: true, result: [{ data: [1, 1, 1] }] });
      expect((await s.call('get', `/insights/${insight.id}/?refresh=force_blocking`)).body).toMatchObject({ is_cached: false, result: [{ data: [1, 1, 1] }] });

      // Dashboard filters: properties AND-ed, the date range replaced; the tile's query shows them.
      await s.call('patch', `/dashboards/${board.id}/`, {
        filters: { date_from: '2024-03-02', date_to: '2024-03-03', properties: [{ key: '$browser', value: 'Chrome', operator: 'exact', type: 'event' }] },
      });
      const filtered = await s.call('get', `/dashboards/${board.id}/?refresh=true`);
      const filteredTile = filtered.body.tiles[0] as Tile;
      expect(dataOf(filteredTile)).toEqual([0, 1]);
      expect((filteredTile.insight!.query as { source: Body }).source).toMatchObject({
        dateRange: { date_from: '2024-03-02', date_to: '2024-03-03' },
        properties: [{ key: '$browser', value: 'Chrome' }],
      });
      // filters_override for one request, over the stored filters.
      const overridden = await s.call(
        'get',
        `/dashboards/${board.id}/?refresh=true&filters_override=${encodeURIComponent(JSON.stringify({ properties: [] }))}`,
      );
      expect(dataOf(overridden.body.tiles[0] as Tile)).toEqual([1, 1]);
      expect(overridden.body.persisted_filters).toMatchObject({ date_from: '2024-03-02' });
      // A tile's own filters_overrides replace the dashboard's.
      await s.call('patch', `/dashboards/${board.id}/`, {
        tiles: [{ id: filteredTile.id, filters_overrides: { date_from: '2024-03-01', date_to: '2024-03-01' } }],
      });
      expect(dataOf((await s.call('get', `/dashboards/${board.id}/?refresh=true`)).body.tiles[0] as Tile)).toEqual([1]);
      // The stored insight is unchanged.
      expect((await s.call('get', `/insights/${insight.id}/`)).body.query).toEqual(TRENDS);
    });

    it('a sharing link shows exactly its dashboard or insight; disabled, rotated or deleted → 404; it opens nothing else', async () => {
      const s = await tenantOf(world);
      await add(s.projectId, '$pageview', 1);
      const board = await s.dashboard({ name: 'Shared board' });
      const secret = await s.dashboard({ name: 'Secret board' });
      await s.insight({ name: 'Views', query: TRENDS, dashboards: [board.id] });
      const hidden = await s.insight({ name: 'Secret', query: TRENDS, dashboards: [secret.id] });

      const initial = await s.call('get', `/dashboards/${board.id}/sharing/`);
      expect(initial.status).toBe(200);
      expect(initial.body).toMatchObject({ enabled: false, password_required: false, settings: {} });
      const token = initial.body.access_token as string;
      expect(token).toMatch(/^[A-Za-z0-9_-]{29,30}$/);
      const page = (t: string) => request(world.app).get(`/shared/${t}.json`);
      expect((await page(token)).status).toBe(404);

      const enabled = await s.call('patch', `/dashboards/${board.id}/sharing/`, { enabled: true, settings: { noHeader: true } });
      expect(enabled.body).toMatchObject({ enabled: true, access_token: token, settings: { noHeader: true } });
      expect(((await s.call('get', '/dashboards/')).body.results as Body[]).find((row) => row.id === board.id)?.is_shared).toBe(true);
      const shown = await page(token);
      expect(shown.status).toBe(200);
      expect(shown.body).toMatchObject({ type: 'scene', accessToken: token, settings: { noHeader: true } });
      expect(shown.body.dashboard).toMatchObject({ id: board.id, name: 'Shared board', created_by: null, effective_privilege_level: 21 });
      const [tile] = shown.body.dashboard.tiles as Tile[];
      // Computed for the link when nothing was cached, without the creator's details.
      expect(dataOf(tile!)).toEqual([1, 0, 0]);
      expect(tile!.insight).toMatchObject({ name: 'Views', created_by: null, last_modified_by: null, user_access_level: 'viewer' });
      expect(JSON.stringify(shown.body)).not.toContain('Secret');
      expect(JSON.stringify(shown.body)).not.toContain('@example.com');

      // The token is no credential anywhere else.
      for (const [method, url] of [
        ['get', `${s.base}/dashboards/${secret.id}/`],
        ['get', `${s.base}/dashboards/`],
        ['get', `${s.base}/insights/${hidden.id}/`],
        ['get', `${s.base}/persons/`],
        ['get', `${s.base}/events/`],
        ['post', `${s.base}/query/`],
      ] as const) {
        const send = (target: string) => {
          const agent = request(world.app);
          return (method === 'get' ? agent.get(target) : agent.post(target)).send({ query: { kind: 'HogQLQuery', query: 'select 1' } });
        };
        const withBearer = await send(url).set(bearer(token));
        expect([url, withBearer.status]).toEqual([url, 401]);
        const withParam = await send(`${url}?sharing_access_token=${token}`);
        expect([url, withParam.status]).toEqual([url, 401]);
      }
      for (const probe of [`/shared/${token}.json?refresh=true&filters_override=${encodeURIComponent('{"date_from":"-1000d"}')}`]) {
        const res = await request(world.app).get(probe);
        expect(res.body.dashboard.filters).toEqual({});
      }
      expect((await request(world.app).post(`/shared/${token}.json`).send({})).status).toBe(405);
      expect((await request(world.app).patch(`/shared/${token}.json`).send({ name: 'x' })).status).toBe(405);
      for (const junk of ['x', `${token}'--`, `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`, '%00']) expect((await page(junk)).status).toBe(404);

      // Rotating: the old token stops at once, the new one works; disabling and deleting close the link.
      const rotated = await s.call('post', `/dashboards/${board.id}/sharing/refresh/`);
      expect(rotated.body.access_token).not.toBe(token);
      expect((await page(token)).status).toBe(404);
      expect((await page(rotated.body.access_token as string)).status).toBe(200);
      await s.call('patch', `/dashboards/${board.id}/`, { deleted: true });
      expect((await page(rotated.body.access_token as string)).status).toBe(404);
      await s.call('patch', `/dashboards/${board.id}/`, { deleted: false });
      await s.call('patch', `/dashboards/${board.id}/sharing/`, { enabled: false });
      expect((await page(rotated.body.access_token as string)).status).toBe(404);

      // An insight's link shows that insight alone.
      const insightLink = await s.call('patch', `/insights/${hidden.short_id}/sharing/`, { enabled: true });
      const insightPage = await page(insightLink.body.access_token as string);
      expect(insightPage.body).toMatchObject({ type: 'scene', insight: { id: hidden.id, name: 'Secret', created_by: null } });
      expect(insightPage.body).not.toHaveProperty('dashboard');
      expect((await s.call('get', '/insights/2147483000/sharing/')).status).toBe(404);
      // Another project's member cannot read or change this project's links.
      const other = await tenantOf(world);
      expect((await request(world.app).get(`${s.base}/dashboards/${board.id}/sharing/`).set(other.auth)).status).toBe(403);
      expect((await other.call('get', `/dashboards/${board.id}/sharing/`)).status).toBe(404);
    });
  });
});
