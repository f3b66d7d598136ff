/**
 * Trends (docs/insights.md) checked against a plain TypeScript reference (support/reference.ts): first the
 * reference itself on hand-computed cases, then the engine on random projects ingested for real through the
 * ingestion consumer (support/ingest.ts, support/generate.ts), legacy requests against their TrendsQuery twins,
 * and property keys, values and names that look like SQL.
 */
import { ApiError } from '@plover/core';
import fc from 'fast-check';
import { parseInsightRequest } from '../src/filters';
import { runTrends } from '../src/trends';
import type { PropertyFilter, Series, TrendSeriesResult, TrendsInput } from '../src/types';
import { legacyRequestArb, trendsInputArb, trendsQuery, worldArb, type World } from './support/generate';
import { openIngestion, type Dataset, type Ingestion } from './support/ingest';
import { ingestWorld, type Project } from './support/project';
import { referenceTrends, type ComparedSeries, type PlainEvent, type ReferenceContext } from './support/reference';
import { insightInput, seriesOf } from './support/inputs';
import { noActions } from './support/context';

const NO_GROUPS = { groups: ['', '', '', '', ''], groupProperties: [{}, {}, {}, {}, {}] };
let sequence = 0;

function plainEvent(person: string, at: string, properties: PlainEvent['properties'] = {}, event = 'purchase'): PlainEvent {
  return { uuid: `e${++sequence}`, event, distinctId: person, timestamp: Date.parse(at), person, properties, personProperties: {}, ...NO_GROUPS };
}

const series = (overrides: Partial<Series> = {}): Series => seriesOf('purchase', overrides);
const input = (overrides: Partial<TrendsInput> = {}): TrendsInput => insightInput(series(), overrides);

const context = (timezone: string, now: string): ReferenceContext => ({ timezone, now: new Date(now), cohorts: new Map() });

describe('the trends reference, on hand-computed cases', () => {
  it('buckets Berlin hours across both DST transitions and ends the range one second after `to`', () => {
    const fallBack = [
      plainEvent('p', '2025-10-25T21:59:59.999Z'), // 23:59:59 CEST on the 25th: before `from`
      plainEvent('p', '2025-10-26T00:30:00Z'), // 02:30 CEST
      plainEvent('p', '2025-10-26T01:30:00Z'), // 02:30 CET, the repeated hour: same bucket
      plainEvent('p', '2025-10-26T01:59:00Z'), // 02:59 CET
      plainEvent('p', '2025-10-26T02:00:00Z'), // 03:00 CET
      plainEvent('p', '2025-10-26T10:00:00.500Z'), // `to` (11:00:00) + 0.5 s: in
      plainEvent('p', '2025-10-26T10:00:01Z'), // `to` + 1 s: out
    ];
    // `-11h` is wall-clock arithmetic: 11:00 − 11 h = 00:00, twelve real hours back across the repeated one.
    const [result] = referenceTrends(input({ interval: 'hour', dateFrom: '-11h' }), context('Europe/Berlin', '2025-10-26T10:00:00Z'), fallBack);
    expect(result).toEqual({
      data: [0, 0, 3, 1, 0, 0, 0, 0, 0, 0, 0, 1],
      days: Array.from({ length: 12 }, (_, hour) => `2025-10-26 ${String(hour).padStart(2, '0')}:00:00`),
      labels: Array.from({ length: 12 }, (_, hour) => `26-Oct-2025 ${String(hour).padStart(2, '0')}:00`),
      count: 5,
      label: 'purchase',
    });

    const springForward = [plainEvent('p', '2025-03-30T00:59:00Z'), plainEvent('p', '2025-03-30T01:00:00Z')]; // 01:59 CET, 03:00 CEST
    const [spring] = referenceTrends(input({ interval: 'hour', dateFrom: '-7h' }), context('Europe/Berlin', '2025-03-30T05:00:00Z'), springForward);
    expect(spring!.days[2]).toBe('2025-03-30 02:00:00');
    expect(spring!.data).toEqual([0, 1, 0, 1, 0, 0, 0, 0]);
  });

  describe('active users over a sliding window of local days', () => {
    const events = [
      plainEvent('P', '2025-03-01T10:00:00Z'),
      plainEvent('Q', '2025-03-02T10:00:00Z'),
      plainEvent('P', '2025-03-07T10:00:00Z'),
      plainEvent('P', '2025-03-09T08:00:00Z'),
      plainEvent('P', '2025-03-09T20:00:00Z'),
      plainEvent('R', '2025-03-10T09:00:00Z'),
      plainEvent('Q', '2025-03-10T13:00:00Z'), // after now
    ];
    const ctx = context('UTC', '2025-03-10T12:00:00Z');
    const run = (overrides: Partial<Series>, display: TrendsInput['display'] = 'ActionsLineGraph') =>
      referenceTrends(input({ series: [series(overrides)], dateFrom: '-2d', display }), ctx, events)[0]!;

    it('counts distinct persons per day, per 7 and per 30 days', () => {
      expect(run({ math: 'total' }).data).toEqual([0, 2, 1]);
      expect(run({ math: 'dau' }).data).toEqual([0, 1, 1]);
      expect(run({ math: 'weekly_active' }).data).toEqual([2, 1, 2]);
      expect(run({ math: 'monthly_active' }).data).toEqual([2, 2, 3]);
      expect(run({ math: 'dau' }, 'ActionsLineGraphCumulative')).toMatchObject({ data: [0, 1, 2], count: 2 });
    });

    it('aggregates over the whole range for total-value displays', () => {
      expect(run({ math: 'dau' }, 'BoldNumber')).toEqual({ data: [], labels: [], days: [], count: 0, aggregated_value: 2, label: 'purchase' });
      expect(run({ math: 'weekly_active' }, 'ActionsPie').aggregated_value).toBe(2);
      expect(run({ math: 'monthly_active' }, 'ActionsPie').aggregated_value).toBe(3);
    });

    it('compares with the same number of buckets before `from`', () => {
      const results = referenceTrends(input({ dateFrom: '-2d', compare: true }), ctx, events);
      expect(results.map(({ data, days, labels, compare_label }) => ({ data, days, labels, compare_label }))).toEqual([
        { data: [0, 2, 1], days: ['2025-03-08', '2025-03-09', '2025-03-10'], labels: ['day 0', 'day 1', 'day 2'], compare_label: 'current' },
        { data: [0, 0, 1], days: ['2025-03-05', '2025-03-06', '2025-03-07'], labels: ['day 0', 'day 1', 'day 2'], compare_label: 'previous' },
      ]);
    });
  });

  describe('property math, breakdowns and formulas', () => {
    const events = [
      plainEvent('P', '2025-03-05T10:00:00Z', { plan: 'pro', amount: 1 }),
      plainEvent('P', '2025-03-05T10:00:00Z', { plan: 'pro', amount: '2' }),
      plainEvent('P', '2025-03-05T10:00:00Z', { plan: 'free', amount: 3 }),
      plainEvent('P', '2025-03-05T10:00:00Z', { plan: 'free', amount: 4 }),
      plainEvent('P', '2025-03-05T10:00:00Z', { amount: true }),
      plainEvent('P', '2025-03-05T10:00:00Z', { plan: null, amount: 'abc' }),
    ];
    const ctx = context('UTC', '2025-03-20T12:00:00Z');
    const oneDay = { dateFrom: '2025-03-05', dateTo: '2025-03-05' };
    const math = (name: Series['math']) =>
      referenceTrends(input({ ...oneDay, series: [series({ math: name, mathProperty: 'amount' })] }), ctx, events)[0]!.data;

    it('reads numbers and numeric strings, skips the rest, and interpolates percentiles (R-7)', () => {
      expect([math('sum'), math('avg'), math('min'), math('max')]).toEqual([[10], [2.5], [1], [4]]);
      expect([math('median'), math('p75'), math('p90')]).toEqual([[2.5], [3.25], [3.7]]);
    });

    it('keeps the top values (ties ascending, the unset value first) and sums the rest into "other"', () => {
      const breakdown = { property: 'plan', type: 'event' as const, groupTypeIndex: null, limit: 1 };
      const results = referenceTrends(input({ ...oneDay, series: [series({ math: 'sum', mathProperty: 'amount' })], breakdown }), ctx, events);
      expect(results.map(({ label, breakdown_value, data }) => ({ label, breakdown_value, data }))).toEqual([
        { label: 'none', breakdown_value: 'none', data: [0] },
        { label: '$$_posthog_breakdown_other_$$', breakdown_value: '$$_posthog_breakdown_other_$$', data: [10] },
      ]);
    });

    it('evaluates formulas per bucket, division by zero giving 0', () => {
      const big = series({ order: 1, properties: { type: 'AND', values: [{ type: 'event', key: 'amount', operator: 'gt', value: 2 }] } });
      const none = series({ order: 1, properties: { type: 'AND', values: [{ type: 'event', key: 'plan', operator: 'exact', value: 'gold' }] } });
      const formula = (second: Series, text: string) => referenceTrends(input({ ...oneDay, series: [series(), second], formula: text }), ctx, events);
      expect(formula(big, '(A+B)/2')).toEqual([{ data: [4], days: ['2025-03-05'], labels: ['5-Mar-2025'], count: 4, label: 'Formula ((A+B)/2)' }]);
      expect(formula(big, 'A/B')[0]!.data).toEqual([3]);
      expect(formula(none, 'A/B')[0]!.data).toEqual([0]);
    });
  });
});

// ---------------------------------------------------------------------------------------------------------
// The engine against the reference, on data ingested for real

/**
 * The fields docs/insights.md defines (absent ones left out), numbers within a relative 1e-9 of the expected
 * ones replaced by them.
 */
function compared(actual: readonly TrendSeriesResult[], expected: readonly ComparedSeries[]): ComparedSeries[] {
  const close = (a: unknown, b: unknown) => typeof a === 'number' && typeof b === 'number' && Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  const align = (a: unknown, b: unknown): unknown => {
    if (close(a, b)) return b;
    return Array.isArray(a) && Array.isArray(b) ? a.map((item, i) => align(item, b[i])) : a;
  };
  return actual.map((series, i) => {
    const { data, labels, days, count, aggregated_value, label, breakdown_value, compare, compare_label } = series;
    const fields = Object.entries({ data, labels, days, count, aggregated_value, label, breakdown_value, compare, compare_label }).filter(
      ([, value]) => value !== undefined,
    );
    return Object.fromEntries(fields.map(([key, value]) => [key, align(value, expected[i]?.[key as keyof ComparedSeries])])) as ComparedSeries;
  });
}

/** The engine's answer equals the reference's, or both refuse the input (400 naming the same field). */
async function expectReference(ingestion: Ingestion, project: Project, input: TrendsInput): Promise<void> {
  let expected: ComparedSeries[];
  try {
    expected = referenceTrends(input, project.reference, project.events);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    await expect(runTrends(ingestion.clickhouse, input, project.ctx)).rejects.toMatchObject({ status: 400, attr: error.attr });
    return;
  }
  expect(compared(await runTrends(ingestion.clickhouse, input, project.ctx), expected)).toEqual(expected);
}

/** A trend's result, or the field its 400 names. */
async function outcome(run: () => Promise<TrendSeriesResult[]>): Promise<TrendSeriesResult[] | { refused: string | null }> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ApiError) return { refused: error.attr };
    throw error;
  }
}

describe('trends on ingested events', () => {
  let ingestion: Ingestion;

  beforeAll(async () => {
    ingestion = await openIngestion();
  }, 180_000);

  afterAll(async () => {
    await ingestion?.close();
  });

  it('counts a merged person once: every id merged into a person resolves to it', async () => {
    await fc.assert(
      fc.asyncProperty(worldArb, async (world) => {
        const { events } = await ingestWorld(ingestion, world);
        for (const merge of world.dataset.merges) {
          const merged = [merge.distinctId, merge.properties.$anon_distinct_id as string];
          expect(new Set(events.filter((event) => merged.includes(event.distinctId)).map((event) => event.person)).size).toBe(1);
        }
      }),
      { numRuns: 4 },
    );
  });

  it('computes what the reference computes, for random events and random inputs', async () => {
    const worldAndInputs = worldArb.chain((world) => fc.tuple(fc.constant(world), fc.array(trendsInputArb(world), { minLength: 4, maxLength: 4 })));
    await fc.assert(
      fc.asyncProperty(worldAndInputs, async ([world, inputs]) => {
        const project = await ingestWorld(ingestion, world);
        for (const input of inputs) await expectReference(ingestion, project, input);
      }),
      // Shrinking re-ingests for every attempt: bounded, so a failure is reported (partly shrunk) in time.
      { numRuns: 15, interruptAfterTimeLimit: 60_000 },
    );
  }, 170_000);

  describe('on two events, one without the breakdown property', () => {
    const at = Date.parse('2025-03-10T08:00:00Z');
    const dataset: Dataset = {
      beforeMerges: [
        { distinctId: 'user-0', event: 'purchase', properties: { plan: 'Pro' }, timestamp: at },
        { distinctId: 'user-0', event: 'purchase', properties: {}, timestamp: at },
      ],
      merges: [],
      afterMerges: [],
    };
    const byPlan = (limit: number) => ({ property: 'plan', type: 'event' as const, groupTypeIndex: null, limit });
    let project: Project;

    beforeAll(async () => {
      project = await ingestWorld(ingestion, { timezone: 'UTC', now: new Date('2025-03-10T12:00:00Z'), start: at, dataset, cohortPicks: [] });
    });

    it('ranks the not-set value "none" first among equal counts', async () => {
      await expectReference(ingestion, project, input({ dateFrom: '-1d', breakdown: byPlan(1) }));
    });

    it('labels formula series with their breakdown value', async () => {
      await expectReference(ingestion, project, input({ dateFrom: '-1d', series: [series(), series({ order: 1 })], formula: 'A+B', breakdown: byPlan(5) }));
    });
  });

  describe('on one project', () => {
    const [world] = fc.sample(worldArb, { seed: 7, numRuns: 1 }) as [World];
    let project: Project;

    beforeAll(async () => {
      project = await ingestWorld(ingestion, world);
    });

    it('gives identical results for legacy filter fields and their TrendsQuery twin', async () => {
      const requests = trendsInputArb(world).chain((input) => fc.tuple(fc.constant(input), legacyRequestArb(input), fc.boolean()));
      await fc.assert(
        fc.asyncProperty(requests, async ([input, legacy, queryInQueryString]) => {
          const node = JSON.stringify(trendsQuery(input));
          const [query, body] = queryInQueryString ? [{ query: node }, {}] : [{}, { query: node }];
          const fromLegacy = await outcome(() => runTrends(ingestion.clickhouse, parseInsightRequest(legacy.query, legacy.body).input, project.ctx));
          expect(await outcome(() => runTrends(ingestion.clickhouse, parseInsightRequest(query, body).input, project.ctx))).toEqual(fromLegacy);
        }),
        { numRuns: 15 },
      );
    });
  });

  describe('property keys, values and names that look like SQL', () => {
    const ODD_KEYS = ["x') OR 1=1 --", '`b`', '{p0:String}', 'ключ 🔑 \\\' "', "') UNION SELECT 1 --"] as const;
    const ABSENT_KEYS = ["y') OR 1=1 --", '`', '{p1:String}', '{projectId:Int64}', 'properties'];
    const ODD_NAME = "x'); DROP TABLE events; --";
    const at = Date.parse('2025-03-10T08:00:00Z');
    const dataset: Dataset = {
      beforeMerges: [
        ...ODD_KEYS.map((key, i) => ({
          distinctId: `user-${i}`,
          event: 'purchase',
          properties: { [key]: i === 2 ? 5 : `value ${i}`, $set: { [key]: `person ${i}` } },
          timestamp: at,
        })),
        { distinctId: 'user-9', event: 'purchase', properties: { plain: "' OR ''='" }, timestamp: at },
        { distinctId: 'user-9', event: ODD_NAME, properties: { plain: 'f' }, timestamp: at },
      ],
      merges: [],
      afterMerges: [],
    };
    let project: Project;

    beforeAll(async () => {
      const { projectId, events } = await ingestion.ingest(dataset);
      const now = new Date('2025-03-10T12:00:00Z');
      const cohortMembers = () => Promise.resolve([]);
      project = { events, ctx: { projectId, timezone: 'UTC', now, cohortMembers, action: noActions }, reference: { timezone: 'UTC', now, cohorts: new Map() } };
    });

    const total = (overrides: Partial<TrendsInput>) => input({ series: [series({ event: null })], dateFrom: '-1d', display: 'BoldNumber', ...overrides });
    const count = async (overrides: Partial<TrendsInput>) =>
      (await runTrends(ingestion.clickhouse, total(overrides), project.ctx)).map((result) => result.aggregated_value);
    const filter = (filterFields: Omit<PropertyFilter, 'type'>, type: PropertyFilter['type'] = 'event'): Partial<TrendsInput> => ({
      properties: { type: 'AND', values: [{ type, ...filterFields }] },
    });

    it.each(ODD_KEYS)('a filter on %j matches exactly the event that has that key', async (key) => {
      expect(await count(filter({ key, operator: 'is_set' }))).toEqual([1]);
      expect(await count(filter({ key, operator: 'is_set' }, 'person'))).toEqual([1]);
      expect(await count(filter({ key, operator: 'is_not_set' }))).toEqual([dataset.beforeMerges.length - 1]);
    });

    it.each(ABSENT_KEYS)('a filter on %j, which no event has, matches nothing', async (key) => {
      expect(await count(filter({ key, operator: 'is_set' }))).toEqual([0]);
      expect(await count(filter({ key, operator: 'exact', value: "' OR 1=1 --" }))).toEqual([0]);
    });

    it('compares values and event names as plain text', async () => {
      expect(await count(filter({ key: 'plain', operator: 'exact', value: "' OR ''='" }))).toEqual([1]);
      expect(await count(filter({ key: 'plain', operator: 'exact', value: "f' OR 'a'='a" }))).toEqual([0]);
      expect(await count(filter({ key: 'plain', operator: 'regex', value: "^' OR" }))).toEqual([1]);
      expect(await count({ series: [series({ event: ODD_NAME })] })).toEqual([1]);
      expect(await count({ series: [series({ event: "purchase' OR '1'='1" })] })).toEqual([0]);
      expect(await count({ series: [series({ event: null, math: 'sum', mathProperty: ODD_KEYS[2] })] })).toEqual([5]);
    });

    it.each([...ODD_KEYS, ...ABSENT_KEYS])('a breakdown by %j splits the events as the reference does', async (property) => {
      for (const type of ['event', 'person'] as const) {
        await expectReference(ingestion, project, total({ breakdown: { property, type, groupTypeIndex: null, limit: 3 }, display: 'ActionsLineGraph' }));
      }
    });
  });
});
