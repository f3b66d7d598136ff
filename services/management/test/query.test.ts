/**
 * `/query/` as PostHog's tools call it, through `/api/projects/` and `/api/environments/`: HogQL with the
 * response envelope and the cache, errors in PostHog's shape, other projects' rows out of reach, HogQLMetadata,
 * TrendsQuery, StickinessQuery, LifecycleQuery, FunnelsQuery, FunnelCorrelationQuery, RetentionQuery, PathsQuery, wrapper nodes, the per-project concurrency limit, and status and cancel of a running query.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { insertEvents, insertSnapshotBatches, migrate as migrateClickHouse, NO_GROUPS, type ClickHouse, type EventRow } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { silentLogger } from '@plover/core';
import { snapshotBatch } from '../../../packages/clickhouse/test/support/snapshot-batch';
import { backends, useWorld } from './support/app';

let clickhouse: ClickHouse;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'plover-mgmt-query-'));
  clickhouse = await ChdbClickHouse.open({ dataDir: dir });
  await migrateClickHouse(clickhouse, { logger: silentLogger() });
});
afterAll(async () => {
  await clickhouse.close();
  await rm(dir, { recursive: true, force: true });
});

let counter = 0;
function event(projectId: number, name: string, distinctId: string, timestamp: string): EventRow {
  counter++;
  return {
    uuid: `00000000-0000-4000-8000-${counter.toString(16).padStart(12, '0')}`,
    event: name,
    properties: JSON.stringify({ $browser: 'Chrome' }),
    timestamp,
    team_id: projectId,
    distinct_id: distinctId,
    elements_chain: '',
    created_at: timestamp,
    person_id: `00000000-0000-4000-9000-${counter.toString(16).padStart(12, '0')}`,
    person_properties: '{}',
    person_created_at: '2025-01-01 00:00:00.000',
    person_mode: 'full',
    ...NO_GROUPS,
    session_id: '',
    window_id: '',
    historical_migration: false,
  };
}

/** Reads fewer rows than the analysis limit allows (5·10^8 + 10) but hashes 5·10^9 pairs: minutes of work. */
const SLOW = 'SELECT count() FROM numbers(0, 500000000) AS a, numbers(10) AS b WHERE sipHash64(a.number, b.number) = 1';
/** A scan of a second or so on this machine. */
const MEDIUM_ROWS = 20_000_000;

describe.each(backends.map((backend, index) => ({ ...backend, index })))('/query/ on $name', (backend) => {
  const world = useWorld(backend, { clickhouse: () => clickhouse });
  beforeAll(() => world.sql.query('t.ids', `ALTER TABLE projects ALTER COLUMN id RESTART WITH ${(backend.index + 1) * 100_000}`));

  async function setup() {
    const t = await world.tenant();
    const other = await world.tenant();
    const now = new Date().toISOString().replace('T', ' ').replace('Z', '');
    await insertEvents(clickhouse, [
      event(t.projectId, '$pageview', 'ann', now),
      event(t.projectId, '$pageview', 'bob', now),
      event(t.projectId, 'signed up', 'ann', now),
      event(other.projectId, '$pageview', 'eve', now),
      event(other.projectId, 'secret', 'eve', now),
    ]);
    return t;
  }

  it('runs HogQL through both prefixes with PostHog envelope; a repeat is served from the cache', async () => {
    const t = await setup();
    const query = { kind: 'HogQLQuery', query: 'select event, count() as c from events group by event order by c desc, event' };
    const first = await request(world.app).post(`/api/projects/${t.projectId}/query/`).set(t.auth).send({ query });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      results: [
        ['$pageview', 2],
        ['signed up', 1],
      ],
      columns: ['event', 'c'],
      types: [
        ['event', 'String'],
        ['c', 'UInt64'],
      ],
      hasMore: false,
      limit: 100,
      offset: 0,
      is_cached: false,
      query_status: null,
    });
    expect(typeof first.body.cache_key).toBe('string');
    expect(Date.parse(first.body.next_allowed_client_refresh as string)).toBeGreaterThan(Date.parse(first.body.last_refresh as string));
    const again = await request(world.app).post(`/api/environments/${t.projectId}/query`).set(t.auth).send({ query, refresh: 'blocking' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ results: first.body.results, is_cached: true, cache_key: first.body.cache_key });
    const forced = await request(world.app).post(`/api/environments/${t.projectId}/query/`).set(t.auth).send({ query, refresh: 'force_blocking' });
    expect(forced.body.is_cached).toBe(false);
  });

  it("never shows another project's rows, and refuses what is not a virtual table", async () => {
    const t = await setup();
    const url = `/api/projects/${t.projectId}/query/`;
    const all = await request(world.app)
      .post(url)
      .set(t.auth)
      .send({
        query: { kind: 'HogQLQuery', query: 'select distinct_id from events where team_id != 0 or 1 = 1 union all select {v}', values: { v: "eve' OR 1=1" } },
      });
    expect(all.status).toBe(200);
    expect((all.body.results as string[][]).map(([id]) => id).sort()).toEqual(['ann', 'ann', 'bob', "eve' OR 1=1"]);
    for (const query of ['select * from system.tables', "select * from url('http://127.0.0.1:1/', CSV)", 'select 1 settings readonly = 0']) {
      const res = await request(world.app)
        .post(url)
        .set(t.auth)
        .send({ query: { kind: 'HogQLQuery', query } });
      expect(res.status).toBe(400);
      expect(res.body.type).toBe('validation_error');
    }
  });

  it('answers errors in PostHog shape: syntax with its position, unknown kind, kind mismatch, missing scope', async () => {
    const t = await setup();
    const url = `/api/projects/${t.projectId}/query/`;
    const syntax = await request(world.app)
      .post(url)
      .set(t.auth)
      .send({ query: { kind: 'HogQLQuery', query: 'select count( from events' } });
    expect(syntax.status).toBe(400);
    expect(syntax.body).toMatchObject({ type: 'validation_error', code: 'syntax_error' });
    expect(syntax.body.detail).toMatch(/\(at \d+/);
    const unknown = await request(world.app)
      .post(url)
      .set(t.auth)
      .send({ query: { kind: 'NoSuchQuery' } });
    expect(unknown.body).toMatchObject({ type: 'validation_error', detail: 'Unsupported query kind: NoSuchQuery' });
    const mismatch = await request(world.app)
      .post(`${url}TrendsQuery/`)
      .set(t.auth)
      .send({ query: { kind: 'HogQLQuery', query: 'select 1' } });
    expect(mismatch.status).toBe(400);
    const missing = await request(world.app).post(url).set(t.auth).send({});
    expect(missing.body).toMatchObject({ type: 'validation_error', attr: 'query' });
    const key = await world.newKey(t.userId, ['insight:read']);
    const forbidden = await request(world.app)
      .post(url)
      .set({ Authorization: `Bearer ${key}` })
      .send({ query: { kind: 'HogQLQuery', query: 'select 1' } });
    expect(forbidden.status).toBe(403);
    const allowed = await world.newKey(t.userId, ['query:read']);
    const ok = await request(world.app)
      .post(url)
      .set({ Authorization: `Bearer ${allowed}` })
      .send({ query: { kind: 'HogQLQuery', query: 'select 1' } });
    expect(ok.status).toBe(200);
  });

  it('HogQLMetadata reports validity and error positions; wrappers run their source; TrendsQuery counts', async () => {
    const t = await setup();
    const url = `/api/projects/${t.projectId}/query/`;
    const bad = await request(world.app)
      .post(url)
      .set(t.auth)
      .send({ query: { kind: 'HogQLMetadata', query: 'select nosuchfn(event) from events' } });
    expect(bad.status).toBe(200);
    expect(bad.body).toMatchObject({ isValid: false, errors: [{ start: 7, end: 22 }] });
    expect(bad.body.errors[0].message).toContain("Unsupported function call 'nosuchfn(...)'");
    const good = await request(world.app)
      .post(url)
      .set(t.auth)
      .send({ query: { kind: 'HogQLMetadata', query: 'select event from events' } });
    expect(good.body).toMatchObject({ isValid: true, errors: [] });

    const wrapped = await request(world.app)
      .post(url)
      .set(t.auth)
      .send({ query: { kind: 'DataVisualizationNode', source: { kind: 'HogQLQuery', query: 'select count() from events' } } });
    expect(wrapped.body.results).toEqual([[3]]);

    const trends = await request(world.app)
      .post(url)
      .set(t.auth)
      .send({
        query: {
          kind: 'InsightVizNode',
          source: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: '$pageview' }], dateRange: { date_from: '-7d' } },
        },
      });
    expect(trends.status).toBe(200);
    expect(trends.body.results[0]).toMatchObject({ count: 2, label: '$pageview' });
  });

  it('insight kinds refuse an answer past ANALYSIS_MAX_POINTS with a 400 before computing, as the legacy routes do', async () => {
    const t = await world.tenant();
    const url = `/api/projects/${t.projectId}/query/`;
    const series = Array.from({ length: 10 }, (_, i) => ({ kind: 'EventsNode', event: `event-${i}` }));
    const breakdownFilter = { breakdown: 'unique', breakdown_type: 'event', breakdown_limit: 1000 };
    // 10 series × 1001 breakdown values × 4801 hours: an answer of hundreds of MB, past the 500,000 default.
    const nodes = [
      { kind: 'TrendsQuery', series, breakdownFilter, interval: 'hour', dateRange: { date_from: '-200d' } },
      { kind: 'InsightVizNode', source: { kind: 'TrendsQuery', series, breakdownFilter, interval: 'hour', dateRange: { date_from: '-200d' } } },
      { kind: 'FunnelsQuery', series, breakdownFilter, funnelsFilter: { funnelVizType: 'trends' }, interval: 'hour', dateRange: { date_from: '-200d' } },
    ];
    for (const node of nodes) {
      const res = await request(world.app).post(url).set(t.auth).send({ query: node });
      expect({ kind: node.kind, status: res.status, code: res.body.code }).toEqual({ kind: node.kind, status: 400, code: 'too_many_points' });
    }
  });

  it('FunnelsQuery, RetentionQuery and PathsQuery answer what the legacy endpoints compute for the same node', async () => {
    const t = await world.tenant();
    const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().replace('T', ' ').replace('Z', '');
    const as = (row: EventRow, person: string): EventRow => ({ ...row, person_id: person });
    const dayAgo = day(1);
    const minuteLater = (n: number) => new Date(Date.parse(`${dayAgo}Z`) + n * 60_000).toISOString().replace('T', ' ').replace('Z', '');
    const [ann, bob, cy] = ['a', 'b', 'c'].map((n) => `00000000-0000-4000-a000-00000000000${n}`) as [string, string, string];
    await insertEvents(clickhouse, [
      as(event(t.projectId, '$pageview', 'ann', day(3)), ann),
      as(event(t.projectId, 'signed up', 'ann', day(2)), ann),
      as(event(t.projectId, '$pageview', 'bob', day(3)), bob),
      as(event(t.projectId, '$pageview', 'cy', day(2)), cy),
      as(event(t.projectId, '$pageview', 'cy', dayAgo), cy),
      ...['/a', '/b/'].map((url, i) => ({
        ...as(event(t.projectId, '$pageview', 'cy', minuteLater(i + 1)), cy),
        properties: JSON.stringify({ $current_url: url }),
      })),
    ]);
    const series = [
      { kind: 'EventsNode', event: '$pageview' },
      { kind: 'EventsNode', event: 'signed up' },
    ];
    const funnel = { kind: 'FunnelsQuery', series, dateRange: { date_from: '-7d' } };
    const target = { type: 'events', id: '$pageview' };
    const retention = {
      kind: 'RetentionQuery',
      dateRange: { date_from: '-7d' },
      retentionFilter: { targetEntity: target, returningEntity: target, period: 'Day' },
    };
    const paths = { kind: 'PathsQuery', dateRange: { date_from: '-7d' }, pathsFilter: { includeEventTypes: ['$pageview', 'custom_event'] } };
    const base = `/api/projects/${t.projectId}`;
    for (const [node, legacy] of [
      [funnel, 'funnel'],
      [retention, 'retention'],
      [paths, 'path'],
    ] as const) {
      const viaQuery = await request(world.app).post(`${base}/query/`).set(t.auth).send({ query: node });
      expect(viaQuery.status).toBe(200);
      const viaLegacy = await request(world.app).post(`${base}/insights/${legacy}/`).set(t.auth).send({ query: node });
      expect(viaLegacy.status).toBe(200);
      expect(viaQuery.body.results).toEqual(viaLegacy.body.result);
    }
    const steps = await request(world.app).post(`${base}/query/`).set(t.auth).send({ query: funnel });
    expect((steps.body.results as Array<{ count: number }>).map((step) => step.count)).toEqual([3, 1]);
    const cohorts = await request(world.app).post(`${base}/query/`).set(t.auth).send({ query: retention });
    const sizes = (cohorts.body.results as Array<{ values: Array<{ count: number }> }>).map((row) => row.values[0]?.count ?? 0);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(4);
    const edges = await request(world.app).post(`${base}/query/`).set(t.auth).send({ query: paths });
    expect(edges.body.results).toEqual([
      { source: '1_', target: '2_/a', value: 1, average_conversion_time: 60_000 },
      { source: '2_/a', target: '3_/b', value: 1, average_conversion_time: 60_000 },
    ]);
    const bad = await request(world.app)
      .post(`${base}/query/`)
      .set(t.auth)
      .send({ query: { kind: 'FunnelsQuery', series: [series[0]] } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ type: 'validation_error' });
  });

  it('StickinessQuery, LifecycleQuery and FunnelCorrelationQuery answer what the legacy endpoints compute', async () => {
    const t = await world.tenant();
    const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().replace('T', ' ').replace('Z', '');
    const as = (row: EventRow, person: string): EventRow => ({ ...row, person_id: person, person_created_at: day(4) });
    const [ann, bob, cy] = ['a', 'b', 'c'].map((n) => `00000000-0000-4000-b000-00000000000${n}`) as [string, string, string];
    await insertEvents(clickhouse, [
      as(event(t.projectId, '$pageview', 'ann', day(3)), ann),
      as(event(t.projectId, '$pageview', 'ann', day(2)), ann),
      as(event(t.projectId, '$pageview', 'bob', day(3)), bob),
      as(event(t.projectId, '$pageview', 'cy', day(2)), cy),
      as(event(t.projectId, '$pageview', 'cy', day(1)), cy),
    ]);
    const base = `/api/projects/${t.projectId}`;
    const events = [{ id: '$pageview', type: 'events', order: 0 }];
    const series = [{ kind: 'EventsNode', event: '$pageview' }];
    for (const [kind, insight] of [
      ['StickinessQuery', 'STICKINESS'],
      ['LifecycleQuery', 'LIFECYCLE'],
    ] as const) {
      const node = { kind, series, dateRange: { date_from: '-7d' }, interval: 'day' };
      const viaQuery = await request(world.app).post(`${base}/query/`).set(t.auth).send({ query: node });
      expect(viaQuery.status).toBe(200);
      const viaFields = await request(world.app).post(`${base}/insights/trend/`).set(t.auth).send({ insight, events, date_from: '-7d', interval: 'day' });
      const viaNode = await request(world.app).post(`${base}/insights/trend/`).set(t.auth).send({ query: node });
      expect(viaQuery.body.results).toEqual(viaFields.body.result);
      expect(viaQuery.body.results).toEqual(viaNode.body.result);
    }
    const stickiness = await request(world.app)
      .post(`${base}/query/`)
      .set(t.auth)
      .send({ query: { kind: 'StickinessQuery', series, dateRange: { date_from: '-7d' } } });
    // ann and cy on two days, bob on one.
    expect((stickiness.body.results as Array<{ data: number[] }>)[0]?.data.slice(0, 3)).toEqual([1, 2, 0]);
    const lifecycle = await request(world.app)
      .post(`${base}/query/`)
      .set(t.auth)
      .send({ query: { kind: 'LifecycleQuery', series, dateRange: { date_from: '-7d' } } });
    const byStatus = Object.fromEntries((lifecycle.body.results as Array<{ status: string; count: number }>).map((row) => [row.status, row.count]));
    // Created the day before their first event: ann and bob resurrect 3 days ago, cy 2 days ago; ann and cy return the day after.
    expect(byStatus).toEqual({ new: 0, returning: 2, resurrecting: 3, dormant: -3 });
    const refused = await request(world.app)
      .post(`${base}/query/`)
      .set(t.auth)
      .send({ query: { kind: 'LifecycleQuery', series: [...series, ...series] } });
    expect(refused.body).toMatchObject({ type: 'validation_error', attr: 'query__series' });

    const funnel = { kind: 'FunnelsQuery', series: [...series, ...series], dateRange: { date_from: '-7d' } };
    const correlation = { kind: 'FunnelCorrelationQuery', source: { kind: 'FunnelsActorsQuery', source: funnel }, funnelCorrelationType: 'events' };
    const viaQuery = await request(world.app).post(`${base}/query/`).set(t.auth).send({ query: correlation });
    expect(viaQuery.status).toBe(200);
    const viaLegacy = await request(world.app).post(`${base}/insights/funnel/correlation/`).set(t.auth).send({ query: correlation });
    expect(viaQuery.body.results).toEqual(viaLegacy.body.result);
  });

  it('EventsQuery: HogQL columns, aggregates grouped, filters, time bounds, pagination, * and person as objects', async () => {
    const t = await setup();
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000).toISOString().replace('T', ' ').replace('Z', '');
    await insertEvents(clickhouse, [event(t.projectId, 'old', 'cy', twoDaysAgo)]);
    const url = `/api/environments/${t.projectId}/query/`;
    const run = async (node: Record<string, unknown>) =>
      request(world.app)
        .post(url)
        .set(t.auth)
        .send({ query: { kind: 'EventsQuery', ...node } });

    const counts = await run({ select: ['event', 'count()'] });
    expect(counts.status).toBe(200);
    expect(counts.body).toMatchObject({
      columns: ['event', 'count()'],
      types: ['String', 'UInt64'],
      results: [
        ['$pageview', 2],
        ['signed up', 1],
      ],
      hasMore: false,
      limit: 100,
      offset: 0,
    });
    const all = await run({ select: ['event', 'count()'], after: 'all', orderBy: ['event'] });
    expect(all.body.results).toEqual([
      ['$pageview', 2],
      ['old', 1],
      ['signed up', 1],
    ]);

    const page = await run({ select: ['*', 'person', 'distinct_id'], where: ["event = '$pageview'"], orderBy: ['distinct_id DESC'], limit: 1 });
    expect(page.body).toMatchObject({ hasMore: true, limit: 1, columns: ['*', 'person', 'distinct_id'] });
    const [[star, person, distinctId]] = page.body.results as [[Record<string, unknown>, Record<string, unknown>, string]];
    expect(distinctId).toBe('bob');
    expect(star).toMatchObject({ event: '$pageview', distinct_id: 'bob', properties: { $browser: 'Chrome' }, team_id: t.projectId, elements: [] });
    // Bob has no person in the person store.
    expect(person).toEqual({ distinct_id: 'bob' });
    const next = await run({ select: ['distinct_id'], where: ["event = '$pageview'"], orderBy: ['distinct_id DESC'], limit: 1, offset: 1 });
    expect(next.body).toMatchObject({ results: [['ann']], hasMore: false, offset: 1 });

    const [[bobPerson]] = (await run({ select: ['person_id'], event: '$pageview', where: ["distinct_id = 'bob'"] })).body.results as [[string]];
    const byPerson = await run({ select: ['event'], personId: bobPerson, orderBy: ['event'] });
    expect(byPerson.body.results).toEqual([['$pageview']]);
    const filtered = await run({
      select: ['distinct_id', 'count()'],
      event: '$pageview',
      properties: [{ type: 'event', key: '$browser', operator: 'exact', value: ['Chrome'] }],
      where: ['count() > 0', "distinct_id != 'bob'"],
    });
    expect(filtered.body.results).toEqual([['ann', 1]]);
    const none = await run({ select: ['event'], properties: [{ type: 'event', key: '$browser', operator: 'is_not', value: 'Chrome' }] });
    expect(none.body.results).toEqual([]);

    // Subqueries are guarded like every table; an item is one expression or a 400.
    const guarded = await run({ select: ['(select count() from events)'], limit: 1, after: 'all' });
    expect(guarded.body.results).toEqual([[4]]);
    const injected = await run({ select: ['event from events union all select event'] });
    expect(injected.status).toBe(400);
    expect(injected.body).toMatchObject({ type: 'validation_error', code: 'syntax_error' });
    const unknown = await run({ select: ['nosuchfn(event)'] });
    expect(unknown.body).toMatchObject({ type: 'validation_error', code: 'resolution_error' });
  });

  it('ActorsQuery lists the persons behind each number: as many as the number shown, paginated, with recordings', async () => {
    const t = await world.tenant();
    const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().replace('T', ' ').replace('Z', '');
    const as = (row: EventRow, person: string, browser: string, session = ''): EventRow => ({
      ...row,
      person_id: person,
      person_created_at: day(4),
      properties: JSON.stringify({ $browser: browser }),
      session_id: session,
    });
    const [ann, bob, cy] = ['a', 'b', 'c'].map((n) => `00000000-0000-4000-c000-00000000000${n}`) as [string, string, string];
    await insertEvents(clickhouse, [
      as(event(t.projectId, '$pageview', 'ann', day(3)), ann, 'Chrome'),
      as(event(t.projectId, '$pageview', 'ann', day(2)), ann, 'Chrome'),
      as(event(t.projectId, 'signed up', 'ann', day(2)), ann, 'Chrome'),
      as(event(t.projectId, '$pageview', 'bob', day(3)), bob, 'Firefox'),
      as(event(t.projectId, '$pageview', 'cy', day(2)), cy, 'Chrome'),
      as(event(t.projectId, '$pageview', 'cy', day(1)), cy, 'Chrome', 'cy-session'),
    ]);
    const now = Date.now() - 86_400_000;
    await insertSnapshotBatches(clickhouse, [
      snapshotBatch(t.projectId, 'cy-session', now, { window_id: 'w', batch_uuid: '00000000-0000-4000-c000-0000000000ff', distinct_id: 'cy', data: '' }),
    ]);
    const base = `/api/projects/${t.projectId}/query/`;
    const post = async (query: unknown) => {
      const response = await request(world.app).post(base).set(t.auth).send({ query });
      expect([response.status, response.body]).toEqual([200, expect.anything()]);
      return response.body as { results: unknown[][]; columns: string[]; hasMore: boolean };
    };
    const actorIds = async (source: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      (await post({ kind: 'ActorsQuery', source, select: ['id'], limit: 1000, ...extra })).results.map((row) => row[0] as string);

    const dateRange = { date_from: '-7d' };
    const pageviews = [{ kind: 'EventsNode', event: '$pageview', math: 'dau' }];
    const checks: Array<[string, number, Record<string, unknown>]> = [];
    // Trends, broken down by browser: every point of every line.
    const trendsQuery = { kind: 'TrendsQuery', series: pageviews, dateRange, breakdownFilter: { breakdown: '$browser' } };
    for (const line of (await post(trendsQuery)).results as unknown as Array<{ data: number[]; days: string[]; breakdown_value: string }>) {
      line.days.forEach((d, i) =>
        checks.push([`trend ${line.breakdown_value} ${d}`, line.data[i]!, { source: trendsQuery, day: d, breakdown: line.breakdown_value }]),
      );
    }
    const stickinessQuery = { kind: 'StickinessQuery', series: pageviews, dateRange };
    const [sticky] = (await post(stickinessQuery)).results as unknown as Array<{ data: number[]; days: number[] }>;
    sticky!.days.forEach((d, i) => checks.push([`stickiness ${d}`, sticky!.data[i]!, { source: stickinessQuery, day: d }]));
    const lifecycleQuery = { kind: 'LifecycleQuery', series: pageviews, dateRange };
    for (const line of (await post(lifecycleQuery)).results as unknown as Array<{ data: number[]; days: string[]; status: string }>) {
      line.days.forEach((d, i) =>
        checks.push([`lifecycle ${line.status} ${d}`, Math.abs(line.data[i]!), { source: lifecycleQuery, day: d, status: line.status }]),
      );
    }
    const target = { type: 'events', id: '$pageview' };
    const retentionQuery = {
      kind: 'RetentionQuery',
      dateRange,
      retentionFilter: { targetEntity: target, returningEntity: target, period: 'Day', totalIntervals: 8 },
    };
    for (const [r, row] of ((await post(retentionQuery)).results as unknown as Array<{ values: Array<{ count: number }> }>).entries()) {
      checks.push([`retention row ${r}`, row.values[0]!.count, { source: retentionQuery, interval: r }]);
    }
    const pathsQuery = { kind: 'PathsQuery', dateRange, pathsFilter: { includeEventTypes: ['$pageview', 'custom_event'] } };
    const edges = (await post(pathsQuery)).results as unknown as Array<{ source: string; target: string; value: number }>;
    expect(edges.length).toBeGreaterThan(0);
    for (const edge of edges) {
      const pathsFilter = { ...pathsQuery.pathsFilter, pathStartKey: edge.source, pathEndKey: edge.target };
      checks.push([`path ${edge.source} → ${edge.target}`, edge.value, { source: { ...pathsQuery, pathsFilter } }]);
    }
    for (const [name, shown, source] of checks) {
      expect([name, (await actorIds({ kind: 'InsightActorsQuery', ...source })).length]).toEqual([name, shown]);
    }
    expect(checks.filter(([, shown]) => shown > 0).length).toBeGreaterThan(5);

    // Ann's cohort three days ago: she came back the next day.
    const threeDaysAgo = (
      await post({ kind: 'ActorsQuery', select: ['id', 'appearances'], source: { kind: 'InsightActorsQuery', source: retentionQuery, interval: 4 } })
    ).results;
    expect(threeDaysAgo).toEqual([
      [ann, [0, 1]],
      [bob, [0]],
    ]);

    const funnelsQuery = {
      kind: 'FunnelsQuery',
      series: [
        { kind: 'EventsNode', event: '$pageview' },
        { kind: 'EventsNode', event: 'signed up' },
      ],
      dateRange,
    };
    const steps = (await post(funnelsQuery)).results as unknown as Array<{ count: number }>;
    expect(steps.map((s) => s.count)).toEqual([3, 1]);
    expect(await actorIds({ kind: 'FunnelsActorsQuery', source: funnelsQuery, funnelStep: 1 })).toEqual([ann, bob, cy]);
    expect(await actorIds({ kind: 'FunnelsActorsQuery', source: funnelsQuery, funnelStep: 2 })).toEqual([ann]);
    expect(await actorIds({ kind: 'FunnelsActorsQuery', source: funnelsQuery, funnelStep: -2 })).toEqual([bob, cy]);

    // Pages of one; the person column; recordings of the matching events.
    const first = await post({ kind: 'ActorsQuery', source: { kind: 'FunnelsActorsQuery', source: funnelsQuery, funnelStep: 1 }, limit: 2 });
    expect(first.columns).toEqual(['person', 'id', 'created_at', 'event_count']);
    expect(first.hasMore).toBe(true);
    // None of them has a person in the person store.
    expect(first).toMatchObject({ missing_actors_count: 2, results: [[{ id: ann }, ann, null, 2], expect.anything()] });
    const last = await post({ kind: 'ActorsQuery', source: { kind: 'FunnelsActorsQuery', source: funnelsQuery, funnelStep: 1 }, limit: 2, offset: 2 });
    expect(last).toMatchObject({ hasMore: false, results: [[{ id: cy }, cy, null, 1]] });
    const recorded = await post({
      kind: 'ActorsQuery',
      select: ['id', 'matched_recordings'],
      source: { kind: 'InsightActorsQuery', source: trendsQuery, day: day(1).slice(0, 10), breakdown: 'Chrome', includeRecordings: true },
    });
    expect(recorded.results).toEqual([[cy, [{ session_id: 'cy-session', events: [expect.objectContaining({ window_id: '' })] }]]]);

    const bad = await request(world.app)
      .post(base)
      .set(t.auth)
      .send({ query: { kind: 'ActorsQuery', source: { kind: 'FunnelsActorsQuery', source: funnelsQuery, funnelStep: -1 } } });
    expect(bad.body).toMatchObject({ type: 'validation_error', attr: 'funnelStep' });
  });

  async function waitForStatus(url: string, id: string, auth: Record<string, string>) {
    for (let i = 0; i < 200; i++) {
      const status = await request(world.app).get(`${url}${id}/`).set(auth);
      if (status.status !== 404) return status;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`query ${id} never showed up`);
  }

  it('runs at most 3 queries of a project at once: a fourth is a 429 with Retry-After', async () => {
    const t = await setup();
    const url = `/api/projects/${t.projectId}/query/`;
    const query = { kind: 'HogQLQuery', query: `SELECT count() FROM numbers(${MEDIUM_ROWS}) AS n WHERE sipHash64(n.number) = 1` };
    const started = ['m1', 'm2', 'm3'].map((id) =>
      request(world.app)
        .post(url)
        .set(t.auth)
        .send({ query, client_query_id: id, refresh: 'force_blocking' })
        .then((res) => res),
    );
    for (const id of ['m1', 'm2', 'm3']) await waitForStatus(url, id, t.auth);
    const fourth = await request(world.app)
      .post(url)
      .set(t.auth)
      .send({ query: { kind: 'HogQLQuery', query: 'select 1' } });
    expect(fourth.status).toBe(429);
    expect(fourth.headers['retry-after']).toBeDefined();
    expect(fourth.body.type).toBe('throttled');
    for (const answer of await Promise.all(started)) expect(answer.status).toBe(200);
    const after = await request(world.app)
      .post(url)
      .set(t.auth)
      .send({ query: { kind: 'HogQLQuery', query: 'select 1' } });
    expect(after.status).toBe(200);
  });

  it("answers a running query's status (202, then 200) and DELETE really cancels its ClickHouse statement", async () => {
    const t = await setup();
    const url = `/api/projects/${t.projectId}/query/`;
    const startedAt = performance.now();
    const running = request(world.app)
      .post(url)
      .set(t.auth)
      .send({ query: { kind: 'HogQLQuery', query: SLOW }, client_query_id: 'slow-1' })
      .then((res) => res);
    const status = await waitForStatus(url, 'slow-1', t.auth);
    expect(status.status).toBe(202);
    expect(status.body.query_status).toMatchObject({ id: 'slow-1', complete: false });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const cancel = await request(world.app).delete(`${url}slow-1/`).set(t.auth);
    expect(cancel.body).toEqual({ message: 'Cancelled query on clickhouse' });
    const answer = await running;
    // Cancelled, not finished: hashing 5·10^9 pairs would take minutes.
    expect(performance.now() - startedAt).toBeLessThan(30_000);
    expect(answer.body).toMatchObject({ type: 'validation_error', detail: 'Query was cancelled' });
    const done = await request(world.app).get(`${url}slow-1/`).set(t.auth);
    expect(done.status).toBe(200);
    expect(done.body.query_status).toMatchObject({ complete: true, error: true });
    const again = await request(world.app).delete(`${url}slow-1/`).set(t.auth);
    expect(again.body).toEqual({ message: 'Query already complete' });
    expect((await request(world.app).get(`${url}nope/`).set(t.auth)).status).toBe(404);
  });
});
