import { toArm, type Arm } from './arm';
import { bayesianTest } from './bayesian';
import { welchTTest } from './frequentist';
import type {
  ExperimentMetricType,
  ExperimentResults,
  ExperimentStatsOptions,
  ExperimentValidationFailure,
  ExperimentVariantResult,
  ValidatedVariantStats,
  VariantSufficientStats,
} from './types';

/** A variant with fewer exposed units than this is not compared. */
export const MIN_EXPOSURES = 50;
/** A funnel or retention variant with fewer conversions than this is not compared. */
export const MIN_METRIC_CONVERSIONS = 5;

/** Why a variant's statistics are not compared; the baseline also fails when its sum is zero. */
export function validationFailures(stats: VariantSufficientStats, metricType: ExperimentMetricType, isBaseline: boolean): ExperimentValidationFailure[] {
  const failures: ExperimentValidationFailure[] = [];
  if (stats.number_of_samples < MIN_EXPOSURES) failures.push('not-enough-exposures');
  if ((metricType === 'funnel' || metricType === 'retention') && stats.sum < MIN_METRIC_CONVERSIONS) {
    failures.push('not-enough-metric-data');
  }
  if (isBaseline && stats.sum === 0) failures.push('baseline-mean-is-zero');
  return failures;
}

function validated(stats: VariantSufficientStats, metricType: ExperimentMetricType, isBaseline: boolean): ValidatedVariantStats {
  return { ...stats, validation_failures: validationFailures(stats, metricType, isBaseline) };
}

function compare(variant: ValidatedVariantStats, control: Arm | null, options: ExperimentStatsOptions): ExperimentVariantResult {
  const test = control && variant.validation_failures.length === 0 ? toArm(options.metric_type, variant) : null;
  const ciLevel = options.ci_level ?? 0.95;
  const differenceType = options.difference_type ?? 'relative';
  if (options.method === 'frequentist') {
    const outcome = test && control ? welchTTest(test, control, { alpha: 1 - ciLevel, differenceType }) : null;
    return {
      ...variant,
      method: 'frequentist',
      p_value: outcome?.p_value ?? null,
      confidence_interval: outcome?.confidence_interval ?? null,
      significant: outcome?.significant ?? null,
    };
  }
  const outcome = test && control ? bayesianTest(test, control, { ciLevel, decreaseIsWin: options.goal === 'decrease', differenceType }) : null;
  return {
    ...variant,
    method: 'bayesian',
    chance_to_win: outcome?.chance_to_win ?? null,
    credible_interval: outcome?.credible_interval ?? null,
    significant: outcome?.significant ?? null,
  };
}

/**
 * Compares every test variant with the baseline (control) in the shape of an experiment query response.
 * Each variant and the baseline carry their `validation_failures`; a variant is compared only when neither
 * it nor the baseline has one (and the test can run), otherwise its statistical fields are null.
 */
export function experimentResults(baseline: VariantSufficientStats, variants: VariantSufficientStats[], options: ExperimentStatsOptions): ExperimentResults {
  const ciLevel = options.ci_level ?? 0.95;
  if (!(ciLevel > 0 && ciLevel < 1)) throw new RangeError('ci_level must be between 0 and 1');
  const validatedBaseline = validated(baseline, options.metric_type, true);
  const control = validatedBaseline.validation_failures.length === 0 ? toArm(options.metric_type, baseline) : null;
  return {
    baseline: validatedBaseline,
    variant_results: variants.map((variant) => compare(validated(variant, options.metric_type, false), control, options)),
  };
}
