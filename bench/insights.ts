/**
 * Insights on chDB (embedded): BENCH_INSIGHTS_EVENTS (10,000,000) events of BENCH_INSIGHTS_PERSONS (100,000)
 * persons over the 30 days before a fixed `now`, then four insights, each through the engine
 * (`@plover/insights`) and through a hand-written ClickHouse query for the same answer: results asserted
 * equal, then timed (1 warm-up, BENCH_INSIGHTS_RUNS (5) runs each, interleaved). Prints one JSON line.
 *
 *   node --conditions=plover-source --import tsx bench/insights.ts
 *
 * The dataset (bench/insights-dataset.ts, generated inside ClickHouse) goes into BENCH_INSIGHTS_DIR
 * (.cache/bench-insights, gitignored). The directory is removed at the end unless BENCH_INSIGHTS_KEEP=1; a later
 * run whose generator SQL is the same reuses a kept dataset instead of generating it again (its `loadSeconds` are
 * then the original run's).
 *
 * Timings are wall clock; `cpuMedianMs` is this process's CPU time during the call (chDB's threads included),
 * which says more than wall time on a machine shared with other work: on 2 idle cores, wall ≈ CPU / 2 at best.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { countEvents, PERSON_ID_EXPRESSION, PERSON_OVERRIDES_SUBQUERY, type ClickHouse } from '@plover/clickhouse';
import {
  parseCorrelationRequest,
  runFunnelCorrelation,
  runTrends,
  type Breakdown,
  type InsightContext,
  type MathType,
  type Series,
  type TrendsInput,
} from '@plover/insights';
import { openDataset } from './insights-dataset';

const EVENTS = Number(process.env.BENCH_INSIGHTS_EVENTS ?? 10_000_000);
const PERSONS = Number(process.env.BENCH_INSIGHTS_PERSONS ?? 100_000);
const RUNS = Number(process.env.BENCH_INSIGHTS_RUNS ?? 5);
const DATA_DIR = path.resolve(process.env.BENCH_INSIGHTS_DIR ?? path.join(__dirname, '..', '.cache', 'bench-insights'));
const KEEP = process.env.BENCH_INSIGHTS_KEEP === '1';
const PROJECT_ID = 1;
const TIMEZONE = 'Europe/Berlin';
const NOW = new Date('2026-11-21T11:00:00Z');
const DAYS = 30;

function round(n: number, digits = 1): number {
  return Math.round(n * 10 ** digits) / 10 ** digits;
}

// The range every insight below asks for: `date_from: -30d` with `now` as the end, resolved by hand for the
// hand-written queries (NOW is 12:00 in Berlin, UTC+1 in November): from 30 days before today, 00:00, to now.
const FROM = '2026-10-22 00:00:00';
const TO = '2026-11-21 12:00:00';
const DAY_BUCKETS = Array.from({ length: DAYS + 1 }, (_, i) =>
  new Date(Date.parse(`${FROM.slice(0, 10)}T00:00:00Z`) + i * 86_400_000).toISOString().slice(0, 10),
);
const RANGE_PARAMS = { projectId: PROJECT_ID, tz: TIMEZONE, from: FROM, to: TO };
/** Events of the project in the range, each once. */
const IN_RANGE = `team_id = {projectId:Int64}
  AND timestamp >= toDateTime64({from:String}, 6, {tz:String}) AND timestamp < toDateTime64({to:String}, 6, {tz:String}) + INTERVAL 1 SECOND`;
/** Events aliased `e` joined to the current person overrides (the storage package's mapping), for PERSON_ID_EXPRESSION. */
const PERSON_JOIN = `LEFT JOIN (${PERSON_OVERRIDES_SUBQUERY}) AS o ON e.person_id = o.old_person_id`;

/** What both sides of a trend are compared on: per series, its breakdown value and its data per day bucket. */
interface TrendLine {
  breakdown: string | number | null;
  days: string[];
  data: number[];
}

/** Rows of (day, value[, breakdown]) → one line per breakdown value in first-seen order, zeros for missing days. */
function trendLines(rows: readonly { day: string; value: string | number; breakdown?: string }[]): TrendLine[] {
  const lines = new Map<string | null, TrendLine>();
  for (const row of rows) {
    const key = row.breakdown ?? null;
    let line = lines.get(key);
    if (!line) lines.set(key, (line = { breakdown: key, days: DAY_BUCKETS, data: DAY_BUCKETS.map(() => 0) }));
    const index = DAY_BUCKETS.indexOf(row.day);
    if (index < 0) throw new Error(`day ${row.day} is outside the range`);
    line.data[index] = (line.data[index] ?? 0) + Number(row.value);
  }
  return [...lines.values()];
}

async function handTrend(ch: ClickHouse): Promise<TrendLine[]> {
  const rows = await ch.query<{ day: string; value: string }>(
    'bench.hand.trend',
    `SELECT toDate(timestamp, {tz:String}) AS day, count() AS value
       FROM events FINAL WHERE ${IN_RANGE} AND event = '$pageview' GROUP BY day`,
    RANGE_PARAMS,
  );
  return trendLines(rows);
}

const BREAKDOWN_LIMIT = 25;
const OTHER = '$$_posthog_breakdown_other_$$';

/** Counts per (day, browser) in one pass over the materialized `$browser` column; the top BREAKDOWN_LIMIT browsers by events keep a line, the rest are one. */
async function handBreakdown(ch: ClickHouse): Promise<TrendLine[]> {
  const rows = await ch.query<{ day: string; breakdown: string; value: string }>(
    'bench.hand.breakdown',
    `SELECT toDate(timestamp, {tz:String}) AS day,
            if(\`mat_$browser\` = '', 'none', \`mat_$browser\`) AS breakdown, count() AS value
       FROM events FINAL WHERE ${IN_RANGE} AND event = '$pageview' GROUP BY day, breakdown`,
    RANGE_PARAMS,
  );
  const totals = new Map<string, number>();
  for (const row of rows) totals.set(row.breakdown, (totals.get(row.breakdown) ?? 0) + Number(row.value));
  const ranked = [...totals].sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1)).map(([value]) => value);
  const kept = new Set(ranked.slice(0, BREAKDOWN_LIMIT));
  const rank = (value: string) => (kept.has(value) ? ranked.indexOf(value) : BREAKDOWN_LIMIT);
  const folded = rows.map((row) => ({ ...row, breakdown: kept.has(row.breakdown) ? row.breakdown : OTHER }));
  return trendLines(folded.sort((a, b) => rank(a.breakdown) - rank(b.breakdown)));
}

async function handDau(ch: ClickHouse): Promise<TrendLine[]> {
  const rows = await ch.query<{ day: string; value: string }>(
    'bench.hand.dau',
    `SELECT toDate(e.timestamp, {tz:String}) AS day, uniqExact(${PERSON_ID_EXPRESSION}) AS value
       FROM (SELECT timestamp, person_id FROM events FINAL WHERE ${IN_RANGE} AND event = '$pageview') AS e
       ${PERSON_JOIN}
      GROUP BY day`,
    RANGE_PARAMS,
  );
  return trendLines(rows);
}

/** The funnel the engine is asked for; the hand-written query spells the same steps out. */
const FUNNEL = ['$pageview', 'added to cart', 'purchase'] as const;
const WINDOW_DAYS = 14;

interface Correlation {
  events: { event: string; success_count: number; failure_count: number; odds_ratio: number; correlation_type: 'success' | 'failure' }[];
  skewed: boolean;
}

/**
 * One pass over the range's events, grouped by person: each `$pageview` starts an attempt whose later steps are
 * the first `added to cart` after it and the first `purchase` after that, within 14 days; a person's attempt is
 * the one reaching furthest (then the earliest). Counted per other event name: persons who did it after entering
 * and before converting (or the window's end). `best` is (steps reached, entered at, converted at or window end).
 * Odds ratios, the significance cut and the top ten in JavaScript.
 */
async function handCorrelation(ch: ClickHouse): Promise<Correlation> {
  const rows = await ch.query<{ name: string | null; success: string; failure: string }>(
    'bench.hand.correlation',
    `SELECT name, countIf(converted) AS success, countIf(NOT converted) AS failure
       FROM (
         SELECT best.1 = 3 AS converted, arrayPushFront(
                  CAST(arrayDistinct(arrayFilter((n, t) -> t > best.2 AND t < best.3, other_names, other_times)), 'Array(Nullable(String))'),
                  NULL) AS names
           FROM (
             SELECT arrayMap(t0 -> (t0, arrayFirst(x -> x > t0, carts)), pageviews) AS attempts,
                    arrayMap(a -> (a.1, a.2, arrayFirst(x -> x > a.2, purchases), a.1 + INTERVAL ${WINDOW_DAYS} DAY), attempts) AS chains,
                    arrayMap(c -> (c.2 > c.1 AND c.2 <= c.4) + (c.2 > c.1 AND c.2 <= c.4 AND c.3 > c.2 AND c.3 <= c.4), chains) AS reached,
                    arrayReduce('min', arrayMap((c, r) -> (-r, c.1, if(r = 2, c.3, c.4)), chains, reached)) AS furthest_first,
                    (1 - furthest_first.1, furthest_first.2, furthest_first.3) AS best,
                    other_names, other_times
               FROM (
                 SELECT arraySort(groupArrayIf(e.timestamp, e.event = '$pageview')) AS pageviews,
                        arraySort(groupArrayIf(e.timestamp, e.event = 'added to cart')) AS carts,
                        arraySort(groupArrayIf(e.timestamp, e.event = 'purchase')) AS purchases,
                        groupArrayIf(e.event, e.event NOT IN ('$pageview', 'added to cart', 'purchase')) AS other_names,
                        groupArrayIf(e.timestamp, e.event NOT IN ('$pageview', 'added to cart', 'purchase')) AS other_times
                   FROM (SELECT timestamp, event, person_id FROM events FINAL WHERE ${IN_RANGE}) AS e
                   ${PERSON_JOIN}
                  GROUP BY ${PERSON_ID_EXPRESSION}
                 HAVING notEmpty(pageviews)
               )
           )
       )
       ARRAY JOIN names AS name
      GROUP BY name`,
    RANGE_PARAMS,
  );
  const totals = rows.find((row) => row.name === null);
  const S = Number(totals?.success ?? 0);
  const F = Number(totals?.failure ?? 0);
  if (S === 0 || F === 0) return { events: [], skewed: true };
  const entries = rows
    .filter((row) => row.name !== null && Number(row.success) + Number(row.failure) >= Math.min(25, 0.02 * (S + F)))
    .map((row) => {
      const vs = Number(row.success);
      const vf = Number(row.failure);
      const odds_ratio = ((vs + 1) * (F - vf + 1)) / ((S - vs + 1) * (vf + 1));
      return {
        event: row.name as string,
        success_count: vs,
        failure_count: vf,
        odds_ratio,
        correlation_type: odds_ratio > 1 ? ('success' as const) : ('failure' as const),
      };
    });
  const top = (type: 'success' | 'failure', sign: number) =>
    entries
      .filter((entry) => entry.correlation_type === type)
      .sort((a, b) => sign * (b.odds_ratio - a.odds_ratio) || (a.event < b.event ? -1 : 1))
      .slice(0, 10);
  return { events: [...top('success', 1), ...top('failure', -1)], skewed: S / F > 10 || F / S > 10 };
}

const CONTEXT: InsightContext = {
  projectId: PROJECT_ID,
  timezone: TIMEZONE,
  now: NOW,
  cohortMembers: () => Promise.reject(new Error('no cohorts in this benchmark')),
  action: () => Promise.reject(new Error('no actions in this benchmark')),
};

function trendInput(math: MathType, breakdown: Breakdown | null): TrendsInput {
  const series: Series = {
    event: '$pageview',
    action: null,
    name: '$pageview',
    customName: null,
    order: 0,
    math,
    mathProperty: null,
    mathGroupTypeIndex: null,
    properties: null,
  };
  return {
    series: [series],
    dateFrom: '-30d',
    dateTo: null,
    interval: 'day',
    properties: null,
    breakdown,
    compare: false,
    formula: null,
    display: 'ActionsLineGraph',
  };
}

async function engineTrend(ch: ClickHouse, input: TrendsInput): Promise<TrendLine[]> {
  const series = await runTrends(ch, input, CONTEXT);
  return series.map((line) => ({ breakdown: line.breakdown_value ?? null, days: line.days, data: line.data }));
}

const CORRELATION_REQUEST = {
  events: FUNNEL.map((id, order) => ({ id, type: 'events', order })),
  funnel_window_days: WINDOW_DAYS,
  date_from: '-30d',
  funnel_correlation_type: 'events',
};

async function engineCorrelation(ch: ClickHouse): Promise<Correlation> {
  const result = await runFunnelCorrelation(ch, parseCorrelationRequest({}, CORRELATION_REQUEST), CONTEXT);
  return {
    events: result.events.map(({ event, success_count, failure_count, odds_ratio, correlation_type }) => ({
      event: event.event,
      success_count,
      failure_count,
      odds_ratio,
      correlation_type,
    })),
    skewed: result.skewed,
  };
}

interface Case {
  name: string;
  targetMs: number;
  engine(ch: ClickHouse): Promise<unknown>;
  hand(ch: ClickHouse): Promise<unknown>;
}

const CASES: readonly Case[] = [
  { name: 'trend $pageview total, day, 30 days', targetMs: 300, engine: (ch) => engineTrend(ch, trendInput('total', null)), hand: handTrend },
  {
    name: 'same, breakdown $browser (30 values, limit 25)',
    targetMs: 1500,
    engine: (ch) => engineTrend(ch, trendInput('total', { property: '$browser', type: 'event', groupTypeIndex: null, limit: BREAKDOWN_LIMIT })),
    hand: handBreakdown,
  },
  { name: 'DAU (math dau)', targetMs: 1000, engine: (ch) => engineTrend(ch, trendInput('dau', null)), hand: handDau },
  { name: 'funnel correlation, 3 steps, events', targetMs: 3000, engine: engineCorrelation, hand: handCorrelation },
];

/** Wall and process CPU milliseconds of one call (chDB's threads are this process's, so their CPU counts). */
async function timed(call: () => Promise<unknown>): Promise<{ wall: number; cpu: number }> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  await call();
  const wall = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { wall, cpu: (used.user + used.system) / 1000 };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Asserts both sides give the same answer (that call is the warm-up), then times RUNS calls of each, alternating. */
async function measure(ch: ClickHouse, c: Case): Promise<Record<string, unknown>> {
  assert.deepStrictEqual(await c.engine(ch), await c.hand(ch), `${c.name}: the engine and the hand-written query disagree`);
  const engine: { wall: number; cpu: number }[] = [];
  const hand: { wall: number; cpu: number }[] = [];
  for (let run = 0; run < RUNS; run++) {
    if (run % 2 === 0) {
      engine.push(await timed(() => c.engine(ch)));
      hand.push(await timed(() => c.hand(ch)));
    } else {
      hand.push(await timed(() => c.hand(ch)));
      engine.push(await timed(() => c.engine(ch)));
    }
  }
  const summary = (samples: { wall: number; cpu: number }[]) => ({
    medianMs: round(median(samples.map((s) => s.wall))),
    maxMs: round(Math.max(...samples.map((s) => s.wall))),
    cpuMedianMs: round(median(samples.map((s) => s.cpu))),
  });
  const e = summary(engine);
  const h = summary(hand);
  return {
    name: c.name,
    targetMs: c.targetMs,
    engine: e,
    hand: h,
    ratio: round(e.medianMs / h.medianMs, 2),
    cpuRatio: round(e.cpuMedianMs / h.cpuMedianMs, 2),
    met: e.medianMs < c.targetMs && e.medianMs / h.medianMs <= 1.3,
  };
}

async function main(): Promise<void> {
  const loadAverageBefore = os.loadavg().map((n) => round(n));
  const { ch, dataset, reused } = await openDataset(DATA_DIR, { events: EVENTS, persons: PERSONS, projectId: PROJECT_ID, now: NOW, days: DAYS });
  try {
    const stored = await countEvents(ch, PROJECT_ID);
    if (stored !== EVENTS) throw new Error(`expected ${EVENTS} events, found ${stored}`);
    const results = [];
    for (const c of CASES) results.push(await measure(ch, c));
    const [disk] = await ch.query<{ compressed: string; uncompressed: string; parts: string }>(
      'bench.disk',
      `SELECT sum(data_compressed_bytes) AS compressed, sum(data_uncompressed_bytes) AS uncompressed, count() AS parts
         FROM system.parts WHERE active AND database = currentDatabase() AND table = 'events'`,
    );
    const [tracked] = await ch.query<{ value: string }>('bench.memory', `SELECT value FROM system.metrics WHERE metric = 'MemoryTracking'`);
    console.log(
      JSON.stringify({
        bench: 'insights',
        events: EVENTS,
        persons: PERSONS,
        timezone: TIMEZONE,
        reused,
        loadSeconds: dataset.loadSeconds,
        eventsCompressedMiB: Math.round(Number(disk?.compressed) / 2 ** 20),
        eventsUncompressedMiB: Math.round(Number(disk?.uncompressed) / 2 ** 20),
        eventsParts: Number(disk?.parts),
        runs: RUNS,
        results,
        peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
        chdbTrackedMiB: Math.round(Number(tracked?.value ?? 0) / 2 ** 20),
        loadAverageBefore,
        loadAverageAfter: os.loadavg().map((n) => round(n)),
        cpus: os.cpus().length,
        node: process.version,
      }),
    );
  } finally {
    await ch.close();
    if (!KEEP) await rm(DATA_DIR, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
