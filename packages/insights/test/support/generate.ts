/**
 * fast-check arbitraries for the trends property tests: a small project (persons with 1–3 distinct ids,
 * `$identify` merges, `$set` person properties, a group type, events with every kind of property value,
 * timestamps over ~40 days around the 2025 DST transitions) in a random timezone, and random TrendsInputs.
 */
import fc from 'fast-check';
import type {
  Breakdown,
  BreakdownType,
  Interval,
  JsonValue,
  PropertyFilter,
  PropertyGroup,
  PropertyBreakdown,
  PropertyOperator,
  Series,
  TrendsInput,
} from '../../src/types';
import { DISPLAYS, MATH_TYPES, PROPERTY_MATH } from '../../src/types';
import type { Dataset, DatasetEvent } from './ingest';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const TIMEZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Sydney', 'Asia/Kolkata'] as const;

/** ~40 days each, holding the transitions (UTC instants) of New York, Berlin and Sydney. */
const SEASONS = [
  { start: Date.UTC(2025, 2, 1), transitions: [Date.UTC(2025, 2, 9, 7), Date.UTC(2025, 2, 30, 1), Date.UTC(2025, 3, 5, 16)] },
  { start: Date.UTC(2025, 9, 1), transitions: [Date.UTC(2025, 9, 4, 16), Date.UTC(2025, 9, 26, 1), Date.UTC(2025, 10, 2, 6)] },
] as const;
const SEASON_DAYS = 40;

const EVENT_NAMES = ['$pageview', 'signed up', 'purchase', "it's done"] as const;
const EVENT_KEYS = ['plan', 'amount', 'active', 'note'] as const;
const PERSON_KEYS = ['tier', 'age', 'beta'] as const;
const GROUP_KEYS = ['industry', 'size'] as const;
const COMPANIES = ['acme', 'globex', 'initech'] as const;
/** The one group type; the first the project sees, so index 0. */
const GROUP_TYPE = 'company';
export const COHORT_ID = 1;

const STRINGS = ['free', 'pro', 'Pro', 'enterprise', '10', '2.5', '-3', 'x y'] as const;
const numberArb = fc.oneof(
  fc.integer({ min: -5, max: 40 }),
  fc.integer({ min: -20, max: 200 }).map((n) => n / 4),
);
/** Every kind of value a property can hold (missing is left to the record). */
const valueArb: fc.Arbitrary<JsonValue> = fc.oneof(fc.constantFrom<JsonValue>(...STRINGS), numberArb, fc.boolean(), fc.constant(null));

function propertiesArb(keys: readonly string[]): fc.Arbitrary<Record<string, JsonValue>> {
  return fc.record(Object.fromEntries(keys.map((key) => [key, valueArb])), { requiredKeys: [] }) as fc.Arbitrary<Record<string, JsonValue>>;
}

export interface World {
  timezone: string;
  now: Date;
  /** First instant of the ~40 days the events are spread over. */
  start: number;
  dataset: Dataset;
  /** Which of the project's persons (sorted by uuid, by index modulo their number) are in cohort COHORT_ID. */
  cohortPicks: readonly number[];
}

const distinctId = (person: number, id: number) => (id === 0 ? `user-${person}` : `anon-${person}-${id}`);

export const worldArb: fc.Arbitrary<World> = fc
  .record({
    season: fc.constantFrom(...SEASONS),
    timezone: fc.constantFrom(...TIMEZONES),
    nowSeconds: fc.integer({ min: (15 * DAY) / 1000, max: (42 * DAY) / 1000 }),
    /** Per person: how many anonymous ids (0–2) and whether each is merged into the person. */
    persons: fc.array(fc.array(fc.boolean(), { maxLength: 2 }), { minLength: 2, maxLength: 4 }),
    events: fc.array(
      fc.record({
        person: fc.nat(),
        id: fc.nat(),
        event: fc.constantFrom(...EVENT_NAMES),
        properties: propertiesArb(EVENT_KEYS),
        set: fc.option(propertiesArb(PERSON_KEYS), { freq: 2 }),
        company: fc.option(fc.constantFrom(...COMPANIES)),
        /** Uniform over the season, within 30 hours of one of its DST transitions, or in the 3 days before now. */
        at: fc.oneof(
          fc.integer({ min: 0, max: SEASON_DAYS * DAY - 1 }),
          fc.tuple(fc.nat(2), fc.integer({ min: -30 * HOUR, max: 30 * HOUR })),
          fc.oneof(fc.integer({ min: -3 * DAY, max: 0 }), fc.integer({ min: -12 * HOUR, max: 0 })).map((beforeNow) => ({ beforeNow })),
        ),
        afterMerges: fc.boolean(),
      }),
      { minLength: 15, maxLength: 60 },
    ),
    companies: fc.array(fc.record({ company: fc.constantFrom(...COMPANIES), properties: propertiesArb(GROUP_KEYS), at: fc.nat(SEASON_DAYS * DAY - 1) }), {
      maxLength: 3,
    }),
    mergeTimes: fc.array(fc.nat(SEASON_DAYS * DAY - 1), { minLength: 8, maxLength: 8 }),
    cohortPicks: fc.array(fc.nat(), { maxLength: 3 }),
  })
  .map(({ season, timezone, nowSeconds, persons, events, companies, mergeTimes, cohortPicks }) => {
    const now = season.start + nowSeconds * 1000;
    const time = (at: number | [number, number] | { beforeNow: number }) =>
      typeof at === 'number' ? season.start + at : Array.isArray(at) ? season.transitions[at[0]]! + at[1] : now + at.beforeNow;
    const merges: DatasetEvent[] = persons.flatMap((anonymous, person) =>
      anonymous.flatMap((merged, i) =>
        merged
          ? [
              {
                distinctId: distinctId(person, 0),
                event: '$identify',
                properties: { $anon_distinct_id: distinctId(person, i + 1) },
                timestamp: season.start + mergeTimes[person * 2 + i]!,
              },
            ]
          : [],
      ),
    );
    const toEvent = (raw: (typeof events)[number]): DatasetEvent => {
      const person = raw.person % persons.length;
      const properties: Record<string, JsonValue> = { ...raw.properties };
      if (raw.set) properties.$set = raw.set;
      if (raw.company) properties.$groups = { [GROUP_TYPE]: raw.company };
      return { distinctId: distinctId(person, raw.id % (persons[person]!.length + 1)), event: raw.event, properties, timestamp: time(raw.at) };
    };
    const groupIdentifies: DatasetEvent[] = companies.map(({ company, properties, at }) => ({
      distinctId: distinctId(0, 0),
      event: '$groupidentify',
      properties: { $group_type: GROUP_TYPE, $group_key: company, $group_set: properties },
      timestamp: season.start + at,
    }));
    const dataset: Dataset = {
      beforeMerges: [...groupIdentifies, ...events.filter((raw) => !raw.afterMerges).map(toEvent)],
      merges,
      afterMerges: events.filter((raw) => raw.afterMerges).map(toEvent),
    };
    return { timezone, now: new Date(now), start: season.start, dataset, cohortPicks };
  });

// ---------------------------------------------------------------------------------------------------------
// Inputs

const pad = (value: number) => String(value).padStart(2, '0');
const isoDate = (instant: number) => new Date(instant).toISOString().slice(0, 10);
/** A local wall-clock date-time (no offset) with the same fields as `instant` in UTC. */
const isoLocal = (instant: number) => new Date(instant).toISOString().slice(0, 19);

/** An absolute bound: an ISO date, a local date-time, or a date-time with an offset. */
function absoluteArb(instant: number, isEnd: boolean): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constant(isoDate(instant)),
    fc.constant(isoLocal(instant)),
    fc.constantFrom('Z', '+05:30', '-04:00').map((offset) => `${isoLocal(instant)}${offset}`),
    // A date-time at a bucket-unfriendly second, to check `to + 1 s`.
    fc.constant(`${isoDate(instant)}T${isEnd ? '23:59:59' : `${pad(new Date(instant).getUTCHours())}:17:42`}`),
  );
}

function absoluteRangeArb(start: number, maxDays: number): fc.Arbitrary<{ dateFrom: string | null; dateTo: string | null }> {
  return fc
    .record({ from: fc.integer({ min: -3 * DAY, max: (SEASON_DAYS - 1) * DAY }), length: fc.integer({ min: 0, max: maxDays * DAY }) })
    .chain(({ from, length }) => fc.record({ dateFrom: absoluteArb(start + from, false), dateTo: absoluteArb(start + from + length, true) }));
}

function dateRangeArb(interval: Interval, start: number): fc.Arbitrary<{ dateFrom: string | null; dateTo: string | null }> {
  if (interval === 'minute') {
    return fc.oneof(
      fc.record({ dateFrom: fc.integer({ min: 1, max: 720 }).map((n) => `-${n}M`), dateTo: fc.constantFrom(null, '-5M') }),
      fc.record({ dateFrom: fc.integer({ min: 1, max: 12 }).map((n) => `-${n}h`), dateTo: fc.constant(null) }),
    );
  }
  if (interval === 'hour') {
    return fc.oneof(
      fc.record({ dateFrom: fc.integer({ min: 1, max: 72 }).map((n) => `-${n}h`), dateTo: fc.constant(null) }),
      fc.record({ dateFrom: fc.constantFrom('-1d', '-2d', 'dStart'), dateTo: fc.constantFrom(null, '-1h') }),
      absoluteRangeArb(start, 3),
    );
  }
  const relative = fc.integer({ min: 0, max: 45 }).chain((n) =>
    fc.record({
      dateFrom: fc.constant(`-${n}d`),
      dateTo: fc.oneof(
        fc.constant(null),
        fc.integer({ min: 0, max: n }).map((m) => `-${m}d`),
      ),
    }),
  );
  const named = fc.record({
    dateFrom: fc.constantFrom(null, '-2w', '-1m', '-1q', 'mStart', 'wStart', 'dStart', 'yStart', 'all', '-36h'),
    dateTo: fc.constant(null),
  });
  return fc.oneof(relative, named, absoluteRangeArb(start, 30));
}

const STRING_OPERATORS: readonly PropertyOperator[] = ['icontains', 'not_icontains'];
const REGEX_OPERATORS: readonly PropertyOperator[] = ['regex', 'not_regex'];
const NUMERIC_OPERATORS: readonly PropertyOperator[] = ['gt', 'gte', 'lt', 'lte'];
const FILTER_VALUE: Partial<Record<PropertyOperator, fc.Arbitrary<JsonValue>>> = {
  exact: fc.oneof(
    valueArb.filter((value) => value !== null),
    fc.array(
      valueArb.filter((value) => value !== null),
      { minLength: 1, maxLength: 3 },
    ),
  ),
  is_not: fc.oneof(
    valueArb.filter((value) => value !== null),
    fc.array(
      valueArb.filter((value) => value !== null),
      { minLength: 1, maxLength: 3 },
    ),
  ),
  ...Object.fromEntries(STRING_OPERATORS.map((operator) => [operator, fc.constantFrom('pro', 'R', '1', 'x', ' ', 'tru')])),
  ...Object.fromEntries(REGEX_OPERATORS.map((operator) => [operator, fc.constantFrom('^p', 'o$', '[0-9]', '^-?[0-9]+$', 'e|y', '^(free|pro)$')])),
  ...Object.fromEntries(NUMERIC_OPERATORS.map((operator) => [operator, fc.oneof(numberArb, numberArb.map(String))])),
};

function keyedFilterArb(type: 'event' | 'person' | 'group', keys: readonly string[]): fc.Arbitrary<PropertyFilter> {
  const operators = Object.keys(FILTER_VALUE) as PropertyOperator[];
  return fc.record({ key: fc.constantFrom(...keys, 'missing'), operator: fc.constantFrom(...operators, 'is_set', 'is_not_set') }).chain(({ key, operator }) => {
    const valueArbitrary = FILTER_VALUE[operator];
    const base: PropertyFilter = { type, key, operator, ...(type === 'group' ? { groupTypeIndex: 0 } : {}) };
    return valueArbitrary ? valueArbitrary.map((value) => ({ ...base, value })) : fc.constant(base);
  });
}

const filterArb: fc.Arbitrary<PropertyFilter> = fc.oneof(
  { arbitrary: keyedFilterArb('event', EVENT_KEYS), weight: 4 },
  { arbitrary: keyedFilterArb('person', PERSON_KEYS), weight: 3 },
  { arbitrary: keyedFilterArb('group', GROUP_KEYS), weight: 1 },
  {
    arbitrary: fc.constantFrom<PropertyOperator>('in', 'not_in').map((operator): PropertyFilter => ({ type: 'cohort', key: 'id', value: COHORT_ID, operator })),
    weight: 1,
  },
);

const propertyGroupArb: fc.Arbitrary<PropertyGroup> = fc.record({
  type: fc.constantFrom('AND', 'OR'),
  values: fc.array(
    fc.oneof(
      { arbitrary: filterArb, weight: 3 },
      fc.record({ type: fc.constantFrom('AND', 'OR'), values: fc.array(filterArb, { minLength: 1, maxLength: 2 }) }),
    ),
    { minLength: 1, maxLength: 3 },
  ),
});

/** `arbitrary` `weight` times in `weight + nullWeight`, null otherwise. */
function sometimes<T>(arbitrary: fc.Arbitrary<T>, weight: number, nullWeight: number): fc.Arbitrary<T | null> {
  return fc.oneof({ arbitrary: fc.constant(null), weight: nullWeight }, { arbitrary, weight });
}

const seriesArb = (order: number): fc.Arbitrary<Series> =>
  fc
    .record({
      event: fc.option(fc.constantFrom(...EVENT_NAMES), { freq: 4 }),
      math: fc.constantFrom(...MATH_TYPES),
      mathProperty: fc.constantFrom('amount', 'amount', 'plan', 'missing'),
      properties: sometimes(propertyGroupArb, 1, 2),
    })
    .map(({ event, math, mathProperty, properties }) => ({
      event,
      action: null,
      name: event ?? 'All events',
      customName: null,
      order,
      math,
      mathProperty: PROPERTY_MATH.includes(math) ? mathProperty : null,
      mathGroupTypeIndex: math === 'unique_group' ? 0 : null,
      properties,
    }));

const BREAKDOWN_KEYS: Record<BreakdownType, readonly string[]> = { event: EVENT_KEYS, person: PERSON_KEYS, group: GROUP_KEYS, event_metadata: ['event'] };

const breakdownArb: fc.Arbitrary<PropertyBreakdown> = fc.constantFrom<BreakdownType>('event', 'event', 'person', 'group', 'event_metadata').chain((type) =>
  fc.record({
    type: fc.constant(type),
    property: fc.constantFrom(...BREAKDOWN_KEYS[type]),
    groupTypeIndex: fc.constant(type === 'group' ? 0 : null),
    limit: fc.integer({ min: 1, max: 5 }),
  }),
);

const FORMULAS = ['A+B', 'A-B', 'A*B', 'A/B', '(A+B)/2', 'B*100/A'];

/** A TrendsInput over the world's season (absolute dates fall in or near it). */
export function trendsInputArb(world: World): fc.Arbitrary<TrendsInput> {
  return fc
    .record({
      series: fc.integer({ min: 1, max: 3 }).chain((count) => fc.tuple(...Array.from({ length: count }, (_, i) => seriesArb(i)))),
      interval: fc.constantFrom<Interval>('day', 'day', 'hour', 'hour', 'minute', 'week', 'month'),
      properties: sometimes(propertyGroupArb, 2, 3),
      breakdown: sometimes(breakdownArb, 1, 1),
      compare: fc.boolean(),
      formula: sometimes(fc.constantFrom(...FORMULAS), 1, 1),
      display: fc.constantFrom(...DISPLAYS),
    })
    .chain((input) =>
      dateRangeArb(input.interval, world.start).map((range): TrendsInput => ({
        ...input,
        ...range,
        // A formula needs two series; with a cumulative display the contract leaves its meaning open.
        formula: input.series.length >= 2 && input.display !== 'ActionsLineGraphCumulative' ? input.formula : null,
      })),
    );
}

// ---------------------------------------------------------------------------------------------------------
// Requests: a TrendsInput as PostHog's legacy filter fields and as its TrendsQuery twin

type Fields = Record<string, unknown>;

function filterJson(node: PropertyGroup | PropertyFilter): Fields {
  if ('values' in node) return { type: node.type, values: node.values.map(filterJson) };
  const { type, key, operator, value, groupTypeIndex } = node;
  return { type, key, operator, ...(value === undefined ? {} : { value }), ...(groupTypeIndex === undefined ? {} : { group_type_index: groupTypeIndex }) };
}

function seriesFields(series: Series): Fields {
  return {
    name: series.name,
    custom_name: series.customName,
    math: series.math,
    math_property: series.mathProperty,
    math_group_type_index: series.mathGroupTypeIndex,
    properties: series.properties && filterJson(series.properties),
  };
}

function breakdownFields(breakdown: Breakdown | null): Fields {
  if (!breakdown) return {};
  if (breakdown.type === 'cohort') return { breakdown: [...breakdown.cohorts], breakdown_type: 'cohort' };
  const { property, type, groupTypeIndex, limit } = breakdown;
  return {
    breakdown: property,
    breakdown_type: type,
    breakdown_limit: limit,
    ...(groupTypeIndex === null ? {} : { breakdown_group_type_index: groupTypeIndex }),
  };
}

/** The legacy fields of `input`, each either in the query string (as text, JSON for lists and objects) or in the JSON body. */
export function legacyRequestArb(input: TrendsInput): fc.Arbitrary<{ query: Record<string, string>; body: Fields }> {
  const fields: Fields = {
    events: input.series.map((series) => ({ id: series.event, type: 'events', order: series.order, ...seriesFields(series) })),
    date_from: input.dateFrom,
    date_to: input.dateTo,
    interval: input.interval,
    properties: input.properties && filterJson(input.properties),
    ...breakdownFields(input.breakdown),
    compare: input.compare,
    formula: input.formula,
    display: input.display,
  };
  const present = Object.entries(fields).filter(([, value]) => value !== null);
  return fc.array(fc.boolean(), { minLength: present.length, maxLength: present.length }).map((inQuery) => ({
    query: Object.fromEntries(present.filter((_, i) => inQuery[i]).map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value)])),
    body: Object.fromEntries(present.filter((_, i) => !inQuery[i])),
  }));
}

/** `input` as a TrendsQuery node. */
export function trendsQuery(input: TrendsInput): Fields {
  return {
    kind: 'TrendsQuery',
    series: input.series.map((series) => ({ kind: 'EventsNode', event: series.event, ...seriesFields(series) })),
    interval: input.interval,
    dateRange: { date_from: input.dateFrom, date_to: input.dateTo },
    properties: input.properties && filterJson(input.properties),
    breakdownFilter: breakdownFields(input.breakdown),
    trendsFilter: { display: input.display, formula: input.formula },
    compareFilter: { compare: input.compare },
  };
}
