import type { ExperimentMetricType, VariantSufficientStats } from './types';

/** 16 ≈ 4·1.96²·… : the usual multiplier for a two-sided test at 95 % confidence and 80 % power. */
const SAMPLE_SIZE_FACTOR = 16;
/** Assumed variance of a per-unit event count: 2 × its mean. */
const COUNT_VARIANCE_FACTOR = 2;
/** Assumed variance of a per-unit property sum: (mean / 2)². */
const SUM_VARIANCE_FACTOR = 0.25;

/** How the calculator models a metric: funnels as proportions, means as counts or sums, ratios by their moments. */
export type SampleSizeMetricKind = 'funnel' | 'mean_count' | 'mean_sum_or_avg' | 'ratio' | 'retention';

export interface SampleSizeInput {
  kind: SampleSizeMetricKind;
  /** Smallest relative change worth detecting, in percent (5 = 5 %). */
  minimum_detectable_effect: number;
  /** Variants including control. */
  number_of_variants: number;
  /** Control's value: conversion rate, mean per unit, or ratio. Derived from `baseline` when absent. */
  baseline_value?: number;
  /** Per-unit variance; derived from the kind (means) or from `baseline` (ratio, retention) when absent. */
  variance?: number;
  /** Control's sufficient statistics, from which the value and (ratio, retention) the variance are derived. */
  baseline?: VariantSufficientStats;
}

/** The sample-size kind of an experiment metric (`sumMath`: the mean metric sums a property). */
export function sampleSizeKind(metricType: ExperimentMetricType, sumMath = false): SampleSizeMetricKind {
  if (metricType === 'mean') return sumMath ? 'mean_sum_or_avg' : 'mean_count';
  return metricType;
}

/** Control's metric value from its statistics, or null when undefined (no samples, no denominator). */
export function baselineValue(kind: SampleSizeMetricKind, stats: VariantSufficientStats): number | null {
  const n = stats.number_of_samples;
  if (!n) return null;
  if (kind === 'funnel') {
    const last = stats.step_counts?.at(-1);
    return (last ?? stats.sum) / n;
  }
  if (kind === 'ratio' || kind === 'retention') return stats.denominator_sum ? stats.sum / stats.denominator_sum : null;
  return stats.sum / n;
}

/**
 * Per-unit variance the calculator assumes: 2·mean for counts, mean²/4 for sums, the delta method on the
 * population moments for ratio and retention (needs `stats`), none for funnels (p(1 − p) is in the formula).
 */
export function baselineVariance(kind: SampleSizeMetricKind, value: number, stats?: VariantSufficientStats): number | null {
  if (kind === 'mean_count') return COUNT_VARIANCE_FACTOR * value;
  if (kind === 'mean_sum_or_avg') return SUM_VARIANCE_FACTOR * value ** 2;
  if (kind === 'funnel' || !stats?.denominator_sum || !stats.number_of_samples) return null;
  const n = stats.number_of_samples;
  const m = stats.sum / n;
  const d = stats.denominator_sum / n;
  const varM = stats.sum_squares / n - m ** 2;
  const varD = (stats.denominator_sum_squares ?? 0) / n - d ** 2;
  const cov = (stats.numerator_denominator_sum_product ?? 0) / n - m * d;
  return varM / d ** 2 + (m ** 2 * varD) / d ** 4 - (2 * m * cov) / d ** 3;
}

/**
 * Total units (all variants together) needed to detect the minimum detectable effect: per variant
 * 16·p(1 − p)/δ² for funnels and 16·σ²/δ² otherwise, with δ = MDE% × baseline value; rounded up.
 * Null when it cannot be computed (no baseline value, zero effect, unknown variance).
 */
export function recommendedSampleSize(input: SampleSizeInput): number | null {
  const value = input.baseline_value ?? (input.baseline ? baselineValue(input.kind, input.baseline) : null);
  if (value === null || !input.minimum_detectable_effect) return null;
  const delta = (input.minimum_detectable_effect / 100) * value;
  if (delta === 0) return null;
  let perVariant: number;
  if (input.kind === 'funnel') {
    perVariant = (SAMPLE_SIZE_FACTOR * value * (1 - value)) / delta ** 2;
  } else {
    const variance = input.variance ?? baselineVariance(input.kind, value, input.baseline);
    if (variance === null) return null;
    perVariant = (SAMPLE_SIZE_FACTOR * variance) / delta ** 2;
  }
  return Math.ceil(perVariant * input.number_of_variants);
}

/** Whole days to reach `sampleSize` at `exposuresPerDay` (all variants together), or null. */
export function runningTimeEstimate(sampleSize: number | null, exposuresPerDay: number | null): number | null {
  if (!sampleSize || !exposuresPerDay || exposuresPerDay <= 0) return null;
  return Math.ceil(sampleSize / exposuresPerDay);
}
