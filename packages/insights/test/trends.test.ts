/**
 * Trends on small hand-built datasets whose answers are worked out by hand in each test (the property tests
 * cover random data against a reference implementation). Events go straight into chDB's `events` table.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { insertEvents, insertPersonOverrides, MATERIALIZED_PROPERTIES, migrate, type EventRow } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { ApiError } from '@plover/core';
import { BREAKDOWN_OTHER, jsonPropertyText, Params, runTrends, type InsightContext, type Series, type TrendsInput } from '../src';
import { eventRow } from './support/event-row';
import { noActions } from './support/context';

let ch: ChdbClickHouse;
let dir: string;
let nextProject = 1;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'plover-trends-'));
  ch = await ChdbClickHouse.open({ dataDir: dir });
  await migrate(ch);
});

afterAll(async () => {
  await ch.close();
  await rm(dir, { recursive: true, force: true });
});

interface Fixture {
  event?: string;
  at: string;
  person?: string;
  properties?: Record<string, unknown>;
  personProperties?: Record<string, unknown>;
  group0?: string;
}

const PERSON_A = '00000000-0000-4000-8000-00000000000a';
const PERSON_B = '00000000-0000-4000-8000-00000000000b';
const PERSON_C = '00000000-0000-4000-8000-00000000000c';

let uuidCounter = 0;
function row(projectId: number, fixture: Fixture): EventRow {
  uuidCounter += 1;
  const uuid = `00000000-0000-7000-8000-${uuidCounter.toString(16).padStart(12, '0')}`;
  return eventRow({ ...fixture, uuid, projectId, event: fixture.event ?? '$pageview', person: fixture.person ?? PERSON_A });
}

async function project(fixtures: Fixture[]): Promise<number> {
  const id = nextProject++;
  await insertEvents(
    ch,
    fixtures.map((fixture) => row(id, fixture)),
  );
  return id;
}

function context(projectId: number, timezone = 'UTC', now = '2025-01-07T12:00:00Z'): InsightContext {
  return { projectId, timezone, now: new Date(now), cohortMembers: () => Promise.resolve([PERSON_A]), action: noActions };
}

function series(overrides: Partial<Series> = {}): Series {
  return {
    event: '$pageview',
    action: null,
    name: '$pageview',
    customName: null,
    order: 0,
    math: 'total',
    mathProperty: null,
    mathGroupTypeIndex: null,
    properties: null,
    ...overrides,
  };
}

function trend(overrides: Partial<TrendsInput> = {}): TrendsInput {
  return {
    series: [series()],
    dateFrom: '-6d',
    dateTo: null,
    interval: 'day',
    properties: null,
    breakdown: null,
    compare: false,
    formula: null,
    display: 'ActionsLineGraph',
    ...overrides,
  };
}

describe('runTrends', () => {
  it('counts events per day in the range, with PostHog labels and days', async () => {
    const projectId = await project([
      { at: '2025-01-01 10:00:00' },
      { at: '2025-01-01 11:00:00' },
      { at: '2025-01-03 00:00:00' },
      { at: '2025-01-07 11:59:59' },
      { at: '2024-12-31 23:59:59' }, // before the range
      { event: 'other', at: '2025-01-02 10:00:00' },
    ]);
    const [result] = await runTrends(ch, trend(), context(projectId));
    expect(result).toMatchObject({
      data: [2, 0, 1, 0, 0, 0, 1],
      days: ['2025-01-01', '2025-01-02', '2025-01-03', '2025-01-04', '2025-01-05', '2025-01-06', '2025-01-07'],
      labels: ['1-Jan-2025', '2-Jan-2025', '3-Jan-2025', '4-Jan-2025', '5-Jan-2025', '6-Jan-2025', '7-Jan-2025'],
      count: 4,
      label: '$pageview',
      action: { id: '$pageview', type: 'events', math: 'total' },
    });
  });

  it("breaks down by cohorts: a series per cohort of its members' events, `all` for every event, with math and a formula", async () => {
    const projectId = await project([
      { at: '2025-01-02 10:00:00', person: PERSON_A },
      { at: '2025-01-02 11:00:00', person: PERSON_A },
      { at: '2025-01-03 10:00:00', person: PERSON_B },
      { at: '2025-01-04 10:00:00', person: PERSON_C },
    ]);
    const members: Record<number, string[]> = { 1: [PERSON_A], 2: [PERSON_B, PERSON_C] };
    const ctx: InsightContext = {
      ...context(projectId),
      cohortMembers: (id) => Promise.resolve(members[id] ?? []),
      cohortName: (id) => Promise.resolve(`c${id}`),
    };
    const breakdown = { type: 'cohort' as const, cohorts: [2, 'all' as const, 1], limit: 2 };
    const results = await runTrends(ch, trend({ breakdown }), ctx);
    expect(results.map(({ label, breakdown_value, count, data }) => ({ label, breakdown_value, count, data }))).toEqual([
      { label: '$pageview - c2', breakdown_value: 2, count: 2, data: [0, 0, 1, 1, 0, 0, 0] },
      { label: '$pageview - all users', breakdown_value: 'all', count: 4, data: [0, 2, 1, 1, 0, 0, 0] },
      { label: '$pageview - c1', breakdown_value: 1, count: 2, data: [0, 2, 0, 0, 0, 0, 0] },
    ]);
    const people = await runTrends(ch, trend({ breakdown, series: [series({ math: 'dau' })], display: 'ActionsBarValue' }), ctx);
    expect(people.map((result) => result.aggregated_value)).toEqual([2, 3, 1]);
    const formula = await runTrends(ch, trend({ breakdown, series: [series(), series({ order: 1 })], formula: 'A + B' }), ctx);
    expect(formula.map((result) => [result.breakdown_value, result.count])).toEqual([
      [2, 4],
      ['all', 8],
      [1, 4],
    ]);
    // Without names (a context that keeps none) the label names the id.
    const [unnamed] = await runTrends(ch, trend({ breakdown: { type: 'cohort', cohorts: [1], limit: 0 } }), context(projectId));
    expect(unnamed).toMatchObject({ label: '$pageview - Cohort 1', breakdown_value: 1, filter: { breakdown: [1], breakdown_type: 'cohort' } });
  });

  it('buckets by the project timezone', async () => {
    // 23:10 and 23:30 UTC on 1 January are 2 January in Berlin.
    const projectId = await project([{ at: '2025-01-01 23:30:00' }, { at: '2025-01-01 23:10:00' }]);
    const [utc] = await runTrends(ch, trend({ dateFrom: '2025-01-01', dateTo: '2025-01-02' }), context(projectId));
    const [berlin] = await runTrends(ch, trend({ dateFrom: '2025-01-01', dateTo: '2025-01-02' }), context(projectId, 'Europe/Berlin'));
    expect(utc?.data).toEqual([2, 0]);
    expect(berlin?.data).toEqual([0, 2]);
  });

  it('counts a merged person once for DAU and keeps the person-property filter per event', async () => {
    const projectId = await project([
      { at: '2025-01-06 10:00:00', person: PERSON_A, personProperties: { plan: 'pro' } },
      { at: '2025-01-06 11:00:00', person: PERSON_B, personProperties: { plan: 'pro' } },
      { at: '2025-01-06 12:00:00', person: PERSON_C, personProperties: { plan: 'free' } },
    ]);
    await insertPersonOverrides(ch, [{ team_id: projectId, old_person_id: PERSON_B, override_person_id: PERSON_A, version: 1 }]);
    const [dau] = await runTrends(ch, trend({ series: [series({ math: 'dau' })], dateFrom: '2025-01-06', dateTo: '2025-01-06' }), context(projectId));
    expect(dau?.data).toEqual([2]);
    const [pro] = await runTrends(
      ch,
      trend({
        series: [series({ math: 'dau' })],
        dateFrom: '2025-01-06',
        dateTo: '2025-01-06',
        properties: { type: 'AND', values: [{ type: 'person', key: 'plan', operator: 'exact', value: 'pro' }] },
      }),
      context(projectId),
    );
    expect(pro?.data).toEqual([1]);
  });

  it('aggregates a numeric property: sum, avg, median with interpolation, p90', async () => {
    const projectId = await project(
      [1, 2, 3, 4]
        .map((price) => ({ at: '2025-01-07 01:00:00', properties: { price: price === 4 ? '4' : price } }))
        .concat([{ at: '2025-01-07 02:00:00', properties: { price: 'n/a' } }]),
    );
    const run = async (math: Series['math']) =>
      (await runTrends(ch, trend({ series: [series({ math, mathProperty: 'price' })], dateFrom: 'dStart' }), context(projectId)))[0]?.data;
    expect(await run('sum')).toEqual([10]);
    expect(await run('avg')).toEqual([2.5]);
    expect(await run('median')).toEqual([2.5]);
    expect((await run('p90'))?.[0]).toBeCloseTo(3.7, 10);
    expect(await run('min')).toEqual([1]);
  });

  it('breaks down by an event property with a limit and an "other" series', async () => {
    const projectId = await project([
      ...['Chrome', 'Chrome', 'Chrome', 'Firefox', 'Firefox', 'Safari', 'Edge'].map((browser) => ({
        at: '2025-01-07 01:00:00',
        properties: { $browser: browser },
      })),
      { at: '2025-01-07 01:00:00' },
    ]);
    const results = await runTrends(
      ch,
      trend({ dateFrom: 'dStart', breakdown: { property: '$browser', type: 'event', groupTypeIndex: null, limit: 2 } }),
      context(projectId),
    );
    expect(results.map((r) => [r.breakdown_value, r.label, r.data])).toEqual([
      ['Chrome', 'Chrome', [3]],
      ['Firefox', 'Firefox', [2]],
      [BREAKDOWN_OTHER, BREAKDOWN_OTHER, [3]],
    ]);
    const all = await runTrends(
      ch,
      trend({ dateFrom: 'dStart', breakdown: { property: '$browser', type: 'event', groupTypeIndex: null, limit: 25 } }),
      context(projectId),
    );
    expect(all.map((r) => [r.breakdown_value, r.data[0]])).toEqual([
      ['Chrome', 3],
      ['Firefox', 2],
      ['none', 1],
      ['Edge', 1],
      ['Safari', 1],
    ]);
  });

  it('breaks all events down by their name (event_metadata), over the range, as totals and per day', async () => {
    const projectId = await project([
      ...['signup', 'signup', 'purchase', '$pageview', '$pageview', '$pageview', 'error shown'].map((event) => ({ event, at: '2025-01-07 01:00:00' })),
      { event: 'purchase', at: '2025-01-06 01:00:00' },
      // An event property called `event` is not the event's name.
      { event: 'signup', at: '2025-01-06 02:00:00', properties: { event: 'purchase' } },
      { event: 'purchase', at: '2024-12-01 00:00:00' }, // before the range
    ]);
    const byName = { property: 'event', type: 'event_metadata' as const, groupTypeIndex: null, limit: 3 };
    const all = series({ event: null, name: 'All events' });
    const table = await runTrends(ch, trend({ series: [all], dateFrom: '-1d', breakdown: byName, display: 'ActionsTable' }), context(projectId));
    expect(table.map((r) => [r.breakdown_value, r.label, r.aggregated_value])).toEqual([
      ['$pageview', '$pageview', 3],
      ['signup', 'signup', 3],
      ['purchase', 'purchase', 2],
      [BREAKDOWN_OTHER, BREAKDOWN_OTHER, 1],
    ]);
    const daily = await runTrends(ch, trend({ series: [all], dateFrom: '-1d', breakdown: { ...byName, limit: 25 } }), context(projectId));
    expect(daily.map((r) => [r.breakdown_value, r.data])).toEqual([
      ['$pageview', [0, 3]],
      ['signup', [1, 2]],
      ['purchase', [1, 1]],
      ['error shown', [0, 1]],
    ]);
    // Unique users per event name: the rank query path (active-user math reads days before the range).
    const [weekly] = await runTrends(
      ch,
      trend({ series: [series({ event: null, math: 'weekly_active' })], dateFrom: 'dStart', breakdown: { ...byName, limit: 1 }, display: 'BoldNumber' }),
      context(projectId),
    );
    expect(weekly).toMatchObject({ breakdown_value: '$pageview', aggregated_value: 1 });
  });

  it('shows running totals, total values, and compares with the previous period', async () => {
    const projectId = await project([
      { at: '2025-01-05 01:00:00', person: PERSON_A },
      { at: '2025-01-06 01:00:00', person: PERSON_A },
      { at: '2025-01-06 02:00:00', person: PERSON_B },
      { at: '2025-01-03 01:00:00', person: PERSON_A },
    ]);
    const range = { dateFrom: '2025-01-05', dateTo: '2025-01-06' };
    const [cumulative] = await runTrends(ch, trend({ ...range, display: 'ActionsLineGraphCumulative' }), context(projectId));
    expect(cumulative).toMatchObject({ data: [1, 3], count: 3 });
    const [uniqueSoFar] = await runTrends(
      ch,
      trend({ ...range, series: [series({ math: 'dau' })], display: 'ActionsLineGraphCumulative' }),
      context(projectId),
    );
    expect(uniqueSoFar?.data).toEqual([1, 2]);
    const [number] = await runTrends(ch, trend({ ...range, series: [series({ math: 'dau' })], display: 'BoldNumber' }), context(projectId));
    expect(number).toMatchObject({ data: [], labels: [], days: [], count: 0, aggregated_value: 2 });
    const compared = await runTrends(ch, trend({ ...range, compare: true }), context(projectId));
    expect(compared.map((r) => [r.compare_label, r.data, r.labels, r.days])).toEqual([
      ['current', [1, 2], ['day 0', 'day 1'], ['2025-01-05', '2025-01-06']],
      ['previous', [1, 0], ['day 0', 'day 1'], ['2025-01-03', '2025-01-04']],
    ]);
  });

  it('counts weekly active users over the 7 days ending with each day', async () => {
    const projectId = await project([
      { at: '2024-12-31 10:00:00', person: PERSON_A },
      { at: '2025-01-06 10:00:00', person: PERSON_B },
    ]);
    const [wau] = await runTrends(ch, trend({ series: [series({ math: 'weekly_active' })], dateFrom: '2025-01-05', dateTo: '2025-01-07' }), context(projectId));
    // A's event on 31 Dec counts through 6 Jan; B's from 6 Jan.
    expect(wau?.data).toEqual([1, 2, 1]);
  });

  it('applies a formula per bucket, dividing by zero as 0', async () => {
    const projectId = await project([
      { at: '2025-01-06 01:00:00', event: 'signup' },
      { at: '2025-01-06 01:00:00' },
      { at: '2025-01-06 02:00:00' },
      { at: '2025-01-07 02:00:00', event: 'signup' },
    ]);
    const [ratio] = await runTrends(
      ch,
      trend({ dateFrom: '2025-01-06', series: [series({ event: 'signup', name: 'signup' }), series({ order: 1 })], formula: 'A / B * 100' }),
      context(projectId),
    );
    expect(ratio).toMatchObject({ label: 'Formula (A / B * 100)', data: [50, 0], count: 50 });
  });

  it('treats hostile property keys as ordinary keys', async () => {
    const key = "x') OR 1=1 -- {p0:String}`";
    const projectId = await project([{ at: '2025-01-07 01:00:00', properties: { [key]: 'yes' } }, { at: '2025-01-07 01:00:00' }]);
    const [filtered] = await runTrends(
      ch,
      trend({ dateFrom: 'dStart', properties: { type: 'AND', values: [{ type: 'event', key, operator: 'exact', value: 'yes' }] } }),
      context(projectId),
    );
    expect(filtered?.data).toEqual([1]);
    const broken = await runTrends(
      ch,
      trend({ dateFrom: 'dStart', breakdown: { property: key, type: 'event', groupTypeIndex: null, limit: 5 } }),
      context(projectId),
    );
    expect(broken.map((r) => r.breakdown_value)).toEqual(['none', 'yes']);
  });

  it('answers 400 for an invalid regular expression', async () => {
    const projectId = await project([{ at: '2025-01-07 01:00:00', properties: { a: 'b' } }]);
    const error = await runTrends(
      ch,
      trend({ properties: { type: 'AND', values: [{ type: 'event', key: 'a', operator: 'regex', value: '(' }] } }),
      context(projectId),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 400, attr: 'properties' });
  });

  it('reads materialized properties exactly as it reads the JSON, for every kind of value', async () => {
    const values = ['Chrome', '', 'naïve "quoted" \\ \u00e9', 3, 3.5, -0, true, false, null, undefined, ['a'], { b: 1 }];
    const fixtures = [...MATERIALIZED_PROPERTIES.keys()].flatMap((key) =>
      values.map((value) => ({ at: '2025-01-07 01:00:00', event: key, properties: value === undefined ? {} : { [key]: value } })),
    );
    const projectId = await project(fixtures);
    for (const [key, column] of MATERIALIZED_PROPERTIES) {
      const params = new Params();
      const rows = await ch.query<{ materialized: string; json: string }>(
        'test.materialized',
        `SELECT ${column} AS materialized, ${jsonPropertyText('properties', key, params)} AS json FROM events WHERE team_id = {projectId:Int64} AND event = {key:String}`,
        { ...params.values, projectId, key },
      );
      expect(rows).toHaveLength(values.length);
      for (const row of rows) expect(row.materialized).toBe(row.json);
    }
    const browser = async (operator: 'exact' | 'is_not' | 'icontains' | 'is_set' | 'is_not_set', value?: string) =>
      (
        await runTrends(
          ch,
          trend({
            series: [series({ event: '$browser' })],
            dateFrom: 'dStart',
            properties: { type: 'AND', values: [{ type: 'event', key: '$browser', operator, value }] },
          }),
          context(projectId),
        )
      )[0]?.data;
    expect(await browser('exact', 'Chrome')).toEqual([1]);
    expect(await browser('exact', '')).toEqual([1]);
    expect(await browser('is_not', 'Chrome')).toEqual([values.length - 1]);
    expect(await browser('icontains', 'QUOTED')).toEqual([1]);
    expect(await browser('is_set')).toEqual([values.length - 2]);
    expect(await browser('is_not_set')).toEqual([2]);
  });
});
