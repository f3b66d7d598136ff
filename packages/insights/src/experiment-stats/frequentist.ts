import type { Arm } from './arm';
import { studentTCdf, studentTQuantile } from './distributions';
import { effectOf } from './effect';
import type { ExperimentDifferenceType } from './types';

export interface FrequentistOutcome {
  p_value: number;
  confidence_interval: [number, number];
  significant: boolean;
  t_statistic: number;
  degrees_of_freedom: number;
  point_estimate: number;
}

/** The t-test refuses arms smaller than this. */
const MIN_ARM_SIZE = 5;

/** Welch–Satterthwaite degrees of freedom from the per-unit variances and sizes of two arms. */
export function welchDegreesOfFreedom(a: Arm, b: Arm): number {
  const va = a.variance / a.n;
  const vb = b.variance / b.n;
  return (va + vb) ** 2 / (va ** 2 / (a.n - 1) + vb ** 2 / (b.n - 1));
}

/**
 * Two-sided Welch t-test on the effect (relative by default): t = effect / √Var(effect), degrees of freedom
 * by Welch–Satterthwaite on the arms' variances, p = 2·P(T > |t|), the interval effect ± t_{1−α/2}·√Var,
 * significant when p < α. Null when the test cannot run (an arm below 5 units, control zero for a relative
 * effect, zero variance).
 */
export function welchTTest(test: Arm, control: Arm, options: { alpha: number; differenceType: ExperimentDifferenceType }): FrequentistOutcome | null {
  if (test.n < MIN_ARM_SIZE || control.n < MIN_ARM_SIZE) return null;
  const effect = effectOf(test, control, options.differenceType);
  if (!effect || !(effect.variance > 0) || !Number.isFinite(effect.variance)) return null;
  const df = welchDegreesOfFreedom(test, control);
  if (!(df > 0) || !Number.isFinite(df)) return null;
  const se = Math.sqrt(effect.variance);
  const t = effect.estimate / se;
  const pValue = Math.min(1, 2 * studentTCdf(-Math.abs(t), df));
  const margin = studentTQuantile(1 - options.alpha / 2, df) * se;
  return {
    p_value: pValue,
    confidence_interval: [effect.estimate - margin, effect.estimate + margin],
    significant: pValue < options.alpha,
    t_statistic: t,
    degrees_of_freedom: df,
    point_estimate: effect.estimate,
  };
}
