import { cohortIdOf, leavesOf } from './cohorts';
import { FlagErrorCode } from './errors';
import { compileRegex, type PropertyRegex } from './regex';
import type { Cohort, FeatureFlag, FlagCondition, FlagDefinitions, FlagVariant, PropertyFilter, PropertyGroup } from './types';
import { toText } from './values';

/** Which stored data a flag reads, independent of any request. */
export interface DataNeeds {
  readonly personKeys: ReadonlySet<string>;
  readonly staticCohortIds: ReadonlySet<number>;
  /** Group type index → group property keys. */
  readonly groupKeys: ReadonlyMap<number, ReadonlySet<string>>;
  /** A continuity flag whose outcome depends on the hashed identifier. */
  readonly hashKeyOverride: boolean;
}

export interface CompiledCohort {
  readonly id: number;
  readonly isStatic: boolean;
  readonly root: PropertyGroup | null;
  /** A cycle or a missing nested cohort: every flag that evaluates this cohort fails with this code. */
  readonly problem: string | null;
  /**
   * Holds a filter type flags cannot evaluate (behavioural, lifecycle…). Rust fails to parse such a cohort
   * and treats it as matching nobody; so do we.
   */
  readonly unevaluable: boolean;
  /** Person property keys and static cohorts read by this cohort and the cohorts it nests. */
  readonly needs: Pick<DataNeeds, 'personKeys' | 'staticCohortIds'>;
}

export interface CompiledFlag {
  readonly flag: FeatureFlag;
  /** `filters.groups`, or the legacy single condition. */
  readonly conditions: readonly FlagCondition[];
  /** `super_groups[0]` when it has properties (a property-less super condition is never evaluated). */
  readonly superCondition: FlagCondition | null;
  readonly holdoutCondition: FlagCondition | null;
  readonly variants: readonly FlagVariant[];
  readonly aggregation: number | null;
  /** Flag-dependency filter key → the id of the flag it names. */
  readonly dependencies: ReadonlyMap<string, number>;
  /** A dependency cycle or a missing dependency, here or upstream: the flag fails with this code. */
  readonly graphError: string | null;
  readonly needs: DataNeeds;
  /** `"<flag key>."`, the start of the flag's rollout and variant hash input (`flagHash`). */
  readonly hashPrefix: string;
}

/** Definitions prepared once (per project and definitions version) and evaluated for many requests. */
export interface CompiledFlags {
  /** Non-deleted flags in stored order. */
  readonly flags: readonly CompiledFlag[];
  readonly byId: ReadonlyMap<number, CompiledFlag>;
  readonly byKey: ReadonlyMap<string, CompiledFlag>;
  /** Active flags without graph errors, every flag after the flags it depends on. */
  readonly evaluationOrder: readonly CompiledFlag[];
  readonly cohorts: ReadonlyMap<number, CompiledCohort>;
  readonly regexes: ReadonlyMap<string, PropertyRegex | null>;
}

export function compileFlags(definitions: FlagDefinitions): CompiledFlags {
  const cohorts = compileCohorts(definitions.cohorts ?? []);
  const present = definitions.flags.filter((flag) => flag.deleted !== true);
  const byId = new Map(present.map((flag) => [flag.id, flag]));
  const byKey = new Map(present.map((flag) => [flag.key, flag]));

  const shaped = present.map((flag) => shapeFlag(flag, byId, byKey, cohorts));
  const { order, graphErrors } = orderByDependencies(shaped, byId);
  const flags = shaped.map((flag) => ({ ...flag, graphError: graphErrors.get(flag.flag.id) ?? null }));
  const compiledById = new Map(flags.map((flag) => [flag.flag.id, flag]));

  return {
    flags,
    byId: compiledById,
    byKey: new Map(flags.map((flag) => [flag.flag.key, flag])),
    evaluationOrder: order.flatMap((id) => compiledById.get(id) ?? []),
    cohorts,
    regexes: compileRegexes(present, definitions.cohorts ?? []),
  };
}

/** The flags one evaluation covers (`selectFlags`). */
export interface FlagSelection {
  /** The flags to return: active ones, narrowed by `flag_keys_to_evaluate`, in stored order. */
  readonly output: readonly CompiledFlag[];
  /** `output` and everything it depends on, transitively. */
  readonly closure: ReadonlySet<CompiledFlag>;
  /** `evaluationOrder` restricted to `closure`: what is evaluated, in that order. */
  readonly evaluated: readonly CompiledFlag[];
}

// The selection without `flag_keys_to_evaluate` (nearly every request) depends on the definitions only.
const unnarrowed = new WeakMap<CompiledFlags, FlagSelection>();

/**
 * The flags an evaluation covers: `output` are the flags to return (active ones, narrowed by
 * `flag_keys_to_evaluate`), `closure` adds everything they depend on, transitively. Without narrowing the
 * selection is computed once per definitions; callers must not change it.
 */
export function selectFlags(compiled: CompiledFlags, flagKeys: readonly string[] | undefined): FlagSelection {
  if (flagKeys !== undefined) return computeSelection(compiled, new Set(flagKeys));
  let selection = unnarrowed.get(compiled);
  if (selection === undefined) {
    selection = computeSelection(compiled, null);
    unnarrowed.set(compiled, selection);
  }
  return selection;
}

function computeSelection(compiled: CompiledFlags, requested: ReadonlySet<string> | null): FlagSelection {
  const output = compiled.flags.filter((flag) => flag.flag.active && (requested === null || requested.has(flag.flag.key)));
  const closure = new Set<CompiledFlag>();
  const pending = [...output];
  for (let flag = pending.pop(); flag !== undefined; flag = pending.pop()) {
    if (closure.has(flag)) continue;
    closure.add(flag);
    for (const id of flag.dependencies.values()) {
      const dependency = compiled.byId.get(id);
      if (dependency?.flag.active === true) pending.push(dependency);
    }
  }
  return { output, closure, evaluated: compiled.evaluationOrder.filter((flag) => closure.has(flag)) };
}

type ShapedFlag = Omit<CompiledFlag, 'graphError'> & { readonly missingDependency: boolean };

function shapeFlag(
  flag: FeatureFlag,
  byId: ReadonlyMap<number, FeatureFlag>,
  byKey: ReadonlyMap<string, FeatureFlag>,
  cohorts: ReadonlyMap<number, CompiledCohort>,
): ShapedFlag {
  const { filters } = flag;
  // Legacy flags (no `groups` key) become one condition (Django `FeatureFlag.get_filters`).
  const conditions = filters.groups ?? [{ properties: filters.properties ?? [], rollout_percentage: flag.rollout_percentage ?? null }];
  const superGroup = filters.super_groups?.[0];
  const superCondition = superGroup !== undefined && (superGroup.properties?.length ?? 0) > 0 ? superGroup : null;
  const variants = filters.multivariate?.variants ?? [];
  const aggregation = filters.aggregation_group_type_index ?? null;

  const dependencies = new Map<string, number>();
  let missingDependency = false;
  for (const filter of conditions.flatMap((condition) => condition.properties ?? [])) {
    if (filter.type !== 'flag') continue;
    const id = resolveFlagReference(filter.key, byId, byKey);
    if (id === null) missingDependency = true;
    else dependencies.set(filter.key, id);
  }

  const hashed = [...conditions, ...(superCondition === null ? [] : [superCondition])].some((condition) => (condition.rollout_percentage ?? 100) !== 100);
  return {
    flag,
    conditions,
    superCondition,
    holdoutCondition: filters.holdout_groups?.[0] ?? null,
    variants,
    aggregation,
    dependencies,
    missingDependency,
    hashPrefix: `${flag.key}.`,
    needs: {
      ...conditionNeeds(conditions, superCondition, aggregation, cohorts),
      hashKeyOverride: flag.ensure_experience_continuity === true && aggregation === null && (hashed || variants.length > 0),
    },
  };
}

/**
 * PostHog's server keys a dependency by flag **id** (`get_feature_flag_id`); the local-evaluation payload
 * uses the flag **key**. An id is tried first, then a key, so both forms of stored filter work.
 */
function resolveFlagReference(reference: string, byId: ReadonlyMap<number, FeatureFlag>, byKey: ReadonlyMap<string, FeatureFlag>): number | null {
  if (/^\d+$/.test(reference) && byId.has(Number(reference))) return Number(reference);
  return byKey.get(reference)?.id ?? null;
}

function conditionNeeds(
  conditions: readonly FlagCondition[],
  superCondition: FlagCondition | null,
  aggregation: number | null,
  cohorts: ReadonlyMap<number, CompiledCohort>,
): Omit<DataNeeds, 'hashKeyOverride'> {
  const personKeys = new Set<string>();
  const staticCohortIds = new Set<number>();
  const groupKeys = new Map<number, Set<string>>();
  const addGroupKey = (index: number, key: string): void => {
    const keys = groupKeys.get(index) ?? new Set<string>();
    keys.add(key);
    groupKeys.set(index, keys);
  };
  const visit = (filter: PropertyFilter, target: number | null): void => {
    if (filter.type === 'flag') return;
    if (filter.type === 'cohort') {
      const id = cohortIdOf(filter);
      const cohort = id === null ? undefined : cohorts.get(id);
      cohort?.needs.personKeys.forEach((key) => personKeys.add(key));
      cohort?.needs.staticCohortIds.forEach((cohortId) => staticCohortIds.add(cohortId));
      return;
    }
    const groupIndex = filter.type === 'group' ? (filter.group_type_index ?? target) : filter.type === 'person' ? null : target;
    if (groupIndex === null) {
      // A `group` filter that names no group reads an empty property set: nothing to look up.
      if (filter.type !== 'group') personKeys.add(filter.key);
    } else {
      addGroupKey(groupIndex, filter.key);
    }
  };
  for (const condition of conditions) for (const filter of condition.properties ?? []) visit(filter, aggregation);
  // Early-access enrollment is a person-level concept, even on group flags (Rust `is_super_condition_match`).
  for (const filter of superCondition?.properties ?? []) visit(filter, null);
  return { personKeys, staticCohortIds, groupKeys };
}

/**
 * Kahn's algorithm over the active flags (an inactive dependency is simply `false` and imposes no order).
 * A flag with a missing dependency fails with `dependency_not_found_flag`; flags on a cycle fail with
 * `dependency_cycle_flag`; either error spreads to every flag downstream, as Rust removes a failing node
 * "and its dependents" from the graph (`rust/feature-flags/src/utils/graph_utils.rs`).
 */
function orderByDependencies(flags: readonly ShapedFlag[], byId: ReadonlyMap<number, FeatureFlag>): { order: number[]; graphErrors: Map<number, string> } {
  const active = flags.filter((flag) => flag.flag.active);
  const activeDependencies = (flag: ShapedFlag): number[] => [...new Set([...flag.dependencies.values()].filter((id) => byId.get(id)?.active === true))];
  const dependents = new Map<number, number[]>();
  const remaining = new Map<number, number>();
  for (const flag of active) {
    const dependencies = activeDependencies(flag);
    remaining.set(flag.flag.id, dependencies.length);
    for (const id of dependencies) dependents.set(id, [...(dependents.get(id) ?? []), flag.flag.id]);
  }

  const shapedById = new Map(active.map((flag) => [flag.flag.id, flag]));
  const graphErrors = new Map<number, string>();
  const order: number[] = [];
  const ready = active.filter((flag) => remaining.get(flag.flag.id) === 0).map((flag) => flag.flag.id);
  for (let index = 0; index < ready.length; index += 1) {
    const id = ready[index] ?? 0;
    const flag = shapedById.get(id);
    if (flag === undefined) continue;
    const inherited = activeDependencies(flag)
      .map((dependency) => graphErrors.get(dependency))
      .find((error) => error !== undefined);
    const error = flag.missingDependency ? FlagErrorCode.flagDependencyNotFound : inherited;
    if (error === undefined) order.push(id);
    else graphErrors.set(id, error);
    for (const dependent of dependents.get(id) ?? []) {
      const left = (remaining.get(dependent) ?? 0) - 1;
      remaining.set(dependent, left);
      if (left === 0) ready.push(dependent);
    }
  }
  for (const [id, left] of remaining) if (left > 0) graphErrors.set(id, FlagErrorCode.flagDependencyCycle);
  return { order, graphErrors };
}

const CYCLE = Symbol('cohort cycle');
const COHORT_LEAF_TYPES: ReadonlySet<string | undefined> = new Set([undefined, 'person', 'cohort']);

function compileCohorts(cohorts: readonly Cohort[]): Map<number, CompiledCohort> {
  const definitions = new Map(cohorts.filter((cohort) => cohort.deleted !== true).map((cohort) => [cohort.id, cohort]));
  const compiled = new Map<number, CompiledCohort>();
  const visiting = new Set<number>();

  // Depth-first; a cohort reached again while still on the stack closes a cycle. Nesting is shallow in
  // practice (cohorts of cohorts), so recursion depth is not a concern.
  const compile = (id: number): CompiledCohort | typeof CYCLE | undefined => {
    const done = compiled.get(id);
    if (done !== undefined) return done;
    if (visiting.has(id)) return CYCLE;
    const cohort = definitions.get(id);
    if (cohort === undefined) return undefined;

    visiting.add(id);
    const isStatic = cohort.is_static === true;
    // Static cohorts list their members; any filters they carry are leftovers and are ignored (as in Rust).
    const root = isStatic ? null : (cohort.filters?.properties ?? null);
    const leaves = root === null ? [] : leavesOf(root);
    const personKeys = new Set<string>();
    const staticCohortIds = new Set<number>(isStatic ? [id] : []);
    let problem: string | null = null;
    for (const leaf of leaves) {
      if (leaf.type !== 'cohort') {
        personKeys.add(leaf.key);
        continue;
      }
      const nestedId = cohortIdOf(leaf);
      const nested = nestedId === null ? undefined : compile(nestedId);
      if (nested === CYCLE) problem ??= FlagErrorCode.cohortDependencyCycle;
      else if (nested === undefined) problem ??= FlagErrorCode.cohortNotFound;
      else {
        problem ??= nested.problem;
        nested.needs.personKeys.forEach((key) => personKeys.add(key));
        nested.needs.staticCohortIds.forEach((cohortId) => staticCohortIds.add(cohortId));
      }
    }
    visiting.delete(id);

    const result: CompiledCohort = {
      id,
      isStatic,
      root,
      problem,
      unevaluable: leaves.some((leaf) => !COHORT_LEAF_TYPES.has(leaf.type ?? undefined)),
      needs: { personKeys, staticCohortIds },
    };
    compiled.set(id, result);
    return result;
  };

  for (const id of definitions.keys()) compile(id);
  return compiled;
}

/** Every regex pattern of every flag and cohort, compiled once. */
function compileRegexes(flags: readonly FeatureFlag[], cohorts: readonly Cohort[]): Map<string, PropertyRegex | null> {
  const filters = [
    ...flags.flatMap(({ filters }) =>
      [...(filters.groups ?? []), ...(filters.super_groups ?? []), { properties: filters.properties ?? [] }].flatMap((condition) => condition.properties ?? []),
    ),
    ...cohorts.flatMap((cohort) => (cohort.filters?.properties ? leavesOf(cohort.filters.properties) : [])),
  ];
  const regexes = new Map<string, PropertyRegex | null>();
  for (const filter of filters) {
    if ((filter.operator === 'regex' || filter.operator === 'not_regex') && filter.value !== undefined && filter.value !== null) {
      const pattern = toText(filter.value);
      if (!regexes.has(pattern)) regexes.set(pattern, compileRegex(pattern));
    }
  }
  return regexes;
}
