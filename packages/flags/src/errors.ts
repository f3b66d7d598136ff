/**
 * Error labels for flags that cannot be computed, as PostHog's Rust service reports them in `reason.code`
 * (`FlagError::evaluation_error_code`, `rust/feature-flags/src/api/errors.rs`).
 */
export const FlagErrorCode = {
  flagDependencyCycle: 'dependency_cycle_flag',
  flagDependencyNotFound: 'dependency_not_found_flag',
  cohortDependencyCycle: 'dependency_cycle_cohort',
  cohortNotFound: 'dependency_not_found_cohort',
} as const;

/** Thrown while matching one flag; the evaluator turns it into that flag's failed result. */
export class FlagEvaluationError extends Error {
  constructor(readonly code: string) {
    super(code);
    this.name = 'FlagEvaluationError';
  }
}
