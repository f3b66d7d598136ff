import request from 'supertest';
import { insertSnapshotBatches } from '@plover/clickhouse';
import { uuidv7 } from '@plover/core';
import { PersonStore } from '@plover/persons';
import { backends, bearer, useWorld } from './support/app';
import { snapshotBatch } from '../../../packages/clickhouse/test/support/snapshot-batch';
import { ownProjectIds, useChdb } from './support/recordings';

const clickhouse = useChdb();
/** When the stored recordings start: recent (live), on a whole second. */
const START = Math.floor((Date.now() - 3_600_000) / 1000) * 1000;

const USER_FIELDS = ['id', 'uuid', 'distinct_id', 'first_name', 'last_name', 'email', 'is_email_verified', 'hedgehog_config', 'role_at_organization'];

describe.each(backends.map((backend, index) => ({ ...backend, index })))('session recording playlists on $name', (backend) => {
  const world = useWorld(backend, { clickhouse });
  beforeAll(() => ownProjectIds(world.sql, backend.index));

  async function setup() {
    const t = await world.tenant();
    return { ...t, base: `/api/projects/${t.projectId}/session_recording_playlists` };
  }

  it('creates (201) with an 8-char short_id, user objects and recordings_counts; retrieves by short_id', async () => {
    const s = await setup();
    const res = await request(world.app).post(`${s.base}/`).set(s.auth).send({ name: 'Checkout', description: 'd', pinned: true });
    expect(res.status).toBe(201);
    expect(res.body.short_id).toMatch(/^[A-Za-z0-9]{8}$/);
    expect(res.body).toMatchObject({
      name: 'Checkout',
      derived_name: null,
      description: 'd',
      pinned: true,
      deleted: false,
      filters: {},
      type: 'collection',
      user_access_level: 'editor',
    });
    expect(Object.keys(res.body.created_by as object).sort()).toEqual([...USER_FIELDS].sort());
    expect(res.body.created_by.id).toBe(s.userId);
    expect(res.body.last_modified_by.id).toBe(s.userId);
    expect(res.body.recordings_counts).toEqual({
      collection: { count: null, watched_count: 0 },
      saved_filters: { count: null, has_more: null, watched_count: null, increased: null, last_refreshed_at: null },
    });
    const got = await request(world.app).get(`${s.base}/${res.body.short_id}/`).set(s.auth);
    expect(got.status).toBe(200);
    expect(got.body.id).toBe(res.body.id);
    const filters = await request(world.app)
      .post(s.base)
      .set(s.auth)
      .send({ name: 'F', filters: { events: [] } });
    expect(filters.body.type).toBe('filters');
  });

  it.each([
    [{ type: 'weird' }, 'type', 'Must provide a valid playlist type: either filters or collection'],
    [{ type: 'collection', filters: { a: 1 } }, 'filters', 'You cannot create a collection with filters'],
    [{ type: 'filters', filters: {} }, 'filters', 'You must provide a valid filters when creating a saved filter'],
    [{ name: 'x'.repeat(401) }, 'name', undefined],
    [{ pinned: 'yes' }, 'pinned', undefined],
    [{ filters: [1] }, 'filters', undefined],
  ])('create %j → 400 and nothing stored', async (body, attr, detail) => {
    const s = await setup();
    const res = await request(world.app).post(s.base).set(s.auth).send(body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'validation_error', attr });
    if (detail) expect(res.body.detail).toBe(detail);
    const n = await world.sql.query<{ n: number }>('t.n', 'SELECT count(*)::int AS n FROM session_recording_playlists WHERE project_id = $1', [s.projectId]);
    expect(n.rows[0]!.n).toBe(0);
  });

  it('lists with filters created_by, short_id, search, pinned, and paginates', async () => {
    const s = await setup();
    const other = await world.newUser(s.organizationId, 'member', s.projectId);
    const otherAuth = bearer(await world.newKey(other.id, ['*']));
    const a = (await request(world.app).post(s.base).set(s.auth).send({ name: 'Alpha', pinned: true })).body;
    const b = (await request(world.app).post(s.base).set(otherAuth).send({ derived_name: 'Beta derived' })).body;
    const c = (await request(world.app).post(s.base).set(s.auth).send({ name: 'Gamma' })).body;
    const all = await request(world.app).get(s.base).set(s.auth);
    expect(all.body.count).toBe(3);
    expect((all.body.results as Array<{ name: string | null }>).map((p) => p.name)).toEqual(['Gamma', null, 'Alpha']);
    const q = async (query: string) =>
      ((await request(world.app).get(`${s.base}?${query}`).set(s.auth)).body.results as Array<{ short_id: string }>).map((p) => p.short_id);
    expect(await q(`created_by=${other.id}`)).toEqual([b.short_id]);
    expect(await q(`short_id=${a.short_id}`)).toEqual([a.short_id]);
    expect(await q('search=beta')).toEqual([b.short_id]);
    expect(await q('pinned=true')).toEqual([a.short_id]);
    expect(await q('order=name')).toEqual([a.short_id, c.short_id, b.short_id]);
    expect(await q('order=-created_at')).toEqual((all.body.results as Array<{ short_id: string }>).map((p) => p.short_id));
    expect(await q('date_from=-1h')).toHaveLength(3);
    expect(await q('date_to=-1h')).toEqual([]);
    expect(await q('date_from=2000-01-01&date_to=2000-01-02')).toEqual([]);
    expect((await request(world.app).post(`${s.base}/${b.short_id}/recordings/in-b`).set(otherAuth)).status).toBe(200);
    expect(await q('session_recording_id=in-b')).toEqual([b.short_id]);
    expect(await q('session_recording_id=nowhere')).toEqual([]);
    expect((await request(world.app).get(`${s.base}?order=team_id`).set(s.auth)).body).toMatchObject({ attr: 'order' });
    expect((await request(world.app).get(`${s.base}?date_from=someday`).set(s.auth)).body).toMatchObject({ attr: 'date_from' });
    const page = await request(world.app).get(`${s.base}?limit=2&offset=2`).set(s.auth);
    expect(page.body.results).toHaveLength(1);
    expect(page.body.previous).toMatch(/limit=2$/);
    expect((await request(world.app).get(`${s.base}?created_by=abc`).set(s.auth)).status).toBe(400);
    const csv = await request(world.app).get(`${s.base}?format=csv`).set(s.auth);
    expect(csv.text.split('\r\n')[0]).toContain('created_by.email');
  });

  it('PATCH updates, bumps last_modified only on material changes, soft-deletes and restores; DELETE → 405 empty', async () => {
    const s = await setup();
    const created = (await request(world.app).post(s.base).set(s.auth).send({ name: 'A' })).body;
    const url = `${s.base}/${created.short_id}`;
    const pinned = await request(world.app).patch(url).set(s.auth).send({ pinned: true });
    expect(pinned.status).toBe(200);
    expect(pinned.body.last_modified_at).toBe(created.last_modified_at);
    const renamed = await request(world.app).patch(url).set(s.auth).send({ name: 'B' });
    expect(renamed.body.name).toBe('B');
    expect(renamed.body.last_modified_at > created.last_modified_at).toBe(true);
    const collection = await request(world.app)
      .patch(url)
      .set(s.auth)
      .send({ filters: { a: 1 } });
    expect(collection.body.detail).toBe('You cannot update a collection to add filters');

    const del = await request(world.app).delete(url).set(s.auth);
    expect(del.status).toBe(405);
    expect(del.text).toBe('');
    expect((await request(world.app).patch(url).set(s.auth).send({ deleted: true })).body.deleted).toBe(true);
    expect((await request(world.app).get(url).set(s.auth)).status).toBe(404);
    expect((await request(world.app).get(s.base).set(s.auth)).body.count).toBe(0);
    expect((await request(world.app).patch(url).set(s.auth).send({ deleted: false })).body.deleted).toBe(false);
    expect((await request(world.app).get(url).set(s.auth)).status).toBe(200);
    expect((await request(world.app).get(`${s.base}/nope1234`).set(s.auth)).status).toBe(404);
  });

  it('recordings: add (idempotent, ids without a recording accepted), list the recordings, remove (200 / 404), bulk add and delete, counts', async () => {
    const s = await setup();
    // s1 and s2 are recorded (90 s and 10 s, alice); "unknown" is added but has no recording.
    await insertSnapshotBatches(clickhouse(), [
      snapshotBatch(s.projectId, 's1', START, { seconds: 90, distinct_id: 'alice', click_count: 4 }),
      snapshotBatch(s.projectId, 's2', START + 120_000, { seconds: 10, distinct_id: 'alice' }),
    ]);
    const store = new PersonStore(world.sql);
    await store.processEvent(s.projectId, {
      uuid: uuidv7(),
      event: '$pageview',
      distinctId: 'alice',
      timestamp: new Date(),
      properties: { $set: { email: 'a@x.io' } },
    });
    const created = (await request(world.app).post(s.base).set(s.auth).send({ name: 'R' })).body;
    const url = `${s.base}/${created.short_id}/recordings`;
    expect((await request(world.app).post(`${url}/s1/`).set(s.auth)).body).toEqual({ success: true });
    expect((await request(world.app).post(`${url}/s1`).set(s.auth)).status).toBe(200);
    expect((await request(world.app).post(`${url}/unknown`).set(s.auth)).status).toBe(200);
    expect((await request(world.app).post(`${url}/s2`).set(s.auth)).status).toBe(200);
    const list = await request(world.app).get(url).set(s.auth);
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ has_next: false, version: 4 });
    const results = list.body.results as Array<{ id: string; person: { name: string } }>;
    // The same recording objects as the recordings API, newest first; an id without a recording is not one.
    expect(results.map((r) => r.id)).toEqual(['s2', 's1']);
    expect(results[1]).toMatchObject({
      distinct_id: 'alice',
      recording_duration: 90,
      click_count: 4,
      start_time: new Date(START).toISOString(),
      viewed: false,
    });
    expect(results[1]!.person.name).toBe('a@x.io');
    const recording = await request(world.app).get(`/api/environments/${s.projectId}/session_recordings/s1`).set(s.auth);
    expect({ ...recording.body, viewed: false }).toEqual(results[1]);
    const page = await request(world.app).get(`${url}?limit=1&offset=1`).set(s.auth);
    expect([(page.body.results as Array<{ id: string }>).map((r) => r.id), page.body.has_next]).toEqual([['s1'], false]);

    let playlist = (await request(world.app).get(`${s.base}/${created.short_id}`).set(s.auth)).body;
    // The collection counts its items, as PostHog does: also "unknown", which has no replay data. s1 was watched by
    // the retrieve above.
    expect(playlist.recordings_counts.collection).toEqual({ count: 3, watched_count: 1 });
    const listed = (await request(world.app).get(`${s.base}?short_id=${created.short_id}`).set(s.auth)).body.results[0];
    expect(listed.recordings_counts.collection).toEqual({ count: 3, watched_count: 1 });
    // Deleting a recording leaves the playlist's item (PostHog keeps it too); removing the item counts.
    expect((await request(world.app).delete(`/api/environments/${s.projectId}/session_recordings/s2`).set(s.auth)).status).toBe(204);
    playlist = (await request(world.app).get(`${s.base}/${created.short_id}`).set(s.auth)).body;
    expect(playlist.recordings_counts.collection).toEqual({ count: 3, watched_count: 1 });

    expect((await request(world.app).delete(`${url}/unknown`).set(s.auth)).body).toEqual({ success: true });
    playlist = (await request(world.app).get(`${s.base}/${created.short_id}`).set(s.auth)).body;
    expect(playlist.recordings_counts.collection).toEqual({ count: 2, watched_count: 1 });
    // A collection holding only a recording Plover has no data for counts it.
    const pending = (await request(world.app).post(s.base).set(s.auth).send({ name: 'P' })).body;
    expect((await request(world.app).post(`${s.base}/${pending.short_id}/recordings/not-yet`).set(s.auth)).status).toBe(200);
    const reread = (await request(world.app).get(`${s.base}/${pending.short_id}`).set(s.auth)).body;
    expect(reread.recordings_counts.collection).toEqual({ count: 1, watched_count: 0 });
    expect((await request(world.app).delete(`${url}/unknown`).set(s.auth)).status).toBe(404);
    // Bulk: at most 20 ids; those already in (bulk_add) or not in (bulk_delete) are not counted.
    const bulk = (path: string, ids: unknown) => request(world.app).post(`${url}/${path}`).set(s.auth).send({ session_recording_ids: ids });
    expect((await bulk('bulk_add', ['s1', 'b1', 'b2', 'b1'])).body).toEqual({ success: true, added_count: 2, total_requested: 4 });
    expect((await bulk('bulk_delete', ['b1', 'b2', 'b3'])).body).toEqual({ success: true, deleted_count: 2, total_requested: 3 });
    for (const ids of [[], undefined, Array.from({ length: 21 }, (_, i) => `x${i}`)]) {
      const refused = await bulk('bulk_add', ids);
      expect([refused.status, refused.body.attr]).toEqual([400, 'session_recording_ids']);
    }
    expect((await bulk('bulk_add', ['x'.repeat(201)])).body.attr).toBe('session_recording_ids__0');
    expect((await request(world.app).get(`${s.base}/${created.short_id}`).set(s.auth)).body.recordings_counts.collection.count).toBe(2);
    const filters = (
      await request(world.app)
        .post(s.base)
        .set(s.auth)
        .send({ filters: { a: 1 } })
    ).body;
    const refused = await request(world.app).post(`${s.base}/${filters.short_id}/recordings/s1`).set(s.auth);
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toBe("Cannot add recordings to a playlist that is type 'filters'.");
  });

  it('scope matrix and project isolation', async () => {
    const s = await setup();
    const created = (await request(world.app).post(s.base).set(s.auth).send({ name: 'A' })).body;
    const read = bearer(await world.newKey(s.userId, ['session_recording_playlist:read']));
    const none = bearer(await world.newKey(s.userId, ['person:read']));
    expect((await request(world.app).get(s.base).set(read)).status).toBe(200);
    expect((await request(world.app).get(s.base).set(none)).body.detail).toBe("API key missing required scope 'session_recording_playlist:read'");
    for (const [method, path] of [
      ['post', s.base],
      ['patch', `${s.base}/${created.short_id}`],
      ['delete', `${s.base}/${created.short_id}`],
      ['post', `${s.base}/${created.short_id}/recordings/x`],
      ['delete', `${s.base}/${created.short_id}/recordings/x`],
    ] as const) {
      const res = await request(world.app)[method](path).set(read).send({ name: 'x' });
      expect(res.status).toBe(403);
      expect(res.body.detail).toBe("API key missing required scope 'session_recording_playlist:write'");
    }
    const other = await world.tenant();
    expect((await request(world.app).get(`/api/projects/${other.projectId}/session_recording_playlists/${created.short_id}`).set(other.auth)).status).toBe(404);
    expect((await request(world.app).get(s.base).set(other.auth)).status).toBe(403);
  });

  it('access_controls: GET/PUT, enforced on list, retrieve and writes; user_access_level', async () => {
    const s = await setup();
    const member = await world.newUser(s.organizationId, 'member', s.projectId);
    const memberAuth = bearer(await world.newKey(member.id, ['*']));
    const created = (await request(world.app).post(s.base).set(s.auth).send({ name: 'Private' })).body;
    const url = `${s.base}/${created.short_id}`;
    const initial = await request(world.app).get(`${url}/access_controls`).set(s.auth);
    expect(initial.status).toBe(200);
    expect(initial.body).toMatchObject({
      access_controls: [],
      available_access_levels: ['none', 'viewer', 'editor'],
      default_access_level: 'editor',
      user_access_level: 'editor',
    });

    const bad = await request(world.app).put(`${url}/access_controls`).set(s.auth).send({ access_level: 'owner' });
    expect(bad.status).toBe(400);
    expect(bad.body.attr).toBe('access_level');
    const def = await request(world.app).put(`${url}/access_controls`).set(s.auth).send({ access_level: 'viewer' });
    expect(def.status).toBe(200);
    expect(def.body).toMatchObject({ access_level: 'viewer', organization_member: null, resource: 'session_recording_playlist' });
    expect((await request(world.app).get(url).set(memberAuth)).body.user_access_level).toBe('viewer');
    const denied = await request(world.app).patch(url).set(memberAuth).send({ name: 'mine' });
    expect(denied.status).toBe(403);
    expect(denied.body.detail).toBe('You do not have editor access to this resource.');
    expect((await request(world.app).put(`${url}/access_controls`).set(memberAuth).send({ access_level: 'editor' })).status).toBe(403);

    const membership = await world.sql.query<{ id: string }>('t.m', 'SELECT id FROM organization_memberships WHERE user_id = $1', [member.id]);
    const none = await request(world.app).put(`${url}/access_controls`).set(s.auth).send({ access_level: 'none', organization_member: membership.rows[0]!.id });
    expect(none.body.organization_member).toBe(membership.rows[0]!.id);
    expect((await request(world.app).get(url).set(memberAuth)).status).toBe(404);
    expect((await request(world.app).get(s.base).set(memberAuth)).body.count).toBe(0);
    expect((await request(world.app).get(s.base).set(s.auth)).body.count).toBe(1);
    const removed = await request(world.app)
      .put(`${url}/access_controls`)
      .set(s.auth)
      .send({ access_level: null, organization_member: membership.rows[0]!.id });
    expect(removed.status).toBe(204);
    expect((await request(world.app).get(url).set(memberAuth)).status).toBe(200);
    const scopeless = bearer(await world.newKey(s.userId, ['session_recording_playlist:write']));
    expect((await request(world.app).get(`${url}/access_controls`).set(scopeless)).body.detail).toBe("API key missing required scope 'access_control:read'");
  });
});
