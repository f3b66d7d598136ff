/**
 * Dynamic cohort calculation (docs/cohorts.md) on both Postgres backends with chDB: behavioral criteria against a
 * plain TypeScript reference on random seeded event streams, the version swap surviving a calculation killed
 * half-way, the scheduled run, and the routes (count, is_calculating, members listing, insight filters).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import request from 'supertest';
import { insertEvents, insertPersonOverrides, migrate as migrateClickHouse, NO_GROUPS, type ClickHouse, type EventRow } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { createLogger, uuidv7 } from '@plover/core';
import { PersonReads, PersonStore } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { calculateCohort, runCohortCalculations } from '../src/shared/cohort-calculation';
import { cohortResolver } from '../src/shared/insight-context';
import { backends, bearer, useWorld, type World } from './support/app';

const logger = createLogger({ service: 'test', level: 'silent' });
const DAY = 86_400_000;
const NOW = new Date('2024-06-15T12:00:00Z');

let clickhouse: ClickHouse;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'plover-cohorts-ch-'));
  clickhouse = await ChdbClickHouse.open({ dataDir: dir });
  await migrateClickHouse(clickhouse, { logger });
});
afterAll(async () => {
  await clickhouse.close();
  await rm(dir, { recursive: true, force: true });
});

const chTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '000');

function eventRow(projectId: number, personId: string, event: string, at: number, properties: Record<string, unknown> = {}): EventRow {
  return {
    uuid: randomUUID(),
    event,
    properties: JSON.stringify(properties),
    timestamp: chTime(at),
    team_id: projectId,
    distinct_id: personId,
    elements_chain: '',
    created_at: chTime(at),
    person_id: personId,
    person_properties: '{}',
    person_created_at: '1970-01-01 00:00:00.000',
    person_mode: 'full',
    ...NO_GROUPS,
    session_id: '',
    window_id: '',
    historical_migration: false,
  };
}

/** Persons by name with their properties, created as ingestion does; name → {id, uuid}. */
async function persons(sql: Sql, projectId: number, props: Record<string, Record<string, unknown>>) {
  const store = new PersonStore(sql);
  const reads = new PersonReads(sql);
  const out: Record<string, { id: number; uuid: string }> = {};
  for (const [name, $set] of Object.entries(props)) {
    await store.processEvent(projectId, {
      uuid: uuidv7(),
      event: '$identify',
      distinctId: name,
      timestamp: new Date('2024-01-01T00:00:00Z'),
      properties: { $set },
    });
    out[name] = (await reads.getByDistinctId(projectId, name))!;
  }
  return out;
}

async function cohort(sql: Sql, projectId: number, properties: unknown, isStatic = false): Promise<number> {
  const result = await sql.query<{ id: number }>(
    't.cohort',
    'INSERT INTO cohorts (project_id, name, filters, is_static) VALUES ($1, $2, $3, $4) RETURNING id',
    [projectId, 'c', JSON.stringify(isStatic ? {} : { properties }), isStatic],
  );
  return result.rows[0]!.id;
}

const behavioral = (key: string, value: string, fields: Record<string, unknown> = {}) => ({
  type: 'behavioral',
  key,
  value,
  event_type: 'events',
  time_value: 7,
  time_interval: 'day',
  ...fields,
});

// ---------------------------------------------------------------------------------------------------------
// The reference: PostHog's meaning of each kind, over plain events, with the project in UTC.

interface PlainEvent {
  person: string;
  event: string;
  at: number;
}

interface Leaf {
  kind: 'performed_event' | 'performed_event_multiple' | 'performed_event_first_time' | 'stopped_performing_event' | 'restarted_performing_event' | 'plan';
  event: string;
  days: number;
  unit: 'day' | 'week';
  recentDays: number;
  operator: 'gte' | 'lte' | 'gt' | 'lt' | 'exact';
  count: number;
  negation: boolean;
}

interface Tree {
  type: 'AND' | 'OR';
  values: (Tree | Leaf)[];
}

const startOfDay = (ms: number) => Math.floor(ms / DAY) * DAY;

function referenceLeaf(leaf: Leaf, events: readonly PlainEvent[], plans: ReadonlyMap<string, string>, person: string): boolean {
  if (leaf.kind === 'plan') return plans.get(person) === 'pro';
  const now = NOW.getTime();
  const from = startOfDay(now) - leaf.days * (leaf.unit === 'week' ? 7 : 1) * DAY;
  const recentFrom = startOfDay(now) - leaf.recentDays * DAY;
  const mine = events.filter((e) => e.person === person && e.event === leaf.event && e.at <= now).map((e) => e.at);
  const inWindow = mine.filter((at) => at >= from).length;
  const recent = mine.filter((at) => at >= recentFrom).length;
  const first = Math.min(...mine);
  switch (leaf.kind) {
    case 'performed_event':
      return inWindow > 0;
    case 'performed_event_multiple': {
      if (inWindow === 0) return false;
      const n = leaf.count;
      return { gte: inWindow >= n, lte: inWindow <= n, gt: inWindow > n, lt: inWindow < n, exact: inWindow === n }[leaf.operator];
    }
    case 'performed_event_first_time':
      return mine.length > 0 && first >= from;
    case 'stopped_performing_event':
      return inWindow > 0 && recent === 0;
    case 'restarted_performing_event':
      return recent > 0 && first < recentFrom && mine.filter((at) => at >= from && at < recentFrom).length === 0;
  }
}

function referenceTree(node: Tree | Leaf, events: readonly PlainEvent[], plans: ReadonlyMap<string, string>, person: string): boolean {
  if ('values' in node) {
    const results = node.values.map((value) => referenceTree(value, events, plans, person));
    return node.type === 'AND' ? results.every(Boolean) : results.some(Boolean);
  }
  const matched = referenceLeaf(node, events, plans, person);
  return node.negation ? !matched : matched;
}

function filtersOf(node: Tree | Leaf): unknown {
  if ('values' in node) return { type: node.type, values: node.values.map(filtersOf) };
  if (node.kind === 'plan') return { type: 'person', key: 'plan', value: 'pro', operator: 'exact', negation: node.negation };
  return behavioral(node.event, node.kind, {
    time_value: node.days,
    time_interval: node.unit,
    seq_time_value: node.recentDays,
    seq_time_interval: 'day',
    operator: node.operator,
    operator_value: node.count,
    negation: node.negation,
  });
}

const leafArb: fc.Arbitrary<Leaf> = fc.record({
  kind: fc.constantFrom<Leaf['kind']>(
    'performed_event',
    'performed_event_multiple',
    'performed_event_first_time',
    'stopped_performing_event',
    'restarted_performing_event',
    'plan',
  ),
  event: fc.constantFrom('a', 'b'),
  days: fc.integer({ min: 4, max: 30 }),
  unit: fc.constantFrom<Leaf['unit']>('day', 'week'),
  recentDays: fc.integer({ min: 1, max: 3 }),
  operator: fc.constantFrom<Leaf['operator']>('gte', 'lte', 'gt', 'lt', 'exact'),
  count: fc.integer({ min: 1, max: 3 }),
  negation: fc.boolean(),
});

const treeArb: fc.Arbitrary<Tree> = fc.record({
  type: fc.constantFrom<Tree['type']>('AND', 'OR'),
  values: fc.array(
    fc.oneof(
      { weight: 3, arbitrary: leafArb },
      {
        weight: 1,
        arbitrary: fc.record({ type: fc.constantFrom<Tree['type']>('AND', 'OR'), values: fc.array(leafArb, { minLength: 1, maxLength: 2 }) }),
      },
    ),
    { minLength: 1, maxLength: 3 },
  ),
});

const NAMES = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5'];
const eventsArb = fc.array(
  fc.record({
    person: fc.constantFrom(...NAMES),
    event: fc.constantFrom('a', 'b'),
    // From 60 days back to a day ahead (future events never count).
    at: fc.integer({ min: NOW.getTime() - 60 * DAY, max: NOW.getTime() + DAY }).map((ms) => Math.floor(ms / 1000) * 1000),
  }),
  { maxLength: 40 },
);

async function members(sql: Sql, cohortId: number): Promise<string[]> {
  const result = await sql.query<{ uuid: string }>(
    't.members',
    `SELECT p.uuid::text AS uuid FROM cohort_people cp JOIN cohorts c ON c.id = cp.cohort_id AND cp.version = c.people_version
       JOIN persons p ON p.id = cp.person_id WHERE cp.cohort_id = $1 ORDER BY p.uuid`,
    [cohortId],
  );
  return result.rows.map((row) => row.uuid);
}

describe.each(backends.map((backend, index) => ({ ...backend, index })))('cohort calculation on $name with chDB', (backend) => {
  const world: World = useWorld(backend, { clickhouse: () => clickhouse });
  // Both databases share one chDB: keep their project (team) ids apart.
  beforeAll(() => world.sql.query('t.ids', `ALTER TABLE projects ALTER COLUMN id RESTART WITH ${(backend.index + 1) * 200_000}`));
  const deps = () => ({ sql: world.sql, clickhouse, logger });

  it('matches the TypeScript reference on random event streams and criteria', async () => {
    await fc.assert(
      fc.asyncProperty(eventsArb, fc.array(fc.boolean(), { minLength: NAMES.length, maxLength: NAMES.length }), treeArb, async (events, pro, tree) => {
        const t = await world.tenant();
        const people = await persons(world.sql, t.projectId, Object.fromEntries(NAMES.map((name, i) => [name, { plan: pro[i] ? 'pro' : 'free' }])));
        if (events.length > 0)
          await insertEvents(
            clickhouse,
            events.map((e) => eventRow(t.projectId, people[e.person]!.uuid, e.event, e.at)),
          );
        const id = await cohort(world.sql, t.projectId, filtersOf(tree));
        const result = await calculateCohort(deps(), id, { now: NOW });
        expect(result).toMatchObject({ status: 'done' });
        const plans = new Map(NAMES.map((name, i) => [name, pro[i] ? 'pro' : 'free']));
        const expected = NAMES.filter((name) => referenceTree(tree, events, plans, name))
          .map((name) => people[name]!.uuid)
          .sort();
        expect(await members(world.sql, id)).toEqual(expected);
      }),
      { numRuns: 12, seed: 20261207 + backend.index },
    );
  });

  it('counts merged persons as their survivor, filters events by property, and counts actions', async () => {
    const t = await world.tenant();
    const people = await persons(world.sql, t.projectId, { ann: {}, bob: {} });
    const merged = randomUUID();
    await insertPersonOverrides(clickhouse, [{ team_id: t.projectId, old_person_id: merged, override_person_id: people.ann!.uuid, version: 1 }]);
    const day = (n: number) => NOW.getTime() - n * DAY;
    await insertEvents(clickhouse, [
      eventRow(t.projectId, merged, 'buy', day(1), { plan: 'pro' }),
      eventRow(t.projectId, people.ann!.uuid, 'buy', day(2), { plan: 'pro' }),
      eventRow(t.projectId, people.bob!.uuid, 'buy', day(1), { plan: 'free' }),
      eventRow(t.projectId, people.bob!.uuid, 'buy', day(2), { plan: 'free' }),
    ]);
    const twice = await cohort(world.sql, t.projectId, {
      type: 'AND',
      values: [behavioral('buy', 'performed_event_multiple', { operator: 'gte', operator_value: 2 })],
    });
    const proTwice = await cohort(world.sql, t.projectId, {
      type: 'AND',
      values: [
        behavioral('buy', 'performed_event_multiple', {
          operator: 'exact',
          operator_value: 2,
          event_filters: [{ key: 'plan', value: 'pro', operator: 'exact', type: 'event' }],
        }),
      ],
    });
    const action = (
      await world.sql.query<{ id: number }>('t.action', `INSERT INTO actions (project_id, name, steps) VALUES ($1, 'free buy', $2) RETURNING id`, [
        t.projectId,
        JSON.stringify([{ event: 'buy', properties: [{ key: 'plan', value: 'free', type: 'event' }] }]),
      ])
    ).rows[0]!.id;
    const viaAction = await cohort(world.sql, t.projectId, { type: 'AND', values: [behavioral(String(action), 'performed_event', { event_type: 'actions' })] });
    for (const id of [twice, proTwice, viaAction]) expect(await calculateCohort(deps(), id, { now: NOW })).toMatchObject({ status: 'done' });
    expect(await members(world.sql, twice)).toEqual([people.ann!.uuid, people.bob!.uuid].sort());
    expect(await members(world.sql, proTwice)).toEqual([people.ann!.uuid]);
    expect(await members(world.sql, viaAction)).toEqual([people.bob!.uuid]);
  });

  it('a calculation killed half-way leaves the previous members; the next one completes and drops the leftovers', async () => {
    const t = await world.tenant();
    const people = await persons(world.sql, t.projectId, { ann: {}, bob: {} });
    await insertEvents(clickhouse, [eventRow(t.projectId, people.ann!.uuid, 'buy', NOW.getTime() - DAY)]);
    const id = await cohort(world.sql, t.projectId, { type: 'AND', values: [behavioral('buy', 'performed_event')] });
    expect(await calculateCohort(deps(), id, { now: NOW })).toMatchObject({ status: 'done', version: 1, count: 1 });
    await insertEvents(clickhouse, [eventRow(t.projectId, people.bob!.uuid, 'buy', NOW.getTime() - DAY)]);

    // The process dies right after writing the new members: every statement after that one fails, as on a
    // connection that is gone (the recording of the failure too).
    let dead = false;
    const dying = {
      query: async (name: string, text: string, params?: unknown[]) => {
        if (dead) throw new Error('connection terminated');
        const result = await world.sql.query(name, text, params);
        if (name === 'cohorts.storeVersion') dead = true;
        return result;
      },
      transaction: () => Promise.reject(new Error('connection terminated')),
    } as unknown as Sql;
    await expect(calculateCohort({ sql: dying, clickhouse, logger }, id, { now: NOW })).rejects.toThrow('connection terminated');
    const rows = await world.sql.query<{ version: number; n: number }>(
      't.v',
      'SELECT version, count(*)::int AS n FROM cohort_people WHERE cohort_id = $1 GROUP BY version ORDER BY version',
      [id],
    );
    expect(rows.rows).toEqual([
      { version: 1, n: 1 },
      { version: 2, n: 2 },
    ]);
    expect(await members(world.sql, id)).toEqual([people.ann!.uuid]);
    expect(await cohortResolver(world.sql, t.projectId)(id)).toEqual([people.ann!.uuid]);
    const api = await request(world.app).get(`/api/projects/${t.projectId}/cohorts/${id}`).set(t.auth);
    expect(api.body).toMatchObject({ is_calculating: true, count: 1 });

    // The schedule leaves a calculation that may still be running alone; an explicit one takes over.
    expect(await runCohortCalculations(deps(), { now: NOW })).not.toContainEqual(expect.objectContaining({ status: 'done' }));
    expect(await calculateCohort(deps(), id, { now: NOW, force: true })).toMatchObject({ status: 'done', version: 3, count: 2 });
    expect(await members(world.sql, id)).toEqual([people.ann!.uuid, people.bob!.uuid].sort());
    const left = await world.sql.query<{ version: number }>('t.v', 'SELECT DISTINCT version FROM cohort_people WHERE cohort_id = $1', [id]);
    expect(left.rows).toEqual([{ version: 3 }]);
  });

  it('the scheduled run calculates due cohorts once, records failures, and is idempotent', async () => {
    const t = await world.tenant();
    const people = await persons(world.sql, t.projectId, { ann: { plan: 'pro' }, bob: { plan: 'free' } });
    await insertEvents(clickhouse, [eventRow(t.projectId, people.bob!.uuid, 'buy', NOW.getTime() - DAY)]);
    const good = await cohort(world.sql, t.projectId, {
      type: 'OR',
      values: [behavioral('buy', 'performed_event'), { type: 'person', key: 'plan', value: 'pro' }],
    });
    const bad = await cohort(world.sql, t.projectId, {
      type: 'AND',
      values: [behavioral('buy', 'performed_event_regularly', { operator_value: 1, min_periods: 1, total_periods: 2 })],
    });
    // Other tenants' cohorts may be due too: the checks look at these two only.
    expect((await runCohortCalculations(deps(), { now: NOW })).length).toBeGreaterThanOrEqual(2);
    expect(await members(world.sql, good)).toEqual([people.ann!.uuid, people.bob!.uuid].sort());
    const state = await world.sql.query<{ id: number; errors_calculating: number; is_calculating: boolean; calculated: boolean; last_error: string | null }>(
      't.state',
      'SELECT id, errors_calculating, is_calculating, last_calculation IS NOT NULL AS calculated, last_error FROM cohorts WHERE id = ANY($1::int[]) ORDER BY id',
      [[good, bad]],
    );
    expect(state.rows).toEqual([
      { id: good, errors_calculating: 0, is_calculating: false, calculated: true, last_error: null },
      { id: bad, errors_calculating: 1, is_calculating: false, calculated: false, last_error: expect.stringMatching(/performed_event_regularly/) },
    ]);
    // At once again: nothing of these is due (the good one is fresh, the bad one backs off).
    const again = await world.sql.query<{ v: number }>('t.v', 'SELECT people_version AS v FROM cohorts WHERE id = $1', [good]);
    await runCohortCalculations(deps(), { now: NOW });
    expect((await world.sql.query<{ v: number }>('t.v', 'SELECT people_version AS v FROM cohorts WHERE id = $1', [good])).rows).toEqual(again.rows);
  });

  it('routes: a write calculates in the background; count, last_calculation, members listing, insight filters and scopes', async () => {
    const t = await world.tenant();
    const people = await persons(world.sql, t.projectId, { ann: { email: 'ann@example.com' }, bob: {} });
    await insertEvents(clickhouse, [eventRow(t.projectId, people.ann!.uuid, 'buy', Date.now() - DAY)]);
    await insertEvents(clickhouse, [eventRow(t.projectId, people.bob!.uuid, 'view', Date.now() - DAY)]);
    const base = `/api/projects/${t.projectId}/cohorts`;
    const created = await request(world.app)
      .post(`${base}/`)
      .set(t.auth)
      .send({ name: 'buyers', filters: { properties: { type: 'AND', values: [behavioral('buy', 'performed_event')] } } });
    expect(created.status).toBe(201);
    const id = created.body.id as number;
    let body: Record<string, unknown> = created.body;
    for (let tries = 0; tries < 100 && body.last_calculation === null; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      body = (await request(world.app).get(`${base}/${id}/`).set(t.auth)).body;
    }
    expect(body).toMatchObject({ is_calculating: false, errors_calculating: 0, count: 1, last_calculation: expect.any(String) });
    const listed = await request(world.app).get(`${base}/${id}/persons/`).set(t.auth);
    expect(listed.status).toBe(200);
    const results = (listed.body as { results: Array<{ uuid: string }> }).results;
    expect(results.map((p) => p.uuid)).toEqual([people.ann!.uuid]);
    expect(results[0]).toMatchObject({ name: 'ann@example.com', distinct_ids: ['ann'] });
    expect((await request(world.app).get(`${base}/${id}/persons/?search=bob`).set(t.auth)).body.results).toEqual([]);
    expect((await request(world.app).get(`${base}/999999/persons/`).set(t.auth)).status).toBe(404);

    const reader = bearer(await world.newKey(t.userId, ['cohort:read']));
    expect((await request(world.app).get(`${base}/${id}/persons/`).set(reader)).status).toBe(200);
    expect(
      (
        await request(world.app)
          .get(`${base}/${id}/persons/`)
          .set(bearer(await world.newKey(t.userId, ['person:read'])))
      ).status,
    ).toBe(403);
    expect((await request(world.app).patch(`${base}/${id}/`).set(reader).send({ name: 'x' })).status).toBe(403);

    // An insight filtered on the cohort counts its calculated members' events.
    const trends = await request(world.app)
      .post(`/api/projects/${t.projectId}/query/`)
      .set(t.auth)
      .send({
        query: {
          kind: 'TrendsQuery',
          series: [{ kind: 'EventsNode', event: 'buy', math: 'total' }],
          dateRange: { date_from: '-7d' },
          properties: [{ type: 'cohort', key: 'id', value: id }],
        },
      });
    expect(trends.status).toBe(200);
    expect(trends.body.results[0].count).toBe(1);

    // Broken down by the cohort and all users: one series each, as PostHog labels them.
    const source = {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: null, math: 'total' }],
      dateRange: { date_from: '-7d' },
      breakdownFilter: { breakdown: [id, 'all'], breakdown_type: 'cohort' },
    };
    const broken = await request(world.app).post(`/api/projects/${t.projectId}/query/`).set(t.auth).send({ query: source });
    expect(broken.status).toBe(200);
    const series = (broken.body as { results: Array<{ label: string; breakdown_value: unknown; count: number }> }).results;
    expect(series.map(({ label, breakdown_value, count }) => ({ label, breakdown_value, count }))).toEqual([
      { label: 'All events - buyers', breakdown_value: id, count: 1 },
      { label: 'All events - all users', breakdown_value: 'all', count: 2 },
    ]);
    const actors = async (breakdown: unknown) => {
      const res = await request(world.app)
        .post(`/api/projects/${t.projectId}/query/`)
        .set(t.auth)
        .send({ query: { kind: 'ActorsQuery', source: { kind: 'InsightActorsQuery', source, breakdown } } });
      expect(res.status).toBe(200);
      return (res.body as { results: unknown[][] }).results.length;
    };
    expect(await actors(id)).toBe(1);
    expect(await actors('all')).toBe(2);
  });
});
