import {
  compileFlags,
  evaluateFlags,
  type Cohort,
  type EvaluationContext,
  type EvaluationOptions,
  type FeatureFlag,
  type FlagEvaluation,
  type Properties,
  type PropertyFilter,
} from '@plover/flags';

export const NOW = new Date('2024-06-15T12:00:00.000Z');

let nextId = 1000;

/** An active boolean flag with one condition set (everyone, 100%) unless `filters` says otherwise. */
export function buildFlag(overrides: Partial<FeatureFlag> = {}): FeatureFlag {
  nextId += 1;
  return {
    id: nextId,
    key: `flag-${nextId}`,
    active: true,
    filters: { groups: [{ properties: [], rollout_percentage: null }] },
    ...overrides,
  };
}

export interface Scenario {
  flags: readonly FeatureFlag[];
  cohorts?: readonly Cohort[];
  context?: Partial<EvaluationContext>;
  options?: Partial<EvaluationOptions>;
}

export function evaluate({ flags, cohorts, context, options }: Scenario): Map<string, FlagEvaluation> {
  return evaluateFlags(compileFlags({ flags, cohorts }), { distinctId: 'user-1', ...context }, { now: NOW, ...options });
}

/** The evaluation of the first flag of the scenario. */
export function evaluateFirst(scenario: Scenario): FlagEvaluation {
  const key = scenario.flags[0]?.key ?? '';
  const result = evaluate(scenario).get(key);
  if (result === undefined) throw new Error(`flag ${key} was not returned`);
  return result;
}

/** Whether a single-filter person flag is enabled for these request person properties. */
export function matches(filter: PropertyFilter, properties: Properties, options: Partial<EvaluationOptions> = {}): boolean {
  const flag = buildFlag({ filters: { groups: [{ properties: [filter], rollout_percentage: null }] } });
  return evaluateFirst({ flags: [flag], context: { personPropertyOverrides: properties }, options }).enabled;
}
