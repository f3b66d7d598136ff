export * from './types';
export { experimentResults, validationFailures, MIN_EXPOSURES, MIN_METRIC_CONVERSIONS } from './results';
export { bayesianTest, type BayesianOutcome } from './bayesian';
export { welchTTest, welchDegreesOfFreedom, type FrequentistOutcome } from './frequentist';
export { toArm, type Arm } from './arm';
export {
  recommendedSampleSize,
  runningTimeEstimate,
  baselineValue,
  baselineVariance,
  sampleSizeKind,
  type SampleSizeInput,
  type SampleSizeMetricKind,
} from './sample-size';
