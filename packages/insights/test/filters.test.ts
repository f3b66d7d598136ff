import { ApiError } from '@plover/core';

import { parseEntities, parseInsightRequest, parsePropertyFilters, parseTrendsQuery } from '../src/filters';
import { DISPLAYS, INTERVALS, MATH_TYPES, PROPERTY_MATH, type TrendsInput } from '../src/types';

type Fields = Record<string, unknown>;

const parseTrendsRequest = (query: Fields, body: unknown): TrendsInput => parseInsightRequest(query, body).input;

/** The TrendsQuery twin of a legacy filter, built independently of the parser (like PostHog's filter_to_query). */
function toTrendsQuery(legacy: Fields): Fields {
  const entities = ((legacy.events ?? []) as Fields[])
    .map((entity, index) => ({ entity, key: typeof entity.order === 'number' ? entity.order : index, index }))
    .sort((a, b) => a.key - b.key || a.index - b.index)
    .map(({ entity }) => entity);
  return withoutUndefined({
    kind: 'TrendsQuery',
    series: entities.map((entity) => ({
      kind: 'EventsNode',
      event: entity.id ?? null,
      name: entity.name,
      custom_name: entity.custom_name,
      math: entity.math,
      math_property: entity.math_property,
      math_group_type_index: entity.math_group_type_index,
      properties: entity.properties,
    })),
    interval: legacy.interval,
    dateRange: { date_from: legacy.date_from, date_to: legacy.date_to },
    properties: legacy.properties,
    breakdownFilter: {
      breakdown: legacy.breakdown,
      breakdown_type: legacy.breakdown_type,
      breakdown_limit: legacy.breakdown_limit,
      breakdown_group_type_index: legacy.breakdown_group_type_index,
    },
    trendsFilter: { display: legacy.display, formula: legacy.formula },
    compareFilter: { compare: legacy.compare },
    filterTestAccounts: false,
  });
}

function withoutUndefined(value: Fields): Fields {
  return JSON.parse(JSON.stringify(value)) as Fields;
}

/** A legacy filter as a GET query string carries it: every value text, structured ones JSON-encoded. */
function asQueryString(legacy: Fields): Record<string, string> {
  return Object.fromEntries(Object.entries(legacy).map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value)]));
}

function caught(parse: () => unknown): ApiError {
  try {
    parse();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected an ApiError');
}

const pageview = { id: '$pageview', type: 'events', order: 0 };
const signup = { id: 'signed up', type: 'events', order: 1 };
const purchase = { id: 'purchase', type: 'events', order: 2 };

const chrome = { key: '$browser', value: 'Chrome', operator: 'exact', type: 'event' };
const corp = { key: 'email', value: '@corp.com', operator: 'icontains', type: 'person' };
const enterprise = { key: 'plan', value: ['enterprise', 'scale'], operator: 'exact', type: 'group', group_type_index: 0 };
const inCohort = { key: 'id', value: 7, type: 'cohort' };

const every = <T>(items: readonly T[], build: (item: T) => [string, Fields]): [string, Fields][] => items.map(build);

const twins: [string, Fields][] = [
  ['one event, defaults', { events: [pageview] }],
  ['all events', { events: [{ id: null, type: 'events', order: 0 }] }],
  ['name and custom name', { events: [{ ...pageview, name: 'Page views', custom_name: 'Views' }] }],
  [
    'entities sorted by order',
    {
      events: [
        { ...signup, order: 1 },
        { ...pageview, order: 0 },
      ],
    },
  ],
  [
    'entities without order keep their position',
    {
      events: [
        { id: 'b', type: 'events' },
        { id: 'a', type: 'events' },
      ],
    },
  ],
  ...every(MATH_TYPES, (math) => [
    `math ${math}`,
    {
      events: [
        {
          ...pageview,
          math,
          ...(PROPERTY_MATH.includes(math) ? { math_property: 'amount' } : {}),
          ...(math === 'unique_group' ? { math_group_type_index: 2 } : {}),
        },
      ],
    },
  ]),
  ['math_property ignored for total', { events: [{ ...pageview, math: 'total', math_property: 'stale', math_group_type_index: 1 }] }],
  ...every(
    [
      '-7d',
      '-24h',
      '-2w',
      '-3m',
      '-1q',
      '-1y',
      '-30M',
      '7d',
      'dStart',
      'wStart',
      'mStart',
      'yStart',
      'all',
      '2025-01-01',
      '2025-01-01T10:00:00Z',
      '2025-01-01 10:00',
      '2025-01-01T10:00:00.5+02:00',
    ],
    (from) => [`date_from ${from}`, { events: [pageview], date_from: from }],
  ),
  ...every(['-1d', 'dStart', '2025-02-28', '2025-02-28T23:59:59'], (to) => [`date_to ${to}`, { events: [pageview], date_from: '2025-01-01', date_to: to }]),
  ...every(INTERVALS, (interval) => [`interval ${interval}`, { events: [pageview], interval }]),
  ...every(DISPLAYS, (display) => [`display ${display}`, { events: [pageview], display }]),
  ['event breakdown', { events: [pageview], breakdown: '$browser' }],
  ['person breakdown with limit', { events: [pageview], breakdown: 'plan', breakdown_type: 'person', breakdown_limit: 5 }],
  ['group breakdown', { events: [pageview], breakdown: 'industry', breakdown_type: 'group', breakdown_group_type_index: 1, breakdown_limit: 1000 }],
  ['event name breakdown of all events', { events: [{ id: null }], breakdown: 'event', breakdown_type: 'event_metadata', breakdown_limit: 10 }],
  ['event name breakdown as HogQL', { events: [{ id: null }], breakdown: 'event', breakdown_type: 'hogql' }],
  ['compare', { events: [pageview], compare: true }],
  ['no compare', { events: [pageview], compare: false }],
  ['formula', { events: [pageview, signup], formula: 'A+B' }],
  ['formula with numbers and parentheses', { events: [pageview, signup, purchase], formula: '(A - B) * 100 / -C + 0.5' }],
  ['event, person, group and cohort filters', { events: [pageview], properties: [chrome, corp, enterprise, inCohort] }],
  ['not in cohort', { events: [pageview], properties: [{ ...inCohort, operator: 'not_in' }] }],
  [
    'every value operator',
    {
      events: [pageview],
      properties: [
        { key: 'a', value: 'x', operator: 'is_not' },
        { key: 'b', value: 'x', operator: 'not_icontains' },
        { key: 'c', value: '^x', operator: 'regex' },
        { key: 'd', value: 'x$', operator: 'not_regex' },
        { key: 'e', value: 1, operator: 'gt' },
        { key: 'f', value: '2.5', operator: 'gte' },
        { key: 'g', value: -3, operator: 'lt' },
        { key: 'h', value: 4, operator: 'lte' },
        { key: 'i', operator: 'is_set', value: 'is_set' },
        { key: 'j', operator: 'is_not_set' },
        { key: 'k', value: '2025-01-01', operator: 'is_date_before' },
        { key: 'l', value: '-7d', operator: 'is_date_after' },
        { key: 'm', value: '2025-01-01T00:00:00Z', operator: 'is_date_exact' },
        { key: 'n', value: true },
      ],
    },
  ],
  [
    'nested AND/OR groups',
    {
      events: [pageview],
      properties: {
        type: 'OR',
        values: [
          { type: 'AND', values: [chrome, corp] },
          { type: 'AND', values: [inCohort, { type: 'OR', values: [enterprise] }] },
        ],
      },
    },
  ],
  [
    'series filters',
    {
      events: [
        { ...pageview, properties: [chrome] },
        { ...signup, properties: { type: 'AND', values: [{ type: 'OR', values: [corp, inCohort] }] } },
      ],
    },
  ],
  [
    'everything at once',
    {
      events: [
        { ...signup, order: 1, math: 'dau', custom_name: 'Signups', properties: [corp] },
        { ...pageview, order: 0, math: 'p95', math_property: '$session_duration' },
      ],
      insight: 'TRENDS',
      date_from: '-30d',
      date_to: '-1d',
      interval: 'week',
      display: 'ActionsBar',
      breakdown: 'plan',
      breakdown_type: 'person',
      breakdown_limit: 10,
      compare: true,
      formula: 'B/A',
      properties: { type: 'AND', values: [{ type: 'OR', values: [chrome, inCohort] }] },
    },
  ],
];

describe('legacy filter and TrendsQuery twins', () => {
  test.each(twins)('%s', (_name, legacy) => {
    const fromBody = parseTrendsRequest({}, legacy);
    const query = toTrendsQuery(legacy);
    expect(parseTrendsQuery(query)).toEqual(fromBody);
    expect(parseTrendsRequest({}, { query })).toEqual(fromBody);
    expect(parseTrendsRequest({ query: JSON.stringify(query) }, undefined)).toEqual(fromBody);
    expect(parseTrendsRequest(asQueryString(legacy), undefined)).toEqual(fromBody);
  });

  test('the twin table covers every math, interval and display', () => {
    const names = twins.map(([name]) => name);
    for (const math of MATH_TYPES) expect(names).toContain(`math ${math}`);
    for (const interval of INTERVALS) expect(names).toContain(`interval ${interval}`);
    for (const display of DISPLAYS) expect(names).toContain(`display ${display}`);
  });
});

describe('parseTrendsRequest', () => {
  test('defaults', () => {
    expect(parseTrendsRequest({}, { events: [{ id: '$pageview' }] })).toEqual<TrendsInput>({
      series: [
        {
          event: '$pageview',
          action: null,
          name: '$pageview',
          customName: null,
          order: 0,
          math: 'total',
          mathProperty: null,
          mathGroupTypeIndex: null,
          properties: null,
        },
      ],
      dateFrom: null,
      dateTo: null,
      interval: 'day',
      properties: null,
      breakdown: null,
      compare: false,
      formula: null,
      display: 'ActionsLineGraph',
    });
  });

  test('a full request', () => {
    const input = parseTrendsRequest(
      { date_from: '-14d', compare: 'true', breakdown_limit: '10', interval: 'hour' },
      {
        insight: 'trends',
        events: [
          { id: 'signed up', order: 3, math: 'unique_group', math_group_type_index: '1', custom_name: 'Companies' },
          { id: null, order: 1, math: 'sum', math_property: 'amount', properties: [{ key: 'x', operator: 'is_set' }] },
        ],
        interval: 'week',
        breakdown: '$browser',
        formula: 'A*2',
        properties: [inCohort, enterprise],
      },
    );
    expect(input).toEqual<TrendsInput>({
      series: [
        {
          event: null,
          action: null,
          name: 'All events',
          customName: null,
          order: 0,
          math: 'sum',
          mathProperty: 'amount',
          mathGroupTypeIndex: null,
          properties: { type: 'AND', values: [{ type: 'event', key: 'x', operator: 'is_set' }] },
        },
        {
          event: 'signed up',
          action: null,
          name: 'signed up',
          customName: 'Companies',
          order: 1,
          math: 'unique_group',
          mathProperty: null,
          mathGroupTypeIndex: 1,
          properties: null,
        },
      ],
      dateFrom: '-14d',
      dateTo: null,
      interval: 'week',
      properties: {
        type: 'AND',
        values: [
          { type: 'cohort', key: 'id', operator: 'in', value: 7 },
          { type: 'group', key: 'plan', operator: 'exact', value: ['enterprise', 'scale'], groupTypeIndex: 0 },
        ],
      },
      breakdown: { property: '$browser', type: 'event', groupTypeIndex: null, limit: 10 },
      compare: true,
      formula: 'A*2',
      display: 'ActionsLineGraph',
    });
  });

  test('PostHog’s breakdowns by event name, event_metadata and HogQL `event`, are one breakdown', () => {
    const expected = { property: 'event', type: 'event_metadata', groupTypeIndex: null, limit: 10 };
    for (const breakdown_type of ['event_metadata', 'hogql']) {
      expect(parseTrendsRequest({}, { events: [{ id: null }], breakdown: 'event', breakdown_type, breakdown_limit: 10 }).breakdown).toEqual(expected);
    }
    // Without a type, `event` is an event property of that name, as in PostHog.
    expect(parseTrendsRequest({}, { events: [{ id: null }], breakdown: 'event' }).breakdown).toMatchObject({ property: 'event', type: 'event' });
  });

  test('the body wins over the query string', () => {
    const input = parseTrendsRequest({ events: JSON.stringify([signup]), interval: 'month', compare: 'true' }, { events: [pageview], compare: false });
    expect(input.series.map((series) => series.event)).toEqual(['$pageview']);
    expect(input.interval).toBe('month');
    expect(input.compare).toBe(false);
  });

  test('a query field replaces the legacy fields', () => {
    const query = { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'purchase' }] };
    const input = parseTrendsRequest({ insight: 'FUNNELS' }, { events: 'not json', query });
    expect(input.series.map((series) => series.event)).toEqual(['purchase']);
  });

  test('no series at all is a request with an empty answer', () => {
    expect(parseInsightRequest({}, undefined)).toMatchObject({ insight: 'TRENDS', input: { series: [], dateFrom: null, interval: 'day' } });
    expect(parseTrendsRequest({ events: '[]', actions: '[]' }, undefined).series).toEqual([]);
    expect(parseTrendsQuery({ kind: 'TrendsQuery', series: [] }).series).toEqual([]);
  });

  test.each<[Fields, string]>([
    [{ insight: 'stickiness' }, 'STICKINESS'],
    [{ shown_as: 'Stickiness' }, 'STICKINESS'],
    [{ insight: 'LIFECYCLE', shown_as: 'Stickiness' }, 'STICKINESS'],
    [{ insight: 'LIFECYCLE' }, 'LIFECYCLE'],
    [{ shown_as: 'Lifecycle' }, 'LIFECYCLE'],
    [{ insight: 'TRENDS', shown_as: 'Lifecycle' }, 'LIFECYCLE'],
    [{ insight: 'STICKINESS', shown_as: 'Volume' }, 'STICKINESS'],
    [{ shown_as: 'Volume' }, 'TRENDS'],
  ])('%j computes %s', (fields, insight) => {
    const request = parseInsightRequest(asQueryString({ ...fields, events: [pageview], compare: insight === 'LIFECYCLE' ? false : true }), undefined);
    expect(request.insight).toBe(insight);
    expect(request.input.series.map((series) => series.event)).toEqual(['$pageview']);
  });

  test('blank query-string values count as absent', () => {
    const input = parseTrendsRequest(
      { events: JSON.stringify([pageview]), date_from: '', interval: '', breakdown: '', formula: '', compare: '', actions: '[]' },
      undefined,
    );
    expect(input).toMatchObject({ dateFrom: null, interval: 'day', breakdown: null, formula: null, compare: false });
  });

  test('action entities and ActionsNodes name the action (by id) they count, sorted with events by order', () => {
    const legacy = parseTrendsRequest({}, { events: [{ id: '$pageview', order: 2 }], actions: [{ id: '12', order: 1, math: 'dau', custom_name: 'Sign-ups' }] });
    expect(legacy.series.map(({ event, action, order, math, customName }) => ({ event, action, order, math, customName }))).toEqual([
      { event: null, action: { id: 12, attr: 'actions__0__id' }, order: 0, math: 'dau', customName: 'Sign-ups' },
      { event: '$pageview', action: null, order: 1, math: 'total', customName: null },
    ]);
    const node = parseTrendsRequest({}, { query: trendsQuery({ series: [{ kind: 'ActionsNode', id: 3, properties: [{ key: 'x', operator: 'is_set' }] }] }) });
    expect(node.series[0]).toMatchObject({ event: null, action: { id: 3, attr: 'query__series__0__id' }, properties: { type: 'AND' } });
  });

  test('an empty actions list is fine', () => {
    expect(parseTrendsRequest({}, { events: [pageview], actions: [] }).series).toHaveLength(1);
  });

  test('a cohort breakdown lists cohort ids and "all" (0 too), once each, from a list, its JSON text or one id', () => {
    const cohorts = (breakdown: unknown) => parseTrendsRequest({}, { events: [pageview], breakdown, breakdown_type: 'cohort' }).breakdown;
    expect(cohorts([3, 'all', '4', 3])).toEqual({ type: 'cohort', cohorts: [3, 'all', 4], limit: 2 });
    expect(cohorts('[5, 0]')).toEqual({ type: 'cohort', cohorts: [5, 'all'], limit: 1 });
    expect(cohorts(7)).toEqual({ type: 'cohort', cohorts: [7], limit: 0 });
    const node = parseTrendsRequest({}, { query: trendsQuery({ breakdownFilter: { breakdown: ['all', 9], breakdown_type: 'cohort' } }) });
    expect(node.breakdown).toEqual({ type: 'cohort', cohorts: ['all', 9], limit: 1 });
  });

  test('breakdown settings without a breakdown are ignored', () => {
    expect(parseTrendsRequest({}, { events: [pageview], breakdown_type: 'cohort', breakdown_limit: 0 }).breakdown).toBeNull();
  });

  test('compare_to is ignored without compare', () => {
    expect(parseTrendsRequest({}, { events: [pageview], compare: false, compare_to: '-1w' }).compare).toBe(false);
  });

  test('a whitespace-only formula is no formula', () => {
    expect(parseTrendsRequest({}, { events: [pageview], formula: '  ' }).formula).toBeNull();
  });

  test('TrendsQuery: formulas[0] stands in for formula', () => {
    const series = [
      { kind: 'EventsNode', event: 'a' },
      { kind: 'EventsNode', event: 'b' },
    ];
    expect(parseTrendsQuery({ kind: 'TrendsQuery', series, trendsFilter: { formulas: ['A-B'] } }).formula).toBe('A-B');
    expect(parseTrendsQuery({ kind: 'TrendsQuery', series, trendsFilter: { formula: 'A+B', formulas: ['A-B', 'B'] } }).formula).toBe('A+B');
  });
});

describe('parseEntities', () => {
  test('sorts stably by order; an entity without one sorts at its position', () => {
    const series = parseEntities([{ id: 'two', order: 2 }, { id: 'at-one' }, { id: 'zero', order: 0 }, { id: 'also-zero', order: '0' }], 'events');
    expect(series.map((entry) => [entry.event, entry.order])).toEqual([
      ['zero', 0],
      ['also-zero', 1],
      ['at-one', 2],
      ['two', 3],
    ]);
  });

  test('JSON text and absence', () => {
    expect(parseEntities(JSON.stringify([pageview]), 'steps').map((entry) => entry.event)).toEqual(['$pageview']);
    expect(parseEntities(undefined, 'events')).toEqual([]);
    expect(parseEntities('', 'events')).toEqual([]);
  });

  test('errors name the given attr', () => {
    expect(caught(() => parseEntities([{ id: 'a', math: 'nope' }], 'funnel_steps'))).toMatchObject({ attr: 'funnel_steps__0__math' });
  });
});

describe('parsePropertyFilters', () => {
  test.each([undefined, null, '', [], '[]', { type: 'AND', values: [] }, { type: 'AND', values: [{ type: 'OR', values: [] }] }, '{"type":"OR","values":[]}'])(
    'empty: %j',
    (raw) => {
      expect(parsePropertyFilters(raw, 'properties')).toBeNull();
    },
  );

  test('defaults: event type, exact operator, cohort in', () => {
    expect(
      parsePropertyFilters(
        [
          { key: '$browser', value: 'Chrome' },
          { key: 'id', value: '12', type: 'cohort' },
          { value: 3, type: 'cohort', operator: 'not_in' },
        ],
        'p',
      ),
    ).toEqual({
      type: 'AND',
      values: [
        { type: 'event', key: '$browser', operator: 'exact', value: 'Chrome' },
        { type: 'cohort', key: 'id', operator: 'in', value: 12 },
        { type: 'cohort', key: 'id', operator: 'not_in', value: 3 },
      ],
    });
  });

  test('is_set and is_not_set carry no value', () => {
    expect(
      parsePropertyFilters(
        [
          { key: 'a', operator: 'is_set', value: 'is_set' },
          { key: 'b', operator: 'is_not_set' },
        ],
        'p',
      ),
    ).toEqual({
      type: 'AND',
      values: [
        { type: 'event', key: 'a', operator: 'is_set' },
        { type: 'event', key: 'b', operator: 'is_not_set' },
      ],
    });
  });

  test('nested groups keep their shape; empty branches are dropped', () => {
    const raw = JSON.stringify({
      type: 'OR',
      values: [
        { type: 'AND', values: [] },
        { type: 'AND', values: [chrome, { type: 'OR', values: [corp] }] },
      ],
    });
    expect(parsePropertyFilters(raw, 'p')).toEqual({
      type: 'OR',
      values: [
        {
          type: 'AND',
          values: [
            { type: 'event', key: '$browser', operator: 'exact', value: 'Chrome' },
            { type: 'OR', values: [{ type: 'person', key: 'email', operator: 'icontains', value: '@corp.com' }] },
          ],
        },
      ],
    });
  });

  test('keys may hold any characters (values are bound downstream)', () => {
    const key = "x' OR 1=1; DROP TABLE events; -- \u00e9\n`";
    expect(parsePropertyFilters([{ key, value: "'); --" }], 'p')).toEqual({
      type: 'AND',
      values: [{ type: 'event', key, operator: 'exact', value: "'); --" }],
    });
  });
});

interface ErrorCase {
  code: 'invalid_input' | 'required' | 'invalid_choice';
  attr: string | null;
  detail?: RegExp;
  /** As query-string text the value would be valid (`3` is a fine property name or formula). */
  bodyOnly?: true;
}

const legacyErrors: [string, Fields, ErrorCase][] = [
  ['insight FUNNELS', { insight: 'FUNNELS', events: [pageview] }, { code: 'invalid_choice', attr: 'insight' }],
  ['insight not a string', { insight: 5, events: [pageview] }, { code: 'invalid_choice', attr: 'insight' }],
  ['first error wins', { insight: 'PATHS', events: 'oops' }, { code: 'invalid_choice', attr: 'insight' }],
  ['shown_as unknown', { shown_as: 'Retention', events: [pageview] }, { code: 'invalid_choice', attr: 'shown_as' }],
  ['stickiness with a breakdown', { insight: 'STICKINESS', events: [pageview], breakdown: 'plan' }, { code: 'invalid_input', attr: 'breakdown' }],
  ['stickiness with a formula', { shown_as: 'Stickiness', events: [pageview, signup], formula: 'A+B' }, { code: 'invalid_input', attr: 'formula' }],
  ['lifecycle with a breakdown', { insight: 'LIFECYCLE', events: [pageview], breakdown: 'plan' }, { code: 'invalid_input', attr: 'breakdown' }],
  ['lifecycle with two series', { insight: 'LIFECYCLE', events: [pageview, signup] }, { code: 'invalid_input', attr: 'events' }],
  ['lifecycle compared', { shown_as: 'Lifecycle', events: [pageview], compare: true }, { code: 'invalid_input', attr: 'compare' }],
  ['events malformed JSON', { events: '[{"id": ' }, { code: 'invalid_input', attr: 'events', detail: /JSON/ }],
  ['events not a list', { events: { id: 'x' } }, { code: 'invalid_input', attr: 'events' }],
  ['entity null', { events: [null] }, { code: 'required', attr: 'events__0' }],
  ['entity not an object', { events: ['$pageview'] }, { code: 'invalid_input', attr: 'events__0' }],
  ['action entity with a name for id', { events: [{ id: 'signed up', type: 'actions' }] }, { code: 'invalid_input', attr: 'events__0__id' }],
  ['entity of unknown type', { events: [{ id: 'x', type: 'data_warehouse' }] }, { code: 'invalid_choice', attr: 'events__0__type' }],
  ['entity order not an integer', { events: [{ id: 'x', order: 'first' }] }, { code: 'invalid_input', attr: 'events__0__order' }],
  ['entity id a number', { events: [{ id: 5 }] }, { code: 'invalid_input', attr: 'events__0__id' }],
  ['entity name not a string', { events: [{ id: 'x', name: 3 }] }, { code: 'invalid_input', attr: 'events__0__name' }],
  ['entity custom_name not a string', { events: [{ id: 'x', custom_name: {} }] }, { code: 'invalid_input', attr: 'events__0__custom_name' }],
  ['unknown math', { events: [{ id: 'x', math: 'unique_session' }] }, { code: 'invalid_choice', attr: 'events__0__math' }],
  ['hogql math', { events: [{ id: 'x', math: 'hogql', math_hogql: 'count()' }] }, { code: 'invalid_choice', attr: 'events__0__math', detail: /not supported/ }],
  [
    'error in the second entity (request position)',
    { events: [pageview, { id: 'x', order: -1, math: 'bogus' }] },
    { code: 'invalid_choice', attr: 'events__1__math' },
  ],
  ...PROPERTY_MATH.map((math): [string, Fields, ErrorCase] => [
    `${math} without math_property`,
    { events: [{ id: 'x', math }] },
    { code: 'required', attr: 'events__0__math_property' },
  ]),
  ['math_property not a string', { events: [{ id: 'x', math: 'sum', math_property: 5 }] }, { code: 'invalid_input', attr: 'events__0__math_property' }],
  ['unique_group without index', { events: [{ id: 'x', math: 'unique_group' }] }, { code: 'required', attr: 'events__0__math_group_type_index' }],
  [
    'unique_group index 5',
    { events: [{ id: 'x', math: 'unique_group', math_group_type_index: 5 }] },
    { code: 'invalid_input', attr: 'events__0__math_group_type_index' },
  ],
  [
    'unique_group index -1',
    { events: [{ id: 'x', math: 'unique_group', math_group_type_index: -1 }] },
    { code: 'invalid_input', attr: 'events__0__math_group_type_index' },
  ],
  [
    'unique_group index 1.5',
    { events: [{ id: 'x', math: 'unique_group', math_group_type_index: 1.5 }] },
    { code: 'invalid_input', attr: 'events__0__math_group_type_index' },
  ],
  [
    'entity filter error',
    { events: [{ id: 'x', properties: [{ key: 'a', value: 1, operator: 'like' }] }] },
    { code: 'invalid_choice', attr: 'events__0__properties__0__operator' },
  ],
  ['action entity without id', { events: [pageview], actions: [{ type: 'actions' }] }, { code: 'required', attr: 'actions__0__id' }],
  ['actions as JSON text, of another type', { actions: '[{"id": 4, "type": "cohort"}]' }, { code: 'invalid_choice', attr: 'actions__0__type' }],
  ['actions malformed JSON', { events: [pageview], actions: '[{' }, { code: 'invalid_input', attr: 'actions' }],
  ...['yesterday', '-7x', '7', 'd', '2025-02-30', '2025-13-01', '2025-01-01T25:00', '01/02/2025', '-1dStart'].map((from): [string, Fields, ErrorCase] => [
    `date_from ${from}`,
    { events: [pageview], date_from: from },
    { code: 'invalid_input', attr: 'date_from' },
  ]),
  ['date_from a number', { events: [pageview], date_from: 7 }, { code: 'invalid_input', attr: 'date_from' }],
  ['date_to all', { events: [pageview], date_to: 'all' }, { code: 'invalid_input', attr: 'date_to' }],
  ['date_to garbage', { events: [pageview], date_to: 'now' }, { code: 'invalid_input', attr: 'date_to' }],
  ['interval year', { events: [pageview], interval: 'year' }, { code: 'invalid_choice', attr: 'interval' }],
  ['interval Day (case)', { events: [pageview], interval: 'Day' }, { code: 'invalid_choice', attr: 'interval' }],
  ['display unknown', { events: [pageview], display: 'FunnelViz' }, { code: 'invalid_choice', attr: 'display' }],
  ['cohort breakdown of a name', { events: [pageview], breakdown: 'x', breakdown_type: 'cohort' }, { code: 'invalid_input', attr: 'breakdown__0' }],
  ['cohort breakdown of a negative id', { events: [pageview], breakdown: [2, -1], breakdown_type: 'cohort' }, { code: 'invalid_input', attr: 'breakdown__1' }],
  ['cohort breakdown of nothing', { events: [pageview], breakdown: [], breakdown_type: 'cohort' }, { code: 'invalid_input', attr: 'breakdown' }],
  ['property breakdown list as text', { events: [pageview], breakdown: '[3]' }, { code: 'invalid_input', attr: 'breakdown' }],
  ['numeric breakdown', { events: [pageview], breakdown: 3 }, { code: 'invalid_input', attr: 'breakdown', bodyOnly: true }],
  ...['session', 'data_warehouse', 'Event_metadata'].map((type): [string, Fields, ErrorCase] => [
    `breakdown_type ${type}`,
    { events: [pageview], breakdown: 'x', breakdown_type: type },
    { code: 'invalid_choice', attr: 'breakdown_type' },
  ]),
  ...[
    ['event_metadata', '$browser'],
    ['event_metadata', 'distinct_id'],
    ['hogql', 'properties.$browser'],
    ['hogql', 'lower(event)'],
  ].map(([type, breakdown]): [string, Fields, ErrorCase] => [
    `${type} breakdown of ${breakdown}`,
    { events: [pageview], breakdown, breakdown_type: type },
    { code: 'invalid_input', attr: 'breakdown', detail: /only .*"event"/ },
  ]),
  ['group breakdown without index', { events: [pageview], breakdown: 'x', breakdown_type: 'group' }, { code: 'required', attr: 'breakdown_group_type_index' }],
  [
    'group breakdown index 7',
    { events: [pageview], breakdown: 'x', breakdown_type: 'group', breakdown_group_type_index: 7 },
    { code: 'invalid_input', attr: 'breakdown_group_type_index' },
  ],
  ...[0, -1, 1001, 2.5, 'ten'].map((limit): [string, Fields, ErrorCase] => [
    `breakdown_limit ${limit}`,
    { events: [pageview], breakdown: 'x', breakdown_limit: limit },
    { code: 'invalid_input', attr: 'breakdown_limit' },
  ]),
  ['compare yes', { events: [pageview], compare: 'yes' }, { code: 'invalid_input', attr: 'compare' }],
  ['compare 1', { events: [pageview], compare: 1 }, { code: 'invalid_input', attr: 'compare' }],
  ['compare_to', { events: [pageview], compare: true, compare_to: '-1w' }, { code: 'invalid_input', attr: 'compare_to', detail: /not supported/ }],
  ...['A+C', 'A+', 'A$B', '(A+B', 'A+B)', 'a+b', 'AB', 'A B', '1..2', 'A^2', '()', 'SUM(A)', '+A', 'A*+B'].map((formula): [string, Fields, ErrorCase] => [
    `formula ${formula}`,
    { events: [pageview, signup], formula },
    { code: 'invalid_input', attr: 'formula' },
  ]),
  ['formula not a string', { events: [pageview], formula: 1 }, { code: 'invalid_input', attr: 'formula', bodyOnly: true }],
  ['properties malformed JSON', { events: [pageview], properties: '[{"key":' }, { code: 'invalid_input', attr: 'properties', detail: /JSON/ }],
  ['properties as a key-value dict', { events: [pageview], properties: { $browser: 'Chrome' } }, { code: 'invalid_input', attr: 'properties' }],
  ['properties a number', { events: [pageview], properties: 3 }, { code: 'invalid_input', attr: 'properties' }],
  ['filter null', { events: [pageview], properties: [null] }, { code: 'required', attr: 'properties__0' }],
  ...['element', 'session', 'hogql', 'data_warehouse', 'static-cohort', 'behavioral', 'feature', 'Person'].map((type): [string, Fields, ErrorCase] => [
    `filter type ${type}`,
    { events: [pageview], properties: [{ key: 'x', value: 'y', type }] },
    { code: 'invalid_choice', attr: 'properties__0__type' },
  ]),
  ['filter without key', { events: [pageview], properties: [chrome, { value: 'y' }] }, { code: 'required', attr: 'properties__1__key' }],
  ['filter with empty key', { events: [pageview], properties: [{ key: '', value: 'y' }] }, { code: 'required', attr: 'properties__0__key' }],
  ['filter key a number', { events: [pageview], properties: [{ key: 5, value: 'y' }] }, { code: 'invalid_input', attr: 'properties__0__key' }],
  [
    'unknown operator',
    { events: [pageview], properties: [{ key: 'x', value: 'y', operator: 'contains' }] },
    { code: 'invalid_choice', attr: 'properties__0__operator' },
  ],
  [
    'in on an event filter',
    { events: [pageview], properties: [{ key: 'x', value: 'y', operator: 'in' }] },
    { code: 'invalid_choice', attr: 'properties__0__operator' },
  ],
  [
    'not_in on a person filter',
    { events: [pageview], properties: [{ key: 'x', value: 'y', operator: 'not_in', type: 'person' }] },
    { code: 'invalid_choice', attr: 'properties__0__operator' },
  ],
  ['filter without value', { events: [pageview], properties: [{ key: 'x' }] }, { code: 'required', attr: 'properties__0__value' }],
  [
    'filter with null value',
    { events: [pageview], properties: [{ key: 'x', value: null, operator: 'icontains' }] },
    { code: 'required', attr: 'properties__0__value' },
  ],
  ['filter with empty list value', { events: [pageview], properties: [{ key: 'x', value: [] }] }, { code: 'required', attr: 'properties__0__value' }],
  ['filter with object value', { events: [pageview], properties: [{ key: 'x', value: { a: 1 } }] }, { code: 'invalid_input', attr: 'properties__0__value' }],
  [
    'filter with nested list value',
    { events: [pageview], properties: [{ key: 'x', value: ['a', ['b']] }] },
    { code: 'invalid_input', attr: 'properties__0__value' },
  ],
  ['filter with null in list', { events: [pageview], properties: [{ key: 'x', value: ['a', null] }] }, { code: 'invalid_input', attr: 'properties__0__value' }],
  ...['gt', 'gte', 'lt', 'lte'].map((operator): [string, Fields, ErrorCase] => [
    `${operator} with text`,
    { events: [pageview], properties: [{ key: 'x', value: 'ten', operator }] },
    { code: 'invalid_input', attr: 'properties__0__value', detail: /numeric/ },
  ]),
  [
    'gt with a list',
    { events: [pageview], properties: [{ key: 'x', value: [1, 2], operator: 'gt' }] },
    { code: 'invalid_input', attr: 'properties__0__value' },
  ],
  ...['is_date_before', 'is_date_after', 'is_date_exact'].map((operator): [string, Fields, ErrorCase] => [
    `${operator} with a non-date`,
    { events: [pageview], properties: [{ key: 'x', value: 'last tuesday', operator }] },
    { code: 'invalid_input', attr: 'properties__0__value' },
  ]),
  [
    'is_date_after with a number',
    { events: [pageview], properties: [{ key: 'x', value: 20250101, operator: 'is_date_after' }] },
    { code: 'invalid_input', attr: 'properties__0__value' },
  ],
  [
    'group filter without index',
    { events: [pageview], properties: [{ key: 'x', value: 'y', type: 'group' }] },
    { code: 'required', attr: 'properties__0__group_type_index' },
  ],
  [
    'group filter index 5',
    { events: [pageview], properties: [{ key: 'x', value: 'y', type: 'group', group_type_index: 5 }] },
    { code: 'invalid_input', attr: 'properties__0__group_type_index' },
  ],
  ['cohort filter without value', { events: [pageview], properties: [{ key: 'id', type: 'cohort' }] }, { code: 'required', attr: 'properties__0__value' }],
  [
    'cohort filter with a name',
    { events: [pageview], properties: [{ key: 'id', type: 'cohort', value: 'paying' }] },
    { code: 'invalid_input', attr: 'properties__0__value' },
  ],
  [
    'cohort filter with exact',
    { events: [pageview], properties: [{ ...inCohort, operator: 'exact' }] },
    { code: 'invalid_choice', attr: 'properties__0__operator' },
  ],
  ['cohort filter with another key', { events: [pageview], properties: [{ ...inCohort, key: 'name' }] }, { code: 'invalid_input', attr: 'properties__0__key' }],
  ['group of unknown type', { events: [pageview], properties: { type: 'XOR', values: [chrome] } }, { code: 'invalid_choice', attr: 'properties__type' }],
  ['group without values', { events: [pageview], properties: { type: 'OR' } }, { code: 'required', attr: 'properties__values' }],
  ['group values not a list', { events: [pageview], properties: { type: 'AND', values: chrome } }, { code: 'invalid_input', attr: 'properties__values' }],
  [
    'nested group error',
    {
      events: [pageview],
      properties: { type: 'AND', values: [{ type: 'OR', values: [chrome, { key: 'a', value: 'b', operator: 'bogus' }] }] },
    },
    { code: 'invalid_choice', attr: 'properties__values__0__values__1__operator' },
  ],
];

describe('legacy 400s', () => {
  test.each(legacyErrors)('%s', (_name, legacy, expected) => {
    const errors = [caught(() => parseTrendsRequest({}, legacy))];
    if (!expected.bodyOnly) errors.push(caught(() => parseTrendsRequest(asQueryString(legacy), undefined)));
    for (const error of errors) {
      expect(error).toMatchObject({ status: 400, type: 'validation_error', code: expected.code, attr: expected.attr });
      if (expected.detail) expect(error.detail).toMatch(expected.detail);
    }
  });

  test('a body that is not an object', () => {
    expect(caught(() => parseTrendsRequest({}, [pageview]))).toMatchObject({ status: 400, type: 'validation_error', code: 'invalid_input', attr: null });
  });
});

const series = [{ kind: 'EventsNode', event: '$pageview' }];
const trendsQuery = (fields: Fields): Fields => ({ kind: 'TrendsQuery', series, ...fields });

const queryErrors: [string, unknown, ErrorCase][] = [
  ['malformed JSON', '{"kind": "TrendsQuery", ', { code: 'invalid_input', attr: 'query', detail: /JSON/ }],
  ['not an object', [series], { code: 'invalid_input', attr: 'query' }],
  ['another kind', { kind: 'FunnelsQuery', series }, { code: 'invalid_choice', attr: 'query__kind' }],
  ['no kind', { series }, { code: 'invalid_choice', attr: 'query__kind' }],
  ['no series', { kind: 'TrendsQuery' }, { code: 'required', attr: 'query__series' }],
  ['series not a list', trendsQuery({ series: series[0] }), { code: 'invalid_input', attr: 'query__series' }],
  ['ActionsNode without id', trendsQuery({ series: [{ kind: 'ActionsNode', name: 'Signed up' }] }), { code: 'required', attr: 'query__series__0__id' }],
  ['DataWarehouseNode', trendsQuery({ series: [{ kind: 'DataWarehouseNode', table_name: 't' }] }), { code: 'invalid_choice', attr: 'query__series__0__kind' }],
  ['series without kind', trendsQuery({ series: [{ event: 'x' }] }), { code: 'invalid_choice', attr: 'query__series__0__kind' }],
  ['event not a string', trendsQuery({ series: [...series, { kind: 'EventsNode', event: 3 }] }), { code: 'invalid_input', attr: 'query__series__1__event' }],
  [
    'unknown math',
    trendsQuery({ series: [{ kind: 'EventsNode', event: 'x', math: 'first_time_for_user' }] }),
    { code: 'invalid_choice', attr: 'query__series__0__math' },
  ],
  [
    'hogql math',
    trendsQuery({ series: [{ kind: 'EventsNode', event: 'x', math: 'hogql' }] }),
    { code: 'invalid_choice', attr: 'query__series__0__math', detail: /not supported/ },
  ],
  [
    'avg without math_property',
    trendsQuery({ series: [{ kind: 'EventsNode', event: 'x', math: 'avg' }] }),
    { code: 'required', attr: 'query__series__0__math_property' },
  ],
  [
    'unique_group index',
    trendsQuery({ series: [{ kind: 'EventsNode', event: 'x', math: 'unique_group', math_group_type_index: 9 }] }),
    { code: 'invalid_input', attr: 'query__series__0__math_group_type_index' },
  ],
  [
    'series filter',
    trendsQuery({ series: [{ kind: 'EventsNode', event: 'x', properties: [{ key: 'a', type: 'hogql' }] }] }),
    { code: 'invalid_choice', attr: 'query__series__0__properties__0__type' },
  ],
  ['dateRange not an object', trendsQuery({ dateRange: '-7d' }), { code: 'invalid_input', attr: 'query__dateRange' }],
  ['date_from', trendsQuery({ dateRange: { date_from: 'last week' } }), { code: 'invalid_input', attr: 'query__dateRange__date_from' }],
  ['date_to all', trendsQuery({ dateRange: { date_to: 'all' } }), { code: 'invalid_input', attr: 'query__dateRange__date_to' }],
  ['interval', trendsQuery({ interval: 'quarter' }), { code: 'invalid_choice', attr: 'query__interval' }],
  ['properties', trendsQuery({ properties: [{ key: 'x', value: 'y', type: 'session' }] }), { code: 'invalid_choice', attr: 'query__properties__0__type' }],
  [
    'properties group',
    trendsQuery({ properties: { type: 'AND', values: [{ type: 'OR', values: [{ key: 'x' }] }] } }),
    { code: 'required', attr: 'query__properties__values__0__values__0__value' },
  ],
  [
    'breakdown_type',
    trendsQuery({ breakdownFilter: { breakdown: 'x', breakdown_type: 'session' } }),
    { code: 'invalid_choice', attr: 'query__breakdownFilter__breakdown_type' },
  ],
  [
    'HogQL breakdown other than event',
    trendsQuery({ breakdownFilter: { breakdown: 'x', breakdown_type: 'hogql' } }),
    { code: 'invalid_input', attr: 'query__breakdownFilter__breakdown' },
  ],
  [
    'cohort breakdown of too many cohorts',
    trendsQuery({ breakdownFilter: { breakdown: Array.from({ length: 26 }, (_, i) => i + 1), breakdown_type: 'cohort' } }),
    { code: 'invalid_input', attr: 'query__breakdownFilter__breakdown' },
  ],
  [
    'breakdown_limit',
    trendsQuery({ breakdownFilter: { breakdown: 'x', breakdown_limit: 5000 } }),
    { code: 'invalid_input', attr: 'query__breakdownFilter__breakdown_limit' },
  ],
  [
    'group breakdown index',
    trendsQuery({ breakdownFilter: { breakdown: 'x', breakdown_type: 'group' } }),
    { code: 'required', attr: 'query__breakdownFilter__breakdown_group_type_index' },
  ],
  [
    'multiple breakdowns',
    trendsQuery({ breakdownFilter: { breakdowns: [{ property: 'a' }, { property: 'b' }] } }),
    { code: 'invalid_input', attr: 'query__breakdownFilter__breakdowns' },
  ],
  ['display', trendsQuery({ trendsFilter: { display: 'Heatmap' } }), { code: 'invalid_choice', attr: 'query__trendsFilter__display' }],
  ['formula', trendsQuery({ trendsFilter: { formula: 'A+B' } }), { code: 'invalid_input', attr: 'query__trendsFilter__formula', detail: /refers to series B/ }],
  ['two formulas', trendsQuery({ trendsFilter: { formulas: ['A', 'A*2'] } }), { code: 'invalid_input', attr: 'query__trendsFilter__formulas' }],
  ['formulas[0]', trendsQuery({ trendsFilter: { formulas: ['A+'] } }), { code: 'invalid_input', attr: 'query__trendsFilter__formulas__0' }],
  ['compare', trendsQuery({ compareFilter: { compare: 'maybe' } }), { code: 'invalid_input', attr: 'query__compareFilter__compare' }],
  ['compare_to', trendsQuery({ compareFilter: { compare: true, compare_to: '-1y' } }), { code: 'invalid_input', attr: 'query__compareFilter__compare_to' }],
];

describe('TrendsQuery 400s', () => {
  test.each(queryErrors)('%s', (_name, query, expected) => {
    const viaRequest = caught(() => parseTrendsRequest({ query: typeof query === 'string' ? query : JSON.stringify(query) }, undefined));
    for (const error of [caught(() => parseTrendsQuery(query)), caught(() => parseTrendsRequest({}, { query })), viaRequest]) {
      expect(error).toMatchObject({ status: 400, type: 'validation_error', code: expected.code, attr: expected.attr });
      if (expected.detail) expect(error.detail).toMatch(expected.detail);
    }
  });

  test('attr prefixes every field name', () => {
    expect(caught(() => parseTrendsQuery({ kind: 'LifecycleQuery' }, 'source'))).toMatchObject({ code: 'invalid_choice', attr: 'source__kind' });
    expect(caught(() => parseTrendsQuery(trendsQuery({ interval: 'x' }), 'source'))).toMatchObject({ attr: 'source__interval' });
  });
});
