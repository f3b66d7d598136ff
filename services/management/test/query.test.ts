/**
 * `/query/` as PostHog's tools call it, through `/api/projects/` and `/api/environments/`: HogQL with the
 * response envelope and the cache, errors in PostHog's shape, other projects' rows out of reach, HogQLMetadata,
 * TrendsQuery, FunnelsQuery, RetentionQuery, PathsQuery, wrapper nodes, the per-project concurrency limit, and status and cancel of a running query.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { insertEvents, migrate as migrateClickHouse, NO_GROUPS, type ClickHouse, type EventRow } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { silentLogger } from '@plover/core';
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
