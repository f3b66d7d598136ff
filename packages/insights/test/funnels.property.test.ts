/**
 * Funnels (docs/insights.md) against the plain TypeScript reference (support/funnel-reference.ts) on random
 * projects ingested for real through the ingestion consumer: ordered, strict and unordered funnels, repeated
 * steps, any-event steps, exclusions, windows from a minute to a week, breakdowns under every attribution, and
 * aggregation by group.
 */
import fc from 'fast-check';
import type { FunnelInput } from '../src/funnel-input';
import { runFunnel, type FunnelStepResult } from '../src/funnels';
import type { Series } from '../src/types';
import { worldArb } from './support/generate';
import { referenceFunnelSteps, type FunnelGroup } from './support/funnel-reference';
import { openIngestion, type Ingestion } from './support/ingest';
import { seriesOf } from './support/inputs';
import { ingestWorld } from './support/project';

const STEP_EVENTS = ['$pageview', 'signed up', 'purchase'] as const;

const stepArb: fc.Arbitrary<Series> = fc
  .tuple(fc.option(fc.constantFrom(...STEP_EVENTS), { freq: 6 }), fc.boolean())
  .map(([event, filtered]) =>
    seriesOf(event, filtered ? { properties: { type: 'AND', values: [{ type: 'event', key: 'plan', operator: 'is_not', value: 'free' }] } } : {}),
  );

const funnelInputArb: fc.Arbitrary<FunnelInput> = fc
  .record({
    steps: fc.array(stepArb, { minLength: 2, maxLength: 4 }),
    orderType: fc.constantFrom('ordered' as const, 'strict' as const, 'unordered' as const),
    window: fc.constantFrom({ amount: 5, unit: 'minute' as const }, { amount: 3, unit: 'hour' as const }, { amount: 2, unit: 'day' as const }, { amount: 14, unit: 'day' as const }, { amount: 1, unit: 'week' as const }),
    excluded: fc.boolean(),
    breakdown: fc.constantFrom(null, { property: 'plan', type: 'event' as const }, { property: 'tier', type: 'person' as const }),
    limit: fc.integer({ min: 1, max: 4 }),
    attribution: fc.constantFrom('first_touch' as const, 'last_touch' as const, 'all_events' as const, 'step' as const),
    attributionStep: fc.nat(3),
    byGroup: fc.boolean(),
    dateFrom: fc.constantFrom('-30d', '-14d', 'all'),
  })
  .map((raw) => {
    const steps = raw.steps.map((step, order) => ({ ...step, order }));
    const last = steps.length - 1;
    const unordered = raw.orderType === 'unordered';
    return {
      steps,
      exclusions: raw.excluded ? [{ series: seriesOf("it's done"), fromStep: unordered ? 0 : Math.min(raw.attributionStep, last - 1), toStep: last }] : [],
      window: raw.window,
      dateFrom: raw.dateFrom,
      dateTo: null,
      properties: null,
      orderType: raw.orderType,
      vizType: 'steps',
      breakdown: raw.breakdown === null ? null : { ...raw.breakdown, groupTypeIndex: null, limit: raw.limit },
      attribution: raw.attribution,
      attributionStep: raw.attribution === 'step' && !unordered ? Math.min(raw.attributionStep, last) : 0,
      aggregationGroupTypeIndex: raw.byGroup ? 0 : null,
      fromStep: 0,
      toStep: last,
      binCount: null,
      interval: 'day',
    };
  });

/** The engine's steps in the reference's terms, times rounded to the microsecond. */
function groupsOf(result: unknown): FunnelGroup[] {
  const round = (value: number | null) => (value === null ? null : Math.round(value * 1e6) / 1e6);
  const steps = result as FunnelStepResult[] | FunnelStepResult[][];
  if (steps.length === 0) return [];
  const groups = Array.isArray(steps[0]) ? (steps as FunnelStepResult[][]) : [steps as FunnelStepResult[]];
  return groups.map((group) => ({
    value: group[0]?.breakdown_value?.[0] ?? null,
    counts: group.map((step) => step.count),
    average: group.map((step) => round(step.average_conversion_time)),
    median: group.map((step) => round(step.median_conversion_time)),
  }));
}

const rounded = (groups: FunnelGroup[]) =>
  groups.map((group) => ({
    ...group,
    average: group.average.map((value) => (value === null ? null : Math.round(value * 1e6) / 1e6)),
    median: group.median.map((value) => (value === null ? null : Math.round(value * 1e6) / 1e6)),
  }));

describe('funnels on ingested events', () => {
  let ingestion: Ingestion;

  beforeAll(async () => {
    ingestion = await openIngestion();
  }, 180_000);

  afterAll(async () => {
    await ingestion?.close();
  });

  it('computes the steps the reference computes, for random events and random funnels', async () => {
    const worldAndInputs = worldArb.chain((world) => fc.tuple(fc.constant(world), fc.array(funnelInputArb, { minLength: 6, maxLength: 6 })));
    let converted = 0;
    await fc.assert(
      fc.asyncProperty(worldAndInputs, async ([world, inputs]) => {
        const project = await ingestWorld(ingestion, world);
        for (const input of inputs) {
          const expected = rounded(referenceFunnelSteps(input, project.reference, project.events));
          expect({ input, groups: groupsOf(await runFunnel(ingestion.clickhouse, input, project.ctx)) }).toEqual({ input, groups: expected });
          if (expected.some((group) => (group.counts[1] ?? 0) > 0)) converted += 1;
        }
      }),
      { numRuns: 10, seed: 31, interruptAfterTimeLimit: 90_000 },
    );
    expect(converted).toBeGreaterThan(0);
  }, 200_000);
});
