/**
 * Paths (docs/insights.md) against the plain TypeScript reference (support/paths-reference.ts) on random
 * projects ingested for real through the ingestion consumer: page views, screens, custom and `$` events in
 * bursts with gaps around the 30-minute split, same-timestamp events, repeats, merged persons; random event
 * types, start and end points, step and edge limits, edge weights, exclusions, cleaning rules and groupings.
 */
import fc from 'fast-check';
import type { JsonValue } from '../src/types';
import { runPaths, type PathEdge, type PathsInput } from '../src/paths';
import { openIngestion, type DatasetEvent, type Ingestion } from './support/ingest';
import { referencePaths } from './support/paths-reference';
import { noActions } from './support/context';

const URLS = ['/', '/pricing', '/pricing/', '/about', '/user/12', '/user/7?x=1', 'https://a.io/docs/', ''] as const;
const SCREENS = ['Home', 'Settings'] as const;
/** Gaps before an event (ms): none, short (most), just under, at and over 30 minutes, days. */
const GAPS = [0, 1000, 20_000, 50_000, 50_000, 120_000, 600_000, 1_799_999, 1_800_000, 2_700_000, 2 * 86_400_000] as const;
const START = Date.UTC(2025, 2, 20, 9);
const TIMEZONES = ['UTC', 'Europe/Berlin', 'America/New_York'] as const;

const eventArb = fc.record({
  person: fc.nat(2),
  anonymous: fc.boolean(),
  kind: fc.constantFrom('$pageview', '$pageview', '$pageview', '$screen', 'signed up', 'purchase', '$autocapture'),
  url: fc.option(fc.constantFrom(...URLS), { freq: 8 }),
  screen: fc.option(fc.constantFrom(...SCREENS), { freq: 6 }),
  gap: fc.constantFrom(...GAPS),
});

interface PathsWorld {
  timezone: string;
  events: (typeof eventArb extends fc.Arbitrary<infer T> ? T : never)[];
  merged: boolean[];
}

const worldArb: fc.Arbitrary<PathsWorld> = fc.record({
  timezone: fc.constantFrom(...TIMEZONES),
  events: fc.array(eventArb, { minLength: 25, maxLength: 60 }),
  merged: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
});

const ITEMS = ['/', '/pricing', '/pricing/', '/about', 'Home', 'signed up', 'purchase', '/u/12', '*pricing*'] as const;
const RULES = [
  { regex: '\\?.*', alias: '' },
  { regex: '/user/(\\d+)', alias: '/u/\\1' },
  { regex: '^https://[a-z.]+', alias: '' },
] as const;

/** No point more often than a point. */
const pointArb = fc.oneof({ arbitrary: fc.constant(null), weight: 3 }, { arbitrary: fc.constantFrom(...ITEMS), weight: 2 });

const inputArb: fc.Arbitrary<PathsInput> = fc
  .record({
    includeEventTypes: fc.subarray(['$pageview', '$screen', 'custom_event'] as const),
    startPoint: pointArb,
    endPoint: pointArb,
    stepLimit: fc.integer({ min: 2, max: 6 }),
    edgeLimit: fc.constantFrom(50, 4),
    minEdgeWeight: fc.constantFrom(null, null, null, 2),
    maxEdgeWeight: fc.constantFrom(null, null, null, 1, 3),
    pathGroupings: fc.constantFrom([], ['*pricing*'], ['/user/*', '/*']),
    excludeEvents: fc.constantFrom([], ['/about'], ['purchase', '$pageview']),
    cleaning: fc.subarray([...RULES]),
    dateFrom: fc.constantFrom('-30d', 'all', 'all', '-1d'),
  })
  .map((raw) => ({
    ...raw,
    endPoint: raw.endPoint === raw.startPoint ? null : raw.endPoint,
    minEdgeWeight: raw.maxEdgeWeight !== null && raw.minEdgeWeight !== null && raw.minEdgeWeight > raw.maxEdgeWeight ? null : raw.minEdgeWeight,
    dateTo: null,
    properties: null,
    funnelPaths: null,
  }));

function dataset(world: PathsWorld): { beforeMerges: DatasetEvent[]; merges: DatasetEvent[]; afterMerges: DatasetEvent[] } {
  let at = START;
  const events = world.events.map((raw): DatasetEvent => {
    at += raw.gap;
    const properties: Record<string, JsonValue> = {};
    if (raw.kind === '$pageview' && raw.url !== null) properties.$current_url = raw.url;
    if (raw.kind === '$screen' && raw.screen !== null) properties.$screen_name = raw.screen;
    return { distinctId: raw.anonymous ? `anon-${raw.person}` : `user-${raw.person}`, event: raw.kind, properties, timestamp: at };
  });
  const merges = world.merged.flatMap((merged, person): DatasetEvent[] =>
    merged ? [{ distinctId: `user-${person}`, event: '$identify', properties: { $anon_distinct_id: `anon-${person}` }, timestamp: START - 86_400_000 }] : [],
  );
  return { beforeMerges: events, merges, afterMerges: [] };
}

const rounded = (edges: PathEdge[]) => edges.map((edge) => ({ ...edge, average_conversion_time: Math.round(edge.average_conversion_time * 1000) / 1000 }));

describe('paths on ingested events', () => {
  let ingestion: Ingestion;

  beforeAll(async () => {
    ingestion = await openIngestion();
  }, 180_000);

  afterAll(async () => {
    await ingestion?.close();
  });

  it('computes the edges the reference computes, for random events and random path options', async () => {
    let nonEmpty = 0;
    let edgeCount = 0;
    await fc.assert(
      fc.asyncProperty(worldArb, fc.array(inputArb, { minLength: 8, maxLength: 8 }), async (world, inputs) => {
        const { projectId, events } = await ingestion.ingest(dataset(world));
        const last = Math.max(...events.map((event) => event.timestamp));
        const now = new Date(last + 3_600_000);
        const ctx = { projectId, timezone: world.timezone, now, cohortMembers: () => Promise.resolve([]), action: noActions };
        const reference = { timezone: world.timezone, now, cohorts: new Map<number, readonly string[]>() };
        for (const input of inputs) {
          const expected = rounded(referencePaths(input, reference, events));
          expect({ input, edges: rounded(await runPaths(ingestion.clickhouse, input, ctx)) }).toEqual({ input, edges: expected });
          if (expected.length > 0) nonEmpty += 1;
          edgeCount += expected.length;
        }
      }),
      { numRuns: 12, seed: 31, interruptAfterTimeLimit: 90_000 },
    );
    // Not vacuous: many inputs have edges, and many edges were compared.
    expect(nonEmpty).toBeGreaterThan(15);
    expect(edgeCount).toBeGreaterThan(50);
  }, 200_000);
});
