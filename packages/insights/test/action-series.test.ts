/**
 * Actions as series: an ActionsNode (or a legacy `actions` entity) counts the events its action matches, in every
 * insight that takes series. The trend over an action is checked on random events against the TypeScript
 * reference matcher (an event counts once when any step matches it), in chDB.
 */
import { insertEvents } from '@plover/clickhouse';
import fc from 'fast-check';
import type { ActionDefinition, ActionStep } from '../src/types';
import { parseInsightQuery, parseInsightRequest } from '../src/filters';
import { parseFunnelRequest } from '../src/funnel-input';
import { runFunnel, type FunnelStepResult } from '../src/funnels';
import { runLifecycle } from '../src/lifecycle';
import { parseRetentionRequest, runRetention } from '../src/retention';
import { runStickiness } from '../src/stickiness';
import { runTrends } from '../src/trends';
import type { InsightContext } from '../src/types';
import { referenceMatches, type ReferenceEvent } from './support/action-reference';
import { CHAINS } from './support/chains';
import { actionsOf } from './support/context';
import { eventRow } from './support/event-row';
import { useScratchClickHouse } from './support/scratch-clickhouse';

const clickhouse = useScratchClickHouse('plover-action-series-');

const DAYS = ['2025-01-01', '2025-01-02', '2025-01-03', '2025-01-04', '2025-01-05'];
const NOW = new Date('2025-01-05T23:00:00Z');
const PERSONS = ['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-00000000000b', '00000000-0000-4000-8000-00000000000c'];

interface Event extends ReferenceEvent {
  day: number;
  person: number;
}

let nextProject = 1;
let uuidCounter = 0;

async function store(events: readonly Event[]): Promise<number> {
  const projectId = nextProject++;
  await insertEvents(
    clickhouse(),
    events.map((event, index) => ({
      ...eventRow({
        uuid: `00000000-0000-7000-8000-${(++uuidCounter).toString(16).padStart(12, '0')}`,
        projectId,
        event: event.event,
        at: `${DAYS[event.day]} 10:00:${String(index % 60).padStart(2, '0')}.000`,
        person: PERSONS[event.person]!,
        properties: { ...event.properties, ...(event.currentUrl === undefined ? {} : { $current_url: event.currentUrl }) },
      }),
      elements_chain: event.elementsChain,
    })),
  );
  return projectId;
}

function context(projectId: number, actions: readonly ActionDefinition[]): InsightContext {
  return { projectId, timezone: 'UTC', now: NOW, cohortMembers: () => Promise.resolve([]), action: actionsOf(actions) };
}

const URLS = [undefined, 'https://app.example.com/signup', 'https://app.example.com/pricing'];
const chainNames = Object.keys(CHAINS) as (keyof typeof CHAINS)[];

const eventArb: fc.Arbitrary<Event> = fc
  .record({
    event: fc.constantFrom('$autocapture', '$autocapture', '$pageview', 'signed up'),
    chain: fc.constantFrom(...chainNames),
    currentUrl: fc.constantFrom(...URLS),
    plan: fc.constantFrom(undefined, 'free', 'pro'),
    day: fc.integer({ min: 0, max: DAYS.length - 1 }),
    person: fc.integer({ min: 0, max: PERSONS.length - 1 }),
  })
  .map(({ event, chain, currentUrl, plan, day, person }): Event => ({
    event,
    elementsChain: event === '$autocapture' ? CHAINS[chain] : '',
    ...(currentUrl === undefined ? {} : { currentUrl }),
    properties: plan === undefined ? {} : { plan },
    day,
    person,
  }));

const stepArb: fc.Arbitrary<ActionStep> = fc
  .record({
    event: fc.constantFrom(undefined, '$autocapture', '$pageview', 'signed up'),
    selector: fc.constantFrom(undefined, 'button', 'a', 'form button', '#signup', 'li > a'),
    text: fc.constantFrom(undefined, 'Pricing', 'o'),
    text_matching: fc.constantFrom(undefined, 'exact', 'contains'),
    href: fc.constantFrom(undefined, '/pricing', 'posthog'),
    href_matching: fc.constantFrom(undefined, 'exact', 'contains'),
    url: fc.constantFrom(undefined, 'pricing', 'signup', '^https://app'),
    url_matching: fc.constantFrom(undefined, 'contains', 'regex', 'exact'),
    properties: fc.constantFrom(
      undefined,
      [{ key: 'plan', value: 'pro', operator: 'exact', type: 'event' }],
      [{ key: 'plan', operator: 'is_set', type: 'event' }],
      [{ key: 'plan', value: ['free'], operator: 'is_not', type: 'event' }],
    ),
  })
  .map((step) => Object.fromEntries(Object.entries(step).filter(([, value]) => value !== undefined)) as ActionStep);

const trendsQuery = (series: unknown[], extra: Record<string, unknown> = {}) => ({
  kind: 'TrendsQuery',
  series,
  dateRange: { date_from: DAYS[0], date_to: DAYS[DAYS.length - 1] },
  interval: 'day',
  ...extra,
});

describe('a trend over an action', () => {
  it('counts per day the events the reference matcher picks, each once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(eventArb, { minLength: 1, maxLength: 30 }), fc.array(stepArb, { minLength: 0, maxLength: 3 }), async (events, steps) => {
        const action: ActionDefinition = { id: 7, name: 'Signed up', steps };
        const projectId = await store(events);
        const { input } = parseInsightQuery(trendsQuery([{ kind: 'ActionsNode', id: 7 }]));
        const [result] = await runTrends(clickhouse(), input, context(projectId, [action]));
        const want = DAYS.map((_, day) => events.filter((event) => event.day === day && referenceMatches(action, event)).length);
        expect(result?.data).toEqual(want);
        expect(result?.label).toBe('Signed up');
        expect(result?.action).toMatchObject({ id: 7, type: 'actions', name: 'Signed up' });
      }),
      { numRuns: 25, seed: 3202 },
    );
  });
});

describe('actions in every insight', () => {
  const pricing: ActionDefinition = {
    id: 11,
    name: 'Viewed pricing',
    steps: [
      { event: '$pageview', url: 'pricing' },
      { event: '$autocapture', href: '/pricing' },
    ],
  };
  const signup: ActionDefinition = { id: 12, name: 'Signed up', steps: [{ event: 'signed up' }] };
  // Person a: pricing page day 0, pricing link day 1, signed up day 2. Person b: pricing day 1 and 3. Person c: signed up day 0 only.
  const events: Event[] = [
    { event: '$pageview', elementsChain: '', currentUrl: 'https://app.example.com/pricing', properties: { plan: 'free' }, day: 0, person: 0 },
    { event: '$autocapture', elementsChain: CHAINS.pricingLink, currentUrl: 'https://app.example.com/', properties: { plan: 'pro' }, day: 1, person: 0 },
    { event: 'signed up', elementsChain: '', properties: {}, day: 2, person: 0 },
    { event: '$pageview', elementsChain: '', currentUrl: 'https://app.example.com/pricing', properties: { plan: 'pro' }, day: 1, person: 1 },
    { event: '$pageview', elementsChain: '', currentUrl: 'https://app.example.com/pricing?x', properties: {}, day: 3, person: 1 },
    { event: 'signed up', elementsChain: '', properties: {}, day: 0, person: 2 },
    { event: '$pageview', elementsChain: '', currentUrl: 'https://app.example.com/home', properties: {}, day: 0, person: 2 },
  ];
  let projectId = 0;
  beforeAll(async () => {
    projectId = await store(events);
  });
  const ctx = () => context(projectId, [pricing, signup]);

  it('legacy action entities sort with event entities by order; breakdowns and formulas take them', async () => {
    const { input } = parseInsightRequest(
      {},
      { events: [{ id: '$pageview', order: 1 }], actions: [{ id: 11, order: 0, type: 'actions' }], breakdown: 'plan', date_from: DAYS[0], date_to: DAYS[4] },
    );
    const results = await runTrends(clickhouse(), input, ctx());
    const byLabel = Object.fromEntries(results.map((result) => [result.label, result.count]));
    expect(byLabel).toEqual({
      'Viewed pricing - free': 1,
      'Viewed pricing - pro': 2,
      'Viewed pricing - none': 1,
      '$pageview - free': 1,
      '$pageview - pro': 1,
      '$pageview - none': 2,
    });
    const formula = parseInsightQuery(
      trendsQuery(
        [
          { kind: 'ActionsNode', id: 11 },
          { kind: 'ActionsNode', id: 12 },
        ],
        { trendsFilter: { formula: 'A+B' } },
      ),
    ).input;
    const [sum] = await runTrends(clickhouse(), formula, ctx());
    expect(sum?.data).toEqual([2, 2, 1, 1, 0]);
  });

  it('an unknown action is a 400 naming the series', async () => {
    const { input } = parseInsightQuery(
      trendsQuery([
        { kind: 'EventsNode', event: '$pageview' },
        { kind: 'ActionsNode', id: 99 },
      ]),
    );
    await expect(runTrends(clickhouse(), input, ctx())).rejects.toMatchObject({ status: 400, attr: 'query__series__1__id' });
    const funnel = parseFunnelRequest(
      {},
      {
        query: {
          kind: 'FunnelsQuery',
          series: [
            { kind: 'ActionsNode', id: 11 },
            { kind: 'ActionsNode', id: 98 },
          ],
          dateRange: { date_from: DAYS[0] },
        },
      },
    );
    await expect(runFunnel(clickhouse(), funnel, ctx())).rejects.toMatchObject({ status: 400, attr: 'query__series__1__id' });
    const legacy = parseFunnelRequest({}, { events: [{ id: '$pageview' }], actions: [{ id: 97, order: 1 }], date_from: DAYS[0] });
    await expect(runFunnel(clickhouse(), legacy, ctx())).rejects.toMatchObject({ status: 400, attr: 'actions__0__id' });
  });

  it('funnel steps and exclusions', async () => {
    const steps = await runFunnel(
      clickhouse(),
      parseFunnelRequest(
        {},
        {
          actions: [
            { id: 11, order: 0 },
            { id: 12, order: 1 },
          ],
          date_from: DAYS[0],
          date_to: DAYS[4],
        },
      ),
      ctx(),
    );
    expect((steps as FunnelStepResult[]).map(({ action_id, name, type, count }) => ({ action_id, name, type, count }))).toEqual([
      { action_id: 11, name: 'Viewed pricing', type: 'actions', count: 2 },
      { action_id: 12, name: 'Signed up', type: 'actions', count: 1 },
    ]);
    const excluded = await runFunnel(
      clickhouse(),
      parseFunnelRequest(
        {},
        {
          query: {
            kind: 'FunnelsQuery',
            series: [
              { kind: 'EventsNode', event: '$pageview' },
              { kind: 'EventsNode', event: 'signed up' },
            ],
            funnelsFilter: { exclusions: [{ kind: 'ActionsNode', id: 11, funnelFromStep: 0, funnelToStep: 1 }] },
            dateRange: { date_from: DAYS[0], date_to: DAYS[4] },
          },
        },
      ),
      ctx(),
    );
    // Person a clicks the pricing link between their first pageview and signing up: excluded, so b and c remain.
    expect((excluded as FunnelStepResult[]).map((step) => step.count)).toEqual([2, 0]);
  });

  it('retention, stickiness and lifecycle', async () => {
    const retention = await runRetention(
      clickhouse(),
      parseRetentionRequest(
        {},
        { target_entity: { id: 11, type: 'actions' }, returning_entity: { id: 11, type: 'actions' }, date_to: DAYS[4], total_intervals: 5, period: 'Day' },
      ),
      ctx(),
    );
    const first = retention.find((row) => row.date.startsWith(DAYS[1]!));
    expect(first?.values.map((value) => value.count)).toEqual([2, 0, 1, 0, 0]);
    const sticky = parseInsightRequest({}, { insight: 'STICKINESS', actions: [{ id: 11 }], date_from: DAYS[0], date_to: DAYS[4] }).input;
    const [stickiness] = await runStickiness(clickhouse(), sticky, ctx());
    expect(stickiness).toMatchObject({ label: 'Viewed pricing', data: [0, 2, 0, 0, 0], action: { id: 11, type: 'actions' } });
    const life = parseInsightQuery({
      kind: 'LifecycleQuery',
      series: [{ kind: 'ActionsNode', id: 12 }],
      dateRange: { date_from: DAYS[0], date_to: DAYS[4] },
    }).input;
    const lifecycle = await runLifecycle(clickhouse(), life, ctx());
    expect(lifecycle.map((status) => status.label)).toEqual(['Signed up - new', 'Signed up - returning', 'Signed up - resurrecting', 'Signed up - dormant']);
  });
});
