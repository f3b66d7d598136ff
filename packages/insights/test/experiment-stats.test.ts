import fixtures from './fixtures/experiment-stats.json';
import {
  bayesianTest,
  experimentResults,
  recommendedSampleSize,
  runningTimeEstimate,
  toArm,
  welchTTest,
  type ExperimentMetricType,
  type ExperimentVariantResultBayesian,
  type ExperimentVariantResultFrequentist,
  type VariantSufficientStats,
} from '../src/experiment-stats';

// Expected values come from fixtures/experiment_stats_fixtures.py (numpy + scipy on the raw samples), and from
// the worked examples in PostHog's own statistics tests (quoted to the places PostHog asserts them).
// jStat's quantile functions (normal and t inverses) agree with scipy to about 1e-7, so values match to 6 decimals.

const close = (actual: number | null | undefined, expected: number | undefined, digits = 6): void => {
  expect(actual).not.toBeNull();
  expect(expected).toBeDefined();
  expect(actual).toBeCloseTo(expected!, digits);
};

function arm(type: ExperimentMetricType, stats: VariantSufficientStats) {
  const result = toArm(type, stats);
  if (!result) throw new Error(`no arm for ${stats.key}`);
  return result;
}

function bayesian(baseline: VariantSufficientStats, variant: VariantSufficientStats, type: ExperimentMetricType, extra = {}) {
  return experimentResults(baseline, [variant], { metric_type: type, ...extra }).variant_results[0] as ExperimentVariantResultBayesian;
}

function frequentist(baseline: VariantSufficientStats, variant: VariantSufficientStats, type: ExperimentMetricType) {
  return experimentResults(baseline, [variant], { metric_type: type, method: 'frequentist' }).variant_results[0] as ExperimentVariantResultFrequentist;
}

describe('Welch t-test against scipy.stats.ttest_ind(equal_var=False) on raw samples', () => {
  it.each(fixtures.cases.welch_textbook.map((c, i) => [i, c] as const))('case %i', (_, c) => {
    const outcome = welchTTest(arm('mean', c.test), arm('mean', c.control), { alpha: 0.05, differenceType: 'absolute' });
    close(outcome?.t_statistic, c.t_statistic);
    close(outcome?.degrees_of_freedom, c.degrees_of_freedom);
    close(outcome?.p_value, c.p_value);
    close(outcome?.confidence_interval[0], c.confidence_interval[0]);
    close(outcome?.confidence_interval[1], c.confidence_interval[1]);
  });

  it("reproduces the published figures of Wikipedia's first example (t = −2.46, df = 25.0, p = 0.021)", () => {
    const c = fixtures.cases.welch_textbook[0]!;
    const outcome = welchTTest(arm('mean', c.test), arm('mean', c.control), { alpha: 0.05, differenceType: 'absolute' });
    close(outcome?.t_statistic, -2.46, 2);
    close(outcome?.degrees_of_freedom, 25.0, 1);
    close(outcome?.p_value, 0.021, 3);
  });
});

describe('mean metrics (relative lift, delta method) against scipy', () => {
  for (const [i, c] of fixtures.cases.mean.entries()) {
    it(`case ${i}: Bayesian chance to win and credible interval, both goals and levels; frequentist p and interval`, () => {
      const variants = c.variants.map((v) => v.stats);
      const b = experimentResults(c.baseline, variants, { metric_type: 'mean' });
      const down = experimentResults(c.baseline, variants, { metric_type: 'mean', goal: 'decrease' });
      const ninety = experimentResults(c.baseline, variants, { metric_type: 'mean', ci_level: 0.9 });
      const f = experimentResults(c.baseline, variants, { metric_type: 'mean', method: 'frequentist' });
      c.variants.forEach((expected, j) => {
        for (const [result, want] of [
          [b.variant_results[j], expected.bayesian],
          [down.variant_results[j], expected.bayesian_decrease],
          [ninety.variant_results[j], expected.bayesian_90],
        ] as const) {
          const r = result as ExperimentVariantResultBayesian;
          expect(r.method).toBe('bayesian');
          close(r.chance_to_win, want.chance_to_win);
          close(r.credible_interval?.[0], want.credible_interval[0]);
          close(r.credible_interval?.[1], want.credible_interval[1]);
          expect(r.significant).toBe(want.significant);
        }
        const r = f.variant_results[j] as ExperimentVariantResultFrequentist;
        expect(r.method).toBe('frequentist');
        close(r.p_value, expected.frequentist.p_value);
        close(r.confidence_interval?.[0], expected.frequentist.confidence_interval[0]);
        close(r.confidence_interval?.[1], expected.frequentist.confidence_interval[1]);
        expect(r.significant).toBe(expected.frequentist.significant);
        expect(r.key).toBe(expected.stats.key);
        expect(r.validation_failures).toEqual([]);
      });
    });
  }
});

describe('funnel metrics (proportions) against scipy', () => {
  it.each(fixtures.cases.funnel.map((c, i) => [i, c] as const))('case %i', (_, c) => {
    const b = bayesian(c.baseline, c.variant, 'funnel');
    close(b.chance_to_win, c.bayesian.chance_to_win);
    close(b.credible_interval?.[0], c.bayesian.credible_interval[0]);
    close(b.credible_interval?.[1], c.bayesian.credible_interval[1]);
    expect(b.significant).toBe(c.bayesian.significant);
    const f = frequentist(c.baseline, c.variant, 'funnel');
    close(f.p_value, c.frequentist.p_value);
    close(f.confidence_interval?.[0], c.frequentist.confidence_interval[0]);
    close(f.confidence_interval?.[1], c.frequentist.confidence_interval[1]);
  });
});

describe('ratio metrics (delta method with covariance) against numpy moments and scipy', () => {
  it.each(fixtures.cases.ratio.map((c, i) => [i, c] as const))('case %i', (_, c) => {
    const control = arm('ratio', c.baseline);
    close(control.value, c.control_ratio, 10);
    expect(control.variance / c.control_variance).toBeCloseTo(1, 9);
    const b = bayesian(c.baseline, c.variant, 'ratio');
    close(b.chance_to_win, c.bayesian.chance_to_win);
    close(b.credible_interval?.[0], c.bayesian.credible_interval[0]);
    close(b.credible_interval?.[1], c.bayesian.credible_interval[1]);
    const f = frequentist(c.baseline, c.variant, 'ratio');
    close(f.p_value, c.frequentist.p_value);
    close(f.confidence_interval?.[0], c.frequentist.confidence_interval[0]);
    close(f.confidence_interval?.[1], c.frequentist.confidence_interval[1]);
    expect(b.denominator_sum).toBe(c.variant.denominator_sum);
  });
});

describe("PostHog's worked examples", () => {
  const treatment = { key: 'test', number_of_samples: 2461, sum: 1922.7, sum_squares: 94698.29 };
  const control = { key: 'control', number_of_samples: 2507, sum: 1196.87, sum_squares: 37377.9767 };

  it('Bayesian mean: effect 0.63646, interval [−0.0873, 1.36026], chance to win 0.95759', () => {
    const outcome = bayesianTest(arm('mean', treatment), arm('mean', control), {
      ciLevel: 0.95,
      decreaseIsWin: false,
      differenceType: 'relative',
    });
    close(outcome?.posterior_mean, 0.63646, 4);
    close(outcome?.credible_interval[0], -0.0873, 4);
    close(outcome?.credible_interval[1], 1.36026, 4);
    close(outcome?.chance_to_win, 0.95759, 4);
    expect(outcome?.significant).toBe(true);
  });

  it('frequentist mean: estimate 0.63646, interval [−0.0875, 1.36048], p 0.08487', () => {
    const r = frequentist(control, treatment, 'mean');
    close(r.p_value, 0.08487, 4);
    close(r.confidence_interval?.[0], -0.0875, 4);
    close(r.confidence_interval?.[1], 1.36048, 4);
    expect(r.significant).toBe(false);
  });

  it('frequentist proportion: 62/1471 vs 87/1529 → estimate −0.25925, interval [−0.49475, −0.02376], p 0.03096', () => {
    const r = frequentist(
      { key: 'control', number_of_samples: 1529, sum: 87, sum_squares: 87 },
      { key: 'test', number_of_samples: 1471, sum: 62, sum_squares: 62 },
      'funnel',
    );
    close(r.p_value, 0.03096, 4);
    close(r.confidence_interval?.[0], -0.49475, 4);
    close(r.confidence_interval?.[1], -0.02376, 4);
    expect(r.significant).toBe(true);
  });

  it('frequentist ratio: estimate 0.041333, interval [0.013786, 0.0689], p 0.0032826', () => {
    const ratio = (key: string, n: number, sum: number, sumSquares: number, d: number): VariantSufficientStats => ({
      key,
      number_of_samples: n,
      sum,
      sum_squares: sumSquares,
      denominator_sum: d,
      denominator_sum_squares: d,
      numerator_denominator_sum_product: sum,
    });
    const r = frequentist(
      ratio('control', 1966, 94605.79858780127, 10463129.505392816, 936),
      ratio('test', 2034, 99673.9364269569, 11298745.182728939, 947),
      'ratio',
    );
    close(r.p_value, 0.0032826, 4);
    close(r.confidence_interval?.[0], 0.01378609, 4);
    close(r.confidence_interval?.[1], 0.0689, 4);
  });

  it('a tiny sample stays uncertain (n = 2 per arm)', () => {
    const outcome = bayesianTest(
      arm('mean', { key: 'test', number_of_samples: 2, sum: 3, sum_squares: 5 }),
      arm('mean', { key: 'control', number_of_samples: 2, sum: 2, sum_squares: 2 }),
      { ciLevel: 0.95, decreaseIsWin: false, differenceType: 'relative' },
    );
    expect(outcome!.chance_to_win).toBeGreaterThan(0.1);
    expect(outcome!.chance_to_win).toBeLessThan(0.9);
  });
});

describe('validation failures', () => {
  const stats = (key: string, n: number, sum: number): VariantSufficientStats => ({ key, number_of_samples: n, sum, sum_squares: sum });

  it('a variant under 50 exposures is listed and not compared; the others still are', () => {
    const r = experimentResults(stats('control', 500, 100), [stats('a', 49, 20), stats('b', 50, 20)], { metric_type: 'funnel' });
    expect(r.baseline.validation_failures).toEqual([]);
    const [a, b] = r.variant_results as ExperimentVariantResultBayesian[];
    expect(a!.validation_failures).toEqual(['not-enough-exposures']);
    expect(a!.chance_to_win).toBeNull();
    expect(a!.credible_interval).toBeNull();
    expect(a!.significant).toBeNull();
    expect(b!.validation_failures).toEqual([]);
    expect(b!.chance_to_win).not.toBeNull();
  });

  it('funnel and retention need 5 conversions; mean and ratio do not', () => {
    for (const type of ['funnel', 'retention'] as const) {
      const r = experimentResults(stats('control', 100, 4), [stats('t', 100, 4)], { metric_type: type });
      expect(r.baseline.validation_failures).toEqual(['not-enough-metric-data']);
      expect(r.variant_results[0]!.validation_failures).toEqual(['not-enough-metric-data']);
    }
    const mean = experimentResults(stats('control', 100, 4), [stats('t', 100, 4)], { metric_type: 'mean' });
    expect(mean.baseline.validation_failures).toEqual([]);
  });

  it('a zero baseline is flagged and no variant is compared', () => {
    const r = experimentResults(stats('control', 100, 0), [stats('t', 100, 30)], { metric_type: 'mean', method: 'frequentist' });
    expect(r.baseline.validation_failures).toEqual(['baseline-mean-is-zero']);
    const v = r.variant_results[0] as ExperimentVariantResultFrequentist;
    expect(v.validation_failures).toEqual([]);
    expect(v.p_value).toBeNull();
    expect(v.confidence_interval).toBeNull();
  });

  it('failures accumulate in a fixed order', () => {
    const r = experimentResults(stats('control', 10, 0), [], { metric_type: 'funnel' });
    expect(r.baseline.validation_failures).toEqual(['not-enough-exposures', 'not-enough-metric-data', 'baseline-mean-is-zero']);
  });

  it('the Bayesian proportion test needs 5 failures too: an all-converted arm is not compared', () => {
    const r = experimentResults(stats('control', 100, 50), [stats('t', 100, 98)], { metric_type: 'funnel' });
    expect((r.variant_results[0] as ExperimentVariantResultBayesian).chance_to_win).toBeNull();
    const f = experimentResults(stats('control', 100, 50), [stats('t', 100, 98)], { metric_type: 'funnel', method: 'frequentist' });
    expect((f.variant_results[0] as ExperimentVariantResultFrequentist).p_value).not.toBeNull();
  });

  it('rejects a ci_level outside (0, 1)', () => {
    expect(() => experimentResults(stats('control', 100, 50), [], { metric_type: 'mean', ci_level: 1 })).toThrow(RangeError);
  });
});

describe('sample size and running time (PostHog calculator examples)', () => {
  it('funnel: 10 % conversion, 50 % MDE, two variants → 1152', () => {
    expect(
      recommendedSampleSize({
        kind: 'funnel',
        minimum_detectable_effect: 50,
        number_of_variants: 2,
        baseline: { key: 'control', number_of_samples: 1000, sum: 100, sum_squares: 100, step_counts: [1000, 100] },
      }),
    ).toBe(1152);
  });

  it('mean count: 4 events per user, 5 % MDE → 6400; mean sum: 50 per user → 3200', () => {
    const base = { key: 'control', number_of_samples: 14000, sum_squares: 0 };
    expect(recommendedSampleSize({ kind: 'mean_count', minimum_detectable_effect: 5, number_of_variants: 2, baseline: { ...base, sum: 56000 } })).toBe(6400);
    expect(recommendedSampleSize({ kind: 'mean_sum_or_avg', minimum_detectable_effect: 5, number_of_variants: 2, baseline: { ...base, sum: 700000 } })).toBe(
      3200,
    );
  });

  it('ratio: delta-method variance 32 at $10/order, 10 % MDE → 1024; retention 70 %, 10 % → 1372', () => {
    expect(
      recommendedSampleSize({
        kind: 'ratio',
        minimum_detectable_effect: 10,
        number_of_variants: 2,
        baseline: {
          key: 'control',
          number_of_samples: 10000,
          sum: 500000,
          sum_squares: 30000000,
          denominator_sum: 50000,
          denominator_sum_squares: 300000,
          numerator_denominator_sum_product: 2600000,
        },
      }),
    ).toBe(1024);
    expect(
      recommendedSampleSize({
        kind: 'retention',
        minimum_detectable_effect: 10,
        number_of_variants: 2,
        baseline: {
          key: 'control',
          number_of_samples: 10000,
          sum: 7000,
          sum_squares: 7000,
          denominator_sum: 10000,
          denominator_sum_squares: 10000,
          numerator_denominator_sum_product: 7000,
        },
      }),
    ).toBe(1372);
  });

  it.each(fixtures.cases.sample_size.map((c) => [c.baseline_value, c.mde, c] as const))(
    'funnel p = %f, MDE %f %%: within 2 %% of the exact z-based size (the calculator rounds 15.7 to 16)',
    (_, __, c) => {
      const total = recommendedSampleSize({ kind: 'funnel', minimum_detectable_effect: c.mde, number_of_variants: 1, baseline_value: c.baseline_value })!;
      expect(total / c.z_based_per_variant).toBeGreaterThan(1);
      expect(total / c.z_based_per_variant).toBeLessThan(1.02);
    },
  );

  it('null when it cannot be computed; running time is whole days', () => {
    expect(recommendedSampleSize({ kind: 'funnel', minimum_detectable_effect: 0, number_of_variants: 2, baseline_value: 0.1 })).toBeNull();
    expect(recommendedSampleSize({ kind: 'ratio', minimum_detectable_effect: 10, number_of_variants: 2, baseline_value: 0.1 })).toBeNull();
    expect(recommendedSampleSize({ kind: 'ratio', minimum_detectable_effect: 10, number_of_variants: 2, baseline_value: 2, variance: 4 })).toBe(
      Math.ceil(((16 * 4) / 0.2 ** 2) * 2),
    );
    expect(runningTimeEstimate(1152, 100)).toBe(12);
    expect(runningTimeEstimate(1152, 0)).toBeNull();
    expect(runningTimeEstimate(null, 100)).toBeNull();
  });
});
