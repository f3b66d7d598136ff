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

const EMPTY: Readonly<Record<string, unknown>> = {};

/**
 * What one flag reads from storage for this request. Keys covered by the request's overrides need no
 * lookup because request values win anyway (docs/decide.md#degraded-lookups) — the same short-cut as Rust
 * `flags_require_db_preparation`, but per key and per group type. A group that was not passed needs no
 * lookup either: without its key the flag is `no_group_type`, and a group filter on it reads only the
 * request's `group_properties` (decide fetches stored rows only for the groups passed).
 *
 * Returns whether the flag reads anything; the group types it reads are added to `groupTypes` when given.
 * Written without intermediate collections: it runs for every flag of every request.
 */
function flagLookup(flag: CompiledFlag, context: EvaluationContext, groupTypes?: Set<string>): { person: boolean; reads: boolean } {
  const { needs } = flag;
  const person = readsPersonProperties(needs.personKeys, context.personPropertyOverrides ?? EMPTY);
  let group = false;
  for (const [index, keys] of needs.groupKeys) {
    const name = lookup(context.groupTypeMapping ?? {}, String(index));
    if (typeof name !== 'string' || identifierText(lookup(context.groups ?? {}, name)) === '') continue;
    const overrides = lookup(context.groupPropertyOverrides ?? {}, name) ?? EMPTY;
    for (const key of keys) {
      // `$group_key` is added from `groups` by the evaluator itself.
      if (key !== '$group_key' && !Object.hasOwn(overrides, key)) {
        group = true;
        groupTypes?.add(name);
        break;
      }
    }
  }
  return { person, reads: person || group || needs.staticCohortIds.size > 0 || needs.hashKeyOverride };
}

function readsPersonProperties(keys: ReadonlySet<string>, overrides: Readonly<Record<string, unknown>>): boolean {
  for (const key of keys) if (!Object.hasOwn(overrides, key)) return true;
  return false;
}

export function needsLookup(flag: CompiledFlag, context: EvaluationContext): boolean {
  return flagLookup(flag, context).reads;
}

/** What the unnarrowed selection could read at most: when the request covers it all, there is no lookup. */
interface NeedsSummary {
  readonly personKeys: ReadonlySet<string>;
  /** Some flag reads group properties, static cohorts or continuity hash keys. */
  readonly beyondPerson: boolean;
}

const summaries = new WeakMap<CompiledFlags, NeedsSummary>();

function needsSummary(compiled: CompiledFlags): NeedsSummary {
  let summary = summaries.get(compiled);
  if (summary === undefined) {
    const personKeys = new Set<string>();
    let beyondPerson = false;
    for (const flag of selectFlags(compiled, undefined).evaluated) {
      flag.needs.personKeys.forEach((key) => personKeys.add(key));
      beyondPerson ||= flag.needs.groupKeys.size > 0 || flag.needs.staticCohortIds.size > 0 || flag.needs.hashKeyOverride;
    }
    summary = { personKeys, beyondPerson };
    summaries.set(compiled, summary);
  }
  return summary;
}

const NO_LOOKUP: LookupPlan = {
  flagKeys: new Set(),
  personProperties: false,
  staticCohortIds: new Set(),
  groupTypes: new Set(),
  hashKeyOverrides: false,
};

/**
 * Plans the person/group/cohort lookup for a request: decide skips it when nothing needs it, fetches only
 * what is listed, and on failure passes `lookupError` so that exactly `flagKeys` fail. The returned plan
 * may be shared between requests; callers must not change it.
 */
export function planLookup(compiled: CompiledFlags, context: EvaluationContext, options: Pick<EvaluationOptions, 'flagKeys'> = {}): LookupPlan {
  // The common case — every flag decided from the request's properties — without a walk over the flags.
  if (options.flagKeys === undefined) {
    const summary = needsSummary(compiled);
    if (!summary.beyondPerson && !readsPersonProperties(summary.personKeys, context.personPropertyOverrides ?? EMPTY)) return NO_LOOKUP;
  }

  const { output, evaluated } = selectFlags(compiled, options.flagKeys);
  let personProperties = false;
  let hashKeyOverrides = false;
  const staticCohortIds = new Set<number>();
  const groupTypes = new Set<string>();
  const dependsOnLookup = new Set<number>();

  for (const flag of evaluated) {
    const { person, reads } = flagLookup(flag, context, groupTypes);
    personProperties ||= person;
    hashKeyOverrides ||= flag.needs.hashKeyOverride;
    flag.needs.staticCohortIds.forEach((id) => staticCohortIds.add(id));
    let upstream = false;
    for (const id of flag.dependencies.values()) upstream ||= dependsOnLookup.has(id);
    if (upstream || reads) dependsOnLookup.add(flag.flag.id);
  }

  const flagKeys = new Set<string>();
  for (const flag of output) if (dependsOnLookup.has(flag.flag.id)) flagKeys.add(flag.flag.key);
  return { flagKeys, personProperties, staticCohortIds, groupTypes, hashKeyOverrides };
}
