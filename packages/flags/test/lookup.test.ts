import {
  compileFlags,
  evaluateFlags,
  planLookup,
  type Cohort,
  type EvaluationContext,
  type FeatureFlag,
  type Properties,
  type PropertyFilter,
} from '@plover/flags';

import { buildFlag, NOW } from './fixtures';

const isPro: PropertyFilter = { key: 'plan', type: 'person', operator: 'exact', value: 'pro' };
const tier: PropertyFilter = { key: 'tier', type: 'group', group_type_index: 0, operator: 'exact', value: 'enterprise' };
const cohorts: Cohort[] = [
  { id: 1, filters: { properties: { type: 'AND', values: [{ key: 'email', type: 'person', operator: 'is_set' }] } } },
  { id: 2, is_static: true },
];

const rolloutOnly = buildFlag({ key: 'rollout-only' });
const personFlag = buildFlag({ key: 'person', filters: { groups: [{ properties: [isPro] }] } });
const dynamicCohort = buildFlag({ key: 'dynamic-cohort', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 1 }] }] } });
const staticCohort = buildFlag({ key: 'static-cohort', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 2 }] }] } });
const groupFlag = buildFlag({ key: 'group', filters: { aggregation_group_type_index: 0, groups: [{ properties: [tier] }] } });
const continuity = buildFlag({
  key: 'continuity',
  ensure_experience_continuity: true,
  filters: { groups: [{ properties: [], rollout_percentage: 30 }] },
});
const continuityEveryone = buildFlag({ key: 'continuity-everyone', ensure_experience_continuity: true });
const dependent = buildFlag({
  key: 'dependent',
  filters: { groups: [{ properties: [{ key: 'person', type: 'flag', operator: 'flag_evaluates_to', value: false }] }] },
});

const flags: FeatureFlag[] = [rolloutOnly, personFlag, dynamicCohort, staticCohort, groupFlag, continuity, continuityEveryone, dependent];
const compiled = compileFlags({ flags, cohorts });
const groupContext = { groupTypeMapping: { '0': 'company' }, groups: { company: 'acme' } };

describe('planLookup', () => {
  it('lists what must be fetched and which returned flags depend on it', () => {
    const plan = planLookup(compiled, { distinctId: 'u', ...groupContext });
    expect({ ...plan, flagKeys: [...plan.flagKeys], staticCohortIds: [...plan.staticCohortIds], groupTypes: [...plan.groupTypes] }).toEqual({
      flagKeys: ['person', 'dynamic-cohort', 'static-cohort', 'group', 'continuity', 'dependent'],
      personProperties: true,
      staticCohortIds: [2],
      groupTypes: ['company'],
      hashKeyOverrides: true,
    });
  });

  it('needs nothing for keys the request already carries', () => {
    const plan = planLookup(
      compiled,
      { distinctId: 'u', ...groupContext, personPropertyOverrides: { plan: 'pro', email: 'a@b.c' }, groupPropertyOverrides: { company: { tier: 'x' } } },
      { flagKeys: ['person', 'dynamic-cohort', 'group', 'dependent', 'rollout-only', 'continuity-everyone'] },
    );
    expect([plan.personProperties, plan.groupTypes.size, plan.hashKeyOverrides, [...plan.flagKeys]]).toEqual([false, 0, false, []]);
  });

  it('needs no group lookup when the group is not passed (the flag is no_group_type)', () => {
    expect(planLookup(compiled, { distinctId: 'u' }, { flagKeys: ['group'] }).flagKeys.size).toBe(0);
  });

  it('answers the unnarrowed plan the same way with and without the shortcut for fully covered requests', () => {
    // Only person-property flags: with their keys all given, the shortcut returns an empty plan; naming every
    // flag in `flagKeys` takes the full walk, which must agree.
    const personOnly = compileFlags({ flags: [rolloutOnly, personFlag, dynamicCohort, dependent], cohorts });
    const keys = ['rollout-only', 'person', 'dynamic-cohort', 'dependent'];
    const describePlan = (plan: ReturnType<typeof planLookup>) => [
      [...plan.flagKeys],
      plan.personProperties,
      [...plan.staticCohortIds],
      [...plan.groupTypes],
      plan.hashKeyOverrides,
    ];
    const overrideSets: Properties[] = [{}, { plan: 'pro' }, { email: 'a@b.c' }, { plan: 'pro', email: 'a@b.c' }, { plan: 'pro', email: 'a@b.c', other: 1 }];
    for (const overrides of overrideSets) {
      const context: EvaluationContext = { distinctId: 'u', personPropertyOverrides: overrides };
      expect(describePlan(planLookup(personOnly, context))).toEqual(describePlan(planLookup(personOnly, context, { flagKeys: keys })));
    }
    expect(planLookup(personOnly, { distinctId: 'u', personPropertyOverrides: { plan: 'pro', email: 'a@b.c' } }).flagKeys.size).toBe(0);
    expect([...planLookup(personOnly, { distinctId: 'u', personPropertyOverrides: { plan: 'pro' } }).flagKeys]).toEqual(['dynamic-cohort']);
  });

  it('covers the dependencies of requested flags', () => {
    const plan = planLookup(compiled, { distinctId: 'u' }, { flagKeys: ['dependent'] });
    expect([[...plan.flagKeys], plan.personProperties]).toEqual([['dependent'], true]);
  });
});

describe('a failed lookup (errorsWhileComputingFlags)', () => {
  const context: EvaluationContext = { distinctId: 'u', ...groupContext, personPropertyOverrides: { email: 'a@b.c' }, lookupError: 'timeout' };
  const result = evaluateFlags(compiled, context, { now: NOW });

  it('fails exactly the flags planLookup names, with the given code', () => {
    const failedKeys = [...result.values()].filter((flag) => flag.failed).map((flag) => flag.key);
    expect(failedKeys).toEqual([...planLookup(compiled, context).flagKeys]);
    expect(result.get('person')?.reason).toEqual({ code: 'timeout', condition_index: null, description: null });
  });

  it('still computes flags that need no lookup', () => {
    expect([result.get('rollout-only')?.enabled, result.get('dynamic-cohort')?.enabled, result.get('continuity-everyone')?.enabled]).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('fails flags that depend on a failed flag instead of guessing', () => {
    expect(result.get('dependent')).toMatchObject({ failed: true, reason: { code: 'timeout' } });
  });
});
