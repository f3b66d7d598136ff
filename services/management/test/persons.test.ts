import request from 'supertest';
import { uuidv7 } from '@plover/core';
import { PersonReads, PersonStore } from '@plover/persons';
import { backends, bearer, useWorld } from './support/app';

const T0 = Date.parse('2024-05-01T12:00:00.000Z');

describe.each(backends)('persons API on $name', (backend) => {
  const world = useWorld(backend);
  let store: PersonStore;
  let reads: PersonReads;
  beforeAll(() => {
    store = new PersonStore(world.sql);
    reads = new PersonReads(world.sql);
  });

  async function person(projectId: number, distinctId: string, properties: Record<string, unknown>, minutes: number) {
    await store.processEvent(projectId, {
      uuid: uuidv7(),
      event: '$pageview',
      distinctId,
      timestamp: new Date(T0 + minutes * 60_000),
      properties: { $set: properties },
    });
    return (await reads.getByDistinctId(projectId, distinctId))!;
  }

  async function seeded() {
    const t = await world.tenant();
    const alice = await person(t.projectId, 'alice', { email: 'alice@example.com', plan: 'pro', age: 30, signup: '2024-01-10' }, 1);
    const bob = await person(t.projectId, 'bob', { email: 'bob@other.org', plan: 'free', age: 20, signup: '2024-03-01' }, 2);
    const anon = await person(t.projectId, '0190a6c1-aaaa-bbbb-cccc-dddddddddddd', { plan: 'free' }, 3);
    return { ...t, alice, bob, anon, base: `/api/environments/${t.projectId}/persons` };
  }

  const ids = (body: { results: Array<{ distinct_ids: string[] }> }) => body.results.map((p) => p.distinct_ids[0]);

  it('lists newest first with PostHog’s fields and name rule', async () => {
    const s = await seeded();
    const res = await request(world.app).get(`${s.base}/`).set(s.auth);
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(3);
    expect(ids(res.body)).toEqual(['0190a6c1-aaaa-bbbb-cccc-dddddddddddd', 'bob', 'alice']);
    expect(res.body.results[2]).toEqual({
      id: s.alice.id,
      uuid: s.alice.uuid,
      name: 'alice@example.com',
      distinct_ids: ['alice'],
      properties: expect.objectContaining({ email: 'alice@example.com' }),
      created_at: '2024-05-01T12:01:00.000Z',
      is_identified: false,
    });
    expect(res.body.results[0].name).toBe('0190a6c1-aaaa-bbbb-cccc-dddddddddddd');
    // The same handlers under /api/projects.
    expect((await request(world.app).get(`/api/projects/${s.projectId}/persons`).set(s.auth)).body.count).toBe(3);
  });

  it.each([
    ['distinct_id=bob', ['bob']],
    ['email=alice%40example.com', ['alice']],
    ['email=ALICE%40example.com', []],
    ['search=EXAMPLE', ['alice']],
    ['search=bob', ['bob']],
    [
      `properties=${encodeURIComponent(JSON.stringify([{ key: 'plan', value: 'free', operator: 'exact', type: 'person' }]))}`,
      ['0190a6c1-aaaa-bbbb-cccc-dddddddddddd', 'bob'],
    ],
    [`properties=${encodeURIComponent(JSON.stringify([{ key: 'plan', value: 'free', operator: 'is_not' }]))}`, ['alice']],
    [`properties=${encodeURIComponent(JSON.stringify([{ key: 'email', value: 'OTHER', operator: 'icontains' }]))}`, ['bob']],
    [
      `properties=${encodeURIComponent(JSON.stringify([{ key: 'email', value: 'other', operator: 'not_icontains' }]))}`,
      ['0190a6c1-aaaa-bbbb-cccc-dddddddddddd', 'alice'],
    ],
    [`properties=${encodeURIComponent(JSON.stringify([{ key: 'email', value: '^a.*com$', operator: 'regex' }]))}`, ['alice']],
    [`properties=${encodeURIComponent(JSON.stringify([{ key: 'age', value: 25, operator: 'gt' }]))}`, ['alice']],
    [`properties=${encodeURIComponent(JSON.stringify([{ key: 'age', value: 20, operator: 'lte' }]))}`, ['bob']],
    [`properties=${encodeURIComponent(JSON.stringify([{ key: 'email', operator: 'is_set' }]))}`, ['bob', 'alice']],
    [`properties=${encodeURIComponent(JSON.stringify([{ key: 'email', operator: 'is_not_set' }]))}`, ['0190a6c1-aaaa-bbbb-cccc-dddddddddddd']],
    [`properties=${encodeURIComponent(JSON.stringify([{ key: 'signup', value: '2024-02-01', operator: 'is_date_before' }]))}`, ['alice']],
    [`properties=${encodeURIComponent(JSON.stringify([{ key: 'signup', value: '2024-02-01', operator: 'is_date_after' }]))}`, ['bob']],
    [
      `properties=${encodeURIComponent(
        JSON.stringify({
          type: 'OR',
          values: [
            { key: 'plan', value: 'pro' },
            { type: 'AND', values: [{ key: 'age', value: 20, operator: 'lt' }] },
          ],
        }),
      )}`,
      ['alice'],
    ],
    [
      `properties=${encodeURIComponent(
        JSON.stringify({
          type: 'OR',
          values: [
            { key: 'plan', value: ['pro', 'nothing'] },
            { key: 'age', value: '20' },
          ],
        }),
      )}`,
      ['bob', 'alice'],
    ],
  ])('filters %s', async (query, expected) => {
    const s = await seeded();
    const res = await request(world.app).get(`${s.base}?${query}`).set(s.auth);
    expect(res.status).toBe(200);
    expect(ids(res.body)).toEqual(expected);
  });

  it('search by uuid finds the person', async () => {
    const s = await seeded();
    const res = await request(world.app).get(`${s.base}?search=${s.bob.uuid}`).set(s.auth);
    expect(ids(res.body)).toEqual(['bob']);
  });

  it.each([
    ['properties=not-json', 'properties'],
    [`properties=${encodeURIComponent(JSON.stringify([{ key: 'a', value: 1, operator: 'nope' }]))}`, 'properties__0__operator'],
    [`properties=${encodeURIComponent(JSON.stringify([{ value: 1 }]))}`, 'properties__0__key'],
    [`properties=${encodeURIComponent(JSON.stringify([{ key: 'a', operator: 'exact' }]))}`, 'properties__0__value'],
    [
      `properties=${encodeURIComponent(JSON.stringify({ type: 'AND', values: [{ type: 'OR', values: [{ key: 'a', value: 'x', operator: 'gt' }] }] }))}`,
      'properties__values__0__values__0__value',
    ],
    [`properties=${encodeURIComponent(JSON.stringify([{ key: 'a', value: '(', operator: 'regex' }]))}`, 'properties__0__value'],
    [`properties=${encodeURIComponent(JSON.stringify([{ key: 'a', value: 'x', type: 'event' }]))}`, 'properties__0__type'],
    ['limit=0', 'limit'],
    ['limit=1001', 'limit'],
    ['offset=-3', 'offset'],
  ])('400 for %s with attr %s', async (query, attr) => {
    const s = await seeded();
    const res = await request(world.app).get(`${s.base}?${query}`).set(s.auth);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'validation_error', attr });
  });

  it('builds next/previous under SITE_URL, whatever Host the client sends', async () => {
    const s = await seeded();
    const res = await request(world.app).get(`${s.base}?limit=1&offset=1`).set(s.auth).set('Host', 'evil.example');
    expect(res.body.next).toBe(`http://localhost:8000${s.base}?limit=1&offset=2`);
    expect(res.body.previous).toBe(`http://localhost:8000${s.base}?limit=1`);
  });

  it('paginates with absolute next/previous and exact counts; offset past the end is empty', async () => {
    const s = await seeded();
    const first = await request(world.app).get(`${s.base}?limit=2`).set(s.auth);
    expect(first.body.count).toBe(3);
    expect(first.body.next).toBe(`http://localhost:8000${s.base}?limit=2&offset=2`);
    const next = new URL(first.body.next as string);
    const second = await request(world.app)
      .get(next.pathname + next.search)
      .set(s.auth);
    expect(ids(second.body)).toEqual(['alice']);
    expect(second.body.next).toBeNull();
    expect(second.body.count).toBe(3);
    const past = await request(world.app).get(`${s.base}?offset=10`).set(s.auth);
    expect(past.body).toMatchObject({ count: 3, next: null, results: [] });
  });

  it('CSV has flattened, sorted columns and only the results', async () => {
    const s = await seeded();
    const res = await request(world.app).get(`${s.base}?format=csv&distinct_id=alice`).set(s.auth);
    expect(res.status).toBe(200);
    expect(res.headers['content-disposition']).toBe('attachment; filename="persons.csv"');
    const [header, row] = res.text.split('\r\n');
    const columns = header!.split(',');
    expect(columns).toEqual([...columns].sort());
    expect(columns).toEqual(expect.arrayContaining(['distinct_ids.0', 'properties.email', 'id', 'uuid', 'created_at', 'name']));
    expect(columns).not.toContain('count');
    expect(row).toContain('alice@example.com');
  });

  it('retrieves by id or uuid; a distinct id is a 400 with a hint; unknown → 404', async () => {
    const s = await seeded();
    expect((await request(world.app).get(`${s.base}/${s.alice.id}/`).set(s.auth)).body.uuid).toBe(s.alice.uuid);
    expect((await request(world.app).get(`${s.base}/${s.alice.uuid}`).set(s.auth)).body.id).toBe(s.alice.id);
    const hint = await request(world.app).get(`${s.base}/alice`).set(s.auth);
    expect(hint.status).toBe(400);
    expect(hint.body.detail).toMatch(/please use \/persons\?distinct_id=<value> instead/);
    const missing = await request(world.app).get(`${s.base}/99999999`).set(s.auth);
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toBe('Not found.');
    // Another project's person is not visible.
    const other = await world.tenant();
    expect((await request(world.app).get(`/api/projects/${other.projectId}/persons/${s.alice.id}`).set(other.auth)).status).toBe(404);
  });

  it('PATCH merges properties ($set), bumps the version and answers the person', async () => {
    const s = await seeded();
    const res = await request(world.app)
      .patch(`${s.base}/${s.alice.id}/`)
      .set(s.auth)
      .send({ properties: { plan: 'enterprise', new: 1 } });
    expect(res.status).toBe(200);
    expect(res.body.properties).toMatchObject({ email: 'alice@example.com', plan: 'enterprise', new: 1 });
    const stored = await reads.get(s.projectId, s.alice.id);
    expect(stored!.version).toBe(s.alice.version + 1);
  });

  it.each([
    [{}, 'properties', 'required'],
    [{ properties: [1] }, 'properties', 'not_a_dict'],
    [{ properties: 'x' }, 'properties', 'not_a_dict'],
  ])('PATCH %j → 400 and nothing written', async (body, attr, code) => {
    const s = await seeded();
    const res = await request(world.app).patch(`${s.base}/${s.alice.id}`).set(s.auth).send(body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'validation_error', attr, code });
    expect((await reads.get(s.projectId, s.alice.id))!.version).toBe(s.alice.version);
  });

  it('PATCH racing ingestion on the same person loses no update', async () => {
    const s = await seeded();
    await Promise.all([
      ...Array.from({ length: 5 }, (_, i) =>
        request(world.app)
          .patch(`${s.base}/${s.alice.id}`)
          .set(s.auth)
          .send({ properties: { [`api${i}`]: i } }),
      ),
      ...Array.from({ length: 5 }, (_, i) =>
        store.processEvent(s.projectId, {
          uuid: uuidv7(),
          event: '$pageview',
          distinctId: 'alice',
          timestamp: new Date(T0 + 3_600_000),
          properties: { $set: { [`ingest${i}`]: i } },
        }),
      ),
    ]);
    const stored = (await reads.get(s.projectId, s.alice.id))!;
    for (let i = 0; i < 5; i++) {
      expect(stored.properties[`api${i}`]).toBe(i);
      expect(stored.properties[`ingest${i}`]).toBe(i);
    }
    expect(stored.version).toBe(s.alice.version + 10);
  });

  it('POST persons → 405 with a hint', async () => {
    const s = await seeded();
    const res = await request(world.app)
      .post(`${s.base}/`)
      .set(s.auth)
      .send({ distinct_ids: ['x'] });
    expect(res.status).toBe(405);
    expect(res.body).toMatchObject({ code: 'method_not_allowed', detail: expect.stringContaining('$identify') as string });
  });

  it('DELETE → 204, distinct ids freed; delete_events queues one deletion', async () => {
    const s = await seeded();
    expect((await request(world.app).delete(`${s.base}/${s.alice.id}/`).set(s.auth)).status).toBe(204);
    expect(await reads.get(s.projectId, s.alice.id)).toBeUndefined();
    expect(await reads.getByDistinctId(s.projectId, 'alice')).toBeUndefined();
    expect((await request(world.app).delete(`${s.base}/${s.alice.id}/`).set(s.auth)).status).toBe(404);
    const reborn = await person(s.projectId, 'alice', { again: true }, 10);
    expect(reborn.id).not.toBe(s.alice.id);

    expect((await request(world.app).delete(`${s.base}/${s.bob.uuid}?delete_events=true`).set(s.auth)).status).toBe(204);
    const queued = await world.sql.query<{ key: string; deletion_type: number }>(
      't.q',
      'SELECT key, deletion_type FROM async_deletions WHERE project_id = $1',
      [s.projectId],
    );
    expect(queued.rows).toEqual([{ key: s.bob.uuid, deletion_type: 1 }]);
  });

  it('bulk_delete by distinct_ids or ids, with limits and validation', async () => {
    const s = await seeded();
    const res = await request(world.app)
      .post(`${s.base}/bulk_delete/`)
      .set(s.auth)
      .send({ distinct_ids: ['alice', 'nobody'], delete_events: true });
    expect(res.status).toBe(202);
    expect(await reads.get(s.projectId, s.alice.id)).toBeUndefined();
    expect(
      (
        await request(world.app)
          .post(`${s.base}/bulk_delete`)
          .set(s.auth)
          .send({ ids: [s.bob.uuid] })
      ).status,
    ).toBe(202);
    expect(await reads.get(s.projectId, s.bob.id)).toBeUndefined();
    const queued = await world.sql.query<{ key: string }>('t.q', 'SELECT key FROM async_deletions WHERE project_id = $1', [s.projectId]);
    expect(queued.rows.map((r) => r.key)).toEqual([s.alice.uuid]);

    const none = await request(world.app).post(`${s.base}/bulk_delete`).set(s.auth).send({});
    expect(none.status).toBe(400);
    expect(none.body.detail).toBe('You need to specify either distinct_ids or ids');
    const tooMany = await request(world.app)
      .post(`${s.base}/bulk_delete`)
      .set(s.auth)
      .send({ distinct_ids: Array.from({ length: 1001 }, (_, i) => `d${i}`) });
    expect(tooMany.body).toMatchObject({ detail: 'You can only pass 1000 distinct_ids in one call', attr: 'distinct_ids' });
    const badId = await request(world.app)
      .post(`${s.base}/bulk_delete`)
      .set(s.auth)
      .send({ ids: [s.anon.uuid, 'nope'] });
    expect(badId.status).toBe(400);
    expect(badId.body).toMatchObject({ type: 'validation_error', attr: 'ids__1' });
    // Validation happens before any deletion.
    expect(await reads.get(s.projectId, s.anon.id)).toBeDefined();
  });

  it('scope matrix: read for GET, write for PATCH/DELETE/bulk_delete; scoped keys', async () => {
    const s = await seeded();
    const read = bearer(await world.newKey(s.userId, ['person:read']));
    const write = bearer(await world.newKey(s.userId, ['person:write']));
    const none = bearer(await world.newKey(s.userId, ['insight:read']));
    expect((await request(world.app).get(s.base).set(read)).status).toBe(200);
    expect((await request(world.app).get(s.base).set(write)).status).toBe(200);
    const denied = await request(world.app).get(s.base).set(none);
    expect(denied.body.detail).toBe("API key missing required scope 'person:read'");
    expect((await request(world.app).get(`${s.base}/${s.alice.id}`).set(none)).status).toBe(403);
    for (const [method, path, body] of [
      ['patch', `${s.base}/${s.alice.id}`, { properties: { a: 1 } }],
      ['delete', `${s.base}/${s.alice.id}`, undefined],
      ['post', `${s.base}/bulk_delete`, { distinct_ids: ['alice'] }],
    ] as const) {
      const res = await request(world.app)[method](path).set(read).send(body);
      expect(res.status).toBe(403);
      expect(res.body.detail).toBe("API key missing required scope 'person:write'");
    }
    expect(await reads.get(s.projectId, s.alice.id)).toBeDefined();
    const other = await world.newProject(s.organizationId);
    const scoped = bearer(await world.newKey(s.userId, ['person:read'], { projects: [other.id] }));
    expect((await request(world.app).get(s.base).set(scoped)).status).toBe(403);
    const outsider = await world.tenant();
    expect((await request(world.app).get(s.base).set(outsider.auth)).status).toBe(403);
  });
});
