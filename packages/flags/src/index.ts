export type {
  Cohort,
  EvaluatedFlag,
  EvaluationContext,
  EvaluationOptions,
  FailedFlag,
  FeatureFlag,
  FlagCondition,
  FlagDefinitions,
  FlagEvaluation,
  FlagFilters,
  FlagVariant,
  JsonValue,
  MatchReasonCode,
  Properties,
  PropertyFilter,
  PropertyFilterType,
  PropertyGroup,
  PropertyOperator,
  StoredData,
} from './types';
export { compileFlags, type CompiledFlags } from './compile';
export { evaluateFlags, flagValue } from './evaluate';
export { planLookup, type LookupPlan } from './lookup';
export { FlagErrorCode } from './errors';
export { calculateHash } from './hash';
export { parseDateText, type Clock } from './dates';
export { RegexBudget, REQUEST_REGEX_BUDGET_MS } from './regex';
