/**
 * Property filters as the console's forms edit them (every value as typed) and as the API takes them: persons'
 * and events' `properties=` parameter and a flag condition's `properties`. A filter the form cannot show (another
 * type, an unknown shape) is kept apart by the caller and written back as it was.
 */
import type { AnyPropertyFilter } from '../api/types';

export type FilterType = AnyPropertyFilter['type'];

export interface FilterForm {
  type: FilterType;
  /** The property; unused by a cohort filter. */
  key: string;
  operator: string;
  /** As typed: `exact` and `is_not` take several values separated by commas; a cohort filter holds the cohort id. */
  value: string;
  /** The group type of a `group` filter. */
  groupTypeIndex: number;
}

export interface OperatorChoice {
  value: string;
  label: string;
}

/** The comparisons trends, persons, events and flags all evaluate (docs/insights.md, "Which events"). */
export const OPERATORS: readonly OperatorChoice[] = [
  { value: 'exact', label: 'equals' },
  { value: 'is_not', label: 'does not equal' },
  { value: 'icontains', label: 'contains' },
  { value: 'not_icontains', label: 'does not contain' },
  { value: 'regex', label: 'matches regex' },
  { value: 'not_regex', label: 'does not match regex' },
  { value: 'gt', label: '>' },
  { value: 'gte', label: '≥' },
  { value: 'lt', label: '<' },
  { value: 'lte', label: '≤' },
  { value: 'is_set', label: 'is set' },
  { value: 'is_not_set', label: 'is not set' },
  { value: 'is_date_before', label: 'date before' },
  { value: 'is_date_after', label: 'date after' },
  { value: 'is_date_exact', label: 'date is' },
];

/** Flags also compare versions. */
export const FLAG_OPERATORS: readonly OperatorChoice[] = [
  ...OPERATORS,
  { value: 'semver_eq', label: 'version =' },
  { value: 'semver_gt', label: 'version >' },
  { value: 'semver_gte', label: 'version ≥' },
  { value: 'semver_lt', label: 'version <' },
  { value: 'semver_lte', label: 'version ≤' },
];

export const COHORT_OPERATORS: readonly OperatorChoice[] = [
  { value: 'in', label: 'in cohort' },
  { value: 'not_in', label: 'not in cohort' },
];

const VALUELESS = new Set(['is_set', 'is_not_set']);
const NUMERIC = new Set(['gt', 'gte', 'lt', 'lte']);
const LISTS = new Set(['exact', 'is_not']);
const TYPES = new Set<FilterType>(['event', 'person', 'cohort', 'group']);

export function newFilter(type: FilterType): FilterForm {
  return type === 'cohort'
    ? { type, key: 'id', operator: 'in', value: '', groupTypeIndex: 0 }
    : { type, key: '', operator: 'exact', value: '', groupTypeIndex: 0 };
}

export const needsValue = (operator: string): boolean => !VALUELESS.has(operator);

/** The label of an operator among `choices`; an operator the console does not offer is named as the API does. */
export function operatorLabel(operator: string, choices: readonly OperatorChoice[]): string {
  return choices.find((choice) => choice.value === operator)?.label ?? operator;
}

/** Whether the filter says anything yet (a row just added is left out until it names a property or a cohort). */
export function isBlank(filter: FilterForm): boolean {
  return filter.type === 'cohort' ? filter.value.trim() === '' : filter.key.trim() === '';
}

/** What is wrong with a filter before it is sent, or null. Blank filters are fine: they are left out. */
export function filterProblem(filter: FilterForm): string | null {
  if (isBlank(filter)) return null;
  if (filter.type === 'cohort') return /^\d+$/.test(filter.value.trim()) ? null : 'Choose a cohort.';
  const text = filter.value.trim();
  if (needsValue(filter.operator) && text === '') return `Filter on ${filter.key.trim()}: enter a value.`;
  if (NUMERIC.has(filter.operator) && !Number.isFinite(Number(text))) return `Filter on ${filter.key.trim()}: ${text} is not a number.`;
  return null;
}

function valueOf(filter: FilterForm): AnyPropertyFilter['value'] {
  const text = filter.value.trim();
  if (NUMERIC.has(filter.operator)) return Number(text);
  if (LISTS.has(filter.operator)) {
    const values = text
      .split(',')
      .map((value) => value.trim())
      .filter((value) => value !== '');
    return values.length === 1 ? values[0] : values;
  }
  return text;
}

/** The API's filter of a form (check {@link filterProblem} first); null for a blank one. */
export function toApiFilter(filter: FilterForm): AnyPropertyFilter | null {
  if (isBlank(filter)) return null;
  if (filter.type === 'cohort') return { type: 'cohort', key: 'id', operator: filter.operator, value: Number(filter.value.trim()) };
  const api: AnyPropertyFilter = { type: filter.type, key: filter.key.trim(), operator: filter.operator };
  if (needsValue(filter.operator)) api.value = valueOf(filter);
  if (filter.type === 'group') api.group_type_index = filter.groupTypeIndex;
  return api;
}

/** The API filters of the forms, blank ones left out. */
export function toApiFilters(filters: readonly FilterForm[]): AnyPropertyFilter[] {
  return filters.map(toApiFilter).filter((filter): filter is AnyPropertyFilter => filter !== null);
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): string => (typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : '');

/** The form of an API filter, or null when it is not one the form can show (a flag dependency, a nested group…). */
export function fromApiFilter(filter: unknown): FilterForm | null {
  if (!isRecord(filter) || typeof filter.key !== 'string') return null;
  const type = (filter.type ?? 'event') as FilterType;
  if (!TYPES.has(type)) return null;
  if (type === 'group' && typeof filter.group_type_index !== 'number') return null;
  const value = Array.isArray(filter.value) ? filter.value.map(text).join(', ') : text(filter.value);
  if (type === 'cohort') return { type, key: 'id', operator: filter.operator === 'not_in' ? 'not_in' : 'in', value, groupTypeIndex: 0 };
  return {
    type,
    key: filter.key,
    operator: typeof filter.operator === 'string' ? filter.operator : 'exact',
    value,
    groupTypeIndex: typeof filter.group_type_index === 'number' ? filter.group_type_index : 0,
  };
}

/** The filters of a saved query node's `properties` an insight builder shows (group filters are not among them). */
export function filtersOf(properties: unknown): FilterForm[] {
  return (Array.isArray(properties) ? properties : []).map(fromApiFilter).filter((filter): filter is FilterForm => filter !== null && filter.type !== 'group');
}

/** The `properties=` parameter of persons' and events' listings for the forms (none when blank), or the first problem. */
export function propertiesParam(filters: readonly FilterForm[]): { properties?: string; problem: string | null } {
  const problem = filters.map(filterProblem).find((text) => text !== null) ?? null;
  const api = problem ? [] : toApiFilters(filters);
  return { problem, properties: api.length > 0 ? JSON.stringify(api) : undefined };
}
