import { cohortIdOf, matchesPropertyGroup, membershipMatches } from './cohorts';
import { selectFlags, type CompiledFlag, type CompiledFlags } from './compile';
import { isKnownTimezone } from '@plover/core';
import { FlagErrorCode, FlagEvaluationError } from './errors';
import { flagHash, holdoutHash } from './hash';
import { needsLookup } from './lookup';
import { matchProperty, type MatchEnvironment } from './operators';
import { RegexBudget } from './regex';
import type {
  EvaluatedFlag,
  EvaluationContext,
  EvaluationOptions,
  FailedFlag,
  FlagCondition,
  FlagEvaluation,
  JsonValue,
  MatchReasonCode,
  Properties,
  PropertyFilter,
} from './types';
import { identifierText, lookup } from './values';

/**
 * Evaluates the project's flags for one request, PostHog-identically (reference: PostHog's Rust
 * `rust/feature-flags/src/flags/flag_matching.rs`, with Django `posthog/models/feature_flag/flag_matching.py`
 * where the two agree; where Plover decides otherwise, packages/flags/README.md says so). Returns the active
 * flags (narrowed by `flagKeys`) in stored order. Never throws for a bad definition: a flag that cannot be
 * computed comes back failed.
 */
export function evaluateFlags(compiled: CompiledFlags, context: EvaluationContext, options: EvaluationOptions): Map<string, FlagEvaluation> {
  const { output, evaluated } = selectFlags(compiled, options.flagKeys);
  const request = new RequestEvaluation(compiled, context, options);
  for (const flag of evaluated) request.evaluate(flag);
  const results = new Map<string, FlagEvaluation>();
  for (const flag of output) results.set(flag.flag.key, request.resultOf(flag));
  return results;
}

/** The flag's value as decide's v1–v3 responses show it: the variant, `true`, or `false`. */
export function flagValue(evaluation: FlagEvaluation): string | boolean {
  return evaluation.enabled ? (evaluation.variant ?? true) : false;
}

// When nothing matches, the response names the most telling reason seen (Rust `FeatureFlagMatchReason`
// scores in `rust/feature-flags/src/flags/flag_match_reason.rs` at PostHog commit 85523d28; ties go to the later
// condition).
const REASON_PRIORITY: Readonly<Record<MatchReasonCode, number>> = {
  super_condition_value: 5,
  holdout_condition_value: 4,
  condition_match: 3,
  no_group_type: 2,
  out_of_rollout_bound: 1,
  no_condition_match: 0,
};

function describe(code: MatchReasonCode, conditionIndex: number | null): string {
  switch (code) {
    case 'condition_match':
      return `Matched condition set ${(conditionIndex ?? 0) + 1}`;
    case 'no_condition_match':
      return 'No matching condition set';
    case 'out_of_rollout_bound':
      return 'Out of rollout bound';
    case 'no_group_type':
      return 'No group type';
    case 'super_condition_value':
      return 'Super condition value';
    case 'holdout_condition_value':
      return 'Holdout condition value';
  }
}

type Reason = EvaluatedFlag['reason'];

// Reasons by code and condition index, shared by every result: a request then allocates none, and a
// renderer may cache each one's serialization. Results are read-only to callers.
const reasons = new Map<MatchReasonCode, Reason[]>();

function reasonOf(code: MatchReasonCode, conditionIndex: number | null): Reason {
  let byIndex = reasons.get(code);
  if (byIndex === undefined) {
    byIndex = [];
    reasons.set(code, byIndex);
  }
  const slot = conditionIndex === null ? 0 : conditionIndex + 1;
  let reason = byIndex[slot];
  if (reason === undefined) {
    reason = Object.freeze({ code, condition_index: conditionIndex, description: describe(code, conditionIndex) });
    byIndex[slot] = reason;
  }
  return reason;
}

function failed(key: string, code: string): FailedFlag {
  return { key, failed: true, enabled: false, variant: null, reason: { code, condition_index: null, description: null }, payload: null };
}

const EMPTY: Properties = {};
const NO_FILTERS: readonly PropertyFilter[] = [];

/** A condition's outcome: it matched (`condition_match`), or why not. */
type ConditionOutcome = 'condition_match' | 'no_condition_match' | 'out_of_rollout_bound';

/** Everything one request evaluates against, with its merged properties and cohort results memoized. */
class RequestEvaluation {
  private readonly results = new Map<number, FlagEvaluation>();
  private readonly cohortMembership = new Map<number, boolean>();
  private readonly groupProperties = new Map<number, Properties>();
  private personProperties: Properties | undefined;
  private readonly env: MatchEnvironment;

  constructor(
    private readonly compiled: CompiledFlags,
    private readonly context: EvaluationContext,
    options: EvaluationOptions,
  ) {
    // An unknown zone (a bad project setting) must not take decide down; UTC is PostHog's default.
    const timezone = options.timezone !== undefined && isKnownTimezone(options.timezone) ? options.timezone : 'UTC';
    this.env = {
      clock: { nowMs: options.now.getTime(), timezone },
      regexes: compiled.regexes,
      regexBudget: options.regexBudget ?? new RegexBudget(),
      versions: new Map(),
    };
  }

  resultOf(flag: CompiledFlag): FlagEvaluation {
    if (flag.graphError !== null) return failed(flag.flag.key, flag.graphError);
    const result = this.results.get(flag.flag.id);
    // `evaluationOrder` holds every active flag without a graph error, so each was evaluated above.
    if (result === undefined) throw new Error(`flag ${flag.flag.key} was not evaluated`);
    return result;
  }

  evaluate(flag: CompiledFlag): void {
    this.results.set(flag.flag.id, this.evaluateOrFail(flag));
  }

  private evaluateOrFail(flag: CompiledFlag): FlagEvaluation {
    const { key } = flag.flag;
    if (this.context.lookupError !== undefined && needsLookup(flag, this.context)) return failed(key, this.context.lookupError);
    // A flag cannot be computed when a flag it depends on could not be: "false" would be a guess.
    if (flag.dependencies.size > 0) {
      for (const id of flag.dependencies.values()) {
        const dependency = this.results.get(id);
        if (dependency?.failed === true) return failed(key, dependency.reason.code);
      }
    }
    try {
      return this.match(flag);
    } catch (error) {
      if (error instanceof FlagEvaluationError) return failed(key, error.code);
      throw error;
    }
  }

  /**
   * Order within a flag (Rust `flag_matching.rs`): no identifier → `no_group_type`; then `super_groups[0]`; then
   * `holdout_groups[0]`; then the condition sets in stored order, first match wins. Sets with a variant
   * override are *not* moved to the front (PostHog/posthog#37859 removed that sorting server-side and in every SDK).
   */
  private match(flag: CompiledFlag): EvaluatedFlag {
    const identifier = this.bucketingIdentifier(flag);
    if (identifier === '') return this.result(flag, false, null, 'no_group_type', null);

    if (flag.superCondition !== null) {
      const properties = flag.superCondition.properties ?? [];
      const person = this.person();
      // Evaluated only once the person carries one of its keys (`$feature_enrollment/<key>`); the super
      // result is then final either way. Its payload is the "true" one, attached on a match only (Django;
      // Rust attaches it to non-matches too, which would contradict "payloads only for matched flags").
      if (properties.some((filter) => Object.hasOwn(person, filter.key))) {
        const matched = this.matchCondition(flag, flag.superCondition, null, identifier) === 'condition_match';
        return this.result(flag, matched, null, 'super_condition_value', 0);
      }
    }

    const holdoutVariant = this.holdoutVariant(flag, identifier);
    if (holdoutVariant !== null) return this.result(flag, true, holdoutVariant, 'holdout_condition_value', null);

    let bestReason: MatchReasonCode = 'no_condition_match';
    let bestIndex: number | null = null;
    const { conditions } = flag;
    for (let index = 0; index < conditions.length; index += 1) {
      const condition = conditions[index]!;
      const reason = this.matchCondition(flag, condition, flag.aggregation, identifier);
      if (REASON_PRIORITY[reason] >= REASON_PRIORITY[bestReason]) {
        bestReason = reason;
        bestIndex = index;
      }
      if (reason === 'condition_match') {
        const override = condition.variant;
        const variant =
          override !== undefined && override !== null && flag.variants.some((v) => v.key === override) ? override : this.computedVariant(flag, identifier);
        return this.result(flag, true, variant, 'condition_match', index);
      }
    }
    return this.result(flag, false, null, bestReason, bestIndex);
  }

  private result(flag: CompiledFlag, enabled: boolean, variant: string | null, code: MatchReasonCode, conditionIndex: number | null): EvaluatedFlag {
    const payloads = flag.flag.filters.payloads;
    // The variant's payload, or the "true" payload of a boolean match — never a fallback from one to the
    // other (Rust `get_matching_payload`).
    const payload = enabled && payloads !== undefined && payloads !== null ? (lookup(payloads, variant ?? 'true') ?? null) : null;
    return {
      key: flag.flag.key,
      failed: false,
      enabled,
      variant: enabled ? variant : null,
      reason: reasonOf(code, conditionIndex),
      payload,
    };
  }

  /**
   * Properties are AND-ed in stored order; flag-dependency filters are checked in place and cohort filters
   * last, since they are the costly ones (Rust `is_condition_match`). Then the rollout: `hash <= pct/100`.
   * `negation` is ignored here: PostHog honours it inside cohorts only.
   */
  private matchCondition(flag: CompiledFlag, condition: FlagCondition, aggregation: number | null, identifier: string): ConditionOutcome {
    const properties = condition.properties ?? NO_FILTERS;
    let cohortFilters = false;
    for (const filter of properties) {
      if (filter.type === 'cohort') cohortFilters = true;
      else if (!this.matchFilter(flag, filter, aggregation)) return 'no_condition_match';
    }
    if (cohortFilters) {
      for (const filter of properties) {
        if (filter.type === 'cohort' && !membershipMatches(filter, this.isCohortMember(filter))) return 'no_condition_match';
      }
    }

    const rollout = condition.rollout_percentage ?? 100;
    // Exactly 100% needs no hash; otherwise `<=`, not `<` (Django `is_condition_match`, Rust `check_rollout`).
    if (rollout === 100 || flagHash(flag.hashPrefix, identifier, '') <= rollout / 100) return 'condition_match';
    return 'out_of_rollout_bound';
  }

  private matchFilter(flag: CompiledFlag, filter: PropertyFilter, aggregation: number | null): boolean {
    if (filter.type === 'flag') return this.matchDependency(flag, filter);
    const groupIndex = filter.type === 'group' ? (filter.group_type_index ?? aggregation) : filter.type === 'person' ? null : aggregation;
    const properties = groupIndex === null ? (filter.type === 'group' ? EMPTY : this.person()) : this.group(groupIndex);
    return matchProperty(filter, properties, this.env);
  }

  /**
   * `flag_evaluates_to` (Rust `match_flag_value_to_flag_filter`): `true` matches any enabled value,
   * `false` only `false`, a string only that exact variant (case-sensitive); other values never match.
   * Inactive dependencies are `false`.
   */
  private matchDependency(flag: CompiledFlag, filter: PropertyFilter): boolean {
    if (filter.operator !== 'flag_evaluates_to') return false;
    const id = flag.dependencies.get(filter.key);
    const dependency = id === undefined ? undefined : this.results.get(id);
    const value = dependency === undefined ? false : flagValue(dependency);
    const expected = filter.value;
    if (expected === true) return value !== false;
    if (expected === false) return value === false;
    return typeof expected === 'string' && value === expected;
  }

  /**
   * `holdout_groups[0]`, property-less: the identifier is held out when its holdout hash is within the
   * rollout (absent rollout = everyone). The holdout variant is the condition's `variant`, else the computed
   * variant, else `"holdout"` (Rust `is_holdout_condition_match`).
   */
  private holdoutVariant(flag: CompiledFlag, identifier: string): string | null {
    const holdout = flag.holdoutCondition;
    if (holdout === null || (holdout.properties?.length ?? 0) > 0) return null;
    const rollout = holdout.rollout_percentage;
    // The holdout hash ignores continuity overrides (Rust passes none), so one person keeps one holdout
    // bucket across every flag of an experiment.
    const holdoutIdentifier = flag.aggregation === null ? this.context.distinctId : identifier;
    if (rollout !== undefined && rollout !== null && holdoutHash(holdoutIdentifier) > rollout / 100) return null;
    return holdout.variant ?? this.computedVariant(flag, holdoutIdentifier) ?? 'holdout';
  }

  /** Variants in stored order, each owning `[lower, lower + pct/100)`; no bucket hit means no variant. */
  private computedVariant(flag: CompiledFlag, identifier: string): string | null {
    const hash = flagHash(flag.hashPrefix, identifier, 'variant');
    let upper = 0;
    for (const variant of flag.variants) {
      upper += variant.rollout_percentage / 100;
      if (hash < upper) return variant.key;
    }
    return null;
  }

  /**
   * Group flags hash the group key (from `groups`, through the group type mapping); person flags hash the
   * distinct id — or, for continuity flags, the stored hash-key override, else the request's
   * `$anon_distinct_id` (PostHog/posthog#44852: the person may not be ingested yet), else the distinct id.
   * An empty identifier means the flag cannot be bucketed (`no_group_type`).
   */
  private bucketingIdentifier(flag: CompiledFlag): string {
    if (flag.aggregation !== null) return this.groupKey(flag.aggregation);
    const { distinctId, anonDistinctId, stored } = this.context;
    if (flag.flag.ensure_experience_continuity !== true) return distinctId;
    return lookup(stored?.hashKeyOverrides ?? {}, flag.flag.key) ?? anonDistinctId ?? distinctId;
  }

  private groupTypeName(index: number): string | undefined {
    return lookup(this.context.groupTypeMapping ?? {}, String(index));
  }

  private groupKey(index: number): string {
    const name = this.groupTypeName(index);
    return name === undefined ? '' : identifierText(lookup(this.context.groups ?? {}, name));
  }

  /** Stored person properties under the request's overrides (request values win). */
  private person(): Properties {
    if (this.personProperties === undefined) {
      const stored = this.context.stored?.personProperties;
      const overrides = this.context.personPropertyOverrides;
      // Without stored properties the overrides are read as they are (lookups are own-property only).
      this.personProperties = stored === undefined ? (overrides ?? EMPTY) : { ...stored, ...overrides };
    }
    return this.personProperties;
  }

  /** Stored group properties under the request's, plus `$group_key` (Rust `process_group_property_overrides`). */
  private group(index: number): Properties {
    let properties = this.groupProperties.get(index);
    if (properties === undefined) {
      const name = this.groupTypeName(index);
      const groupKey: JsonValue | undefined = name === undefined ? undefined : lookup(this.context.groups ?? {}, name);
      properties =
        name === undefined
          ? EMPTY
          : {
              ...lookup(this.context.stored?.groupProperties ?? {}, name),
              ...lookup(this.context.groupPropertyOverrides ?? {}, name),
              ...(groupKey === undefined ? {} : { $group_key: groupKey }),
            };
      this.groupProperties.set(index, properties);
    }
    return properties;
  }

  private isCohortMember(filter: PropertyFilter): boolean {
    const id = cohortIdOf(filter);
    if (id === null) throw new FlagEvaluationError(FlagErrorCode.cohortNotFound);
    return this.cohortMember(id);
  }

  /**
   * Static cohorts: the looked-up membership. Dynamic cohorts: their property groups against the person's
   * merged properties (cohorts are person-level even on group flags). A deleted or unknown cohort, or a
   * cycle of cohorts, makes the flag fail (Rust `DependencyNotFound` / `DependencyCycle`).
   */
  private cohortMember(id: number): boolean {
    const cohort = this.compiled.cohorts.get(id);
    if (cohort === undefined) throw new FlagEvaluationError(FlagErrorCode.cohortNotFound);
    if (cohort.problem !== null) throw new FlagEvaluationError(cohort.problem);
    if (cohort.isStatic) return this.context.stored?.staticCohortIds?.has(id) === true;
    if (cohort.unevaluable || cohort.root === null) return false;
    let member = this.cohortMembership.get(id);
    if (member === undefined) {
      member = matchesPropertyGroup(cohort.root, (leaf) =>
        leaf.type === 'cohort' ? membershipMatches(leaf, this.isCohortMember(leaf)) : matchProperty(leaf, this.person(), this.env),
      );
      this.cohortMembership.set(id, member);
    }
    return member;
  }
}
