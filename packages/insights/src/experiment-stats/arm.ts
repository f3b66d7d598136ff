import type { ExperimentMetricType, VariantSufficientStats } from './types';

/**
 * One arm of the comparison reduced to what the tests need: its sample size, the metric's point value
 * (a mean, a proportion or a ratio of sums) and the per-unit variance of that value (the variance of the
 * estimate is `variance / n`).
 */
export interface Arm {
  n: number;
  value: number;
  variance: number;
  /** Funnels are compared as proportions; the Bayesian test then needs ≥ 5 successes and ≥ 5 failures. */
  proportion: boolean;
  successes: number;
}

/** Sample variance from n, Σx and Σx² (0 for a single unit). */
export function sampleVariance(n: number, sum: number, sumSquares: number): number {
  return n > 1 ? (sumSquares - (sum * sum) / n) / (n - 1) : 0;
}

/** Sample covariance from n, Σx, Σy and Σxy (0 for a single unit). */
function sampleCovariance(n: number, sumX: number, sumY: number, sumProducts: number): number {
  return n > 1 ? (sumProducts - (sumX * sumY) / n) / (n - 1) : 0;
}

/**
 * Delta-method variance of M/D from the moments of M and D:
 * Var(M)/D² + M²·Var(D)/D⁴ − 2·M·Cov(M, D)/D³.
 */
export function ratioVariance(m: number, varM: number, d: number, varD: number, cov: number): number {
  return varM / d ** 2 + (m ** 2 * varD) / d ** 4 - (2 * m * cov) / d ** 3;
}

/** The arm for one variant, or null when its statistics cannot describe a distribution. */
export function toArm(metricType: ExperimentMetricType, stats: VariantSufficientStats): Arm | null {
  const n = stats.number_of_samples;
  if (!(n > 0)) return null;
  if (metricType === 'funnel') {
    const p = stats.sum / n;
    if (stats.sum < 0 || p > 1) return null;
    return { n, value: p, variance: p * (1 - p), proportion: true, successes: stats.sum };
  }
  if (metricType === 'mean') {
    if (stats.sum_squares < (stats.sum * stats.sum) / n - 1e-9 * Math.abs(stats.sum_squares)) return null;
    return { n, value: stats.sum / n, variance: sampleVariance(n, stats.sum, stats.sum_squares), proportion: false, successes: stats.sum };
  }
  // Ratio and retention: the ratio of the numerator and denominator sums, its variance by the delta method.
  const denominatorSum = stats.denominator_sum ?? 0;
  const m = stats.sum / n;
  const d = denominatorSum / n;
  if (Math.abs(d) < 1e-10) return null;
  const variance = ratioVariance(
    m,
    sampleVariance(n, stats.sum, stats.sum_squares),
    d,
    sampleVariance(n, denominatorSum, stats.denominator_sum_squares ?? 0),
    sampleCovariance(n, stats.sum, denominatorSum, stats.numerator_denominator_sum_product ?? 0),
  );
  return { n, value: stats.sum / denominatorSum, variance, proportion: false, successes: stats.sum };
}
