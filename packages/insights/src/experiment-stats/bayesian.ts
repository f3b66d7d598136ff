import type { Arm } from './arm';
import { normalCdf, normalQuantile } from './distributions';
import { effectOf } from './effect';
import type { ExperimentDifferenceType } from './types';

export interface BayesianOutcome {
  chance_to_win: number;
  credible_interval: [number, number];
  significant: boolean;
  /** Posterior mean and variance of the effect. */
  posterior_mean: number;
  posterior_variance: number;
}

/** Normal approximation of a proportion needs at least this many successes and failures in each arm. */
const MIN_PROPORTION_OUTCOMES = 5;

/**
 * Gaussian model of the effect with a flat (improper) prior, so the posterior is the likelihood:
 * N(effect, Var(effect)). Chance to win is the posterior mass on the winning side of 0; the credible
 * interval the central `ci_level` mass; significant when chance to win is above `ci_level` or below
 * 1 − `ci_level`. Null when the test cannot run (control mean not positive for a relative effect,
 * zero variance, too few successes or failures for a proportion).
 */
export function bayesianTest(
  test: Arm,
  control: Arm,
  options: { ciLevel: number; decreaseIsWin: boolean; differenceType: ExperimentDifferenceType },
): BayesianOutcome | null {
  for (const arm of [test, control]) {
    if (arm.proportion && (arm.successes < MIN_PROPORTION_OUTCOMES || arm.n - arm.successes < MIN_PROPORTION_OUTCOMES)) {
      return null;
    }
  }
  if (options.differenceType === 'relative' && !(control.value > 0)) return null;
  const effect = effectOf(test, control, options.differenceType);
  if (!effect || !(effect.variance > 0) || !Number.isFinite(effect.variance)) return null;
  const sd = Math.sqrt(effect.variance);
  const upward = normalCdf(effect.estimate / sd);
  const chance = options.decreaseIsWin ? 1 - upward : upward;
  const tail = (1 - options.ciLevel) / 2;
  return {
    chance_to_win: chance,
    credible_interval: [normalQuantile(tail, effect.estimate, sd), normalQuantile(1 - tail, effect.estimate, sd)],
    significant: chance > options.ciLevel || chance < 1 - options.ciLevel,
    posterior_mean: effect.estimate,
    posterior_variance: effect.variance,
  };
}
