/**
 * Experiment exposures and per-variant sufficient statistics (docs/experiments.md) against the plain TypeScript
 * reference (support/experiment-reference.ts) on small random streams ingested for real: late and repeated
 * exposures, exposures outside the experiment's dates, values that are no variant, metric events before the
 * exposure, units in two variants (also through a merge of two ids) under both handlings, conversion windows,
 * outlier clipping, custom exposure events, test accounts and group units.
 */
import fc from 'fast-check';
import { experimentStatistics, runExperimentExposures, type ExperimentMetric, type ExperimentTarget, type MetricSource } from '../src/experiments';
import type { JsonValue } from '../src/types';
import { referenceExposures, referenceStatistics } from './support/experiment-reference';
import type { Dataset, DatasetEvent } from './support/ingest';
import { openIngestion, type Ingestion } from './support/ingest';
import { seriesOf } from './support/inputs';
import { ingestWorld } from './support/project';

const START = Date.UTC(2025, 2, 10, 12);
const HOUR = 3_600_000;
const FLAG = 'checkout-flow';
const VARIANTS = ['control', 'test', 'test-2'];

const rawEventArb = fc.record({
  person: fc.nat(5),
  anonymous: fc.boolean(),
  kind: fc.constantFrom('exposure', 'exposure', 'exposure', 'other-flag', 'custom', 'custom'),
  variant: fc.constantFrom('control', 'test', 'test-2', 'false', 'holdout'),
  /** Hours from 2 days before the start to 7 days after it. */
  at: fc.integer({ min: -48, max: 168 }),
  amount: fc.integer({ min: 0, max: 40 }),
  session: fc.constantFrom('', 's1', 's2', 's3'),
  plan: fc.constantFrom('free', 'pro'),
  company: fc.constantFrom(null, 'acme', 'globex', 'initech'),
  localhost: fc.boolean(),
});

const datasetArb = fc
  .record({
    exposures: fc.array(
      rawEventArb.map((raw) => ({ ...raw, kind: raw.kind === 'custom' || raw.kind === 'other-flag' ? raw.kind : 'exposure' })),
      { minLength: 15, maxLength: 30 },
    ),
    conversions: fc.array(
      rawEventArb.map((raw) => ({ ...raw, kind: ['purchase', 'checkout', 'pay'][raw.amount % 3]! })),
      { minLength: 15, maxLength: 30 },
    ),
    /** Distinct millisecond offsets, so that no two events of a unit share a timestamp. */
    offsets: fc.uniqueArray(fc.integer({ min: 0, max: HOUR - 1 }), { minLength: 60, maxLength: 60 }),
    merged: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
  })
  .map(({ exposures, conversions, offsets, merged }): Dataset => {
    const events = [...exposures, ...conversions];
    const toEvent = (raw: (typeof events)[number], i: number): DatasetEvent => {
      const properties: Record<string, JsonValue> = { plan: raw.plan, amount: raw.amount, $host: raw.localhost ? 'localhost:8000' : 'shop.example.com' };
      if (raw.session !== '') properties.$session_id = raw.session;
      if (raw.company !== null) properties.$groups = { company: raw.company };
      let event = raw.kind;
      if (raw.kind === 'exposure' || raw.kind === 'other-flag') {
        event = '$feature_flag_called';
        Object.assign(properties, { $feature_flag: raw.kind === 'exposure' ? FLAG : 'other', $feature_flag_response: raw.variant });
      } else if (raw.kind === 'custom') {
        event = 'viewed checkout';
        properties[`$feature/${FLAG}`] = raw.variant;
      }
      const distinctId = raw.anonymous ? `anon-${raw.person}` : `user-${raw.person}`;
      return { distinctId, event, properties, timestamp: START + raw.at * HOUR + offsets[i]! };
    };
    const merges = merged.flatMap((yes, person) =>
      yes ? [{ distinctId: `user-${person}`, event: '$identify', properties: { $anon_distinct_id: `anon-${person}` }, timestamp: START - 72 * HOUR }] : [],
    );
    return { beforeMerges: events.map(toEvent), merges, afterMerges: [] };
  });

const source = (event: string | null, overrides: Partial<MetricSource> = {}): MetricSource => ({ ...seriesOf(event), math: 'total', ...overrides });

const filtered = (event: string): MetricSource =>
  source(event, { properties: { type: 'AND', values: [{ type: 'event', key: 'plan', operator: 'is_not', value: 'free' }] } });

const windowArb = fc.constantFrom(null, 3600, 86_400, 3 * 86_400);

const metricArb: fc.Arbitrary<ExperimentMetric> = fc.oneof(
  fc.record({
    type: fc.constant('mean' as const),
    source: fc.constantFrom(
      source('purchase'),
      filtered('purchase'),
      source('purchase', { math: 'sum', mathProperty: 'amount' }),
      source('checkout', { math: 'unique_session' }),
      source(null),
    ),
    lowerPercentile: fc.constantFrom(null, 0, 0.1, 0.5),
    upperPercentile: fc.constantFrom(null, 0.5, 0.9, 1),
    window: windowArb,
  }),
  fc.record({
    type: fc.constant('funnel' as const),
    steps: fc.array(fc.constantFrom(source('checkout'), source('purchase'), filtered('pay'), source('pay')), { minLength: 1, maxLength: 3 }),
    window: windowArb,
  }),
  fc.record({
    type: fc.constant('ratio' as const),
    numerator: fc.constantFrom(source('purchase', { math: 'sum', mathProperty: 'amount' }), source('pay')),
    denominator: fc.constantFrom(source('checkout'), source('checkout', { math: 'unique_session' })),
    window: windowArb,
  }),
);

const targetArb: fc.Arbitrary<Omit<ExperimentTarget, 'variants'>> = fc.record({
  flagKey: fc.constant(FLAG),
  start: fc.constant(new Date(START)),
  end: fc.constantFrom(new Date(START + 24 * HOUR), new Date(START + 7 * 24 * HOUR)),
  groupTypeIndex: fc.constantFrom(null, null, 0),
  exposure: fc.record({
    event: fc.constantFrom(null, null, 'viewed checkout'),
    properties: fc.constant(null),
    filterTestAccounts: fc.boolean(),
    multipleVariantHandling: fc.constantFrom('exclude' as const, 'first_seen' as const),
  }),
});

describe('experiment statistics on ingested events', () => {
  let ingestion: Ingestion;

  beforeAll(async () => {
    ingestion = await openIngestion();
  }, 180_000);

  afterAll(async () => {
    await ingestion?.close();
  });

  it('computes the exposures and statistics the reference computes, for random streams, experiments and metrics', async () => {
    const runs = fc.tuple(datasetArb, fc.array(fc.tuple(targetArb, metricArb), { minLength: 5, maxLength: 5 }));
    const seen = { multiple: 0, converted: 0 };
    await fc.assert(
      fc.asyncProperty(runs, async ([dataset, cases]) => {
        const project = await ingestWorld(ingestion, {
          dataset,
          timezone: 'Europe/Berlin',
          now: new Date(START + 10 * 24 * HOUR),
          start: START,
          cohortPicks: [],
        });
        for (const [partial, metric] of cases) {
          const target: ExperimentTarget = { ...partial, variants: VARIANTS };
          const expected = referenceStatistics(project.events, target, metric);
          expect({ target, metric, statistics: await experimentStatistics(ingestion.clickhouse, target, metric, project.ctx) }).toEqual({
            target,
            metric,
            statistics: expected,
          });
          const exposed = [...referenceExposures(project.events, target).values()];
          const totals: Record<string, number> = {};
          for (const { variant } of exposed) totals[variant] = (totals[variant] ?? 0) + 1;
          expect((await runExperimentExposures(ingestion.clickhouse, target, project.ctx)).total_exposures).toEqual(totals);
          if (exposed.some(({ variant }) => variant === '$multiple')) seen.multiple += 1;
          if (expected.some((variant) => variant.sum > 0)) seen.converted += 1;
        }
      }),
      { numRuns: 8, seed: 35, interruptAfterTimeLimit: 90_000 },
    );
    expect(seen.multiple).toBeGreaterThan(0);
    expect(seen.converted).toBeGreaterThan(0);
  }, 200_000);
});
