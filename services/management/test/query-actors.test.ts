/**
 * ActorsQuery and EventsQuery persons from the person store (identified flag, current properties, every distinct
 * id, missing actors counted), the persons list without a source, and the funnel points PostHog's persons modal
 * opens — and saves as a static cohort — trend periods (converted and dropped off), time-to-convert bins and custom steps — each listing as many
 * actors as the number shown, on a seeded dataset checked against a plain TypeScript count. Also what POST
 * /query/ applies before running: `filters_override`, `variables_override`, and the project's timezone in HogQL;
 * and the async refresh modes: 202 with a query status, the result from GET /query/:id/.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { insertEvents, migrate as migrateClickHouse, NO_GROUPS, type ClickHouse, type EventRow } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { silentLogger, uuidv7 } from '@plover/core';
import { PersonStore } from '@plover/persons';
import { seededRandom } from '../../../test/support/random';
import { backends, useWorld } from './support/app';

let clickhouse: ClickHouse;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'plover-mgmt-actors-'));
  clickhouse = await ChdbClickHouse.open({ dataDir: dir });
  await migrateClickHouse(clickhouse, { logger: silentLogger() });
});
afterAll(async () => {
  await clickhouse.close();
  await rm(dir, { recursive: true, force: true });
});

const HOUR = 3_600_000;
const wall = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

function row(projectId: number, name: string, distinctId: string, personId: string, ms: number, personProperties = '{}'): EventRow {
  return {
    uuid: uuidv7(),
    event: name,
    properties: '{}',
    timestamp: wall(ms),
    team_id: projectId,
    distinct_id: distinctId,
    elements_chain: '',
    created_at: wall(ms),
    person_id: personId,
    person_properties: personProperties,
    person_created_at: wall(ms),
    person_mode: 'full',
    ...NO_GROUPS,
    session_id: '',
    window_id: '',
    historical_migration: false,
  };
}

type Body = { results: unknown[][]; columns: string[]; hasMore: boolean; missing_actors_count: number };

describe.each(backends.map((backend, index) => ({ ...backend, index })))('ActorsQuery persons on $name', (backend) => {
  const world = useWorld(backend, { clickhouse: () => clickhouse });
  // The backends share one ClickHouse: their projects must not share ids.
  beforeAll(() => world.sql.query('t.ids', `ALTER TABLE projects ALTER COLUMN id RESTART WITH ${(backend.index + 1) * 100_000}`));

  async function post(t: { projectId: number; auth: Record<string, string> }, query: unknown): Promise<Body> {
    const response = await request(world.app).post(`/api/environments/${t.projectId}/query/`).set(t.auth).send({ query });
    expect([response.status, response.body]).toEqual([200, expect.anything()]);
    return response.body as Body;
  }

  it('answers persons as the person store has them, not as events stamped them; the persons list searches and pages', async () => {
    const t = await world.tenant();
    const store = new PersonStore(world.sql);
    const at = Date.now() - 2 * HOUR;
    const process = (event: string, distinctId: string, properties: Record<string, unknown>, ms: number) =>
      store.processEvent(t.projectId, { uuid: uuidv7(), event, distinctId, timestamp: new Date(ms), properties });
    await process('$pageview', 'anon-1', { $set: { plan: 'free' } }, at - HOUR);
    const ann = await process('$identify', 'ann', { $anon_distinct_id: 'anon-1', $set: { email: 'ann@example.com', plan: 'pro' } }, at);
    // Ann's plan changes after her events were stored: the events still say "free".
    await process('$set', 'ann', { $set: { plan: 'enterprise' } }, at + HOUR);
    const bob = await process('$pageview', 'bob', { $set: { email: 'bob@example.org' } }, at - 3 * HOUR);
    const personless = '00000000-0000-4000-8000-0000000000cc';
    await insertEvents(clickhouse, [
      row(t.projectId, '$pageview', 'ann', ann.personUuid, at, '{"plan":"free"}'),
      row(t.projectId, '$pageview', 'bob', bob.personUuid, at),
      row(t.projectId, '$pageview', 'cy', personless, at),
    ]);
    const trend = { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: '$pageview', math: 'dau' }], dateRange: { date_from: '-7d' } };
    const listed = await post(t, { kind: 'ActorsQuery', source: { kind: 'InsightActorsQuery', source: trend, day: wall(at).slice(0, 10) } });
    expect(listed.columns).toEqual(['person', 'id', 'created_at', 'event_count']);
    const byId = new Map(listed.results.map((r) => [r[1] as string, r]));
    expect(byId.get(ann.personUuid)![0]).toMatchObject({
      id: ann.personUuid,
      is_identified: true,
      properties: { email: 'ann@example.com', plan: 'enterprise' },
      distinct_ids: expect.arrayContaining(['ann', 'anon-1']),
      created_at: new Date(at - HOUR).toISOString(),
    });
    expect(byId.get(bob.personUuid)![0]).toMatchObject({ is_identified: false, properties: { email: 'bob@example.org' } });
    expect(byId.get(personless)).toEqual([{ id: personless }, personless, null, 1]);
    expect(listed.missing_actors_count).toBe(1);
    const distinct = await post(t, {
      kind: 'ActorsQuery',
      select: ['id', 'event_distinct_ids'],
      source: { kind: 'InsightActorsQuery', source: trend, day: wall(at).slice(0, 10) },
    });
    expect(distinct.results).toContainEqual([ann.personUuid, ['ann']]);

    // Saved as a static cohort (PostHog's persons modal): the listed persons the store has become its members.
    const cohort = await request(world.app)
      .post(`/api/projects/${t.projectId}/cohorts/`)
      .set(t.auth)
      .send({ name: 'Viewers', is_static: true, query: { kind: 'InsightActorsQuery', source: trend, day: wall(at).slice(0, 10) } });
    expect([cohort.status, cohort.body.count]).toEqual([201, 2]);
    const members = await request(world.app).get(`/api/projects/${t.projectId}/cohorts/${cohort.body.id}/persons/`).set(t.auth);
    const memberUuids = (members.body as { results: Array<{ uuid: string }> }).results.map((p) => p.uuid);
    expect(memberUuids.sort()).toEqual([ann.personUuid, bob.personUuid].sort());
    const dynamic = await request(world.app)
      .post(`/api/projects/${t.projectId}/cohorts/`)
      .set(t.auth)
      .send({ name: 'x', query: { kind: 'ActorsQuery' } });
    expect([dynamic.status, dynamic.body.attr]).toEqual([400, 'query']);

    // EventsQuery's person column reads the same store, by the event's distinct id.
    const events = await post(t, { kind: 'EventsQuery', select: ['distinct_id', 'person'], orderBy: ['distinct_id'] });
    expect(events.results).toEqual([
      [
        'ann',
        {
          uuid: ann.personUuid,
          created_at: new Date(at - HOUR).toISOString(),
          properties: expect.objectContaining({ email: 'ann@example.com', plan: 'enterprise' }),
          distinct_id: 'ann',
        },
      ],
      ['bob', expect.objectContaining({ uuid: bob.personUuid, distinct_id: 'bob' })],
      ['cy', { distinct_id: 'cy' }],
    ]);

    // No source: the project's persons, newest first, searched, filtered, ordered, paged.
    const ids = async (node: Record<string, unknown>) => (await post(t, { kind: 'ActorsQuery', select: ['id'], ...node })).results.map((r) => r[0]);
    expect(await ids({})).toEqual([ann.personUuid, bob.personUuid]);
    expect(await ids({ orderBy: ['created_at ASC'] })).toEqual([bob.personUuid, ann.personUuid]);
    expect(await ids({ search: 'ANN@' })).toEqual([ann.personUuid]);
    expect(await ids({ search: 'anon-1' })).toEqual([ann.personUuid]);
    expect(await ids({ properties: [{ type: 'person', key: 'plan', operator: 'exact', value: ['enterprise'] }] })).toEqual([ann.personUuid]);
    const page = await post(t, { kind: 'ActorsQuery', limit: 1 });
    expect(page).toMatchObject({
      hasMore: true,
      columns: ['person', 'id', 'created_at'],
      results: [[expect.objectContaining({ is_identified: true }), ann.personUuid, expect.any(String)]],
    });
    expect((await post(t, { kind: 'ActorsQuery', limit: 1, offset: 1 })).hasMore).toBe(false);
    for (const bad of [{ select: ['event_count'] }, { orderBy: ['properties.email'] }, { search: 7 }]) {
      const response = await request(world.app)
        .post(`/api/environments/${t.projectId}/query/`)
        .set(t.auth)
        .send({ query: { kind: 'ActorsQuery', ...bad } });
      expect([response.status, response.body.attr]).toEqual([400, Object.keys(bad)[0]]);
    }
  });

  it('funnel trend points, time-to-convert bins and custom steps list as many actors as the funnel shows', async () => {
    const t = await world.tenant();
    const random = seededRandom(31);
    const now = Date.now();
    const events: EventRow[] = [];
    const people: Array<{ id: string; signups: number[]; pays: number[] }> = [];
    for (let i = 0; i < 24; i++) {
      const id = `00000000-0000-4000-a000-${i.toString(16).padStart(12, '0')}`;
      // Whole seconds, all distinct, from 6 days ago to 2 hours ago: inside the range, never at the same instant.
      const instant = () => Math.floor((now - 6 * 24 * HOUR + random() * (6 * 24 - 2) * HOUR) / 1000) * 1000 + i;
      const person = { id, signups: [] as number[], pays: [] as number[] };
      for (let k = Math.floor(random() * 3); k > 0; k--) person.signups.push(instant());
      for (let k = Math.floor(random() * 3); k > 0; k--) person.pays.push(instant());
      for (const ms of person.signups) events.push(row(t.projectId, 'signed up', `u${i}`, id, ms));
      for (const ms of person.pays) events.push(row(t.projectId, 'paid', `u${i}`, id, ms));
      people.push(person);
    }
    await insertEvents(clickhouse, events);
    const funnel = (funnelsFilter: Record<string, unknown>) => ({
      kind: 'FunnelsQuery',
      series: [
        { kind: 'EventsNode', event: 'signed up' },
        { kind: 'EventsNode', event: 'paid' },
      ],
      dateRange: { date_from: '-7d' },
      interval: 'day',
      funnelsFilter: { funnelWindowInterval: 2, funnelWindowIntervalUnit: 'day', ...funnelsFilter },
    });
    const actors = async (source: Record<string, unknown>) =>
      (await post(t, { kind: 'ActorsQuery', select: ['id'], limit: 1000, source: { kind: 'FunnelsActorsQuery', ...source } })).results.map((r) => r[0]);
    const window = 2 * 24 * HOUR;

    // Trends: per entrance day, who entered (a signup that day) and who converted from one of them.
    const trendsQuery = funnel({ funnelVizType: 'trends' });
    const [line] = (await post(t, trendsQuery)).results as unknown as [{ data: number[]; days: string[] }];
    let entrants = 0;
    for (const [i, day] of line.days.entries()) {
      const entered = people.filter((p) => p.signups.some((s) => wall(s).startsWith(day)));
      const converted = entered.filter((p) => p.signups.some((s) => wall(s).startsWith(day) && p.pays.some((x) => x > s && x - s <= window)));
      entrants += entered.length;
      const convertedIds = await actors({ source: trendsQuery, funnelTrendsEntrancePeriodStart: day });
      const droppedIds = await actors({ source: trendsQuery, funnelTrendsEntrancePeriodStart: `${day} 00:00:00`, funnelTrendsDropOff: true });
      expect([day, convertedIds.length, droppedIds.length]).toEqual([day, converted.length, entered.length - converted.length]);
      expect(convertedIds).toEqual(converted.map((p) => p.id).sort());
      const rate = entered.length === 0 ? 0 : Math.round((converted.length / entered.length) * 10_000) / 100;
      expect([day, line.data[i]]).toEqual([day, rate]);
    }
    expect(entrants).toBeGreaterThan(5);

    // Time to convert: every bin's actors, and only converters.
    const ttcQuery = funnel({ funnelVizType: 'time_to_convert', binCount: 4 });
    const { bins } = (await post(t, ttcQuery)).results as unknown as { bins: [number, number][] };
    const binned: unknown[][] = [];
    for (const [start] of bins.slice(0, -1)) binned.push(await actors({ source: ttcQuery, funnelTimeToConvertBin: start }));
    expect(binned.map((ids) => ids.length)).toEqual(bins.slice(0, -1).map(([, n]) => n));
    const converters = await actors({ source: ttcQuery, funnelStep: 2 });
    expect(binned.flat().sort()).toEqual(converters);

    // Custom steps: exact furthest steps.
    const stepsQuery = funnel({});
    const steps = (await post(t, stepsQuery)).results as unknown as Array<{ count: number }>;
    expect((await actors({ source: stepsQuery, funnelCustomSteps: [1] })).length).toBe(steps[0]!.count - steps[1]!.count);
    expect((await actors({ source: stepsQuery, funnelCustomSteps: [2] })).length).toBe(steps[1]!.count);
    expect((await actors({ source: stepsQuery, funnelCustomSteps: [1, 2] })).length).toBe(steps[0]!.count);
    const bad = await request(world.app)
      .post(`/api/environments/${t.projectId}/query/`)
      .set(t.auth)
      .send({ query: { kind: 'ActorsQuery', source: { kind: 'FunnelsActorsQuery', source: trendsQuery, funnelTrendsEntrancePeriodStart: '1999-01-01' } } });
    expect([bad.status, bad.body.attr]).toEqual([400, 'funnelTrendsEntrancePeriodStart']);
  });

  it("applies filters_override and variables_override to the query, and reads HogQL's times in the project's timezone", async () => {
    const t = await world.tenant();
    await world.sql.query('t.tz', "UPDATE projects SET timezone = 'Europe/Berlin' WHERE id = $1", [t.projectId]);
    const person = '00000000-0000-4000-b000-000000000001';
    const at = (utc: string, name: string, browser: string) => ({
      ...row(t.projectId, name, 'dee', person, Date.parse(`${utc}Z`)),
      properties: JSON.stringify({ $browser: browser }),
    });
    // 23:30 UTC on 10 March is 00:30 on 11 March in Berlin; 23:30 UTC on 11 March is already 12 March there.
    await insertEvents(clickhouse, [
      at('2024-03-10T23:30:00', 'a', 'Chrome'),
      at('2024-03-11T23:30:00', 'b', 'Firefox'),
      at('2024-03-11T12:00:00', 'b', 'Chrome'),
    ]);
    const run = async (body: Record<string, unknown>) => {
      const response = await request(world.app).post(`/api/projects/${t.projectId}/query/`).set(t.auth).send(body);
      expect([response.status, response.body.detail]).toEqual([200, undefined]);
      return response.body as { results: unknown[][] };
    };
    const days = { kind: 'HogQLQuery', query: 'select toString(toStartOfDay(timestamp)) as d, count() from events group by d order by d' };
    expect((await run({ query: days })).results).toEqual([
      ['2024-03-11 00:00:00', 2],
      ['2024-03-12 00:00:00', 1],
    ]);
    expect((await run({ query: { kind: 'HogQLQuery', query: "select toString(toDate('2024-03-11') = toDate(min(timestamp))) from events" } })).results).toEqual(
      [['1']],
    );

    const filtered = { kind: 'HogQLQuery', query: 'select count() from events where {filters}' };
    expect((await run({ query: filtered })).results).toEqual([[3]]);
    const oneDay = { date_from: '2024-03-11', date_to: '2024-03-11' };
    expect((await run({ query: filtered, filters_override: oneDay })).results).toEqual([[2]]);
    const chrome = [{ type: 'event', key: '$browser', operator: 'exact', value: ['Chrome'] }];
    expect((await run({ query: filtered, filters_override: { ...oneDay, properties: chrome } })).results).toEqual([[2]]);
    expect(
      (await run({ query: { ...filtered, filters: { properties: chrome } }, filters_override: { date_from: '2024-03-12', date_to: '2024-03-12' } })).results,
    ).toEqual([[0]]);

    // An insight gets the override's range and, AND-ed with its own, its properties.
    const trend = { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'b' }], dateRange: { date_from: '2024-03-01', date_to: '2024-03-20' } };
    const total = async (body: Record<string, unknown>) => ((await run(body)).results as unknown as Array<{ count: number; days: string[] }>)[0]!;
    expect((await total({ query: trend })).count).toBe(2);
    const overridden = await total({
      query: { kind: 'InsightVizNode', source: trend },
      filters_override: { date_from: '2024-03-11', date_to: '2024-03-11', properties: chrome },
    });
    expect([overridden.count, overridden.days]).toEqual([1, ['2024-03-11']]);

    const named = {
      kind: 'HogQLQuery',
      query: 'select count() from events where event = {variables.name}',
      variables: { 'var-1': { variableId: 'var-1', code_name: 'name', value: 'a' } },
    };
    expect((await run({ query: named })).results).toEqual([[1]]);
    expect((await run({ query: named, variables_override: { 'var-1': { value: 'b' } } })).results).toEqual([[2]]);
    const unknown = await request(world.app)
      .post(`/api/projects/${t.projectId}/query/`)
      .set(t.auth)
      .send({ query: { ...named, variables: {} } });
    expect([unknown.status, unknown.body.code]).toEqual([400, 'resolution_error']);
  });

  it('async modes answer 202 with the query status on a miss, the result from GET /query/:id/, and a cached result at once', async () => {
    const t = await world.tenant();
    await insertEvents(clickhouse, [row(t.projectId, 'async', 'ed', '00000000-0000-4000-b000-000000000002', Date.now() - HOUR)]);
    const url = `/api/projects/${t.projectId}/query/`;
    const send = (body: Record<string, unknown>) => request(world.app).post(url).set(t.auth).send(body);
    const poll = async (id: string) => {
      for (let i = 0; i < 500; i++) {
        const status = await request(world.app).get(`${url}${id}/`).set(t.auth);
        if (status.status === 200) return status.body as { query_status: { complete: boolean; error: boolean; results: { results: unknown[][] } } };
        expect(status.status).toBe(202);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`query ${id} never completed`);
    };
    const query = { kind: 'HogQLQuery', query: "select count() from events where event = 'async'" };
    for (const refresh of ['force_async', 'async', 'lazy_async']) {
      const id = `q-${refresh}`;
      const started = await send({ query: { ...query, query: `${query.query} and '${refresh}' != ''` }, refresh, client_query_id: id });
      expect([started.status, started.body.query_status]).toEqual([
        202,
        expect.objectContaining({ id, query_async: true, complete: false, team_id: t.projectId }),
      ]);
      const done = await poll(id);
      expect([refresh, done.query_status.complete, done.query_status.error, done.query_status.results.results]).toEqual([refresh, true, false, [[1]]]);
    }
    // Computed once: async answers it at once; a miss in async_except_on_cache_miss is computed while the client waits.
    const again = await send({ query: { ...query, query: `${query.query} and 'async' != ''` }, refresh: 'async' });
    expect([again.status, again.body.results, again.body.is_cached]).toEqual([200, [[1]], true]);
    const blocking = await send({ query, refresh: 'async_except_on_cache_miss' });
    expect([blocking.status, blocking.body.results]).toEqual([200, [[1]]]);
    const failed = await send({ query: { kind: 'HogQLQuery', query: 'select nosuchfn()' }, refresh: 'force_async', client_query_id: 'q-bad' });
    expect(failed.status).toBe(202);
    expect((await poll('q-bad')).query_status).toMatchObject({ complete: true, error: true });
  });
});
