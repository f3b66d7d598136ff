import jStat from 'jstat';

/** P(X ≤ x) for X ~ N(mean, sd²). */
export function normalCdf(x: number, mean = 0, sd = 1): number {
  return jStat.normal.cdf(x, mean, sd);
}

/** The p-quantile of N(mean, sd²). */
export function normalQuantile(p: number, mean = 0, sd = 1): number {
  return jStat.normal.inv(p, mean, sd);
}

/** P(T ≤ t) for Student's t with `df` (possibly fractional) degrees of freedom. */
export function studentTCdf(t: number, df: number): number {
  return jStat.studentt.cdf(t, df);
}

/** The p-quantile of Student's t with `df` degrees of freedom. */
export function studentTQuantile(p: number, df: number): number {
  return jStat.studentt.inv(p, df);
}
