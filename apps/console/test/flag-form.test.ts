import type { FeatureFlag, Survey } from '../src/api/types';
import { newFilter } from '../src/filters/property-filter';
import {
  distributeEqually,
  flagForm,
  flagProblem,
  flagWrite,
  newCondition,
  newFlagForm,
  rolloutSummary,
  variantTotal,
  withAggregation,
  type FlagForm,
  type VariantForm,
} from '../src/flags/flag-form';
import { surveyStatus } from '../src/flags/survey-status';

function stored(filters: FeatureFlag['filters'], fields: Partial<FeatureFlag> = {}): FeatureFlag {
  return {
    id: 7,
    key: 'checkout',
    name: 'New checkout',
    filters,
    active: true,
    deleted: false,
    ensure_experience_continuity: false,
    created_at: '2026-01-01T00:00:00Z',
    created_by: null,
    can_edit: true,
    ...fields,
  };
}

const variant = (key: string, rollout: string, payload = ''): VariantForm => ({ key, name: '', rollout, payload });

describe('the flag editor’s form as the API’s flag', () => {
  it('writes a boolean flag with a filtered condition set, a cohort and a JSON payload as PostHog stores them', () => {
    const form: FlagForm = {
      ...newFlagForm(),
      key: ' checkout ',
      name: 'New checkout',
      payload: '{"color": "blue"}',
      conditions: [
        {
          ...newCondition(),
          rollout: '25',
          filters: [
            { ...newFilter('person'), key: 'email', operator: 'icontains', value: '@example.com' },
            { ...newFilter('cohort'), value: '3' },
          ],
        },
      ],
    };
    expect(flagProblem(form)).toBeNull();
    expect(flagWrite(form)).toEqual({
      key: 'checkout',
      name: 'New checkout',
      active: true,
      ensure_experience_continuity: false,
      filters: {
        groups: [
          {
            properties: [
              { type: 'person', key: 'email', operator: 'icontains', value: '@example.com' },
              { type: 'cohort', key: 'id', operator: 'in', value: 3 },
            ],
            rollout_percentage: 25,
            variant: null,
          },
        ],
        multivariate: null,
        payloads: { true: '{"color": "blue"}' },
        aggregation_group_type_index: null,
      },
    });
  });

  it('writes variants, their payloads and a condition set’s variant override', () => {
    const form: FlagForm = {
      ...newFlagForm(),
      key: 'pricing-test',
      variants: [variant('control', '50'), variant('test', '50', '{"price": 9}')],
      conditions: [{ ...newCondition(), variant: 'test', filters: [{ ...newFilter('person'), key: 'beta', value: 'true' }] }, newCondition()],
    };
    expect(flagProblem(form)).toBeNull();
    expect(flagWrite(form).filters).toEqual({
      groups: [
        { properties: [{ type: 'person', key: 'beta', operator: 'exact', value: 'true' }], rollout_percentage: 100, variant: 'test' },
        { properties: [], rollout_percentage: 100, variant: null },
      ],
      multivariate: {
        variants: [
          { key: 'control', name: '', rollout_percentage: 50 },
          { key: 'test', name: '', rollout_percentage: 50 },
        ],
      },
      payloads: { test: '{"price": 9}' },
      aggregation_group_type_index: null,
    });
  });

  it('reads a stored flag back to the same filters, keeping what it cannot edit', () => {
    const filters: FeatureFlag['filters'] = {
      groups: [
        {
          properties: [
            { type: 'group', group_type_index: 1, key: 'industry', operator: 'exact', value: ['retail', 'food'] },
            { type: 'flag', key: '12', value: true, operator: 'flag_evaluates_to' },
          ],
          rollout_percentage: 40,
          variant: 'b',
          description: 'Retail first',
        },
      ],
      multivariate: {
        variants: [
          { key: 'a', name: 'A', rollout_percentage: 30 },
          { key: 'b', name: 'B', rollout_percentage: 70 },
        ],
      },
      payloads: { a: { nested: true }, b: '"text"' },
      aggregation_group_type_index: 1,
      super_groups: [{ properties: [], rollout_percentage: 100 }],
    };
    const form = flagForm(stored(filters));
    expect(form.aggregation).toBe('1');
    expect(form.conditions[0]!.kept).toEqual([{ type: 'flag', key: '12', value: true, operator: 'flag_evaluates_to' }]);
    expect(form.variants.map((item) => item.payload)).toEqual(['{"nested":true}', '"text"']);
    expect(flagProblem(form)).toBeNull();
    expect(flagWrite(form).filters).toEqual({ ...filters, payloads: { a: '{"nested":true}', b: '"text"' } });
  });

  it('reads a flag without groups or payloads as a boolean flag that matches nobody', () => {
    const form = flagForm(stored({}, { active: false, ensure_experience_continuity: true }));
    expect([form.conditions, form.variants, form.payload, form.active, form.ensureContinuity, form.aggregation]).toEqual([[], [], '', false, true, '']);
    expect(flagWrite(form).filters).toEqual({ groups: [], multivariate: null, payloads: {}, aggregation_group_type_index: null });
  });

  it.each<[string, Partial<FlagForm>, string]>([
    ['a missing key', { key: '' }, 'Give the flag a key.'],
    ['a key with a space', { key: 'new checkout' }, 'A key has only letters, digits, hyphens (-) and underscores (_).'],
    ['variants short of 100%', { variants: [variant('a', '50'), variant('b', '40')] }, "The variants' rollouts add up to 90%, not 100%."],
    ['a variant twice', { variants: [variant('a', '50'), variant('a', '50')] }, 'Variant keys must differ: a is there twice.'],
    ['a variant without a key', { variants: [variant('', '100')] }, 'Variant 1: give it a key.'],
    ['a payload that is not JSON', { payload: '{color: blue}' }, 'The payload is not valid JSON.'],
    ['a variant payload that is not JSON', { variants: [variant('a', '100', 'nope')] }, 'Variant a: the payload is not valid JSON.'],
    ['a rollout over 100', { conditions: [{ ...newCondition(), rollout: '120' }] }, 'Condition set 1: the rollout is a percentage from 0 to 100.'],
    ['an empty rollout', { conditions: [{ ...newCondition(), rollout: ' ' }] }, 'Condition set 1: the rollout is a percentage from 0 to 100.'],
    ['an override of no variant', { conditions: [{ ...newCondition(), variant: 'gone' }] }, 'Condition set 1: there is no variant gone.'],
    [
      'a filter without its value',
      { conditions: [{ ...newCondition(), filters: [{ ...newFilter('person'), key: 'plan' }] }] },
      'Condition set 1: Filter on plan: enter a value.',
    ],
  ])('refuses %s', (_, fields, problem) => {
    expect(flagProblem({ ...newFlagForm(), key: 'flag', ...fields })).toBe(problem);
  });
});

describe('variant splits and matching', () => {
  it('splits 100% evenly to the hundredth, the remainder on the first variants', () => {
    const three = distributeEqually([variant('a', '0'), variant('b', '0'), variant('c', '0')]);
    expect(three.map((item) => item.rollout)).toEqual(['33.34', '33.33', '33.33']);
    expect(variantTotal(three)).toBe(100);
    expect(distributeEqually([variant('a', '1'), variant('b', '1')]).map((item) => item.rollout)).toEqual(['50', '50']);
  });

  it('drops the filters that no longer apply when what the flag is matched by changes', () => {
    const form: FlagForm = {
      ...newFlagForm(),
      conditions: [
        {
          ...newCondition(),
          filters: [
            { ...newFilter('person'), key: 'plan', value: 'pro' },
            { ...newFilter('cohort'), value: '2' },
          ],
        },
      ],
    };
    const grouped = withAggregation(form, '0');
    expect(grouped.conditions[0]!.filters).toEqual([]);
    const back = withAggregation({ ...grouped, conditions: [{ ...newCondition(), filters: [{ ...newFilter('group'), key: 'size', value: '5' }] }] }, '2');
    expect(back.conditions[0]!.filters.map((filter) => [filter.type, filter.groupTypeIndex])).toEqual([['group', 2]]);
    expect(withAggregation(form, '').conditions).toEqual(form.conditions);
  });

  it.each<[FeatureFlag['filters'], string]>([
    [{ groups: [{ properties: [], rollout_percentage: null }] }, '100% of all users'],
    [{ groups: [{ properties: [{ key: 'plan', value: 'pro' }], rollout_percentage: 25 }] }, '25% of users matching 1 filter'],
    [{ groups: [{ properties: [] }, { properties: [] }] }, '2 condition sets'],
    [{ groups: [] }, 'No condition set: nobody'],
    [
      {
        groups: [{ properties: [], rollout_percentage: 10 }],
        multivariate: {
          variants: [
            { key: 'a', rollout_percentage: 50 },
            { key: 'b', rollout_percentage: 50 },
          ],
        },
      },
      '10% of all users · 2 variants',
    ],
  ])('summarises %j as %s', (filters, summary) => {
    expect(rolloutSummary(stored(filters))).toBe(summary);
  });
});

describe('a survey’s status', () => {
  const survey = (fields: Partial<Survey>): Survey => ({
    id: 's',
    name: 'NPS',
    type: 'popover',
    start_date: null,
    end_date: null,
    archived: false,
    created_at: '2026-01-01T00:00:00Z',
    questions: [],
    ...fields,
  });
  const now = Date.parse('2026-06-01T00:00:00Z');

  it.each<[Partial<Survey>, string]>([
    [{}, 'Draft'],
    [{ start_date: '2026-07-01T00:00:00Z' }, 'Draft'],
    [{ start_date: '2026-05-01T00:00:00Z' }, 'Running'],
    [{ start_date: '2026-05-01T00:00:00Z', end_date: '2026-05-20T00:00:00Z' }, 'Completed'],
    [{ start_date: '2026-05-01T00:00:00Z', archived: true }, 'Archived'],
  ])('%j is %s', (fields, status) => {
    expect(surveyStatus(survey(fields), now)).toBe(status);
  });
});
