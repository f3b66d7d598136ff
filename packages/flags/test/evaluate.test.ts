import { compileFlags, evaluateFlags, flagValue, type FeatureFlag, type FlagCondition, type PropertyFilter } from '@plover/flags';

import { buildFlag, evaluate, evaluateFirst, NOW } from './fixtures';

// Hash facts these tests rely on (sha1-based, see vectors.test.ts):
//   rollout hash "roll.user-1" = 0.989, "roll.user-2" = 0.004
//   variant hash "exp.user-1variant" = 0.107, "exp.user-2variant" = 0.945
//   holdout hash "holdout-user-1" = 0.178, "holdout-user-2" = 0.928
//   rollout hash "cont.user-2" = 0.577, "cont.anon-1" = 0.077, "cont.anon-2" = 0.590

const corpEmail: PropertyFilter = { key: 'email', type: 'person', operator: 'icontains', value: '@corp.com' };
const isPro: PropertyFilter = { key: 'plan', type: 'person', operator: 'exact', value: 'pro' };
const corpUser = { personPropertyOverrides: { email: 'ann@corp.com', plan: 'free' } };

function withConditions(conditions: FlagCondition[], extra: Partial<FeatureFlag> = {}): FeatureFlag {
  return buildFlag({ ...extra, filters: { ...extra.filters, groups: conditions } });
}

const abVariants = {
  variants: [
    { key: 'control', rollout_percentage: 50 },
    { key: 'test', rollout_percentage: 50 },
  ],
};

describe('condition sets', () => {
  it('are OR-ed: a later set can match when an earlier one does not', () => {
    const flag = withConditions([{ properties: [isPro] }, { properties: [corpEmail] }]);
    expect(evaluateFirst({ flags: [flag], context: corpUser }).reason).toEqual({
      code: 'condition_match',
      condition_index: 1,
      description: 'Matched condition set 2',
    });
  });

  it('AND their properties', () => {
    const flag = withConditions([{ properties: [corpEmail, isPro] }]);
    expect(evaluateFirst({ flags: [flag], context: corpUser }).enabled).toBe(false);
  });

  it('are evaluated in stored order, without moving variant overrides to the front (PostHog#37859)', () => {
    const flag = withConditions([{ properties: [corpEmail] }, { properties: [corpEmail], variant: 'test' }], {
      filters: {
        multivariate: {
          variants: [
            { key: 'control', rollout_percentage: 100 },
            { key: 'test', rollout_percentage: 0 },
          ],
        },
      },
    });
    const result = evaluateFirst({ flags: [flag], context: corpUser });
    expect([result.variant, result.reason.condition_index]).toEqual(['control', 0]);
  });

  it('report out_of_rollout_bound over no_condition_match, with the index of that set', () => {
    const flag = withConditions([{ properties: [isPro] }, { properties: [corpEmail], rollout_percentage: 0 }, { properties: [isPro] }]);
    expect(evaluateFirst({ flags: [flag], context: corpUser }).reason).toEqual({
      code: 'out_of_rollout_bound',
      condition_index: 1,
      description: 'Out of rollout bound',
    });
  });

  it('report the later set when reasons tie', () => {
    const flag = withConditions([{ properties: [isPro] }, { properties: [isPro] }]);
    expect(evaluateFirst({ flags: [flag], context: corpUser }).reason).toEqual({
      code: 'no_condition_match',
      condition_index: 1,
      description: 'No matching condition set',
    });
  });

  it('without any set, nothing matches and no index is reported', () => {
    const result = evaluateFirst({ flags: [withConditions([])] });
    expect([result.enabled, result.reason.code, result.reason.condition_index]).toEqual([false, 'no_condition_match', null]);
  });
});

describe('rollout', () => {
  const rolledOut = (percentage: number | null, distinctId: string): boolean =>
    evaluateFirst({
      flags: [buildFlag({ key: 'roll', filters: { groups: [{ properties: [], rollout_percentage: percentage }] } })],
      context: { distinctId },
    }).enabled;

  it.each([
    ['includes an id whose hash is within the percentage', 50, 'user-2', true],
    ['excludes an id whose hash is above it', 50, 'user-1', false],
    ['includes everyone at 100%', 100, 'user-1', true],
    ['includes everyone without a percentage', null, 'user-1', true],
    ['excludes everyone at 0%', 0, 'user-2', false],
  ])('%s', (_why, percentage, distinctId, expected) => {
    expect(rolledOut(percentage, distinctId)).toBe(expected);
  });

  it('is checked after the properties: a property mismatch is no_condition_match even at 0%', () => {
    const flag = withConditions([{ properties: [isPro], rollout_percentage: 0 }]);
    expect(evaluateFirst({ flags: [flag], context: corpUser }).reason.code).toBe('no_condition_match');
  });
});

describe('variants', () => {
  const experiment = (conditions: FlagCondition[] = [{ properties: [] }], variants = abVariants): FeatureFlag =>
    buildFlag({ key: 'exp', filters: { groups: conditions, multivariate: variants } });

  it.each([
    ['user-1', 'control'],
    ['user-2', 'test'],
  ])('buckets %s into %s by the variant hash, in stored order', (distinctId, variant) => {
    expect(flagValue(evaluateFirst({ flags: [experiment()], context: { distinctId } }))).toBe(variant);
  });

  it('uses a condition override that names a variant', () => {
    const result = evaluateFirst({ flags: [experiment([{ properties: [], variant: 'test' }])], context: { distinctId: 'user-1' } });
    expect(result.variant).toBe('test');
  });

  it('ignores an override that names no variant', () => {
    const result = evaluateFirst({ flags: [experiment([{ properties: [], variant: 'gone' }])], context: { distinctId: 'user-1' } });
    expect(result.variant).toBe('control');
  });

  it('leaves an id outside incomplete weights without a variant, so the flag is just true', () => {
    const result = evaluateFirst({
      flags: [experiment([{ properties: [] }], { variants: [{ key: 'control', rollout_percentage: 10 }] })],
      context: { distinctId: 'user-2' },
    });
    expect([result.enabled, result.variant, flagValue(result)]).toEqual([true, null, true]);
  });
});

describe('payloads', () => {
  const payloads = { true: '{"plan":"any"}', control: '{"color":"blue"}' };

  it('returns the "true" payload of a matched boolean flag', () => {
    expect(evaluateFirst({ flags: [buildFlag({ filters: { groups: [{ properties: [] }], payloads } })] }).payload).toBe('{"plan":"any"}');
  });

  it("returns the variant's payload", () => {
    const flag = buildFlag({ key: 'exp', filters: { groups: [{ properties: [] }], multivariate: abVariants, payloads } });
    expect(evaluateFirst({ flags: [flag], context: { distinctId: 'user-1' } }).payload).toBe('{"color":"blue"}');
  });

  it('does not fall back to the "true" payload for a variant without one', () => {
    const flag = buildFlag({ key: 'exp', filters: { groups: [{ properties: [] }], multivariate: abVariants, payloads } });
    expect(evaluateFirst({ flags: [flag], context: { distinctId: 'user-2' } }).payload).toBeNull();
  });

  it('returns no payload for a flag that did not match', () => {
    const flag = buildFlag({ filters: { groups: [{ properties: [isPro] }], payloads } });
    expect(evaluateFirst({ flags: [flag], context: corpUser }).payload).toBeNull();
  });
});

describe('legacy filters (no "groups" key)', () => {
  it('become one set from filters.properties and the flag-level rollout', () => {
    const flag = buildFlag({ key: 'roll', filters: { properties: [corpEmail] }, rollout_percentage: 50 });
    const run = (distinctId: string): boolean => evaluateFirst({ flags: [flag], context: { ...corpUser, distinctId } }).enabled;
    expect([run('user-2'), run('user-1')]).toEqual([true, false]);
  });
});

describe('which flags are returned', () => {
  const on = buildFlag({ key: 'on' });
  const inactive = buildFlag({ key: 'inactive', active: false });
  const deleted = buildFlag({ key: 'deleted', deleted: true });
  const alsoOn = buildFlag({ key: 'also-on' });

  it('every active, non-deleted flag, in stored order, disabled ones included', () => {
    const off = buildFlag({ key: 'off', filters: { groups: [{ properties: [isPro] }] } });
    expect([...evaluate({ flags: [on, inactive, off, deleted, alsoOn] }).keys()]).toEqual(['on', 'off', 'also-on']);
  });

  it('only the requested keys with flag_keys_to_evaluate (unknown keys are ignored)', () => {
    const result = evaluate({ flags: [on, inactive, alsoOn], options: { flagKeys: ['also-on', 'inactive', 'nope'] } });
    expect([...result.keys()]).toEqual(['also-on']);
  });

  it('keeps keys case-sensitive', () => {
    expect([...evaluate({ flags: [on], options: { flagKeys: ['On'] } }).keys()]).toEqual([]);
  });
});

describe('group flags', () => {
  const mapping = { groupTypeMapping: { '0': 'company', '1': 'project' } };
  const groupFlag = (properties: PropertyFilter[] = [], rollout: number | null = null): FeatureFlag =>
    buildFlag({ filters: { aggregation_group_type_index: 0, groups: [{ properties, rollout_percentage: rollout }] } });
  const enterprise: PropertyFilter = { key: 'tier', type: 'group', group_type_index: 0, operator: 'exact', value: 'enterprise' };

  it('are off with no_group_type when the group is not passed', () => {
    const result = evaluateFirst({ flags: [groupFlag()], context: { ...mapping, groups: { project: 'p1' } } });
    expect([result.enabled, result.reason.code, result.reason.condition_index, result.reason.description]).toEqual([
      false,
      'no_group_type',
      null,
      'No group type',
    ]);
  });

  it('are off with no_group_type when the index has no group type', () => {
    const flag = buildFlag({ filters: { aggregation_group_type_index: 3, groups: [{ properties: [] }] } });
    expect(evaluateFirst({ flags: [flag], context: { ...mapping, groups: { company: 'acme' } } }).reason.code).toBe('no_group_type');
  });

  it('are off with no_group_type for a group key that is neither text nor a number', () => {
    expect(evaluateFirst({ flags: [groupFlag()], context: { ...mapping, groups: { company: true } } }).reason.code).toBe('no_group_type');
  });

  it('match on the group properties, request values winning over stored ones', () => {
    const context = {
      ...mapping,
      groups: { company: 'acme' },
      stored: { groupProperties: { company: { tier: 'free', region: 'eu' } } },
      groupPropertyOverrides: { company: { tier: 'enterprise' } },
    };
    expect(evaluateFirst({ flags: [groupFlag([enterprise])], context }).enabled).toBe(true);
  });

  it('read stored group properties the request does not override', () => {
    const context = { ...mapping, groups: { company: 'acme' }, stored: { groupProperties: { company: { tier: 'enterprise' } } } };
    expect(evaluateFirst({ flags: [groupFlag([enterprise])], context }).enabled).toBe(true);
  });

  it('see the group key as the $group_key property', () => {
    const byKey: PropertyFilter = { key: '$group_key', type: 'group', group_type_index: 0, operator: 'exact', value: 'acme' };
    expect(evaluateFirst({ flags: [groupFlag([byKey])], context: { ...mapping, groups: { company: 'acme' } } }).enabled).toBe(true);
  });

  it('read person filters from the person, even on a group flag', () => {
    const context = { ...mapping, ...corpUser, groups: { company: 'acme' } };
    expect(evaluateFirst({ flags: [groupFlag([corpEmail])], context }).enabled).toBe(true);
  });

  it('hash the group key, not the distinct id (numbers as their text)', () => {
    const flag = buildFlag({ key: 'roll', filters: { aggregation_group_type_index: 0, groups: [{ properties: [], rollout_percentage: 50 }] } });
    const run = (distinctId: string, company: string | number): boolean =>
      evaluateFirst({ flags: [flag], context: { ...mapping, distinctId, groups: { company } } }).enabled;
    // The group key "user-2" is in the 50% and "user-1" is not, whoever asks.
    expect([run('user-1', 'user-2'), run('user-2', 'user-1')]).toEqual([true, false]);
    expect(run('x', 42)).toBe(run('x', '42'));
  });
});

describe('person flags without a distinct id', () => {
  it('cannot be bucketed: no_group_type', () => {
    expect(evaluateFirst({ flags: [buildFlag()], context: { distinctId: '' } }).reason.code).toBe('no_group_type');
  });
});

describe('person properties', () => {
  it('come from storage, with request values winning', () => {
    const flag = withConditions([{ properties: [isPro, corpEmail] }]);
    const context = { stored: { personProperties: { plan: 'free', email: 'ann@corp.com' } }, personPropertyOverrides: { plan: 'pro' } };
    expect(evaluateFirst({ flags: [flag], context }).enabled).toBe(true);
  });
});

describe('super groups (early access)', () => {
  const enrollment: PropertyFilter = { key: '$feature_enrollment/beta', type: 'person', operator: 'exact', value: ['true'] };
  const earlyAccess = (extra: Partial<FeatureFlag['filters']> = {}): FeatureFlag =>
    buildFlag({
      key: 'beta',
      filters: { groups: [{ properties: [], rollout_percentage: 0 }], super_groups: [{ properties: [enrollment] }], payloads: { true: '"hi"' }, ...extra },
    });

  it('enable an enrolled person, whatever the conditions say, with the "true" payload', () => {
    const result = evaluateFirst({ flags: [earlyAccess()], context: { personPropertyOverrides: { '$feature_enrollment/beta': true } } });
    expect(result).toMatchObject({
      enabled: true,
      variant: null,
      payload: '"hi"',
      reason: { code: 'super_condition_value', condition_index: 0, description: 'Super condition value' },
    });
  });

  it('disable a person who opted out, without a payload', () => {
    const result = evaluateFirst({
      flags: [earlyAccess()],
      context: { stored: { personProperties: { '$feature_enrollment/beta': false } } },
    });
    expect(result).toMatchObject({ enabled: false, payload: null, reason: { code: 'super_condition_value', condition_index: 0 } });
  });

  it('fall through to the conditions when the enrollment property is not set', () => {
    expect(evaluateFirst({ flags: [earlyAccess()] }).reason.code).toBe('out_of_rollout_bound');
  });

  it('never give a variant', () => {
    const result = evaluateFirst({
      flags: [earlyAccess({ multivariate: abVariants })],
      context: { personPropertyOverrides: { '$feature_enrollment/beta': 'true' } },
    });
    expect([result.enabled, result.variant]).toEqual([true, null]);
  });
});

describe('holdouts', () => {
  const experiment = (holdout: FlagCondition, conditions: FlagCondition[] = [{ properties: [] }]): FeatureFlag =>
    buildFlag({
      key: 'exp',
      filters: { groups: conditions, multivariate: abVariants, holdout_groups: [holdout], payloads: { 'holdout-7': '"held"' } },
    });
  const holdout20: FlagCondition = { properties: [], rollout_percentage: 20, variant: 'holdout-7' };

  it('hold out an id whose holdout hash is within the percentage, with the holdout variant and its payload', () => {
    const result = evaluateFirst({ flags: [experiment(holdout20)], context: { distinctId: 'user-1' } });
    expect(result).toMatchObject({
      enabled: true,
      variant: 'holdout-7',
      payload: '"held"',
      reason: { code: 'holdout_condition_value', condition_index: null, description: 'Holdout condition value' },
    });
  });

  it('let other ids through to the experiment', () => {
    const result = evaluateFirst({ flags: [experiment(holdout20)], context: { distinctId: 'user-2' } });
    expect([result.variant, result.reason.code]).toEqual(['test', 'condition_match']);
  });

  it('apply before the conditions, even when the conditions would not match', () => {
    const result = evaluateFirst({ flags: [experiment(holdout20, [{ properties: [isPro] }])], context: { distinctId: 'user-1' } });
    expect(result.variant).toBe('holdout-7');
  });

  it('use the computed variant when the holdout names none', () => {
    const result = evaluateFirst({ flags: [experiment({ properties: [], rollout_percentage: 20 })], context: { distinctId: 'user-1' } });
    expect([result.variant, result.reason.code]).toEqual(['control', 'holdout_condition_value']);
  });

  it('are ignored when they carry properties', () => {
    const result = evaluateFirst({ flags: [experiment({ ...holdout20, properties: [isPro] })], context: { distinctId: 'user-1' } });
    expect(result.reason.code).toBe('condition_match');
  });

  it('hash the distinct id, not a continuity override, so one person has one holdout bucket', () => {
    const flag = { ...experiment(holdout20), ensure_experience_continuity: true };
    const result = evaluateFirst({
      flags: [flag],
      context: { distinctId: 'user-1', stored: { hashKeyOverrides: { exp: 'user-2' } } },
    });
    expect(result.variant).toBe('holdout-7');
  });
});

describe('experience continuity', () => {
  const continuity = (ensure: boolean): FeatureFlag =>
    buildFlag({ key: 'cont', ensure_experience_continuity: ensure, filters: { groups: [{ properties: [], rollout_percentage: 50 }] } });

  it.each([
    ['hashes the distinct id without any override', {}, false],
    ['hashes the stored hash-key override', { stored: { hashKeyOverrides: { cont: 'anon-1' } } }, true],
    ['falls back to the request $anon_distinct_id when nothing is stored', { anonDistinctId: 'anon-1' }, true],
    ['prefers the stored override to the request one', { anonDistinctId: 'anon-1', stored: { hashKeyOverrides: { cont: 'anon-2' } } }, false],
  ])('%s', (_why, context, expected) => {
    expect(evaluateFirst({ flags: [continuity(true)], context: { distinctId: 'user-2', ...context } }).enabled).toBe(expected);
  });

  it('does not apply to flags without ensure_experience_continuity', () => {
    const context = { distinctId: 'user-2', anonDistinctId: 'anon-1', stored: { hashKeyOverrides: { cont: 'anon-1' } } };
    expect(evaluateFirst({ flags: [continuity(false)], context }).enabled).toBe(false);
  });
});

describe('repeated evaluation of the same definitions', () => {
  it('gives equal results, with shared read-only reasons', () => {
    const flags = [
      buildFlag({ key: 'half', filters: { groups: [{ properties: [], rollout_percentage: 50 }] } }),
      buildFlag({ key: 'pro', filters: { groups: [{ properties: [{ key: 'plan', type: 'person', operator: 'exact', value: 'pro' }] }] } }),
    ];
    const compiled = compileFlags({ flags });
    const first = evaluateFlags(compiled, { distinctId: 'u1', personPropertyOverrides: { plan: 'pro' } }, { now: NOW });
    const second = evaluateFlags(compiled, { distinctId: 'u1', personPropertyOverrides: { plan: 'pro' } }, { now: NOW });
    expect(second).toEqual(first);
    expect(second.get('pro')?.reason).toBe(first.get('pro')?.reason);
    expect(Object.isFrozen(first.get('pro')?.reason)).toBe(true);
    // Narrowed and unnarrowed selections agree.
    expect(evaluateFlags(compiled, { distinctId: 'u1', personPropertyOverrides: { plan: 'pro' } }, { now: NOW, flagKeys: ['pro'] }).get('pro')).toEqual(
      first.get('pro'),
    );
  });
});
