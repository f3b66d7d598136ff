import { ratioVariance, type Arm } from './arm';
import type { ExperimentDifferenceType } from './types';

export interface Effect {
  /** Point estimate of the difference between the test arm and control. */
  estimate: number;
  /** Variance of that estimate. */
  variance: number;
}

/**
 * The effect of `test` over `control`. Relative: (μ_test − μ_control) / μ_control with its variance by the
 * delta method (the two arms are independent, so no covariance term); absolute: μ_test − μ_control.
 * Null when control's value is zero (a relative lift is undefined).
 */
export function effectOf(test: Arm, control: Arm, differenceType: ExperimentDifferenceType): Effect | null {
  const testVar = test.variance / test.n;
  const controlVar = control.variance / control.n;
  if (differenceType === 'absolute') {
    return { estimate: test.value - control.value, variance: testVar + controlVar };
  }
  if (Math.abs(control.value) < 1e-10) return null;
  return {
    estimate: (test.value - control.value) / control.value,
    variance: ratioVariance(test.value, testVar, control.value, controlVar, 0),
  };
}
