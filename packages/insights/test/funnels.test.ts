/**
 * Funnels on PostHog's own worked cases (its funnel test files), events straight into chDB's `events` table,
 * requests in the legacy field form; and bad input.
 */
import { insertEvents } from '@plover/clickhouse';
import { ApiError } from '@plover/core';
import { parseFunnelRequest } from '../src/funnel-input';
import { runFunnel, type FunnelStepResult } from '../src/funnels';
import type { InsightContext } from '../src/types';
import { eventRow } from './support/event-row';
import { useScratchClickHouse } from './support/scratch-clickhouse';
import { noActions } from './support/context';

const engine = useScratchClickHouse('plover-funnels-');
let nextProject = 1;

interface Fixture {
  person: string;
  event: string;
  /** ISO instant, UTC. */
  at: string;
  properties?: Record<string, unknown>;
}

const personIds = new Map<string, string>();
function personId(name: string): string {
  let id = personIds.get(name);
  if (id === undefined) personIds.set(name, (id = `00000000-0000-4000-8000-${(personIds.size + 1).toString(16).padStart(12, '0')}`));
  return id;
}

let uuidCounter = 0;
async function project(fixtures: Fixture[]): Promise<InsightContext> {
  const projectId = nextProject++;
  await insertEvents(
    engine(),
    fixtures.map((fixture) => {
      uuidCounter += 1;
      const uuid = `00000000-0000-7000-8000-${uuidCounter.toString(16).padStart(12, '0')}`;
      return eventRow({
        uuid,
        projectId,
        event: fixture.event,
        at: fixture.at.replace('T', ' ').replace('Z', ''),
        person: personId(fixture.person),
        properties: fixture.properties,
      });
    }),
  );
  return { projectId, timezone: 'UTC', now: new Date('2021-06-01T00:00:00Z'), cohortMembers: () => Promise.resolve([]), action: noActions };
}

const funnel = (ctx: InsightContext, fields: Record<string, unknown>) => runFunnel(engine(), parseFunnelRequest({}, fields), ctx);
const counts = (steps: unknown) => (steps as FunnelStepResult[]).map((step) => step.count);
const events = (...names: string[]) => names.map((id, order) => ({ id, order }));

describe('PostHog worked cases', () => {
  it('drops an actor excluded between the steps from the whole funnel, and ignores exclusions outside the window', async () => {
    const ctx = await project([
      { person: 'p1', event: 'user signed up', at: '2021-05-01T01:00:00Z' },
      { person: 'p1', event: 'paid', at: '2021-05-01T02:00:00Z' },
      { person: 'p2', event: 'user signed up', at: '2021-05-01T03:00:00Z' },
      { person: 'p2', event: 'x', at: '2021-05-01T03:30:00Z' },
      { person: 'p2', event: 'paid', at: '2021-05-01T04:00:00Z' },
      { person: 'p3', event: 'user signed up', at: '2021-05-01T05:00:00Z' },
      { person: 'p3', event: 'x', at: '2021-05-01T06:00:00Z' },
      { person: 'p4', event: 'user signed up', at: '2021-05-01T07:00:00Z' },
      { person: 'p4', event: 'x', at: '2021-05-02T08:00:00Z' },
    ]);
    const result = await funnel(ctx, {
      events: events('user signed up', 'paid'),
      funnel_window_days: 1,
      date_from: '2021-05-01',
      date_to: '2021-05-14',
      exclusions: [{ id: 'x', type: 'events', funnel_from_step: 0, funnel_to_step: 1 }],
    });
    expect(counts(result)).toEqual([2, 1]);
  });

  it('needs a distinct event for every repeated step', async () => {
    const fixtures: Fixture[] = [];
    for (let person = 0; person < 5; person += 1) {
      fixtures.push({ person: `r${person}`, event: 'user signed up', at: '2021-05-01T00:00:00Z' });
      for (let view = 0; view < person; view += 1) {
        fixtures.push({ person: `r${person}`, event: 'blaah blaa', at: `2021-05-01T0${view + 1}:00:00Z` });
        fixtures.push({ person: `r${person}`, event: '$pageview', at: `2021-05-01T0${view + 1}:30:00Z` });
      }
    }
    const ctx = await project(fixtures);
    const fields = { events: events('user signed up', '$pageview', '$pageview', '$pageview', '$pageview'), date_from: '2021-05-01', date_to: '2021-05-14' };
    expect(counts(await funnel(ctx, fields))).toEqual([5, 4, 3, 2, 1]);
  });

  it('averages conversion times over the reported chains and takes their median', async () => {
    const ctx = await project([
      { person: 'a', event: 'step one', at: '2021-05-01T00:00:00Z' },
      { person: 'a', event: 'step two', at: '2021-05-01T01:00:00Z' },
      { person: 'a', event: 'step three', at: '2021-05-01T03:00:00Z' },
      { person: 'b', event: 'step one', at: '2021-05-02T00:00:00Z' },
      { person: 'b', event: 'step two', at: '2021-05-02T02:00:00Z' },
      { person: 'c', event: 'step one', at: '2021-05-03T00:00:00Z' },
      { person: 'c', event: 'step two', at: '2021-05-03T02:00:00Z' },
      { person: 'c', event: 'step three', at: '2021-05-03T03:00:00Z' },
    ]);
    const result = (await funnel(ctx, {
      events: events('step one', 'step two', 'step three'),
      date_from: '2021-05-01',
      date_to: '2021-05-14',
    })) as FunnelStepResult[];
    expect(result.map(({ count, average_conversion_time, median_conversion_time }) => [count, average_conversion_time, median_conversion_time])).toEqual([
      [3, null, null],
      [3, 6000, 7200],
      [2, 5400, 5400],
    ]);
  });

  it('bins times to convert by the cube root of the converters, the last entry marking the upper bound', async () => {
    const ctx = await project([
      { person: 't1', event: 'sign up', at: '2021-06-07T19:00:00Z' },
      { person: 't1', event: 'pay', at: '2021-06-07T20:00:00Z' },
      { person: 't2', event: 'sign up', at: '2021-06-08T19:00:00Z' },
      { person: 't2', event: 'pay', at: '2021-06-08T19:37:00Z' },
      { person: 't3', event: 'sign up', at: '2021-06-09T19:00:00Z' },
      { person: 't3', event: 'pay', at: '2021-06-10T18:00:00Z' },
    ]);
    const fields = { events: events('sign up', 'pay'), funnel_viz_type: 'time_to_convert', date_from: '2021-06-07', date_to: '2021-06-13' };
    expect(await funnel(ctx, fields)).toEqual({
      bins: [
        [2220, 2],
        [42510, 0],
        [82800, 1],
      ],
      average_conversion_time: 29540,
    });
    const seven = (await funnel(ctx, { ...fields, bin_count: 7 })) as { bins: [number, number][] };
    expect(seven.bins.map(([start]) => start)).toEqual(Array.from({ length: 8 }, (_, i) => 2220 + i * 11512));
  });

  it('boxes breakdown values and attributes them to the first touch', async () => {
    const ctx = await project([
      { person: 'b1', event: 'sign up', at: '2020-01-01T12:00:00Z', properties: { $browser: 'Chrome' } },
      { person: 'b1', event: 'play movie', at: '2020-01-01T13:00:00Z', properties: { $browser: 'Chrome' } },
      { person: 'b1', event: 'buy', at: '2020-01-01T15:00:00Z', properties: { $browser: 'Chrome' } },
      { person: 'b2', event: 'sign up', at: '2020-01-02T14:00:00Z', properties: { $browser: 'Safari' } },
      { person: 'b2', event: 'play movie', at: '2020-01-02T16:00:00Z', properties: { $browser: 'Safari' } },
      { person: 'b3', event: 'sign up', at: '2020-01-02T14:00:00Z', properties: { $browser: 'Safari' } },
    ]);
    const result = (await funnel(ctx, {
      events: events('sign up', 'play movie', 'buy'),
      date_from: '2020-01-01',
      date_to: '2020-01-08',
      funnel_window_days: 7,
      breakdown_type: 'event',
      breakdown: '$browser',
    })) as FunnelStepResult[][];
    expect(
      result.map((group) => group.map(({ breakdown_value, count, average_conversion_time }) => [breakdown_value, count, average_conversion_time])),
    ).toEqual([
      [
        [['Chrome'], 1, null],
        [['Chrome'], 1, 3600],
        [['Chrome'], 1, 7200],
      ],
      [
        [['Safari'], 2, null],
        [['Safari'], 1, 7200],
        [['Safari'], 0, null],
      ],
    ]);
  });
});

describe('bad input', () => {
  it.each([
    [{ events: events('a') }, 'events'],
    [{ events: events('a', 'b'), funnel_window_interval: 0 }, 'funnel_window_interval'],
    [{ events: events('a', 'b'), funnel_order_type: 'sideways' }, 'funnel_order_type'],
    [{ events: events('a', 'b'), actions: [{ name: 'no id' }] }, 'actions__0__id'],
    [{ query: { kind: 'FunnelsQuery', series: [{ kind: 'EventsNode', event: 'a' }] } }, 'query__series'],
    [
      {
        query: {
          kind: 'FunnelsQuery',
          series: [
            { kind: 'EventsNode', event: 'a' },
            { kind: 'EventsNode', event: 'b' },
          ],
          funnelsFilter: { funnelWindowInterval: 0 },
        },
      },
      'query__funnelsFilter__funnelWindowInterval',
    ],
  ])('%j is a 400 naming %s', (fields, attr) => {
    expect(() => parseFunnelRequest({}, fields)).toThrow(ApiError);
    try {
      parseFunnelRequest({}, fields);
    } catch (error) {
      expect(error).toMatchObject({ status: 400, attr });
    }
  });
});
