import { selectFlags, type CompiledFlag, type CompiledFlags } from './compile';
import type { EvaluationContext, EvaluationOptions } from './types';
import { identifierText, lookup } from './values';

/** What decide must fetch before evaluating, and which returned flags depend on that fetch. */
export interface LookupPlan {
  /**
   * Returned flags whose value depends on stored data, directly or through a flag they depend on. When
   * the lookup fails these are the flags that fail; every other flag is still computed.
   */
  readonly flagKeys: ReadonlySet<string>;
  /** Stored person properties are read (a key is not covered by the request's overrides). */
  readonly personProperties: boolean;
  /** Static cohorts whose membership must be checked for this person. */
  readonly staticCohortIds: ReadonlySet<number>;
  /** Group types (names, as passed in `groups`) whose stored properties are read. */
  readonly groupTypes: ReadonlySet<string>;
  /** Experience-continuity hash keys are read. */
  readonly hashKeyOverrides: boolean;
}

interface FlagLookup {
  personProperties: boolean;
  staticCohortIds: ReadonlySet<number>;
  groupTypes: string[];
  hashKeyOverrides: boolean;
}

/**
 * What one flag reads from storage for this request. Keys covered by the request's overrides need no
 * lookup because request values win anyway (SPEC §5) — the same short-cut as Rust
 * `flags_require_db_preparation`, but per key and per group type. A group that was not passed needs no
 * lookup either: without its key the flag is `no_group_type`, and a group filter on it reads only the
 * request's `group_properties` (decide fetches stored rows only for the groups passed).
 */
function flagLookup(flag: CompiledFlag, context: EvaluationContext): FlagLookup {
  const { needs } = flag;
  const personOverrides = context.personPropertyOverrides ?? {};
  const groupTypes: string[] = [];
  for (const [index, keys] of needs.groupKeys) {
    const name = lookup(context.groupTypeMapping ?? {}, String(index));
    if (typeof name !== 'string' || identifierText(lookup(context.groups ?? {}, name)) === '') continue;
    const overrides = lookup(context.groupPropertyOverrides ?? {}, name) ?? {};
    // `$group_key` is added from `groups` by the evaluator itself.
    if ([...keys].some((key) => key !== '$group_key' && !Object.hasOwn(overrides, key))) groupTypes.push(name);
  }
  return {
    personProperties: [...needs.personKeys].some((key) => !Object.hasOwn(personOverrides, key)),
    staticCohortIds: needs.staticCohortIds,
    groupTypes,
    hashKeyOverrides: needs.hashKeyOverride,
  };
}

function readsStorage(needs: FlagLookup): boolean {
  return needs.personProperties || needs.staticCohortIds.size > 0 || needs.groupTypes.length > 0 || needs.hashKeyOverrides;
}

export function needsLookup(flag: CompiledFlag, context: EvaluationContext): boolean {
  return readsStorage(flagLookup(flag, context));
}

/**
 * Plans the person/group/cohort lookup for a request: decide skips it when nothing needs it, fetches only
 * what is listed, and on failure passes `lookupError` so that exactly `flagKeys` fail.
 */
export function planLookup(
  compiled: CompiledFlags,
  context: EvaluationContext,
  options: Pick<EvaluationOptions, 'flagKeys'> = {},
): LookupPlan {
  const { output, closure } = selectFlags(compiled, options.flagKeys);
  let personProperties = false;
  let hashKeyOverrides = false;
  const staticCohortIds = new Set<number>();
  const groupTypes = new Set<string>();
  const dependsOnLookup = new Set<number>();

  for (const flag of compiled.evaluationOrder) {
    if (!closure.has(flag)) continue;
    const needs = flagLookup(flag, context);
    personProperties ||= needs.personProperties;
    hashKeyOverrides ||= needs.hashKeyOverrides;
    needs.staticCohortIds.forEach((id) => staticCohortIds.add(id));
    needs.groupTypes.forEach((name) => groupTypes.add(name));
    const upstream = [...flag.dependencies.values()].some((id) => dependsOnLookup.has(id));
    if (upstream || readsStorage(needs)) dependsOnLookup.add(flag.flag.id);
  }

  return {
    flagKeys: new Set(output.filter((flag) => dependsOnLookup.has(flag.flag.id)).map((flag) => flag.flag.key)),
    personProperties,
    staticCohortIds,
    groupTypes,
    hashKeyOverrides,
  };
}
