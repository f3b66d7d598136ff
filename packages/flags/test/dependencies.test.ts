import type { FeatureFlag, JsonValue, PropertyFilter } from '@plover/flags';

import { buildFlag, evaluate } from './fixtures';

const isPro: PropertyFilter = { key: 'plan', type: 'person', operator: 'exact', value: 'pro' };

function dependsOn(key: string, value: JsonValue, extra: Partial<FeatureFlag> = {}, operator: PropertyFilter['operator'] = 'flag_evaluates_to'): FeatureFlag {
  return buildFlag({ ...extra, filters: { groups: [{ properties: [{ key, type: 'flag', operator, value }] }] } });
}

function valuesOf(flags: FeatureFlag[], plan = 'pro', flagKeys?: string[]): Record<string, string | boolean> {
  const result = evaluate({ flags, context: { personPropertyOverrides: { plan } }, options: flagKeys ? { flagKeys } : {} });
  return Object.fromEntries(
    [...result].map(([key, evaluation]) => [
      key,
      evaluation.failed ? `failed:${evaluation.reason.code}` : evaluation.enabled ? (evaluation.variant ?? true) : false,
    ]),
  );
}

const base = buildFlag({ id: 1, key: 'base', filters: { groups: [{ properties: [isPro] }] } });
const experiment = buildFlag({
  id: 2,
  key: 'experiment',
  filters: {
    groups: [{ properties: [isPro], variant: 'test' }],
    multivariate: {
      variants: [
        { key: 'control', rollout_percentage: 50 },
        { key: 'test', rollout_percentage: 50 },
      ],
    },
  },
});

describe('flag dependencies (flag_evaluates_to)', () => {
  it.each<[string, FeatureFlag, string, boolean]>([
    ['expects true: matches an enabled dependency', dependsOn('1', true, { key: 'child' }), 'pro', true],
    ['expects true: fails a disabled dependency', dependsOn('1', true, { key: 'child' }), 'free', false],
    ['expects false: matches a disabled dependency', dependsOn('1', false, { key: 'child' }), 'free', true],
    ['expects false: fails an enabled dependency', dependsOn('1', false, { key: 'child' }), 'pro', false],
    ['expects true: any variant counts as enabled', dependsOn('2', true, { key: 'child' }), 'pro', true],
    ['expects a variant: matches exactly that variant', dependsOn('2', 'test', { key: 'child' }), 'pro', true],
    ['expects a variant: another variant does not match', dependsOn('2', 'control', { key: 'child' }), 'pro', false],
    ['expects a variant: case-sensitive', dependsOn('2', 'TEST', { key: 'child' }), 'pro', false],
    ['expects a number: never matches', dependsOn('1', 1, { key: 'child' }), 'pro', false],
    ['another operator never matches', dependsOn('1', true, { key: 'child' }, 'exact'), 'pro', false],
  ])('%s', (_why, child, plan, expected) => {
    expect(valuesOf([base, experiment, child], plan).child).toBe(expected);
  });

  it('resolve by flag key as well as by id (the local-evaluation form)', () => {
    expect(valuesOf([base, dependsOn('base', true, { key: 'child' })]).child).toBe(true);
  });

  it('evaluate dependencies first, whatever the stored order', () => {
    const third = dependsOn('child', true, { key: 'third' });
    const child = dependsOn('1', true, { key: 'child' });
    expect(valuesOf([third, child, base])).toEqual({ third: true, child: true, base: true });
  });

  it('treat an inactive dependency as false (and do not return it)', () => {
    const inactive = { ...base, active: false };
    expect(valuesOf([inactive, dependsOn('1', false, { key: 'child' })])).toEqual({ child: true });
  });

  it('fail every flag on a cycle, and the flags depending on them, with dependency_cycle_flag', () => {
    const a = dependsOn('b', true, { key: 'a' });
    const b = dependsOn('a', true, { key: 'b' });
    const self = dependsOn('self', true, { key: 'self' });
    const downstream = dependsOn('a', true, { key: 'downstream' });
    expect(valuesOf([a, b, self, downstream, base])).toEqual({
      a: 'failed:dependency_cycle_flag',
      b: 'failed:dependency_cycle_flag',
      self: 'failed:dependency_cycle_flag',
      downstream: 'failed:dependency_cycle_flag',
      base: true,
    });
  });

  it('fail a flag whose dependency was deleted, and its dependents, with dependency_not_found_flag', () => {
    const orphan = dependsOn('1', true, { key: 'orphan' });
    const downstream = dependsOn('orphan', true, { key: 'downstream' });
    expect(valuesOf([{ ...base, deleted: true }, orphan, downstream])).toEqual({
      orphan: 'failed:dependency_not_found_flag',
      downstream: 'failed:dependency_not_found_flag',
    });
  });

  it('evaluate the dependencies of requested flags without returning them', () => {
    expect(valuesOf([base, dependsOn('1', true, { key: 'child' })], 'pro', ['child'])).toEqual({ child: true });
  });
});
