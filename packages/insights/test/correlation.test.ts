import { countEvents } from '@plover/clickhouse';
import { ApiError } from '@plover/core';
import fc from 'fast-check';
import { parseCorrelationRequest, runFunnelCorrelation, type CorrelationResult } from '../src/correlation';
import type { InsightContext, JsonValue } from '../src/types';
import { referenceCorrelation } from './support/correlation-reference';
import { openIngestion, type Dataset, type DatasetEvent, type Ingestion } from './support/ingest';
import { noActions } from './support/context';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T = Date.UTC(2024, 4, 1, 12);
const NOW = new Date(T + 2 * DAY);

let ingestion: Ingestion;
beforeAll(async () => {
  ingestion = await openIngestion();
}, 120_000);
afterAll(() => ingestion?.close());

function context(projectId: number, timezone = 'UTC', now = NOW): InsightContext {
  return { projectId, timezone, now, cohortMembers: () => Promise.reject(new Error('no cohorts here')), action: noActions };
}

function correlate(projectId: number, body: Record<string, unknown>, ctx = context(projectId)): Promise<CorrelationResult> {
  return runFunnelCorrelation(ingestion.clickhouse, parseCorrelationRequest({}, body), ctx);
}

const at = (hours: number) => T + hours * HOUR;
const ev = (distinctId: string, event: string, hours: number, properties: Record<string, JsonValue> = {}): DatasetEvent => ({
  distinctId,
  event,
  properties,
  timestamp: at(hours),
});

/** An entry as the response shows it. */
function entry(name: string, success: number, failure: number, oddsRatio: number): CorrelationResult['events'][number] {
  return {
    event: { event: name, properties: {}, elements: [] },
    success_count: success,
    failure_count: failure,
    odds_ratio: oddsRatio,
    correlation_type: oddsRatio > 1 ? 'success' : 'failure',
  };
}

const FUNNEL = {
  events: [
    { id: 'signup', order: 0 },
    { id: 'purchase', order: 1 },
  ],
  date_from: '-7d',
  funnel_window_days: 1,
};

/**
 * Funnel signup → purchase within a day. u5 signed up anonymously (anon5) and was merged into u5 before
 * buying, so only override resolution makes them one converting person.
 *   u1 signup, watched video, purchase                     → success
 *   u2 signup, watched video, purchase, help (too late)     → success
 *   u3 signup, help                                         → failure
 *   u4 signup, watched video, help, purchase after 30 h     → failure (outside the window)
 *   u5 landing (before), anon5 signup, $identify, help, purchase → success
 *   u6 watched video only                                   → never entered
 *   u7 signup                                               → failure
 * S = 3, F = 3.
 */
const FIXTURE: Dataset = {
  beforeMerges: [
    ev('u1', 'signup', 0, { $set: { plan: 'pro', age: 30 } }),
    ev('u1', 'watched video', 1, { quality: 'hd', n: 1 }),
    ev('u1', 'purchase', 2),
    ev('u2', 'signup', 0, { $set: { plan: 'pro' } }),
    ev('u2', 'watched video', 1, { quality: 'hd', n: 2 }),
    ev('u2', 'purchase', 3),
    ev('u2', 'help', 4),
    ev('u3', 'signup', 0, { $set: { plan: 'free' } }),
    ev('u3', 'help', 1),
    ev('u4', 'signup', 0, { $set: { plan: 'pro' } }),
    ev('u4', 'watched video', 1, { quality: 'hd', n: 1 }),
    ev('u4', 'help', 2),
    ev('u4', 'purchase', 30),
    ev('u5', 'landing', -1),
    ev('anon5', 'signup', 0, { $set: { plan: 'free' } }),
    ev('u6', 'watched video', 1, { quality: 'sd' }),
    ev('u7', 'signup', 0),
  ],
  merges: [ev('u5', '$identify', 1.5, { $anon_distinct_id: 'anon5' })],
  afterMerges: [ev('u5', 'help', 2), ev('u5', 'purchase', 3)],
};

describe('funnel correlation on a hand-computed funnel', () => {
  let projectId: number;
  beforeAll(async () => {
    projectId = (await ingestion.ingest(FIXTURE)).projectId;
  }, 120_000);

  it('counts the events between entering and converting, merged persons once', async () => {
    // $identify: vs 1, vf 0 → (2·4)/(3·1); watched video: vs 2 (u1, u2), vf 1 (u4) → (3·3)/(2·2);
    // help: vs 1 (u5; u2's came after converting), vf 2 (u3, u4) → (2·2)/(3·3).
    expect(await correlate(projectId, FUNNEL)).toEqual({
      events: [entry('$identify', 1, 0, 8 / 3), entry('watched video', 2, 1, 9 / 4), entry('help', 1, 2, 4 / 9)],
      skewed: false,
    });
  });

  it('leaves out excluded event names', async () => {
    expect(await correlate(projectId, { ...FUNNEL, funnel_correlation_exclude_event_names: ['$identify', 'help'] })).toEqual({
      events: [entry('watched video', 2, 1, 9 / 4)],
      skewed: false,
    });
  });

  it('drops persons whose attempt has an exclusion event between the steps', async () => {
    // u5's help lies between signup and purchase: u5 is gone. S = 2 (u1, u2), F = 3 (u3, u4, u7).
    const result = await correlate(projectId, { ...FUNNEL, exclusions: [{ id: 'help', type: 'events', funnel_from_step: 0, funnel_to_step: 1 }] });
    expect(result).toEqual({ events: [entry('watched video', 2, 1, 9 / 2), entry('help', 0, 2, 2 / 9)], skewed: false });
  });

  it('applies `properties` to the steps only', async () => {
    // Only u1, u2 and u4 have plan=pro on their step events: S = 2, F = 1 (u4).
    const result = await correlate(projectId, { ...FUNNEL, properties: [{ key: 'plan', value: 'pro', type: 'person', operator: 'exact' }] });
    expect(result).toEqual({ events: [entry('watched video', 2, 1, 3 / 2), entry('help', 0, 1, 1 / 6)], skewed: false });
  });

  it('honours the conversion window and its unit', async () => {
    // Two days: u4's purchase after 30 h converts; counted until then. S = 4, F = 2 (u3, u7).
    expect(await correlate(projectId, { ...FUNNEL, funnel_window_interval: 2, funnel_window_interval_unit: 'day' })).toEqual({
      events: [entry('watched video', 3, 0, 6), entry('$identify', 1, 0, 3 / 2), entry('help', 2, 1, 1)],
      skewed: false,
    });
    // 90 minutes: nobody converts.
    expect(await correlate(projectId, { ...FUNNEL, funnel_window_interval: 90, funnel_window_interval_unit: 'minute' })).toEqual({ events: [], skewed: true });
  });

  it('correlates the person properties stored with the entering event', async () => {
    // plan::pro: u1, u2 | u4; plan::free: u5 (as anon5) | u3 → ratio 1 is a failure; age::30: u1.
    const expected = [entry('age::30', 1, 0, 8 / 3), entry('plan::pro', 2, 1, 9 / 4), entry('plan::free', 1, 1, 1)];
    const properties = { ...FUNNEL, funnel_correlation_type: 'properties' };
    expect(await correlate(projectId, { ...properties, funnel_correlation_names: ['plan', 'age'] })).toEqual({ events: expected, skewed: false });
    // Ingestion also stores $creator_event_uuid on every person.
    const creator = '$creator_event_uuid';
    expect(await correlate(projectId, { ...properties, funnel_correlation_names: ['$all'], funnel_correlation_exclude_names: [creator] })).toEqual({
      events: expected,
      skewed: false,
    });
    expect(await correlate(projectId, { ...properties, funnel_correlation_names: '["$all"]', funnel_correlation_exclude_names: [creator, 'age'] })).toEqual({
      events: [expected[1], expected[2]],
      skewed: false,
    });
  });

  it('correlates event property values seen by more than two persons', async () => {
    // quality=hd: u1, u2 | u4. n=1 (u1 | u4) and n=2 (u2) are too rare.
    const body = { ...FUNNEL, funnel_correlation_type: 'event_with_properties', funnel_correlation_event_names: ['watched video', 'purchase'] };
    expect(await correlate(projectId, body)).toEqual({ events: [entry('watched video::quality::hd', 2, 1, 9 / 4)], skewed: false });
    expect(await correlate(projectId, { ...body, funnel_correlation_event_exclude_property_names: ['quality'] })).toEqual({ events: [], skewed: false });
  });

  it('keeps SQL in names, keys and values inert', async () => {
    const events = await countEvents(ingestion.clickhouse, projectId);
    const nasty = ["plan') OR 1=1 --", "x'; DROP TABLE events; --", '`plan`', '\\', '{p0:String}'];
    expect(
      await correlate(projectId, {
        ...FUNNEL,
        funnel_correlation_type: 'properties',
        funnel_correlation_names: [...nasty, 'plan'],
        funnel_correlation_exclude_names: nasty,
      }),
    ).toEqual({
      events: [entry('plan::pro', 2, 1, 9 / 4), entry('plan::free', 1, 1, 1)],
      skewed: false,
    });
    expect(await correlate(projectId, { ...FUNNEL, funnel_correlation_exclude_event_names: nasty })).toEqual(await correlate(projectId, FUNNEL));
    expect(await correlate(projectId, { ...FUNNEL, funnel_correlation_type: 'event_with_properties', funnel_correlation_event_names: nasty })).toEqual({
      events: [],
      skewed: false,
    });
    for (const key of nasty) {
      const steps = [{ id: 'signup', properties: [{ key, value: key, type: 'event' }] }, { id: `purchase${key}` }];
      expect(await correlate(projectId, { ...FUNNEL, events: steps })).toEqual({ events: [], skewed: true });
    }
    expect(await countEvents(ingestion.clickhouse, projectId)).toBe(events);
  });

  it('answers an empty funnel with nothing', async () => {
    expect(await correlate(projectId, { ...FUNNEL, events: [] })).toEqual({ events: [], skewed: false });
  });
});

describe('funnel correlation totals and ranking', () => {
  it('flags skewed totals, and answers one-sided totals with nothing', async () => {
    const successes = Array.from({ length: 11 }, (_, i) => [
      ev(`s${i}`, 'signup', 0),
      ev(`s${i}`, 'y', 0.5),
      ev(`s${i}`, 'purchase', 1),
      ev(`s${i}`, 'x', 2),
    ]).flat();
    const { projectId } = await ingestion.ingest({ beforeMerges: [...successes, ev('f', 'signup', 0), ev('f', 'y', 0.5)], merges: [], afterMerges: [] });
    // S = 11, F = 1; y: vs 11, vf 1 → (12·1)/(1·2). x comes after converting.
    expect(await correlate(projectId, FUNNEL)).toEqual({ events: [entry('y', 11, 1, 6)], skewed: true });
    // Everyone who buys goes on to x: no failures.
    expect(await correlate(projectId, { ...FUNNEL, events: [{ id: 'purchase' }, { id: 'x' }] })).toEqual({ events: [], skewed: true });
  }, 120_000);

  it('drops names below 2 % of the persons and keeps the top ten each way', async () => {
    // 30 converting, 30 not: a name needs 0.02 · 60 = 1.2, so two persons.
    const persons = (prefix: string, converts: boolean) =>
      Array.from({ length: 30 }, (_, i) => [ev(`${prefix}${i}`, 'signup', 0), ...(converts ? [ev(`${prefix}${i}`, 'purchase', 5)] : [])]).flat();
    // s<k>: done by k + 1 converting persons; f<k>: by k + 1 others; rare: one person; pair: one of each.
    const spread = (prefix: string, name: string, k: number) => Array.from({ length: k + 1 }, (_, i) => ev(`${prefix}${i}`, name, 1));
    const named = Array.from({ length: 12 }, (_, k) => k + 1).flatMap((k) => [
      ...spread('s', `s${String(k).padStart(2, '0')}`, k),
      ...spread('f', `f${String(k).padStart(2, '0')}`, k),
    ]);
    const dataset = [...persons('s', true), ...persons('f', false), ...named, ev('s0', 'rare', 1), ev('s1', 'pair', 1), ev('f1', 'pair', 1)];
    const { projectId } = await ingestion.ingest({ beforeMerges: dataset, merges: [], afterMerges: [] });
    const ratio = (vs: number, vf: number) => ((vs + 1) * (30 - vf + 1)) / ((30 - vs + 1) * (vf + 1));
    const top = (prefix: 's' | 'f') =>
      [12, 11, 10, 9, 8, 7, 6, 5, 4, 3].map((k) => {
        const [vs, vf] = prefix === 's' ? [k + 1, 0] : [0, k + 1];
        return entry(`${prefix}${String(k).padStart(2, '0')}`, vs, vf, ratio(vs, vf));
      });
    // pair: (2·30)/(30·2) = 1, a failure ranked after every f.
    expect(await correlate(projectId, FUNNEL)).toEqual({ events: [...top('s'), ...top('f')], skewed: false });
    expect(
      await correlate(projectId, { ...FUNNEL, funnel_correlation_exclude_event_names: ['f03', 'f04', 'f05', 'f06', 'f07', 'f08', 'f09', 'f10', 'f11', 'f12'] }),
    ).toEqual({
      events: [...top('s'), entry('f02', 0, 3, ratio(0, 3)), entry('f01', 0, 2, ratio(0, 2)), entry('pair', 1, 1, 1)],
      skewed: false,
    });
  }, 120_000);
});

describe('parseCorrelationRequest', () => {
  const rejects = (body: Record<string, unknown>, attr: string, query: Record<string, unknown> = {}) => {
    try {
      parseCorrelationRequest(query, body);
    } catch (error) {
      expect(error).toBeInstanceOf(ApiError);
      expect({ status: (error as ApiError).status, attr: (error as ApiError).attr }).toEqual({ status: 400, attr });
      return;
    }
    throw new Error(`accepted ${JSON.stringify(body)}`);
  };

  it('reads the legacy fields, from the query string too', () => {
    const input = parseCorrelationRequest(
      {
        events: JSON.stringify(FUNNEL.events),
        funnel_window_interval: '3',
        funnel_window_interval_unit: 'hour',
        funnel_correlation_type: 'properties',
        funnel_correlation_names: '["$all"]',
      },
      { date_from: '-30d', exclusions: [{ id: 'help', order: 5, properties: [{ key: 'a', value: 1 }] }] },
    );
    expect(input).toMatchObject({
      steps: [{ event: 'signup' }, { event: 'purchase' }],
      window: { amount: 3, unit: 'hour' },
      dateFrom: '-30d',
      dateTo: null,
      correlationType: 'properties',
      propertyNames: ['$all'],
      exclusions: [{ series: { event: 'help', properties: { type: 'AND', values: [{ key: 'a', value: 1 }] } }, fromStep: 0, toStep: 1 }],
    });
    expect(parseCorrelationRequest({}, FUNNEL).window).toEqual({ amount: 1, unit: 'day' });
    expect(parseCorrelationRequest({}, { events: FUNNEL.events }).window).toEqual({ amount: 14, unit: 'day' });
  });

  it('rejects what it cannot compute, naming the field', () => {
    rejects({ ...FUNNEL, actions: [{ id: 1 }] }, 'actions__0__id');
    rejects({ events: [{ id: 'signup' }] }, 'events');
    rejects({ events: '[{"id": ' }, 'events');
    rejects({ ...FUNNEL, funnel_correlation_type: 'sessions' }, 'funnel_correlation_type');
    rejects({ ...FUNNEL, funnel_correlation_type: 'properties' }, 'funnel_correlation_names');
    rejects({ ...FUNNEL, funnel_correlation_type: 'properties', funnel_correlation_names: ['plan', 3] }, 'funnel_correlation_names__1');
    rejects({ ...FUNNEL, funnel_correlation_type: 'event_with_properties' }, 'funnel_correlation_event_names');
    rejects({ ...FUNNEL, funnel_correlation_exclude_event_names: 'help' }, 'funnel_correlation_exclude_event_names');
    rejects({ ...FUNNEL, funnel_window_days: 0 }, 'funnel_window_days');
    rejects({ ...FUNNEL, funnel_window_days: 'soon' }, 'funnel_window_days');
    rejects({ ...FUNNEL, funnel_window_interval: 2, funnel_window_interval_unit: 'fortnight' }, 'funnel_window_interval_unit');
    rejects({ ...FUNNEL, funnel_window_interval: 121, funnel_window_interval_unit: 'month' }, 'funnel_window_interval');
    rejects({ ...FUNNEL, funnel_order_type: 'unordered' }, 'funnel_order_type');
    rejects({ ...FUNNEL, aggregation_group_type_index: 0 }, 'aggregation_group_type_index');
    rejects({ ...FUNNEL, date_from: 7 }, 'date_from');
    rejects({ ...FUNNEL, properties: [{ key: 'plan', operator: 'near' }] }, 'properties__0__operator');
    rejects({ ...FUNNEL, exclusions: [{ id: 'signup' }] }, 'exclusions__0__id');
    rejects({ ...FUNNEL, exclusions: [{ type: 'events' }] }, 'exclusions__0__id');
    rejects({ ...FUNNEL, exclusions: [{ id: 'help', funnel_from_step: 1 }] }, 'exclusions__0__funnel_from_step');
    rejects({ ...FUNNEL, exclusions: [{ id: 'help', funnel_to_step: 2 }] }, 'exclusions__0__funnel_to_step');
    rejects({ ...FUNNEL, exclusions: ['help'] }, 'exclusions__0');
    expect(() => parseCorrelationRequest({}, '[]')).toThrow(ApiError);
  });

  it('rejects a date the range cannot resolve, naming the field', async () => {
    await expect(correlate(1, { ...FUNNEL, date_to: 'tomorrow' })).rejects.toMatchObject({ status: 400, attr: 'date_to' });
  });
});

// ---------------------------------------------------------------------------------------------------------
// Property: the engine agrees with the plain TypeScript reference over the same stored events.

const START = Date.UTC(2025, 2, 28);
const NAMES = ['a', 'b', 'c', 'x', 'y'] as const;
/** Persons start within the two days from START. */
const SPAN_MINUTES = 2 * 24 * 60;
/** `arbitrary` in one case out of `odds`, else null. */
const sometimes = <T>(arbitrary: fc.Arbitrary<T>, odds: number) => fc.oneof({ arbitrary: fc.constant(null), weight: odds - 1 }, { arbitrary, weight: 1 });

const datasetArb: fc.Arbitrary<Dataset> = fc
  .record({
    /** Per person: when their activity starts, and whether an anonymous id of theirs gets merged into them. */
    persons: fc.array(fc.record({ start: fc.nat(SPAN_MINUTES), merged: fc.boolean() }), { minLength: 6, maxLength: 14 }),
    events: fc.array(
      fc.record({
        person: fc.nat(),
        anonymous: fc.boolean(),
        event: fc.constantFrom(...NAMES, 'a', 'b'),
        plan: fc.option(fc.constantFrom('free', 'pro')),
        n: fc.option(fc.integer({ min: 0, max: 2 })),
        tier: fc.option(fc.constantFrom('gold', 'silver'), { freq: 2 }),
        /** After the person's start: mostly within hours, so that funnels convert and fail alike. */
        minutes: fc.oneof({ arbitrary: fc.nat(6 * 60), weight: 5 }, { arbitrary: fc.nat(SPAN_MINUTES), weight: 1 }),
        afterMerges: fc.boolean(),
      }),
      { minLength: 30, maxLength: 90 },
    ),
    mergeMinutes: fc.nat(6 * 60),
  })
  .map(({ persons, events, mergeMinutes }) => {
    const minute = (person: number, minutes: number) => START + (persons[person]!.start + minutes) * 60_000;
    const toEvent = (raw: (typeof events)[number], index: number): DatasetEvent => {
      const person = raw.person % persons.length;
      const properties: Record<string, JsonValue> = {};
      if (raw.plan !== null) properties.plan = raw.plan;
      if (raw.n !== null) properties.n = raw.n;
      if (raw.tier !== null) properties.$set = { tier: raw.tier };
      // Distinct milliseconds: no two events tie, so the entering event is never ambiguous.
      return {
        distinctId: raw.anonymous && persons[person]!.merged ? `anon-${person}` : `user-${person}`,
        event: raw.event,
        properties,
        timestamp: minute(person, raw.minutes) + index,
      };
    };
    const indexed = events.map((raw, index) => ({ raw, index }));
    return {
      beforeMerges: indexed.filter(({ raw }) => !raw.afterMerges).map(({ raw, index }) => toEvent(raw, index)),
      merges: persons.flatMap(({ merged }, person) =>
        merged
          ? [
              {
                distinctId: `user-${person}`,
                event: '$identify',
                properties: { $anon_distinct_id: `anon-${person}` },
                timestamp: minute(person, mergeMinutes) + 500,
              },
            ]
          : [],
      ),
      afterMerges: indexed.filter(({ raw }) => raw.afterMerges).map(({ raw, index }) => toEvent(raw, index)),
    };
  });

const requestArb: fc.Arbitrary<Record<string, unknown>> = fc
  .record({
    steps: fc.array(fc.record({ id: fc.constantFrom('a', 'a', 'b', 'b', 'c'), filtered: sometimes(fc.constant(true), 5) }), { minLength: 2, maxLength: 3 }),
    window: fc.oneof(
      fc.record({ funnel_window_days: fc.integer({ min: 1, max: 3 }) }),
      fc.record({ funnel_window_interval: fc.integer({ min: 1, max: 48 }), funnel_window_interval_unit: fc.constant('hour') }),
    ),
    exclusion: sometimes(fc.record({ id: fc.constantFrom('x', 'y'), from: fc.nat(), to: fc.nat() }), 3),
    properties: sometimes(
      fc.constantFrom(
        { type: 'person', key: 'tier', value: 'gold' },
        { type: 'event', key: 'n', value: [1, 2] },
        { type: 'event', key: 'n', operator: 'gt', value: 1 },
        { type: 'person', key: 'tier', operator: 'is_not', value: 'gold' },
        { type: 'event', key: 'plan', operator: 'icontains', value: 'PR' },
        { type: 'person', key: 'plan', operator: 'is_set' },
        { type: 'event', key: 'plan', operator: 'regex', value: '^f' },
      ),
      4,
    ),
    type: fc.constantFrom('events', 'properties', 'event_with_properties'),
    names: fc.constantFrom(['$all'], ['tier'], ['tier', 'plan']),
    excludeNames: fc.subarray(['tier']),
    eventNames: fc.subarray([...NAMES, '$identify'], { minLength: 1 }),
    excludeEventNames: fc.subarray(['x', 'y', '$identify']),
    excludeEventPropertyNames: fc.subarray(['plan', 'n', '$set']),
    dateFrom: fc.constantFrom('-7d', '-7d', 'all', '-1d', '2025-03-29T02:30:00'),
  })
  .map(({ steps, window, exclusion, properties, type, names, excludeNames, eventNames, excludeEventNames, excludeEventPropertyNames, dateFrom }) => {
    const last = steps.length - 1;
    const from = exclusion === null ? 0 : exclusion.from % last;
    return {
      events: steps.map(({ id, filtered }) => ({
        id,
        type: 'events',
        properties: filtered === true ? [{ key: 'plan', value: 'pro', type: 'event', operator: 'exact' }] : [],
      })),
      ...window,
      ...(exclusion === null ? {} : { exclusions: [{ id: exclusion.id, funnel_from_step: from, funnel_to_step: from + 1 + (exclusion.to % (last - from)) }] }),
      ...(properties === null ? {} : { properties: [properties] }),
      funnel_correlation_type: type,
      funnel_correlation_names: names,
      funnel_correlation_exclude_names: excludeNames,
      funnel_correlation_event_names: eventNames,
      funnel_correlation_exclude_event_names: excludeEventNames,
      funnel_correlation_event_exclude_property_names: excludeEventPropertyNames,
      date_from: dateFrom,
    };
  });

const RUNS = 12;
/** Requests per generated dataset (ingesting is what takes time). */
const REQUESTS = 5;

describe('funnel correlation against the TypeScript reference', () => {
  it('gives the reference counts, odds ratios, order and skew', async () => {
    let informative = 0;
    await fc.assert(
      fc.asyncProperty(
        datasetArb,
        fc.array(requestArb, { minLength: REQUESTS, maxLength: REQUESTS }),
        fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York'),
        async (dataset, requests, timezone) => {
          const { projectId, events } = await ingestion.ingest(dataset);
          const ctx = context(projectId, timezone, new Date(START + 2 * DAY + 5 * HOUR));
          for (const request of requests) {
            const input = parseCorrelationRequest({}, request);
            const actual = await runFunnelCorrelation(ingestion.clickhouse, input, ctx);
            expect(actual).toEqual(referenceCorrelation(input, { timezone, now: ctx.now, cohorts: new Map() }, events));
            if (actual.events.length > 0) informative += 1;
          }
        },
      ),
      // Every run ingests for real, so a counterexample is reported as found rather than shrunk for many minutes.
      { numRuns: RUNS, endOnFailure: true },
    );
    // The generator must actually produce funnels with both outcomes and significant names (about a third do).
    expect(informative).toBeGreaterThanOrEqual((RUNS * REQUESTS) / 10);
  }, 600_000);
});

// ---------------------------------------------------------------------------------------------------------
// The query form: a FunnelsQuery or a FunnelCorrelationQuery is the same computation as its legacy fields.

type Fields = Record<string, unknown>;

/** The FunnelsQuery twin of legacy funnel fields, built from the field names alone (not by the parser). */
function funnelsQuery(legacy: Fields): Fields {
  const days = legacy.funnel_window_days;
  return {
    kind: 'FunnelsQuery',
    series: (legacy.events as Fields[]).map((step) => ({ kind: 'EventsNode', event: step.id, properties: step.properties })),
    dateRange: { date_from: legacy.date_from, date_to: legacy.date_to ?? null },
    ...(legacy.properties === undefined ? {} : { properties: legacy.properties }),
    funnelsFilter: {
      funnelWindowInterval: days ?? legacy.funnel_window_interval,
      funnelWindowIntervalUnit: days === undefined ? legacy.funnel_window_interval_unit : 'day',
      exclusions: ((legacy.exclusions ?? []) as Fields[]).map((x) => ({
        kind: 'EventsNode',
        event: x.id,
        funnelFromStep: x.funnel_from_step,
        funnelToStep: x.funnel_to_step,
      })),
    },
    breakdownFilter: { breakdown: 'plan', breakdown_type: 'event' },
  };
}

const CORRELATION_NAMES = {
  funnel_correlation_names: 'funnelCorrelationNames',
  funnel_correlation_exclude_names: 'funnelCorrelationExcludeNames',
  funnel_correlation_event_names: 'funnelCorrelationEventNames',
  funnel_correlation_exclude_event_names: 'funnelCorrelationExcludeEventNames',
  funnel_correlation_event_exclude_property_names: 'funnelCorrelationEventExcludePropertyNames',
};

/** The twins of a legacy request: a FunnelsQuery with the correlation fields beside it, and PostHog's FunnelCorrelationQuery. */
function queryTwins(legacy: Fields): Fields[] {
  const beside = Object.fromEntries(Object.keys(CORRELATION_NAMES).map((key) => [key, legacy[key]]));
  const inNode = Object.fromEntries(Object.entries(CORRELATION_NAMES).map(([key, name]) => [name, legacy[key]]));
  return [
    { query: funnelsQuery(legacy), funnel_correlation_type: legacy.funnel_correlation_type, ...beside },
    {
      query: JSON.stringify({
        kind: 'FunnelCorrelationQuery',
        source: { kind: 'FunnelsActorsQuery', source: funnelsQuery(legacy) },
        funnelCorrelationType: legacy.funnel_correlation_type,
        ...inNode,
      }),
      // Legacy fields beside a query node are replaced by it.
      events: [{ id: 'ignored' }],
      funnel_correlation_type: 'events',
    },
  ];
}

describe('funnel correlation from a query node', () => {
  it('parses a FunnelsQuery and a FunnelCorrelationQuery as their legacy fields', () => {
    fc.assert(
      fc.property(requestArb, (legacy) => {
        const expected = parseCorrelationRequest({}, legacy);
        for (const twin of queryTwins(legacy)) expect(parseCorrelationRequest({}, twin)).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });

  it('gives the legacy answer, which is the reference answer, on a generated project', async () => {
    const [dataset] = fc.sample(datasetArb, { seed: 11, numRuns: 1 }) as [Dataset];
    const { projectId, events } = await ingestion.ingest(dataset);
    const ctx = context(projectId, 'Europe/Berlin', new Date(START + 2 * DAY + 5 * HOUR));
    let informative = 0;
    for (const legacy of fc.sample(requestArb, { seed: 5, numRuns: 12 })) {
      const expected = referenceCorrelation(parseCorrelationRequest({}, legacy), { timezone: ctx.timezone, now: ctx.now, cohorts: new Map() }, events);
      expect(await runFunnelCorrelation(ingestion.clickhouse, parseCorrelationRequest({}, legacy), ctx)).toEqual(expected);
      for (const twin of queryTwins(legacy)) expect(await runFunnelCorrelation(ingestion.clickhouse, parseCorrelationRequest({}, twin), ctx)).toEqual(expected);
      if (expected.events.length > 0) informative += 1;
    }
    expect(informative).toBeGreaterThan(0);
  }, 120_000);

  it('names the field inside the node when refusing it', () => {
    const funnel = funnelsQuery(FUNNEL) as Fields & { series: Fields[] };
    const wrapped = (source: Fields, rest: Fields = {}) => ({
      kind: 'FunnelCorrelationQuery',
      source: { kind: 'FunnelsActorsQuery', source },
      funnelCorrelationType: 'events',
      ...rest,
    });
    const refusal = (body: Fields) => {
      try {
        parseCorrelationRequest({}, body);
      } catch (error) {
        return error instanceof ApiError ? { status: error.status, attr: error.attr } : error;
      }
      return 'accepted';
    };
    expect(refusal({ query: { ...funnel, series: funnel.series.slice(0, 1) } })).toEqual({ status: 400, attr: 'query__series' });
    expect(refusal({ query: { ...funnel, series: [{ kind: 'EventsNode', event: 3 }, ...funnel.series] } })).toEqual({
      status: 400,
      attr: 'query__series__0__event',
    });
    expect(refusal({ query: { ...funnel, dateRange: { date_from: 7 } } })).toEqual({ status: 400, attr: 'query__dateRange__date_from' });
    expect(refusal({ query: { ...funnel, funnelsFilter: { funnelWindowInterval: 0 } } })).toEqual({
      status: 400,
      attr: 'query__funnelsFilter__funnelWindowInterval',
    });
    expect(refusal({ query: { ...funnel, funnelsFilter: { funnelOrderType: 'strict' } } })).toEqual({
      status: 400,
      attr: 'query__funnelsFilter__funnelOrderType',
    });
    expect(refusal({ query: wrapped({ ...funnel, funnelsFilter: { exclusions: [{ kind: 'EventsNode', event: 'signup' }] } }) })).toEqual({
      status: 400,
      attr: 'query__source__source__funnelsFilter__exclusions__0__event',
    });
    expect(refusal({ query: wrapped(funnel, { funnelCorrelationType: 'properties' }) })).toEqual({ status: 400, attr: 'query__funnelCorrelationNames' });
    expect(refusal({ query: funnel, funnel_correlation_type: 'properties' })).toEqual({ status: 400, attr: 'funnel_correlation_names' });
    expect(refusal({ query: { ...funnel, kind: 'TrendsQuery' } })).toEqual({ status: 400, attr: 'query__kind' });
    expect(refusal({ query: wrapped({ ...funnel, kind: 'TrendsQuery' }) })).toEqual({ status: 400, attr: 'query__source__source__kind' });
    expect(refusal({ query: '{"kind": ' })).toEqual({ status: 400, attr: 'query' });
  });
});
