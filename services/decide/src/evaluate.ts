import { withTimeout, type Logger } from '@plover/core';
import {
  evaluateFlags,
  planLookup,
  RegexBudget,
  type EvaluationContext,
  type FlagEvaluation,
  type LookupPlan,
  type Properties,
  type StoredData,
} from '@plover/flags';
import { staticCohortMemberships } from '@plover/flag-store';
import { GroupStore, PersonReads } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import type { CachedDefinitions } from './definitions';
import type { FlagsRequest } from './request';
import { hashKeyOverrides } from './store';

export interface FlagEvaluationResult {
  flags: Map<string, FlagEvaluation>;
  errorsWhileComputingFlags: boolean;
  /** Regex matches left undecided because the request's regex budget ran out (each a non-match). */
  regexUndecided: number;
}

export interface EvaluateDeps {
  sql: Sql;
  logger: Logger;
  /** How long the person/group/cohort lookup may take before the flags needing it fail. */
  lookupTimeoutMs: number;
  now?: () => Date;
}

class LookupTimeout extends Error {}

async function lookupStored(
  sql: Sql,
  projectId: number,
  definitions: CachedDefinitions,
  request: FlagsRequest & { distinctId: string },
  plan: LookupPlan,
): Promise<StoredData> {
  const stored: { -readonly [K in keyof StoredData]: StoredData[K] } = {};
  const needsPerson = plan.personProperties || plan.staticCohortIds.size > 0;
  const groupTypeIndex = new Map(Object.entries(definitions.groupTypeMapping).map(([index, name]) => [name, Number(index)]));
  const groups = [...plan.groupTypes].flatMap((name) => {
    const index = groupTypeIndex.get(name);
    const key = request.groups[name];
    return index === undefined || key === undefined ? [] : [{ name, index, key }];
  });

  const [person, groupRows, overrides] = await Promise.all([
    needsPerson ? new PersonReads(sql).flagProperties(projectId, request.distinctId) : Promise.resolve(undefined),
    new GroupStore(sql).getGroups(
      projectId,
      groups.map((group) => ({ groupTypeIndex: group.index, groupKey: group.key })),
    ),
    plan.hashKeyOverrides
      ? hashKeyOverrides(sql, projectId, request.distinctId, request.anonDistinctId, definitions.continuityKeys)
      : Promise.resolve(undefined),
  ]);
  // Stored properties are jsonb, so JSON values: the flags' Properties.
  if (needsPerson) stored.personProperties = (person?.properties ?? {}) as Properties;
  if (plan.staticCohortIds.size > 0) {
    stored.staticCohortIds = person ? await staticCohortMemberships(sql, person.id, [...plan.staticCohortIds]) : new Set();
  }
  if (groups.length > 0) {
    const byRef = new Map(groupRows.map((row) => [`${row.groupTypeIndex}:${row.groupKey}`, row.properties as Properties]));
    const groupProperties: Record<string, Properties> = {};
    for (const group of groups) groupProperties[group.name] = byRef.get(`${group.index}:${group.key}`) ?? {};
    stored.groupProperties = groupProperties;
  }
  if (overrides) stored.hashKeyOverrides = overrides;
  return stored;
}

/**
 * Evaluates a request against the project's definitions: stored data is read once, only if some flag needs
 * it, within `lookupTimeoutMs`; when that fails the flags depending on it come back failed and the rest are
 * still computed (docs/decide.md#degraded-lookups).
 */
export async function evaluateRequest(
  deps: EvaluateDeps,
  projectId: number,
  definitions: CachedDefinitions,
  request: FlagsRequest & { distinctId: string },
  personPropertyOverrides: Properties,
): Promise<FlagEvaluationResult> {
  const context: EvaluationContext = {
    distinctId: request.distinctId,
    anonDistinctId: request.anonDistinctId,
    groups: request.groups,
    personPropertyOverrides,
    groupPropertyOverrides: request.groupProperties,
    groupTypeMapping: definitions.groupTypeMapping,
  };
  const regexBudget = new RegexBudget();
  const options = { now: (deps.now ?? (() => new Date()))(), timezone: definitions.timezone, flagKeys: request.flagKeys, regexBudget };
  const plan = planLookup(definitions.compiled, context, { flagKeys: request.flagKeys });
  const needed = plan.personProperties || plan.staticCohortIds.size > 0 || plan.groupTypes.size > 0 || plan.hashKeyOverrides;

  let evaluationContext: EvaluationContext = context;
  if (needed) {
    try {
      const ms = deps.lookupTimeoutMs;
      const stored = await withTimeout(lookupStored(deps.sql, projectId, definitions, request, plan), ms, () => new LookupTimeout(`lookup exceeded ${ms} ms`));
      evaluationContext = { ...context, stored };
    } catch (error) {
      const code = error instanceof LookupTimeout ? 'timeout' : 'database_error';
      deps.logger.warn({ err: error, projectId }, 'flag lookup failed; flags needing it are returned as failed');
      evaluationContext = { ...context, lookupError: code };
    }
  }
  const flags = evaluateFlags(definitions.compiled, evaluationContext, options);
  let errorsWhileComputingFlags = false;
  for (const flag of flags.values()) errorsWhileComputingFlags ||= flag.failed;
  return { flags, errorsWhileComputingFlags, regexUndecided: regexBudget.undecided };
}
