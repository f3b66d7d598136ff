/**
 * Web analytics' metric definitions (docs/web-analytics.md#queries) against a plain TypeScript reference on
 * random sessions, PostHog's bounce edge cases, merged persons, and the stats table's breakdowns; events straight
 * into chDB's `events` table.
 */
import fc from 'fast-check';
import { insertEvents, insertPersonOverrides } from '@plover/clickhouse';
import { ApiError } from '@plover/core';
import type { InsightContext } from '../src/types';
import type { ActionDefinition } from '../src/types';
import {
  changeFromPrevious,
  parseWebExternalClicksQuery,
  parseWebQuery,
  parseWebStatsQuery,
  runWebExternalClicks,
  runWebGoals,
  runWebOverview,
  runWebStatsTable,
} from '../src/web';
import { eventRow } from './support/event-row';
import { useScratchClickHouse } from './support/scratch-clickhouse';
import { noActions } from './support/context';

const engine = useScratchClickHouse('plover-web-');
let nextProject = 1;
let uuidCounter = 0;

/** The range every test reads: 2025-03-10 and 2025-03-11 (UTC). */
const FROM = Date.UTC(2025, 2, 10);
const END = Date.UTC(2025, 2, 12);
const NOW = new Date(Date.UTC(2025, 2, 13));
const RANGE = { date_from: '2025-03-10', date_to: '2025-03-11' };

interface Ev {
  person: string;
  session: string;
  event: string;
  /** Epoch ms. */
  at: number;
  path?: string;
  browser?: string;
  referringDomain?: string;
  /** More event properties. */
  extra?: Record<string, unknown>;
}

const personId = (name: string) => `00000000-0000-4000-8000-${Buffer.from(name).toString('hex').slice(0, 12).padStart(12, '0')}`;
/** A UUIDv7 session id from a small number. */
const v7 = (n: number) => `01958000-0000-7000-8000-${n.toString(16).padStart(12, '0')}`;
const text = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

async function project(events: readonly Ev[], actions: readonly ActionDefinition[] = []): Promise<InsightContext> {
  const projectId = nextProject++;
  await insertEvents(
    engine(),
    events.map((ev) => {
      uuidCounter += 1;
      const uuid = `00000000-0000-7000-8000-${uuidCounter.toString(16).padStart(12, '0')}`;
      const properties = {
        ...(ev.path ? { $current_url: `https://example.com${ev.path}`, $pathname: ev.path } : {}),
        ...(ev.referringDomain ? { $referring_domain: ev.referringDomain } : {}),
        $browser: ev.browser ?? 'Chrome',
        ...ev.extra,
      };
      return { ...eventRow({ uuid, projectId, event: ev.event, at: text(ev.at), person: personId(ev.person), properties }), session_id: ev.session };
    }),
  );
  return { projectId, timezone: 'UTC', now: NOW, cohortMembers: () => Promise.resolve([]), action: noActions, goalActions: () => Promise.resolve(actions) };
}

const overview = async (ctx: InsightContext, node: Record<string, unknown> = {}) =>
  Object.fromEntries((await runWebOverview(engine(), parseWebQuery({ dateRange: RANGE, ...node }), ctx)).results.map((item) => [item.key, item.value]));

/** PostHog's definitions, in plain TypeScript over the same events. */
function reference(events: readonly Ev[]) {
  const sessions = new Map<string, Ev[]>();
  for (const ev of events) {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(ev.session)) continue;
    sessions.set(ev.session, [...(sessions.get(ev.session) ?? []), ev]);
  }
  const counted: { person: string; views: number; duration: number; bounce: boolean | null }[] = [];
  for (const all of sessions.values()) {
    const start = Math.min(...all.map((ev) => ev.at));
    const end = Math.max(...all.map((ev) => ev.at));
    const duration = Math.floor(end / 1000) - Math.floor(start / 1000);
    const pages = all.filter((ev) => ev.event === '$pageview' || ev.event === '$screen').length;
    const clicks = all.filter((ev) => ev.event === '$autocapture').length;
    const bounce = pages === 0 ? null : !(pages > 1 || clicks > 0 || duration >= 10);
    const inRange = all.filter((ev) => (ev.event === '$pageview' || ev.event === '$screen') && ev.at >= FROM && ev.at < END);
    if (inRange.length === 0 || start < FROM || start >= END) continue;
    counted.push({ person: inRange[0]!.person, views: inRange.length, duration, bounce });
  }
  const bounces = counted.filter((session) => session.bounce !== null);
  return {
    visitors: new Set(counted.map((session) => session.person)).size,
    views: counted.reduce((sum, session) => sum + session.views, 0),
    sessions: counted.length,
    'session duration': counted.length === 0 ? null : counted.reduce((sum, session) => sum + session.duration, 0) / counted.length,
    'bounce rate': bounces.length === 0 ? null : (bounces.filter((session) => session.bounce).length / bounces.length) * 100,
  };
}

describe('WebOverviewQuery', () => {
  it("follows PostHog's bounce definition and counts only UUIDv7 sessions that started in the range", async () => {
    const t = FROM + 3_600_000;
    const events: Ev[] = [
      // One pageview and an autocapture, 2 s: not a bounce.
      { person: 'a', session: v7(1), event: '$pageview', at: t, path: '/' },
      { person: 'a', session: v7(1), event: '$autocapture', at: t + 2000 },
      // One pageview, 10 s exactly to its pageleave: not a bounce.
      { person: 'b', session: v7(2), event: '$pageview', at: t, path: '/' },
      { person: 'b', session: v7(2), event: '$pageleave', at: t + 10_000, path: '/' },
      // One pageview, 9 s: a bounce.
      { person: 'c', session: v7(3), event: '$pageview', at: t, path: '/pricing' },
      { person: 'c', session: v7(3), event: '$pageleave', at: t + 9000, path: '/pricing' },
      // Started before the range: not counted, though it has a pageview inside.
      { person: 'd', session: v7(4), event: '$pageview', at: FROM - 60_000, path: '/' },
      { person: 'd', session: v7(4), event: '$pageview', at: FROM + 60_000, path: '/docs' },
      // Not a UUIDv7: no session at all.
      { person: 'e', session: 'not-a-uuid', event: '$pageview', at: t, path: '/' },
      { person: 'e', session: '01958000-0000-4000-8000-000000000005', event: '$pageview', at: t, path: '/' },
    ];
    const ctx = await project(events);
    const result = await overview(ctx);
    expect(result).toEqual({ visitors: 3, views: 3, sessions: 3, 'session duration': 7, 'bounce rate': (1 / 3) * 100 });
    expect(result).toEqual(reference(events));
  });

  it('counts a merged person once: the override maps both sessions to one visitor', async () => {
    const t = FROM + 7_200_000;
    const ctx = await project([
      { person: 'anon', session: v7(10), event: '$pageview', at: t, path: '/' },
      { person: 'user', session: v7(11), event: '$pageview', at: t + 60_000, path: '/' },
    ]);
    expect((await overview(ctx)).visitors).toBe(2);
    await insertPersonOverrides(engine(), [{ team_id: ctx.projectId, old_person_id: personId('anon'), override_person_id: personId('user'), version: 1 }]);
    expect(await overview(ctx)).toMatchObject({ visitors: 1, sessions: 2, views: 2 });
  });

  it('gives the previous period and the change with compare', async () => {
    const day = 86_400_000;
    const ctx = await project([
      { person: 'a', session: v7(20), event: '$pageview', at: FROM - 1.5 * day, path: '/' },
      { person: 'a', session: v7(21), event: '$pageview', at: FROM + 3_600_000, path: '/' },
      { person: 'b', session: v7(22), event: '$pageview', at: FROM + 7_200_000, path: '/' },
    ]);
    const { results } = await runWebOverview(engine(), parseWebQuery({ dateRange: RANGE, compareFilter: { compare: true } }), ctx);
    expect(results[0]).toEqual({ key: 'visitors', kind: 'unit', value: 2, previous: 1, changeFromPreviousPct: 100 });
    expect(results[4]).toMatchObject({ key: 'bounce rate', kind: 'percentage', value: 100, previous: 100, changeFromPreviousPct: 0, isIncreaseBad: true });
    expect(changeFromPrevious(5, 0)).toBeNull();
    expect(changeFromPrevious(5, null)).toBeNull();
  });

  it('equals the reference on random sessions', async () => {
    const ev = fc.record({
      person: fc.constantFrom('p1', 'p2', 'p3', 'p4'),
      session: fc.oneof(fc.integer({ min: 100, max: 108 }).map(v7), fc.constant('legacy-session')),
      event: fc.constantFrom('$pageview', '$pageview', '$screen', '$autocapture', '$pageleave', 'signed up'),
      // Whole seconds over the range and a day either side.
      at: fc.integer({ min: (FROM - 86_400_000) / 1000, max: (END + 86_400_000) / 1000 }).map((s) => s * 1000),
      path: fc.constantFrom('/', '/pricing', '/docs'),
    });
    // One person per session, as a browser has.
    const sessions = fc.array(ev, { minLength: 1, maxLength: 40 }).map((events) => {
      const owner = new Map<string, string>();
      return events.map((event) => ({ ...event, person: owner.get(event.session) ?? (owner.set(event.session, event.person), event.person) }));
    });
    await fc.assert(
      fc.asyncProperty(sessions, async (events) => {
        const ctx = await project(events);
        const got = await overview(ctx);
        const want = reference(events);
        expect({ ...got, 'session duration': got['session duration'] === null ? null : Number(got['session duration']!.toFixed(6)) }).toEqual({
          ...want,
          'session duration': want['session duration'] === null ? null : Number(want['session duration'].toFixed(6)),
        });
      }),
      { numRuns: 15 },
    );
  });

  it('filters on event properties, also those with a materialized column', async () => {
    const t = FROM + 3_600_000;
    const ctx = await project([
      { person: 'a', session: v7(80), event: '$pageview', at: t, path: '/' },
      { person: 'a', session: v7(80), event: '$pageview', at: t + 1000, path: '/pricing' },
      { person: 'b', session: v7(81), event: '$pageview', at: t, path: '/pricing', browser: 'Firefox' },
    ]);
    const only = (key: string, value: string) => overview(ctx, { properties: [{ key, value, operator: 'exact', type: 'event' }] });
    expect(await only('$pathname', '/pricing')).toMatchObject({ visitors: 2, views: 2, sessions: 2, 'bounce rate': 50 });
    expect(await only('$current_url', 'https://example.com/')).toMatchObject({ visitors: 1, views: 1, sessions: 1, 'bounce rate': 0 });
    expect(await only('$browser', 'Firefox')).toMatchObject({ visitors: 1, views: 1, sessions: 1, 'bounce rate': 100 });
  });

  it('refuses a bad node with a field-named error', () => {
    expect(() => parseWebQuery({ dateRange: 'x' })).toThrow(ApiError);
    expect(() => parseWebStatsQuery({ breakdownBy: 'Nope' })).toThrow(expect.objectContaining({ attr: 'breakdownBy' }));
    expect(() => parseWebStatsQuery({ breakdownBy: 'Page', limit: 0 })).toThrow(expect.objectContaining({ attr: 'limit' }));
  });
});

describe('WebStatsTableQuery', () => {
  it('breaks visitors, views and bounce rate down by page, entry page and browser', async () => {
    const t = FROM + 3_600_000;
    const ctx = await project([
      { person: 'a', session: v7(30), event: '$pageview', at: t, path: '/', browser: 'Firefox' },
      { person: 'a', session: v7(30), event: '$pageview', at: t + 20_000, path: '/pricing', browser: 'Firefox' },
      { person: 'b', session: v7(31), event: '$pageview', at: t, path: '/pricing' },
      { person: 'c', session: v7(32), event: '$pageview', at: t, path: '/pricing' },
      { person: 'c', session: v7(32), event: '$pageview', at: t + 1000, path: '/pricing' },
    ]);
    const table = (breakdownBy: string) =>
      runWebStatsTable(engine(), parseWebStatsQuery({ breakdownBy, dateRange: RANGE, includeBounceRate: true }), ctx).then((result) => result.results);
    // /pricing: 3 visitors, 4 views; entered by b (bounce) and c (2 pageviews: not a bounce).
    expect(await table('Page')).toEqual([
      ['/pricing', [3, null], [4, null], [0.5, null]],
      ['/', [1, null], [1, null], [0, null]],
    ]);
    expect(await table('InitialPage')).toEqual([
      ['/pricing', [2, null], [3, null], [0.5, null]],
      ['/', [1, null], [2, null], [0, null]],
    ]);
    expect(await table('Browser')).toEqual([
      ['Chrome', [2, null], [3, null], [0.5, null]],
      ['Firefox', [1, null], [2, null], [0, null]],
    ]);
    const referrers = await table('InitialReferringDomain');
    expect(referrers).toEqual([[null, [3, null], [5, null], [1 / 3, null]]]);
    const limited = await runWebStatsTable(engine(), parseWebStatsQuery({ breakdownBy: 'Page', dateRange: RANGE, limit: 1 }), ctx);
    expect(limited).toMatchObject({
      hasMore: true,
      limit: 1,
      columns: ['context.columns.breakdown_value', 'context.columns.visitors', 'context.columns.views'],
    });
    expect(limited.results).toEqual([['/pricing', [3, null], [4, null]]]);
  });
});

it('breaks visitors down by UTC offset in hours, from posthog-js’s $timezone_offset', async () => {
  const t = FROM + 3_600_000;
  const ctx = await project([
    { person: 'a', session: v7(90), event: '$pageview', at: t, path: '/', extra: { $timezone_offset: -120 } },
    { person: 'a', session: v7(90), event: '$pageview', at: t + 1000, path: '/', extra: { $timezone_offset: -120 } },
    { person: 'b', session: v7(91), event: '$pageview', at: t, path: '/', extra: { $timezone_offset: 330 } },
    { person: 'c', session: v7(92), event: '$pageview', at: t, path: '/', extra: { $timezone_offset: 0 } },
    { person: 'd', session: v7(93), event: '$pageview', at: t, path: '/' },
  ]);
  const { results } = await runWebStatsTable(engine(), parseWebStatsQuery({ breakdownBy: 'Timezone', dateRange: RANGE }), ctx);
  expect(results).toEqual([
    [2, [1, null], [2, null]],
    [-5.5, [1, null], [1, null]],
    [0, [1, null], [1, null]],
    [null, [1, null], [1, null]],
  ]);
});

it("takes a session's referring domain from its first event that has one", async () => {
  const t = FROM + 3_600_000;
  const ctx = await project([
    { person: 'a', session: v7(40), event: '$pageview', at: t, path: '/' },
    { person: 'a', session: v7(40), event: '$pageview', at: t + 1000, path: '/docs', referringDomain: 'www.google.com' },
    { person: 'a', session: v7(40), event: '$pageview', at: t + 2000, path: '/docs', referringDomain: 'news.ycombinator.com' },
  ]);
  const { results } = await runWebStatsTable(engine(), parseWebStatsQuery({ breakdownBy: 'InitialReferringDomain', dateRange: RANGE }), ctx);
  expect(results).toEqual([['www.google.com', [1, null], [3, null]]]);
});

it('breaks sessions down by channel type', async () => {
  const t = FROM + 3_600_000;
  const ctx = await project([
    { person: 'a', session: v7(50), event: '$pageview', at: t, path: '/', referringDomain: 'www.google.com' },
    { person: 'b', session: v7(51), event: '$pageview', at: t, path: '/', referringDomain: 'www.google.com' },
    { person: 'c', session: v7(52), event: '$pageview', at: t, path: '/', referringDomain: '$direct' },
    { person: 'd', session: v7(53), event: '$pageview', at: t, path: '/', referringDomain: 'l.facebook.com' },
  ]);
  const { results } = await runWebStatsTable(engine(), parseWebStatsQuery({ breakdownBy: 'InitialChannelType', dateRange: RANGE }), ctx);
  expect(results).toEqual([
    ['Organic Search', [2, null], [2, null]],
    ['Direct', [1, null], [1, null]],
    ['Organic Social', [1, null], [1, null]],
  ]);
});

describe('WebGoalsQuery', () => {
  /** Two goals: a custom event, and a pageview of a URL containing `/pricing`. */
  const GOALS: ActionDefinition[] = [
    { id: 1, name: 'Signed up', steps: [{ event: 'signed up' }] },
    { id: 2, name: 'Saw pricing', steps: [{ event: '$pageview', url: '/pricing', url_matching: 'contains' }] },
  ];
  const matches = (goal: number, ev: Ev) => (goal === 0 ? ev.event === 'signed up' : ev.event === '$pageview' && (ev.path ?? '').includes('/pricing'));

  /** The goals in plain TypeScript: sessions that started in the range and have a view or a goal event in it. */
  function goalsReference(events: readonly Ev[]) {
    const sessions = new Map<string, Ev[]>();
    for (const ev of events) {
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(ev.session)) continue;
      sessions.set(ev.session, [...(sessions.get(ev.session) ?? []), ev]);
    }
    const counted: Ev[][] = [];
    for (const all of sessions.values()) {
      const start = Math.min(...all.map((ev) => ev.at));
      const inRange = all.filter(
        (ev) => ev.at >= FROM && ev.at < END && (ev.event === '$pageview' || ev.event === '$screen' || GOALS.some((_, goal) => matches(goal, ev))),
      );
      if (inRange.length > 0 && start >= FROM && start < END) counted.push(inRange);
    }
    const visitors = new Set(counted.map((session) => session[0]!.person)).size;
    return GOALS.map((goal, index) => {
      const converting = counted.filter((session) => session.some((ev) => matches(index, ev)));
      const uniques = new Set(converting.map((session) => session[0]!.person)).size;
      const total = counted.reduce((sum, session) => sum + session.filter((ev) => matches(index, ev)).length, 0);
      return [goal.name, [uniques, null], [total, null], [visitors > 0 ? uniques / visitors : 0, null]];
    });
  }

  const goals = async (ctx: InsightContext, node: Record<string, unknown> = {}) => runWebGoals(engine(), parseWebQuery({ dateRange: RANGE, ...node }), ctx);

  it('counts converting persons, conversions and the rate over the visitors, with the previous period', async () => {
    const t = FROM + 3_600_000;
    const events: Ev[] = [
      { person: 'a', session: v7(60), event: '$pageview', at: t, path: '/' },
      { person: 'a', session: v7(60), event: 'signed up', at: t + 1000 },
      { person: 'a', session: v7(60), event: 'signed up', at: t + 2000 },
      { person: 'b', session: v7(61), event: '$pageview', at: t, path: '/pricing' },
      { person: 'c', session: v7(62), event: '$pageview', at: t, path: '/docs' },
      { person: 'c', session: v7(63), event: '$pageview', at: FROM - 3_600_000, path: '/pricing' },
    ];
    const ctx = await project(events, GOALS);
    const result = await goals(ctx, { compareFilter: { compare: true } });
    expect(result.columns).toEqual([
      'context.columns.action_name',
      'context.columns.converting_users',
      'context.columns.total_conversions',
      'context.columns.conversion_rate',
    ]);
    expect(result.results).toEqual([
      ['Signed up', [1, 0], [2, 0], [1 / 3, 0]],
      ['Saw pricing', [1, 1], [1, 1], [1 / 3, 1]],
    ]);
    expect((await goals(ctx)).results).toEqual(goalsReference(events));
  });

  it('answers no rows for a project without actions', async () => {
    const ctx = await project([{ person: 'a', session: v7(70), event: '$pageview', at: FROM + 1000, path: '/' }]);
    expect((await goals(ctx)).results).toEqual([]);
  });

  it('equals the reference on random sessions', async () => {
    const ev = fc.record({
      person: fc.constantFrom('p1', 'p2', 'p3'),
      session: fc.oneof(fc.integer({ min: 200, max: 206 }).map(v7), fc.constant('legacy-session')),
      event: fc.constantFrom('$pageview', '$screen', 'signed up', '$autocapture'),
      at: fc.integer({ min: (FROM - 86_400_000) / 1000, max: (END + 86_400_000) / 1000 }).map((s) => s * 1000),
      path: fc.constantFrom('/', '/pricing', '/pricing/team', '/docs'),
    });
    const sessions = fc.array(ev, { minLength: 1, maxLength: 30 }).map((events) => {
      const owner = new Map<string, string>();
      return events.map((event) => ({ ...event, person: owner.get(event.session) ?? (owner.set(event.session, event.person), event.person) }));
    });
    await fc.assert(
      fc.asyncProperty(sessions, async (events) => {
        const ctx = await project(events, GOALS);
        expect((await goals(ctx)).results).toEqual(goalsReference(events));
      }),
      { numRuns: 10 },
    );
  });
});

describe('WebExternalClicksTableQuery', () => {
  const click = (person: string, session: string, at: number, url: string | undefined, eventType = 'click'): Ev => ({
    person,
    session,
    event: '$autocapture',
    at,
    path: '/',
    extra: { $event_type: eventType, ...(url === undefined ? {} : { $external_click_url: url }) },
  });

  /** PostHog's definition in plain TypeScript: clicks in the range, visitors counted per session and link. */
  function clicksReference(events: readonly Ev[], strip: boolean) {
    const links = new Map<string, { persons: Set<string>; clicks: number }>();
    for (const ev of events) {
      const raw = ev.extra?.$external_click_url;
      if (ev.event !== '$autocapture' || ev.extra?.$event_type !== 'click' || typeof raw !== 'string' || ev.at < FROM || ev.at >= END) continue;
      const url = strip ? raw.replace(/[?#].*$/, '') : raw;
      if (url === '') continue;
      const link = links.get(url) ?? { persons: new Set<string>(), clicks: 0 };
      link.persons.add(ev.person);
      link.clicks += 1;
      links.set(url, link);
    }
    return [...links]
      .map(([url, link]) => [url, link.persons.size, link.clicks] as [string, number, number])
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }

  const clicks = async (ctx: InsightContext, node: Record<string, unknown> = {}) =>
    runWebExternalClicks(engine(), parseWebExternalClicksQuery({ dateRange: RANGE, ...node }), ctx);

  it('counts the visitors and clicks of each outbound link, most visitors first', async () => {
    const t = FROM + 3_600_000;
    const events: Ev[] = [
      click('a', v7(80), t, 'https://github.com/plover?tab=readme'),
      click('a', v7(80), t + 1000, 'https://github.com/plover#top'),
      click('b', v7(81), t, 'https://github.com/plover'),
      click('b', v7(81), t + 1000, 'https://docs.example.org/start'),
      click('c', v7(82), t, 'https://docs.example.org/start', 'submit'),
      click('c', v7(82), t + 1000, undefined),
      click('c', v7(83), FROM - 1000, 'https://github.com/plover'),
      { person: 'c', session: v7(82), event: '$pageview', at: t, path: '/', extra: { $external_click_url: 'https://not-a-click.example' } },
    ];
    const ctx = await project(events);
    const plain = await clicks(ctx);
    expect(plain).toMatchObject({ columns: ['context.columns.url', 'context.columns.visitors', 'context.columns.clicks'], hasMore: false, limit: 100 });
    expect(plain.results).toEqual([
      ['https://docs.example.org/start', 1, 1],
      ['https://github.com/plover', 1, 1],
      ['https://github.com/plover#top', 1, 1],
      ['https://github.com/plover?tab=readme', 1, 1],
    ]);
    expect((await clicks(ctx, { stripQueryParams: true })).results).toEqual([
      ['https://github.com/plover', 2, 3],
      ['https://docs.example.org/start', 1, 1],
    ]);
    const limited = await clicks(ctx, { stripQueryParams: true, limit: 1 });
    expect([limited.results, limited.hasMore]).toEqual([[['https://github.com/plover', 2, 3]], true]);
    expect(() => parseWebExternalClicksQuery({ limit: 0 })).toThrow(ApiError);
  });

  it('equals the reference on random clicks', async () => {
    const ev = fc.record({
      person: fc.constantFrom('p1', 'p2', 'p3'),
      session: fc.integer({ min: 300, max: 304 }).map(v7),
      at: fc.integer({ min: (FROM - 86_400_000) / 1000, max: (END + 86_400_000) / 1000 }).map((s) => s * 1000),
      url: fc.option(fc.constantFrom('https://a.example/x', 'https://a.example/x?utm=1', 'https://b.example/#y', ''), { nil: undefined }),
      eventType: fc.constantFrom('click', 'click', 'change'),
    });
    const streams = fc.array(ev, { minLength: 1, maxLength: 30 }).map((events) => {
      const owner = new Map<string, string>();
      return events.map((e) => click(owner.get(e.session) ?? (owner.set(e.session, e.person), e.person), e.session, e.at, e.url, e.eventType));
    });
    await fc.assert(
      fc.asyncProperty(streams, fc.boolean(), async (events, strip) => {
        const ctx = await project(events);
        expect((await clicks(ctx, { stripQueryParams: strip })).results).toEqual(clicksReference(events, strip));
      }),
      { numRuns: 10 },
    );
  });
});
