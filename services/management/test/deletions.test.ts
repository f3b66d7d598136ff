import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import {
  countEvents,
  insertEvents,
  insertIngestionWarnings,
  migrate as migrateClickHouse,
  NO_GROUPS,
  type ClickHouse,
  type EventRow,
} from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { createLogger, uuidv7 } from '@plover/core';
import { GroupStore, PersonReads, PersonStore } from '@plover/persons';
import { runEventDeletions } from '../src/deletions/job';
import { DEFAULT_DELETION_CRON, startSchedules } from '../src/deletions/schedule';
import { backends, bearer, useWorld } from './support/app';

const logger = createLogger({ service: 'test', level: 'silent' });

function event(projectId: number, personId: string, overrides: Partial<EventRow> = {}): EventRow {
  const zero = '1970-01-01 00:00:00.000';
  return {
    uuid: randomUUID(),
    event: '$pageview',
    properties: '{}',
    timestamp: '2024-03-01 12:00:00.000000',
    team_id: projectId,
    distinct_id: 'd',
    elements_chain: '',
    created_at: '2024-03-01 12:00:01.000000',
    person_id: personId,
    person_properties: '{}',
    person_created_at: zero,
    person_mode: 'full',
    ...NO_GROUPS,
    session_id: '',
    window_id: '',
    historical_migration: false,
    ...overrides,
  };
}

let clickhouse: ClickHouse;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'plover-mgmt-ch-'));
  clickhouse = await ChdbClickHouse.open({ dataDir: dir });
  await migrateClickHouse(clickhouse, { logger });
});
afterAll(async () => {
  await clickhouse.close();
  await rm(dir, { recursive: true, force: true });
});

describe.each(backends.map((backend, index) => ({ ...backend, index })))('event deletion job on $name with chDB', (backend) => {
  const world = useWorld(backend, { clickhouse: () => clickhouse });
  // Both databases share one chDB: keep their project (team) ids apart.
  beforeAll(() => world.sql.query('t.ids', `ALTER TABLE projects ALTER COLUMN id RESTART WITH ${(backend.index + 1) * 100_000}`));

  it('DELETE ?delete_events=true → job removes that person’s events up to the request time, verifies, marks done', async () => {
    const t = await world.tenant();
    const store = new PersonStore(world.sql);
    const reads = new PersonReads(world.sql);
    for (const id of ['victim', 'bystander']) {
      await store.processEvent(t.projectId, {
        uuid: uuidv7(),
        event: '$pageview',
        distinctId: id,
        timestamp: new Date('2024-03-01T12:00:00Z'),
        properties: { $set: { id } },
      });
    }
    const victim = (await reads.getByDistinctId(t.projectId, 'victim'))!;
    const bystander = (await reads.getByDistinctId(t.projectId, 'bystander'))!;
    await insertEvents(clickhouse, [
      event(t.projectId, victim.uuid, { distinct_id: 'victim' }),
      event(t.projectId, victim.uuid, { distinct_id: 'victim', timestamp: '2024-03-02 12:00:00.000000' }),
      event(t.projectId, bystander.uuid, { distinct_id: 'bystander' }),
    ]);
    const res = await request(world.app).delete(`/api/projects/${t.projectId}/persons/${victim.id}?delete_events=true`).set(t.auth);
    expect(res.status).toBe(204);
    // An event after the request (the id came back as a new person with the same uuid) is not deleted.
    await insertEvents(clickhouse, [event(t.projectId, victim.uuid, { distinct_id: 'victim', timestamp: '2099-01-01 00:00:00.000000' })]);
    expect(await countEvents(clickhouse, t.projectId)).toBe(4);

    const result = await runEventDeletions({ sql: world.sql, clickhouse, logger });
    expect(result).toMatchObject({ ran: true, verified: 1 });
    const left = await clickhouse.query<{ person_id: string; n: string }>(
      't.left',
      'SELECT toString(person_id) AS person_id, toString(timestamp) AS ts, count() AS n FROM events WHERE team_id = {t:Int64} GROUP BY person_id, ts ORDER BY ts',
      { t: t.projectId },
    );
    expect(left.map((row) => row.person_id)).toEqual([bystander.uuid, victim.uuid]);
    const queue = await world.sql.query<{ done: boolean }>('t.q', 'SELECT delete_verified_at IS NOT NULL AS done FROM async_deletions WHERE project_id = $1', [
      t.projectId,
    ]);
    expect(queue.rows).toEqual([{ done: true }]);
    // Nothing left to do: a second run verifies nothing new.
    expect((await runEventDeletions({ sql: world.sql, clickhouse, logger })).verified).toBe(0);
  });

  it('a failing ClickHouse leaves the queue intact for the next run', async () => {
    const t = await world.tenant();
    await world.sql.query('t.queue', 'INSERT INTO async_deletions (project_id, deletion_type, key) VALUES ($1, 1, $2)', [t.projectId, randomUUID()]);
    const broken: ClickHouse = { ...clickhouse, command: () => Promise.reject(new Error('boom')), query: clickhouse.query.bind(clickhouse) };
    const failed = await runEventDeletions({ sql: world.sql, clickhouse: broken, logger });
    expect(failed.ran).toBe(true);
    const pending = await world.sql.query<{ n: number }>(
      't.p',
      'SELECT count(*)::int AS n FROM async_deletions WHERE project_id = $1 AND delete_verified_at IS NULL',
      [t.projectId],
    );
    expect(pending.rows[0]!.n).toBe(1);
    await runEventDeletions({ sql: world.sql, clickhouse, logger });
    const after = await world.sql.query<{ n: number }>(
      't.p',
      'SELECT count(*)::int AS n FROM async_deletions WHERE project_id = $1 AND delete_verified_at IS NULL',
      [t.projectId],
    );
    expect(after.rows[0]!.n).toBe(0);
  });

  it('lists events newest first with filters, paginated and as CSV', async () => {
    const t = await world.tenant();
    const store = new PersonStore(world.sql);
    const reads = new PersonReads(world.sql);
    await store.processEvent(t.projectId, {
      uuid: uuidv7(),
      event: '$pageview',
      distinctId: 'u1',
      timestamp: new Date('2024-03-01T00:00:00Z'),
      properties: {},
    });
    const u1 = (await reads.getByDistinctId(t.projectId, 'u1'))!;
    await insertEvents(clickhouse, [
      event(t.projectId, u1.uuid, {
        distinct_id: 'u1',
        event: 'signup',
        timestamp: '2024-03-01 10:00:00.000000',
        properties: JSON.stringify({ plan: 'pro', n: 5 }),
      }),
      event(t.projectId, u1.uuid, {
        distinct_id: 'u1',
        event: '$pageview',
        timestamp: '2024-03-02 10:00:00.000000',
        properties: JSON.stringify({ plan: 'free', n: 1 }),
      }),
      event(t.projectId, randomUUID(), { distinct_id: 'u2', event: '$pageview', timestamp: '2024-03-03 10:00:00.000000', properties: '{}' }),
    ]);
    const base = `/api/projects/${t.projectId}/events`;
    const get = async (query: string) =>
      (await request(world.app).get(`${base}?${query}`).set(t.auth)).body as {
        count: number;
        next: string | null;
        results: Array<{ event: string; distinct_id: string; timestamp: string }>;
      };
    const all = await get('');
    expect(all.results.map((e) => e.timestamp)).toEqual(['2024-03-03T10:00:00.000Z', '2024-03-02T10:00:00.000Z', '2024-03-01T10:00:00.000Z']);
    expect(all.count).toBe(3);
    expect((await get('event=signup')).results.map((e) => e.event)).toEqual(['signup']);
    expect((await get('distinct_id=u2')).results).toHaveLength(1);
    expect((await get(`person_id=${u1.id}`)).results).toHaveLength(2);
    expect((await get('after=2024-03-01T12:00:00Z&before=2024-03-03T00:00:00Z')).results.map((e) => e.event)).toEqual(['$pageview']);
    expect((await get(`properties=${encodeURIComponent(JSON.stringify([{ key: 'plan', value: 'pro' }]))}`)).results.map((e) => e.event)).toEqual(['signup']);
    expect((await get(`properties=${encodeURIComponent(JSON.stringify([{ key: 'n', value: 2, operator: 'gt' }]))}`)).results.map((e) => e.event)).toEqual([
      'signup',
    ]);
    expect(
      (await get(`properties=${encodeURIComponent(JSON.stringify([{ key: 'plan', value: 'PR', operator: 'icontains' }]))}`)).results.map((e) => e.event),
    ).toEqual(['signup']);
    expect(
      (
        await get(
          `properties=${encodeURIComponent(
            JSON.stringify({
              type: 'OR',
              values: [
                { key: 'plan', value: 'free' },
                { key: 'n', operator: 'is_not_set' },
              ],
            }),
          )}`,
        )
      ).results.map((e) => e.event),
    ).toEqual(['$pageview', '$pageview']);
    const page = await get('limit=2');
    expect(page.results).toHaveLength(2);
    expect(page.count).toBe(3);
    expect(page.next).toMatch(/offset=2/);
    expect((await request(world.app).get(`${base}?after=nope`).set(t.auth)).body.attr).toBe('after');
    const csv = await request(world.app).get(`${base}?format=csv&event=signup`).set(t.auth);
    expect(csv.text.split('\r\n')[0]).toBe('distinct_id,event,id,person_id,properties.n,properties.plan,timestamp,uuid');
  });

  it('lists ingestion warnings newest first', async () => {
    const t = await world.tenant();
    await insertIngestionWarnings(clickhouse, [
      {
        team_id: t.projectId,
        type: 'cannot_merge_already_identified',
        details: JSON.stringify({ distinctId: 'a' }),
        timestamp: '2024-03-01 10:00:00.000000',
        event_uuid: randomUUID(),
      },
      { team_id: t.projectId, type: 'person_properties_size_violation', details: '{}', timestamp: '2024-03-02 10:00:00.000000', event_uuid: randomUUID() },
    ]);
    const res = await request(world.app).get(`/api/projects/${t.projectId}/ingestion_warnings`).set(t.auth);
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(2);
    expect(res.body.results[0]).toMatchObject({ type: 'person_properties_size_violation', timestamp: '2024-03-02T10:00:00.000Z' });
    expect(res.body.results[1].details).toEqual({ distinctId: 'a' });
  });

  it('scopes of the data listings: query:read for events, project:read for warnings, 403 outside the organization', async () => {
    const t = await world.tenant();
    const base = `/api/environments/${t.projectId}`;
    const noScope = bearer(await world.newKey(t.userId, ['person:read']));
    expect((await request(world.app).get(`${base}/events`).set(noScope)).body.detail).toBe("API key missing required scope 'query:read'");
    expect((await request(world.app).get(`${base}/ingestion_warnings`).set(noScope)).body.detail).toBe("API key missing required scope 'project:read'");
    expect(
      (
        await request(world.app)
          .get(`${base}/events`)
          .set(bearer(await world.newKey(t.userId, ['query:read'])))
      ).status,
    ).toBe(200);
    const outsider = await world.tenant();
    expect((await request(world.app).get(`${base}/events`).set(outsider.auth)).status).toBe(403);
    expect((await request(world.app).get(`${base}/events?limit=0`).set(t.auth)).body.attr).toBe('limit');
  });

  it('lists group types and groups', async () => {
    const t = await world.tenant();
    const groups = new GroupStore(world.sql);
    const index = (await groups.groupTypeIndex(t.projectId, 'company'))!;
    await groups.identifyGroup(t.projectId, index, 'acme', { name: 'Acme Inc' }, new Date('2024-03-01T00:00:00Z'));
    await groups.identifyGroup(t.projectId, index, 'globex', { name: 'Globex' }, new Date('2024-03-02T00:00:00Z'));
    const types = await request(world.app).get(`/api/projects/${t.projectId}/groups_types/`).set(t.auth);
    expect(types.body).toEqual([{ group_type: 'company', group_type_index: index, name_singular: null, name_plural: null }]);
    const list = await request(world.app).get(`/api/projects/${t.projectId}/groups?group_type_index=${index}`).set(t.auth);
    expect((list.body.results as Array<{ group_key: string }>).map((g) => g.group_key)).toEqual(['globex', 'acme']);
    const search = await request(world.app).get(`/api/projects/${t.projectId}/groups?group_type_index=${index}&search=acme`).set(t.auth);
    expect(search.body.results).toEqual([
      { group_type_index: index, group_key: 'acme', group_properties: { name: 'Acme Inc' }, created_at: '2024-03-01T00:00:00.000Z' },
    ]);
    expect((await request(world.app).get(`/api/projects/${t.projectId}/groups`).set(t.auth)).body).toMatchObject({
      attr: 'group_type_index',
      code: 'required',
    });
    const noScope = bearer(await world.newKey(t.userId, ['person:read']));
    expect((await request(world.app).get(`/api/projects/${t.projectId}/groups_types`).set(noScope)).body.detail).toBe(
      "API key missing required scope 'group:read'",
    );
  });
});

describe.each(backends)('deletion job lock on $name', (backend) => {
  const world = useWorld(backend);
  it('a second concurrent run does not run', async () => {
    if (backend.name === 'PGlite') return; // one connection: runs serialize instead of overlapping
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const t = await world.tenant();
    await world.sql.query('t.queue', 'INSERT INTO async_deletions (project_id, deletion_type, key) VALUES ($1, 1, $2)', [t.projectId, randomUUID()]);
    const slow: ClickHouse = { ...world.clickhouse, command: () => gate };
    const first = runEventDeletions({ sql: world.sql, clickhouse: slow, logger });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const second = await runEventDeletions({ sql: world.sql, clickhouse: slow, logger });
    expect(second.ran).toBe(false);
    release();
    expect((await first).ran).toBe(true);
  });
});

describe('schedule', () => {
  afterEach(() => jest.useRealTimers());

  it('runs the job at 05:00 UTC on Sunday and not before', async () => {
    jest.useFakeTimers({ now: new Date('2024-03-03T04:59:58.000Z'), doNotFake: ['nextTick', 'setImmediate'] }); // a Sunday
    const calls: Date[] = [];
    const sql = {
      transaction: () => {
        calls.push(new Date());
        return Promise.resolve({ ran: true, queued: 0, verified: 0 });
      },
    };
    const schedules = startSchedules({ sql: sql as never, clickhouse: {} as ClickHouse, logger });
    await jest.advanceTimersByTimeAsync(1000);
    expect(calls).toHaveLength(0);
    await jest.advanceTimersByTimeAsync(3000);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.toISOString().slice(0, 16)).toBe('2024-03-03T05:00');
    await jest.advanceTimersByTimeAsync(24 * 3600 * 1000);
    expect(calls).toHaveLength(1);
    await schedules.stop();
    expect(DEFAULT_DELETION_CRON).toBe('0 5 * * 0');
    expect(() => startSchedules({ sql: sql as never, clickhouse: {} as ClickHouse, logger }, { deletionCron: 'nope' })).toThrow(/invalid/);
  });
});
