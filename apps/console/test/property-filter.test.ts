import { filterProblem, fromApiFilter, newFilter, propertiesParam, toApiFilter, type FilterForm } from '../src/filters/property-filter';
import { parsePropertyValue } from '../src/format';

const form = (fields: Partial<FilterForm>): FilterForm => ({ ...newFilter('person'), ...fields });

describe('property filter forms as API filters', () => {
  it.each<[string, Partial<FilterForm>, unknown]>([
    ['one value of equals', { key: 'plan', value: ' pro ' }, { type: 'person', key: 'plan', operator: 'exact', value: 'pro' }],
    ['several values of equals', { key: 'plan', value: 'pro, team,' }, { type: 'person', key: 'plan', operator: 'exact', value: ['pro', 'team'] }],
    ['a number to compare', { key: 'seats', operator: 'gte', value: '12' }, { type: 'person', key: 'seats', operator: 'gte', value: 12 }],
    ['no value for is set', { key: 'email', operator: 'is_set', value: 'ignored' }, { type: 'person', key: 'email', operator: 'is_set' }],
    [
      'text for contains, commas kept',
      { key: 'name', operator: 'icontains', value: 'a, b' },
      { type: 'person', key: 'name', operator: 'icontains', value: 'a, b' },
    ],
    [
      'a group filter with its type',
      { type: 'group', key: 'industry', groupTypeIndex: 1, value: 'retail' },
      { type: 'group', key: 'industry', operator: 'exact', value: 'retail', group_type_index: 1 },
    ],
    ['a cohort by id', { ...newFilter('cohort'), value: '7', operator: 'not_in' }, { type: 'cohort', key: 'id', operator: 'not_in', value: 7 }],
  ])('%s', (_, fields, api) => {
    expect(toApiFilter(form(fields))).toEqual(api);
  });

  it('leaves blank rows out and names the first problem instead of sending a wrong filter', () => {
    expect(propertiesParam([form({}), newFilter('cohort')])).toEqual({ problem: null, properties: undefined });
    expect(propertiesParam([form({ key: 'plan', value: 'pro' })])).toEqual({
      problem: null,
      properties: JSON.stringify([{ type: 'person', key: 'plan', operator: 'exact', value: 'pro' }]),
    });
    expect(propertiesParam([form({ key: 'plan' }), form({ key: 'seats', operator: 'gt', value: 'many' })])).toEqual({
      problem: 'Filter on plan: enter a value.',
      properties: undefined,
    });
    expect(filterProblem(form({ key: 'seats', operator: 'gt', value: 'many' }))).toBe('Filter on seats: many is not a number.');
    expect(filterProblem({ ...newFilter('cohort'), value: 'x' })).toBe('Choose a cohort.');
  });

  it('reads back what it writes, and refuses shapes it cannot show', () => {
    const forms = [
      form({ key: 'plan', value: 'pro, team' }),
      form({ key: 'seats', operator: 'lt', value: '3' }),
      form({ key: 'email', operator: 'is_not_set', value: '' }),
      form({ type: 'group', key: 'size', groupTypeIndex: 2, operator: 'semver_gt', value: '1.2.0' }),
      { ...newFilter('cohort'), value: '4' },
    ];
    expect(forms.map((filter) => fromApiFilter(toApiFilter(filter)))).toEqual(forms);
    expect(fromApiFilter({ key: '$browser', value: 'Chrome' })).toEqual({
      type: 'event',
      key: '$browser',
      operator: 'exact',
      value: 'Chrome',
      groupTypeIndex: 0,
    });
    expect(fromApiFilter({ type: 'flag', key: '12', value: true })).toBeNull();
    expect(fromApiFilter({ type: 'group', key: 'size' })).toBeNull();
    expect(fromApiFilter({ type: 'AND', values: [] })).toBeNull();
  });
});

describe('a property value as typed', () => {
  it.each<[string, unknown, unknown]>([
    ['42', undefined, 42],
    ['42', 'a string before', '42'],
    ['true', false, true],
    ['[1, "a"]', undefined, [1, 'a']],
    ['"quoted"', undefined, 'quoted'],
    ['plain words', undefined, 'plain words'],
    ['{not json', { a: 1 }, '{not json'],
  ])('%j (was %j) is stored as %j', (text, previous, stored) => {
    expect(parsePropertyValue(text, previous)).toEqual(stored);
  });
});
