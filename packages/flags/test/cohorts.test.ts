import type { Cohort, FeatureFlag, JsonValue, Properties, PropertyFilter } from '@plover/flags';

import { buildFlag, evaluateFirst } from './fixtures';

const inCohort = (id: JsonValue, operator: 'in' | 'not_in' = 'in'): PropertyFilter => ({ key: 'id', type: 'cohort', value: id, operator });
const person = (key: string, operator: PropertyFilter['operator'], value: JsonValue, negation = false): PropertyFilter => ({
  key,
  type: 'person',
  operator,
  value,
  negation,
});

const cohorts: Cohort[] = [
  // Corporate e-mail (either domain) and NOT in the US.
  {
    id: 1,
    filters: {
      properties: {
        type: 'AND',
        values: [
          { type: 'OR', values: [person('email', 'icontains', '@corp.com'), person('email', 'icontains', '@corp.io')] },
          { type: 'AND', values: [person('country', 'exact', 'US', true)] },
        ],
      },
    },
  },
  { id: 2, is_static: true },
  // Nested: in cohort 1, or on the enterprise plan.
  { id: 3, filters: { properties: { type: 'OR', values: [inCohort(1), person('plan', 'exact', 'enterprise')] } } },
  { id: 4, filters: { properties: { type: 'AND', values: [inCohort(5)] } } },
  { id: 5, filters: { properties: { type: 'AND', values: [inCohort(4)] } } },
  { id: 6, filters: { properties: { type: 'AND', values: [inCohort(99)] } } },
  { id: 7, filters: { properties: { type: 'OR', values: [{ key: '$pageview', type: 'behavioral' as PropertyFilter['type'], value: 'performed_event' }] } } },
  // Negated nested cohort: everyone not in cohort 1.
  { id: 8, filters: { properties: { type: 'AND', values: [{ ...inCohort(1), negation: true }] } } },
  { id: 9, filters: { properties: { type: 'OR', values: [] } } },
  { id: 10, filters: { properties: { type: 'AND', values: [] } } },
  { id: 11, deleted: true, filters: { properties: { type: 'AND', values: [] } } },
];

function flagFor(...properties: PropertyFilter[]): FeatureFlag {
  return buildFlag({ filters: { groups: [{ properties }] } });
}

function enabled(flag: FeatureFlag, personPropertyOverrides: Properties = {}, staticCohortIds: number[] = []): boolean {
  return evaluateFirst({ flags: [flag], cohorts, context: { personPropertyOverrides, stored: { staticCohortIds: new Set(staticCohortIds) } } }).enabled;
}

describe('dynamic cohorts', () => {
  it.each([
    ['a corporate e-mail outside the US', { email: 'a@corp.io', country: 'DE' }, true],
    ['a corporate e-mail in the US (negated leaf)', { email: 'a@corp.com', country: 'US' }, false],
    ['a private e-mail', { email: 'a@gmail.com', country: 'DE' }, false],
    ['a corporate e-mail without a country (negated exact on a missing key)', { email: 'a@corp.com' }, true],
  ])('nested AND/OR with negation: %s → %s', (_why, properties, expected) => {
    expect(enabled(flagFor(inCohort(1)), properties)).toBe(expected);
  });

  it('not_in inverts membership', () => {
    expect(enabled(flagFor(inCohort(1, 'not_in')), { email: 'a@gmail.com' })).toBe(true);
  });

  it('accept the cohort id as numeric text', () => {
    expect(enabled(flagFor(inCohort('1')), { email: 'a@corp.io', country: 'DE' })).toBe(true);
  });

  it('nest other cohorts', () => {
    const flag = flagFor(inCohort(3));
    expect([enabled(flag, { email: 'a@corp.io' }), enabled(flag, { plan: 'enterprise' }), enabled(flag, { plan: 'free' })]).toEqual([true, true, false]);
  });

  it('honour negation on a nested cohort leaf', () => {
    expect([enabled(flagFor(inCohort(8)), { email: 'a@gmail.com' }), enabled(flagFor(inCohort(8)), { email: 'a@corp.io' })]).toEqual([true, false]);
  });

  it('read stored person properties under the request overrides', () => {
    const result = evaluateFirst({
      flags: [flagFor(inCohort(1))],
      cohorts,
      context: { stored: { personProperties: { email: 'a@corp.io', country: 'US' } }, personPropertyOverrides: { country: 'FR' } },
    });
    expect(result.enabled).toBe(true);
  });

  it('match nobody when they use filters flags cannot evaluate (behavioural)', () => {
    expect(enabled(flagFor(inCohort(7)), { $pageview: 'performed_event' })).toBe(false);
  });

  it('treat an empty OR as no match and an empty AND as a match', () => {
    expect([enabled(flagFor(inCohort(9))), enabled(flagFor(inCohort(10)))]).toEqual([false, true]);
  });

  it('are person-level on group flags too', () => {
    const flag = buildFlag({ filters: { aggregation_group_type_index: 0, groups: [{ properties: [inCohort(1)] }] } });
    const result = evaluateFirst({
      flags: [flag],
      cohorts,
      context: {
        groupTypeMapping: { '0': 'company' },
        groups: { company: 'acme' },
        personPropertyOverrides: { email: 'a@corp.io', country: 'DE' },
        groupPropertyOverrides: { company: { email: 'nobody@gmail.com' } },
      },
    });
    expect(result.enabled).toBe(true);
  });
});

describe('static cohorts', () => {
  it('use the looked-up membership', () => {
    expect([enabled(flagFor(inCohort(2)), {}, [2]), enabled(flagFor(inCohort(2)), {}, [])]).toEqual([true, false]);
  });

  it('count as not a member when no lookup was made', () => {
    expect(evaluateFirst({ flags: [flagFor(inCohort(2))], cohorts }).enabled).toBe(false);
  });
});

describe('broken cohort references', () => {
  it.each([
    ['a cycle of cohorts', 4, 'dependency_cycle_cohort'],
    ['a cohort nesting a missing cohort', 6, 'dependency_not_found_cohort'],
    ['an unknown cohort', 42, 'dependency_not_found_cohort'],
    ['a deleted cohort', 11, 'dependency_not_found_cohort'],
  ])('%s fails the flag, not the request', (_why, id, code) => {
    expect(evaluateFirst({ flags: [flagFor(inCohort(id))], cohorts })).toMatchObject({
      failed: true,
      enabled: false,
      variant: null,
      payload: null,
      reason: { code, condition_index: null, description: null },
    });
  });

  it('only matter when reached: cohort filters run after the other filters of a set', () => {
    const flag = flagFor(inCohort(4), person('plan', 'exact', 'pro'));
    const result = evaluateFirst({ flags: [flag], cohorts, context: { personPropertyOverrides: { plan: 'free' } } });
    expect([result.failed, result.reason.code]).toEqual([false, 'no_condition_match']);
  });
});
