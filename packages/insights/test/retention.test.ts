/**
 * Retention on PostHog's own worked cases (its retention query runner tests), 24-hour windows against a plain
 * TypeScript reference on random events, events straight into chDB's `events` table; and bad input.
 */
import fc from 'fast-check';
import { insertEvents } from '@plover/clickhouse';
import { ApiError } from '@plover/core';
import { parseRetentionRequest, runRetention } from '../src/retention';
import type { InsightContext } from '../src/types';
import { eventRow } from './support/event-row';
import { useScratchClickHouse } from './support/scratch-clickhouse';
import { noActions } from './support/context';

const engine = useScratchClickHouse('plover-retention-');
let nextProject = 1;
let uuidCounter = 0;

const DAY0 = Date.UTC(2020, 5, 10, 5);
const DAY = 86_400_000;
const person = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

/** Events `[person, event, day (relative to 2020-06-10, at 05:00 UTC)]`. */
async function project(events: [number, string, number][], timezone = 'UTC'): Promise<InsightContext> {
  const projectId = nextProject++;
  await insertEvents(
    engine(),
    events.map(([who, event, day]) => {
      uuidCounter += 1;
      const at = new Date(DAY0 + day * DAY).toISOString().replace('T', ' ').replace('Z', '');
      return eventRow({ uuid: `00000000-0000-7000-8000-${uuidCounter.toString(16).padStart(12, '0')}`, projectId, event, at, person: person(who) });
    }),
  );
  return { projectId, timezone, now: new Date('2020-07-01T00:00:00Z'), cohortMembers: () => Promise.resolve([]), action: noActions };
}

const counts = (rows: { values: { count: number }[] }[]) => rows.map((row) => row.values.map((value) => value.count));
const zeros = (n: number) => Array<number>(n).fill(0);
const padded = (values: number[], n: number) => [...values, ...zeros(n - values.length)];

describe("PostHog's worked cases", () => {
  it('counts recurring day cohorts and their returns (test_day_interval)', async () => {
    const ctx = await project([
      ...[0, 1, 2, 5, 5.17, 6].map((day): [number, string, number] => [1, '$pageview', day]),
      ...[1, 2, 3, 6].map((day): [number, string, number] => [2, '$pageview', day]),
    ]);
    const rows = await runRetention(
      engine(),
      parseRetentionRequest({}, { query: { kind: 'RetentionQuery', dateRange: { date_to: '2020-06-20T06:00:00Z' }, retentionFilter: { totalIntervals: 11 } } }),
      ctx,
    );
    expect(rows.map((row) => row.label)).toEqual(Array.from({ length: 11 }, (_, i) => `Day ${i}`));
    expect(rows[0]).toMatchObject({ date: '2020-06-10T00:00:00Z', breakdown_value: null });
    expect(rows[0]!.values[3]).toEqual({ count: 0, label: 'Day 3' });
    expect(counts(rows)).toEqual([
      [1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0],
      padded([2, 2, 1, 0, 1, 2], 11),
      padded([2, 1, 0, 1, 2], 11),
      padded([1, 0, 0, 1], 11),
      zeros(11),
      padded([1, 1], 11),
      padded([2], 11),
      zeros(11),
      zeros(11),
      zeros(11),
      zeros(11),
    ]);
  });

  it('starts one cohort per actor at the first target event ever (test_first_time_retention)', async () => {
    const signUps: [number, number][] = [
      [9, -5],
      [9, -1],
      [1, -1],
      [1, 1],
      [1, 2],
      [1, 3],
      [1, 4],
      [2, -1],
      [3, 0],
      [4, 2],
    ];
    const views: [number, number][] = [
      [1, 0],
      [1, 1],
      [1, 2],
      [1, 5],
      [1, 6],
      [2, 1],
      [2, 2],
      [2, 3],
      [2, 6],
      [3, 1],
      [3, 3],
      [3, 4],
      [3, 5],
      [4, 3],
      [4, 5],
    ];
    const ctx = await project([
      ...signUps.map(([who, day]): [number, string, number] => [who, '$user_signed_up', day]),
      ...views.map(([who, day]): [number, string, number] => [who, '$pageview', day]),
    ]);
    const fields = {
      target_entity: { id: '$user_signed_up', type: 'events' },
      returning_entity: { id: '$pageview', type: 'events' },
      retention_type: 'retention_first_time',
      total_intervals: 7,
      date_to: '2020-06-15T06:00:00Z',
    };
    expect(counts(await runRetention(engine(), parseRetentionRequest({}, fields), ctx))).toEqual([
      [2, 1, 2, 2, 1, 0, 1],
      [1, 1, 0, 1, 1, 1, 0],
      zeros(7),
      [1, 1, 0, 1, 0, 0, 0],
      zeros(7),
      zeros(7),
      zeros(7),
    ]);
  });

  it('cuts intervals in the project timezone and dates rows with its offset (test_timezones)', async () => {
    const ctx = await project(
      [
        [1, '$pageview', 0],
        [1, '$pageview', 1],
      ],
      'US/Pacific',
    );
    const rows = await runRetention(engine(), parseRetentionRequest({}, { date_to: '2020-06-12', total_intervals: 3 }), ctx);
    expect(rows.map((row) => row.date)).toEqual(['2020-06-10T00:00:00-07:00', '2020-06-11T00:00:00-07:00', '2020-06-12T00:00:00-07:00']);
    // 05:00 UTC is 22:00 the day before in Pacific time: the views fall on the 9th (before the range) and the 10th.
    expect(counts(rows)).toEqual([
      [1, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
    ]);
  });

  it('counts an actor in every column up to their furthest return when cumulative', async () => {
    const ctx = await project([
      [1, '$pageview', 0],
      [1, '$pageview', 3],
      [2, '$pageview', 0],
      [2, '$pageview', 1],
    ]);
    const rows = await runRetention(engine(), parseRetentionRequest({}, { date_to: '2020-06-14', total_intervals: 5, cumulative: true }), ctx);
    expect(counts(rows)[0]).toEqual([2, 2, 1, 1, 0]);
  });
});

describe('24-hour windows', () => {
  const HOUR = 3_600_000;
  const JAN1 = Date.UTC(2025, 0, 1);
  /** Events `[person, event, epoch ms]`, in day offsets the project helper's way. */
  const at = (ms: number) => (ms - DAY0) / DAY;
  const node = (fields: Record<string, unknown>) =>
    parseRetentionRequest(
      {},
      { query: { kind: 'RetentionQuery', ...fields, retentionFilter: { timeWindowMode: '24_hour_windows', ...(fields.retentionFilter as object) } } },
    );

  it("counts days from each actor's first target event (PostHog's 24-hour window case)", async () => {
    const ctx = await project([
      [1, 'signed_up', at(JAN1 + 9 * HOUR)],
      [2, 'signed_up', at(JAN1 + 10 * HOUR)],
      [3, 'signed_up', at(JAN1 + DAY + 9 * HOUR)],
      [4, 'signed_up', at(JAN1 + DAY + 10 * HOUR)],
      [1, 'renewed', at(JAN1 + DAY + 12 * HOUR)],
      [2, 'renewed', at(JAN1 + 2 * DAY + 12 * HOUR)],
      [3, 'renewed', at(JAN1 + 2 * DAY + 13 * HOUR)],
    ]);
    const input = node({
      dateRange: { date_from: '2025-01-01T00:00:00Z', date_to: '2025-01-05T00:00:00Z' },
      retentionFilter: {
        period: 'Day',
        totalIntervals: 4,
        targetEntity: { id: 'signed_up', type: 'events' },
        returningEntity: { id: 'renewed', type: 'events' },
      },
    });
    const rows = counts(await runRetention(engine(), input, ctx));
    // Day 0: user 1 came back 27 hours after signing up (window 1), user 2 50 hours after (window 2).
    expect(rows[0]).toEqual([2, 1, 1, 0]);
    // Day 1: user 3 came back 28 hours later; user 4 never did and still counts in the cohort.
    expect(rows[1]).toEqual([2, 1, 0, 0]);
  });

  it('puts a return 23 hours later, on the next calendar day, in Day 0', async () => {
    const ctx = await project([
      [1, '$pageview', at(JAN1 + 20 * HOUR)],
      [1, '$pageview', at(JAN1 + DAY + 19 * HOUR)],
    ]);
    const dateRange = { date_from: '2025-01-01', date_to: '2025-01-03' };
    const rolling = counts(await runRetention(engine(), node({ dateRange, retentionFilter: { totalIntervals: 3 } }), ctx));
    const calendar = counts(
      await runRetention(engine(), parseRetentionRequest({}, { query: { kind: 'RetentionQuery', dateRange, retentionFilter: { totalIntervals: 3 } } }), ctx),
    );
    expect(rolling[0]).toEqual([1, 0, 0]);
    expect(calendar[0]).toEqual([1, 1, 0]);
  });

  it('refuses cumulative retention in 24-hour windows, as PostHog does', () => {
    expect(() => node({ retentionFilter: { cumulative: true } })).toThrow('Cumulative retention is not supported for 24 hour windows.');
  });

  /** PostHog's rolling retention in plain TypeScript (UTC, so `dateDiff` in hours is whole hours crossed). */
  function rollingReference(events: [number, string, number][], firstTime: boolean, from: number, rows: number, lookahead: number) {
    const end = from + rows * DAY;
    const hoursCrossed = (a: number, b: number) => Math.floor(b / HOUR) - Math.floor(a / HOUR);
    const cells = new Map<string, Set<number>>();
    const persons = new Set(events.map(([who]) => who));
    for (const who of persons) {
      const relevant = events
        .filter(([person, , time]) => person === who && (firstTime || (time >= from && time < end)))
        .map(([, event, time]) => ({ event, time }));
      const starts = relevant.filter((ev) => ev.event === 'signup').map((ev) => ev.time);
      if (starts.length === 0) continue;
      const t0 = Math.min(...starts);
      const r = Math.floor(hoursCrossed(from, t0) / 24);
      if (r < 0 || r >= rows) continue;
      const ks = new Set([0, ...relevant.filter((ev) => ev.event === '$pageview' && ev.time >= t0).map((ev) => Math.floor(hoursCrossed(t0, ev.time) / 24))]);
      for (const k of ks) if (k < lookahead) cells.set(`${r}:${k}`, (cells.get(`${r}:${k}`) ?? new Set()).add(who));
    }
    return Array.from({ length: rows }, (_, r) => Array.from({ length: lookahead }, (_, k) => cells.get(`${r}:${k}`)?.size ?? 0));
  }

  it('equals the reference on random events, recurring and first-time', async () => {
    const from = Date.UTC(2020, 5, 10);
    const event = fc.tuple(
      fc.integer({ min: 1, max: 4 }),
      fc.constantFrom('signup', '$pageview', '$pageview'),
      fc.integer({ min: -2 * 24 * 60, max: 7 * 24 * 60 }).map((minutes) => from + minutes * 60_000),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(event, { minLength: 1, maxLength: 25 }), fc.boolean(), async (events, firstTime) => {
        const ctx = await project(events.map(([who, name, time]): [number, string, number] => [who, name, at(time)]));
        const input = node({
          dateRange: { date_from: '2020-06-10', date_to: '2020-06-14' },
          retentionFilter: {
            totalIntervals: 4,
            retentionType: firstTime ? 'retention_first_time' : 'retention_recurring',
            targetEntity: { id: 'signup', type: 'events' },
            returningEntity: { id: '$pageview', type: 'events' },
          },
        });
        const rows = counts(await runRetention(engine(), input, ctx));
        expect(rows).toEqual(rollingReference(events, firstTime, from, rows.length, 4));
      }),
      { numRuns: 15 },
    );
  });
});

describe('bad input', () => {
  it.each([
    [{ period: 'Year' }, 'period'],
    [{ total_intervals: 0 }, 'total_intervals'],
    [{ retention_type: 'sometimes' }, 'retention_type'],
    [{ target_entity: { id: 'signed up', type: 'actions' } }, 'target_entity__0__id'],
    [{ query: { kind: 'RetentionQuery', retentionFilter: { period: 'Year' } } }, 'query__retentionFilter__period'],
  ])('%j is a 400 naming %s', (fields, attr) => {
    let caught: unknown;
    try {
      parseRetentionRequest({}, fields);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ApiError);
    expect(caught).toMatchObject({ status: 400, attr });
  });
});
