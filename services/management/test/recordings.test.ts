/**
 * The recordings API over recordings stored as the replay consumer stores them (chDB): listing with its
 * filters and orders, retrieve (which marks watched), PATCH, DELETE, the snapshots' sources and JSONL, scopes.
 */
import request from 'supertest';
import { insertSnapshotBatches } from '@plover/clickhouse';
import { uuidv7 } from '@plover/core';
import { PersonReads, PersonStore } from '@plover/persons';
import { backends, bearer, useWorld } from './support/app';
import { snapshotBatch } from '../../../packages/clickhouse/test/support/snapshot-batch';
import { ownProjectIds, useChdb } from './support/recordings';

const SECOND = 1000;
const DAY = 86_400_000;
/** An hour ago on a whole second: live, not ongoing once stored long enough, durations exact. */
const START = Math.floor((Date.now() - 3_600_000) / SECOND) * SECOND;
const iso = (ms: number) => new Date(ms).toISOString();
/** The recordings an answer's body lists, and their ids. */
const listed = (body: unknown) => (body as { results: Array<{ id: string; viewed: boolean }> }).results;
const idsOf = (body: unknown) => listed(body).map((r) => r.id);

const clickhouse = useChdb();

describe.each(backends.map((backend, index) => ({ ...backend, index })))('session recordings API on $name', (backend) => {
  const world = useWorld(backend, { clickhouse });
  beforeAll(() => ownProjectIds(world.sql, backend.index));

  /** A project with alice (a person) and three recordings: rec-a (alice, two windows), rec-b (bob, no person), rec-old. */
  async function setup() {
    const t = await world.tenant();
    const persons = new PersonStore(world.sql);
    await persons.processEvent(t.projectId, {
      uuid: uuidv7(),
      event: '$identify',
      distinctId: 'alice',
      timestamp: new Date(START),
      properties: { $set: { email: 'alice@shop.example' } },
    });
    const p = t.projectId;
    const batches = [
      snapshotBatch(p, 'rec-a', START, {
        window_id: 'w1',
        seconds: 30,
        distinct_id: 'alice',
        click_count: 2,
        keypress_count: 5,
        mouse_activity_count: 10,
        console_error_count: 1,
        active_milliseconds: 30_000,
        first_url: 'https://shop.example/a?utm=1',
        urls: ['https://shop.example/a?utm=1'],
      }),
      snapshotBatch(p, 'rec-a', START, { window_id: 'w2', at: 60, seconds: 30, distinct_id: 'alice', click_count: 1, active_milliseconds: 10_000 }),
      snapshotBatch(p, 'rec-b', START - 3_600 * SECOND, { seconds: 10, distinct_id: 'bob', console_warn_count: 2, urls: ['https://shop.example/b?q=1'] }),
      snapshotBatch(p, 'rec-old', START - 10 * DAY, { seconds: 5, distinct_id: 'alice' }),
    ];
    await insertSnapshotBatches(clickhouse(), batches);
    const base = `/api/projects/${p}/session_recordings`;
    const list = async (query = '') => {
      const res = await request(world.app).get(`${base}/${query}`).set(t.auth);
      expect(res.status).toBe(200);
      return idsOf(res.body);
    };
    const alice = (await new PersonReads(world.sql).getByDistinctId(p, 'alice'))!;
    return { ...t, base, batches, list, alice };
  }

  it('lists the recordings of the last 3 days, newest first, with their summaries and persons', async () => {
    const s = await setup();
    const res = await request(world.app).get(`${s.base}/`).set(s.auth);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ has_next: false, version: 4 });
    expect(idsOf(res.body)).toEqual(['rec-a', 'rec-b']);
    const [a, b] = res.body.results;
    expect(a).toMatchObject({
      id: 'rec-a',
      distinct_id: 'alice',
      viewed: false,
      viewers: [],
      recording_duration: 90,
      active_seconds: 40,
      inactive_seconds: 50,
      start_time: iso(START),
      end_time: iso(START + 90 * SECOND),
      click_count: 3,
      keypress_count: 5,
      mouse_activity_count: 10,
      console_error_count: 1,
      console_warn_count: 0,
      start_url: 'https://shop.example/a?utm=1',
      retention_period_days: 30,
      expiry_time: iso(Math.floor(START / DAY) * DAY + 30 * DAY),
      snapshot_source: 'web',
      ongoing: true,
      has_summary: false,
      external_references: [],
    });
    expect(a.person).toMatchObject({ name: 'alice@shop.example', distinct_ids: ['alice'], properties: { email: 'alice@shop.example' } });
    expect(a.recording_ttl).toBeGreaterThanOrEqual(28);
    // No person for bob: PostHog's stub; no first page address: the first one seen, without its query.
    expect(b.person).toEqual({ id: null, name: null, distinct_ids: ['bob'], properties: {}, created_at: null, uuid: null });
    expect(b.start_url).toBe('https://shop.example/b');
  });

  it('filters by dates, person, distinct ids, session ids, summary conditions and console levels; orders and pages', async () => {
    const s = await setup();
    const q = (params: Record<string, unknown>) =>
      '?' + new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)])).toString();
    expect(await s.list(q({ date_from: '-30d' }))).toEqual(['rec-a', 'rec-b', 'rec-old']);
    expect(await s.list(q({ date_from: '"-30d"', date_to: iso(START - 1) }))).toEqual(['rec-b', 'rec-old']);
    expect(await s.list(q({ date_from: '-30d', person_uuid: s.alice.uuid }))).toEqual(['rec-a', 'rec-old']);
    expect(await s.list(q({ person_uuid: s.alice.uuid.toUpperCase(), distinct_ids: ['bob'] }))).toEqual([]);
    expect(await s.list(q({ person_uuid: '00000000-0000-0000-0000-000000000000' }))).toEqual([]);
    expect(await s.list(q({ distinct_ids: ['bob'] }))).toEqual(['rec-b']);
    expect(await s.list(q({ session_ids: ['rec-b', 'nope'] }))).toEqual(['rec-b']);
    expect(await s.list(q({ session_ids: [] }))).toEqual([]);
    expect(await s.list(q({ having_predicates: [{ type: 'recording', key: 'duration', operator: 'gt', value: 60 }] }))).toEqual(['rec-a']);
    expect(await s.list(q({ having_predicates: [{ type: 'recording', key: 'active_seconds', operator: 'gte', value: '40' }] }))).toEqual(['rec-a']);
    const errors = { type: 'log_entry', key: 'level', operator: 'exact', value: ['error'] };
    const warnings = { type: 'log_entry', key: 'level', operator: 'exact', value: 'warn' };
    expect(await s.list(q({ console_log_filters: [errors] }))).toEqual(['rec-a']);
    expect(await s.list(q({ console_log_filters: [{ ...errors, value: ['error', 'warn'] }] }))).toEqual(['rec-a', 'rec-b']);
    expect(await s.list(q({ console_log_filters: [{ ...errors, operator: 'is_not' }] }))).toEqual(['rec-b']);
    expect(await s.list(q({ console_log_filters: [errors, warnings] }))).toEqual([]);
    expect(await s.list(q({ console_log_filters: [errors, warnings], operand: 'OR' }))).toEqual(['rec-a', 'rec-b']);
    expect(await s.list(q({ date_from: '-30d', order: 'recording_duration', order_direction: 'ASC' }))).toEqual(['rec-old', 'rec-b', 'rec-a']);
    expect(await s.list(q({ date_from: '-30d', order: 'console_warn_count' }))).toEqual(['rec-b', 'rec-old', 'rec-a']);

    const first = await request(world.app).get(`${s.base}/?date_from=-30d&limit=2`).set(s.auth);
    expect([idsOf(first.body), first.body.has_next]).toEqual([['rec-a', 'rec-b'], true]);
    const second = await request(world.app).get(`${s.base}/?date_from=-30d&limit=2&offset=2`).set(s.auth);
    expect([idsOf(second.body), second.body.has_next]).toEqual([['rec-old'], false]);
  });

  it.each([
    ['events', 'events=[{"id":"$pageview"}]', 'Filtering recordings by events is not supported.'],
    ['properties', 'properties=[{"key":"$browser","value":"Chrome"}]', 'Filtering recordings by properties is not supported.'],
    [
      'console_log_filters__0__key',
      'console_log_filters=[{"key":"message","operator":"exact","value":"error"}]',
      'Filtering recordings by console message is not supported.',
    ],
    ['having_predicates__0__key', 'having_predicates=[{"key":"nope","operator":"gt","value":1}]', undefined],
    ['having_predicates__0__value', 'having_predicates=[{"key":"duration","operator":"gt","value":"1 OR 1"}]', undefined],
    ['date_from', 'date_from=yesterday', '"yesterday" is not a valid date.'],
    ['distinct_ids', 'distinct_ids=alice', undefined],
    ['order', 'order=recording_ttl', undefined],
  ])('refuses %s with a 400 naming it', async (attr, query, detail) => {
    const s = await setup();
    const res = await request(world.app).get(`${s.base}/?${query}`).set(s.auth);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'validation_error', attr, ...(detail === undefined ? {} : { detail }) });
  });

  it('exports a page as CSV with the person flattened', async () => {
    const s = await setup();
    const res = await request(world.app).get(`${s.base}/?format=csv`).set(s.auth);
    expect(res.status).toBe(200);
    expect(res.type).toBe('text/csv');
    const [header, ...rows] = res.text.trim().split('\r\n');
    expect(header!.split(',')).toEqual(expect.arrayContaining(['id', 'click_count', 'person.name', 'person.distinct_ids.0']));
    expect(rows).toHaveLength(2);
  });

  it('retrieves a recording and marks it watched for the caller; other viewers are named by email', async () => {
    const s = await setup();
    const other = await world.newUser(s.organizationId, 'member', s.projectId);
    const otherKey = await world.newKey(other.id, ['session_recording:read']);
    const viewed = await request(world.app).get(`/api/environments/${s.projectId}/session_recordings/rec-a/`).set(bearer(otherKey));
    expect(viewed.status).toBe(200);
    expect(viewed.body).toMatchObject({ id: 'rec-a', viewed: true, viewers: [], click_count: 3 });
    const mine = await request(world.app).get(`${s.base}/rec-a`).set(s.auth);
    expect(mine.body).toMatchObject({ viewed: true, viewers: [other.email] });
    const seen = await request(world.app).get(`${s.base}/`).set(bearer(otherKey));
    expect(listed(seen.body).map((r) => [r.id, r.viewed])).toEqual([
      ['rec-a', true],
      ['rec-b', false],
    ]);
    const missing = await request(world.app).get(`${s.base}/nope`).set(s.auth);
    expect([missing.status, missing.body.detail]).toEqual([404, 'Recording not found']);
  });

  it('PATCH viewed: true marks it watched; anything else is refused; an unknown recording is 404', async () => {
    const s = await setup();
    const res = await request(world.app)
      .patch(`${s.base}/rec-b/`)
      .set(s.auth)
      .send({ viewed: true, player_metadata: { duration: 10 } });
    expect([res.status, res.body]).toEqual([200, { success: true }]);
    expect((await request(world.app).get(`${s.base}/?session_ids=["rec-b"]`).set(s.auth)).body.results[0].viewed).toBe(true);
    expect((await request(world.app).patch(`${s.base}/rec-b`).set(s.auth).send({ viewed: false })).body).toMatchObject({ attr: 'viewed' });
    expect((await request(world.app).patch(`${s.base}/rec-b`).set(s.auth).send({ viewed: 'yes' })).status).toBe(400);
    expect((await request(world.app).patch(`${s.base}/nope`).set(s.auth).send({ viewed: true })).status).toBe(404);
  });

  it('DELETE removes the recording and its snapshots (204), then 404', async () => {
    const s = await setup();
    expect((await request(world.app).delete(`${s.base}/rec-b/`).set(s.auth)).status).toBe(204);
    expect((await request(world.app).get(`${s.base}/rec-b`).set(s.auth)).status).toBe(404);
    expect((await request(world.app).get(`${s.base}/rec-b/snapshots`).set(s.auth)).status).toBe(404);
    expect(await s.list()).toEqual(['rec-a']);
    expect((await request(world.app).delete(`${s.base}/rec-b`).set(s.auth)).status).toBe(404);
  });

  it('a person deleted with delete_recordings=true loses every recording of its distinct ids; without it they stay', async () => {
    const s = await setup();
    const persons = `/api/projects/${s.projectId}/persons`;
    expect((await request(world.app).delete(`${persons}/${s.alice.uuid}/?delete_recordings=false`).set(s.auth)).status).toBe(204);
    expect(await s.list('?date_from=-30d')).toEqual(['rec-a', 'rec-b', 'rec-old']);

    const t = await setup();
    const tPersons = `/api/projects/${t.projectId}/persons`;
    expect((await request(world.app).delete(`${tPersons}/${t.alice.uuid}/?delete_recordings=true`).set(t.auth)).status).toBe(204);
    expect(await t.list('?date_from=-30d')).toEqual(['rec-b']);
    expect((await request(world.app).get(`${t.base}/rec-a/snapshots`).set(t.auth)).status).toBe(404);
  });

  it('bulk_delete with delete_recordings: true deletes the recordings of the persons it deletes', async () => {
    const s = await setup();
    await new PersonStore(world.sql).processEvent(s.projectId, {
      uuid: uuidv7(),
      event: '$identify',
      distinctId: 'bob',
      timestamp: new Date(START),
      properties: {},
    });
    const res = await request(world.app)
      .post(`/api/projects/${s.projectId}/persons/bulk_delete/`)
      .set(s.auth)
      .send({ distinct_ids: ['bob', 'nobody'], delete_recordings: true });
    expect(res.status).toBe(202);
    expect(await s.list('?date_from=-30d')).toEqual(['rec-a', 'rec-old']);
  });

  it('snapshots: the blocks as blob_v2 sources, then their lines as JSONL, by key range or whole', async () => {
    const s = await setup();
    const [w1, w2] = s.batches;
    const sources = await request(world.app).get(`${s.base}/rec-a/snapshots/`).set(s.auth);
    expect(sources.status).toBe(200);
    expect(sources.body).toEqual({
      sources: [
        { source: 'blob_v2', start_timestamp: iso(START), end_timestamp: iso(START + 30 * SECOND), blob_key: '0' },
        { source: 'blob_v2', start_timestamp: iso(START + 60 * SECOND), end_timestamp: iso(START + 90 * SECOND), blob_key: '1' },
      ],
    });
    const whole = `${w1!.data}${w2!.data}`.slice(0, -1);
    const ranged = await request(world.app).get(`${s.base}/rec-a/snapshots?source=blob_v2&start_blob_key=0&end_blob_key=1`).set(s.auth);
    expect([ranged.status, ranged.headers['content-type'], ranged.text]).toEqual([200, 'application/jsonl', whole]);
    expect(ranged.text.split('\n').map((line) => (JSON.parse(line) as [string, unknown])[0])).toEqual(['w1', 'w2']);
    const second = await request(world.app).get(`${s.base}/rec-a/snapshots?source=blob_v2&start_blob_key=1&end_blob_key=1`).set(s.auth);
    expect(second.text).toBe(w2!.data.slice(0, -1));
    expect((await request(world.app).get(`${s.base}/rec-a/snapshots?source=blob_v2`).set(s.auth)).text).toBe(whole);
  });

  it('snapshots of a long recording stream whole and in order across several reads', async () => {
    const t = await world.tenant();
    const p = t.projectId;
    // 250 blocks of which five hold 3 MiB of lines each: more than one read's bytes, so several reads.
    const batches = Array.from({ length: 250 }, (_, i) => {
      const batch = snapshotBatch(p, 'long', START, { at: i * 2, seconds: 1 });
      if (i % 60 === 7)
        batch.data = `${JSON.stringify(['w1', { type: 3, data: { source: 1, pad: 'x'.repeat(3 * 1024 * 1024) }, timestamp: START + i * 2 * SECOND }])}\n`;
      return batch;
    });
    await insertSnapshotBatches(clickhouse(), batches);
    const whole = await request(world.app).get(`/api/projects/${p}/session_recordings/long/snapshots?source=blob_v2`).set(t.auth);
    expect(whole.status).toBe(200);
    expect(whole.text).toBe(
      batches
        .map((b) => b.data)
        .join('')
        .slice(0, -1),
    );
  });

  it.each([
    ['source=blob', 400],
    ['source=blob_v2&start_blob_key=0', 400],
    ['source=blob_v2&start_blob_key=1&end_blob_key=0', 400],
    ['source=blob_v2&start_blob_key=0&end_blob_key=21', 400],
    ['source=blob_v2&start_blob_key=a&end_blob_key=1', 400],
    ['source=blob_v2&decompress=false', 400],
    ['source=blob_v2&start_blob_key=0&end_blob_key=2', 404],
  ])('snapshots?%s → %i', async (query, status) => {
    const s = await setup();
    expect((await request(world.app).get(`${s.base}/rec-a/snapshots?${query}`).set(s.auth)).status).toBe(status);
  });

  it('needs session_recording:read to read and :write to change; never shows another project', async () => {
    const s = await setup();
    const reader = bearer(await world.newKey(s.userId, ['session_recording:read']));
    const none = bearer(await world.newKey(s.userId, ['insight:read']));
    expect((await request(world.app).get(`${s.base}/`).set(reader)).status).toBe(200);
    expect((await request(world.app).get(`${s.base}/rec-a/snapshots`).set(reader)).status).toBe(200);
    expect((await request(world.app).patch(`${s.base}/rec-a`).set(reader).send({ viewed: true })).status).toBe(403);
    expect((await request(world.app).delete(`${s.base}/rec-a`).set(reader)).status).toBe(403);
    expect((await request(world.app).get(`${s.base}/`).set(none)).status).toBe(403);
    const stranger = await world.tenant();
    const elsewhere = `/api/projects/${stranger.projectId}/session_recordings`;
    expect((await request(world.app).get(`${elsewhere}/rec-a`).set(stranger.auth)).status).toBe(404);
    expect((await request(world.app).get(`${elsewhere}/rec-a/snapshots`).set(stranger.auth)).status).toBe(404);
    expect((await request(world.app).get(`${elsewhere}/`).set(stranger.auth)).body.results).toEqual([]);
  });
});
