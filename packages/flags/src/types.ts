/**
 * Flag and cohort definitions in PostHog's own JSON shape (`posthog/models/feature_flag/feature_flag.py`,
 * Rust `rust/feature-flags/src/flags/flag_models.rs`), so that definitions stored by the management API,
 * served to SDKs for local evaluation and evaluated by decide are one and the same document.
 */
import type { RegexBudget } from './regex';

export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/** Person or group properties. Keys are looked up as own properties only, so `__proto__` is an ordinary key. */
export type Properties = Readonly<Record<string, JsonValue>>;

export type PropertyOperator =
  | 'exact'
  | 'is_not'
  | 'icontains'
  | 'not_icontains'
  | 'icontains_multi'
  | 'not_icontains_multi'
  | 'starts_with'
  | 'not_starts_with'
  | 'ends_with'
  | 'not_ends_with'
  | 'regex'
  | 'not_regex'
  | 'gt'
  | 'gte'
  | 'lt'
  | 'lte'
  | 'between'
  | 'not_between'
  | 'is_set'
  | 'is_not_set'
  | 'is_date_before'
  | 'is_date_after'
  | 'is_date_exact'
  | 'semver_eq'
  | 'semver_neq'
  | 'semver_gt'
  | 'semver_gte'
  | 'semver_lt'
  | 'semver_lte'
  | 'semver_tilde'
  | 'semver_caret'
  | 'semver_wildcard'
  /** Cohort filters only. */
  | 'in'
  | 'not_in'
  /** Flag-dependency filters only. */
  | 'flag_evaluates_to';

/**
 * `person` and `group` filters match properties; `cohort` filters (`key: "id"`, `value: <cohort id>`) test
 * membership; `flag` filters (`key: <flag id>`, operator `flag_evaluates_to`) test another flag's value.
 * A filter without a type matches the flag's own aggregation target (person, or the flag's group).
 */
export type PropertyFilterType = 'person' | 'group' | 'cohort' | 'flag';

export interface PropertyFilter {
  key: string;
  /** Absent or null: every operator except `is_set`/`is_not_set` fails to match. */
  value?: JsonValue;
  /** Absent means `exact` (`in` for cohort filters). */
  operator?: PropertyOperator | null;
  type?: PropertyFilterType | null;
  /** Inverts the match. Honoured inside cohort property groups only, as in PostHog. */
  negation?: boolean | null;
  /** For `group` filters: which group's properties; defaults to the flag's aggregation group. */
  group_type_index?: number | null;
}

/** One condition set: properties are AND-ed, then the rollout applies. */
export interface FlagCondition {
  properties?: readonly PropertyFilter[] | null;
  /** 0–100; null or absent means 100. */
  rollout_percentage?: number | null;
  /** Forces this variant when the condition matches (ignored unless it names a variant). */
  variant?: string | null;
}

export interface FlagVariant {
  key: string;
  name?: string | null;
  rollout_percentage: number;
}

export interface FlagFilters {
  /** Condition sets, OR-ed in stored order. Without this key the legacy `properties` form applies. */
  groups?: readonly FlagCondition[];
  /** Legacy form (no `groups`): one condition with these properties and the flag's `rollout_percentage`. */
  properties?: readonly PropertyFilter[] | null;
  multivariate?: { variants: readonly FlagVariant[] } | null;
  /** Null for person flags; a group type index (0–4) for group flags. */
  aggregation_group_type_index?: number | null;
  /** Keyed by variant key, or `"true"` for a boolean flag. Values are usually JSON-encoded strings. */
  payloads?: Readonly<Record<string, JsonValue>> | null;
  /** Early-access gate: only the first entry is evaluated. */
  super_groups?: readonly FlagCondition[] | null;
  /** Experiment holdout: only the first entry is evaluated. */
  holdout_groups?: readonly FlagCondition[] | null;
}

export interface FeatureFlag {
  id: number;
  key: string;
  /** PostHog's wire name for the project that owns the flag. */
  team_id?: number;
  /** PostHog keeps the flag's description here. */
  name?: string | null;
  filters: FlagFilters;
  /** Inactive flags are not returned, but evaluate to `false` as dependencies of other flags. */
  active: boolean;
  /** Deleted flags do not exist for the evaluator. */
  deleted?: boolean;
  ensure_experience_continuity?: boolean | null;
  /** Legacy rollout, used only when `filters` has no `groups`. */
  rollout_percentage?: number | null;
  version?: number | null;
}

/** A nested AND/OR group. Leaves are person filters, or cohort filters for nested cohorts. */
export interface PropertyGroup {
  type: 'AND' | 'OR';
  values: readonly (PropertyGroup | PropertyFilter)[];
}

export interface Cohort {
  id: number;
  /** Static cohorts have an explicit member list; membership comes from the lookup (`StoredData`). */
  is_static?: boolean;
  deleted?: boolean;
  filters?: { properties?: PropertyGroup | null } | null;
}

export interface FlagDefinitions {
  /** Every non-deleted flag of the project, inactive ones included (they are dependency targets). */
  flags: readonly FeatureFlag[];
  cohorts?: readonly Cohort[];
}

/** What the person/group/cohort lookup found for this request. */
export interface StoredData {
  personProperties?: Properties;
  /** Stored group properties by group type name. */
  groupProperties?: Readonly<Record<string, Properties>>;
  /** Static cohorts the person belongs to. */
  staticCohortIds?: ReadonlySet<number>;
  /** Experience-continuity hash keys by flag key. */
  hashKeyOverrides?: Readonly<Record<string, string>>;
}

export interface EvaluationContext {
  distinctId: string;
  /** The request's `$anon_distinct_id`: hashed for continuity flags that have no stored override yet. */
  anonDistinctId?: string | null;
  /** Group type name → group key. */
  groups?: Readonly<Record<string, JsonValue>>;
  /** The request's `person_properties` (and anything decide adds, such as GeoIP); they win over stored ones. */
  personPropertyOverrides?: Properties;
  /** The request's `group_properties` by group type name; they win over stored ones. */
  groupPropertyOverrides?: Readonly<Record<string, Properties>>;
  /** Group type index (as a string, like PostHog's `group_type_mapping`) → group type name. */
  groupTypeMapping?: Readonly<Record<string, string>>;
  /** Result of the lookup; omitted when none was made (the person is then treated as unknown). */
  stored?: StoredData;
  /**
   * Set when the lookup failed or timed out: every flag whose value depends on it (see `planLookup`),
   * and every flag depending on such a flag, is returned as failed with this code.
   */
  lookupError?: string;
}

export interface EvaluationOptions {
  /** The clock for relative dates; passed in so evaluation is deterministic. */
  now: Date;
  /** IANA zone in which naive dates and relative dates are read (the project's timezone). Default UTC. */
  timezone?: string;
  /** `flag_keys_to_evaluate`: return only these flags (their dependencies are still evaluated). */
  flagKeys?: readonly string[];
  /** What the request's regex matches may spend (default: a fresh `RegexBudget`); read it afterwards for its counts. */
  regexBudget?: RegexBudget;
}

export type MatchReasonCode =
  'condition_match' | 'no_condition_match' | 'out_of_rollout_bound' | 'no_group_type' | 'super_condition_value' | 'holdout_condition_value';

export interface EvaluatedFlag {
  key: string;
  failed: false;
  enabled: boolean;
  variant: string | null;
  reason: { code: MatchReasonCode; condition_index: number | null; description: string };
  /** The stored payload for the resulting value (the variant's, or `"true"`'s); null when there is none. */
  payload: JsonValue;
}

/** A flag that could not be computed: decide omits it (v3) or returns it with `failed: true` (v4, /flags). */
export interface FailedFlag {
  key: string;
  failed: true;
  enabled: false;
  variant: null;
  /** `code` is an error label such as `timeout` or `dependency_cycle_flag`. */
  reason: { code: string; condition_index: null; description: null };
  payload: null;
}

export type FlagEvaluation = EvaluatedFlag | FailedFlag;
