import type { ApiError } from '@plover/core';
import { errors } from './errors';

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const OPERATORS = new Set([
  'exact',
  'is_not',
  'icontains',
  'not_icontains',
  'icontains_multi',
  'not_icontains_multi',
  'starts_with',
  'not_starts_with',
  'ends_with',
  'not_ends_with',
  'regex',
  'not_regex',
  'gt',
  'gte',
  'lt',
  'lte',
  'between',
  'not_between',
  'is_set',
  'is_not_set',
  'is_date_before',
  'is_date_after',
  'is_date_exact',
  'semver_eq',
  'semver_neq',
  'semver_gt',
  'semver_gte',
  'semver_lt',
  'semver_lte',
  'semver_tilde',
  'semver_caret',
  'semver_wildcard',
  'in',
  'not_in',
  'flag_evaluates_to',
]);
const FILTER_TYPES = new Set(['person', 'group', 'cohort', 'flag']);

function invalid(detail: string, attr: string): ApiError {
  return errors.validation(detail, attr, 'invalid_input');
}

/** Ids are Postgres `integer`s: a larger number names nothing and would fail the query it reached. */
const MAX_ID = 2_147_483_647;

/** A cohort id as a filter value holds it (a number or a string of digits, as decide reads it), or null. */
function idOf(value: unknown): number | null {
  const id = typeof value === 'string' && /^\d{1,10}$/.test(value) ? Number(value) : value;
  return typeof id === 'number' && Number.isSafeInteger(id) && id >= 1 && id <= MAX_ID ? id : null;
}

function isGroupTypeIndex(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= 4;
}

function isPercentage(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 100;
}

function checkRollout(value: unknown, attr: string): void {
  if (value === undefined || value === null) return;
  if (!isPercentage(value)) throw invalid('Rollout percentage must be a number between 0 and 100.', attr);
}

export interface PropertyReferences {
  cohortIds: Set<number>;
  /** A cohort's filters hold a behavioral criterion (what the person did: `type: "behavioral"`). */
  behavioral?: boolean;
}

/** Time units of a behavioral window. */
const TIME_INTERVALS = new Set(['day', 'week', 'month', 'year']);
const COUNT_OPERATORS = new Set(['gte', 'lte', 'gt', 'lt', 'exact']);
const WINDOW = ['time_value', 'time_interval'];
const SEQUENCE_WINDOW = ['seq_time_value', 'seq_time_interval'];

/** PostHog's behavioral criteria and the fields each needs besides `key`, `value`, `event_type` and a window. */
const BEHAVIORAL_FIELDS: Readonly<Record<string, readonly string[]>> = {
  performed_event: [],
  performed_event_multiple: ['operator_value'],
  performed_event_first_time: [],
  performed_event_sequence: ['seq_event', 'seq_event_type', ...SEQUENCE_WINDOW],
  performed_event_regularly: ['operator_value', 'min_periods', 'total_periods'],
  stopped_performing_event: SEQUENCE_WINDOW,
  restarted_performing_event: SEQUENCE_WINDOW,
};

const isAbsent = (value: unknown) => value === undefined || value === null;

/**
 * A cohort's behavioral criterion (PostHog's shape): the event (or action id, `event_type: "actions"`) in `key`,
 * the kind in `value`, a window (`time_value` + `time_interval`, or `explicit_datetime`) and the kind's own fields.
 */
function checkBehavioral(filter: Record<string, unknown>, at: string): void {
  const kind = typeof filter.value === 'string' ? BEHAVIORAL_FIELDS[filter.value] : undefined;
  if (kind === undefined) throw invalid(`${JSON.stringify(filter.value)} is not a behavioral criterion.`, `${at}__value`);
  if (filter.event_type !== 'events' && filter.event_type !== 'actions') throw invalid('event_type must be "events" or "actions".', `${at}__event_type`);
  if (filter.event_type === 'actions' && idOf(filter.key) === null) throw invalid('An action criterion names the action id in key.', `${at}__key`);
  const windowed = WINDOW.every((key) => !isAbsent(filter[key])) || typeof filter.explicit_datetime === 'string';
  const missing = [...(windowed ? [] : WINDOW), ...kind].filter((key) => isAbsent(filter[key]));
  if (missing.length > 0) throw invalid(`Missing required keys for a ${String(filter.value)} filter: ${missing.join(', ')}.`, at);
  for (const key of ['time_value', 'seq_time_value', 'operator_value', 'min_periods', 'total_periods']) {
    const value = filter[key];
    if (!isAbsent(value) && !(typeof value === 'number' && Number.isSafeInteger(value) && value >= 0))
      throw invalid(`${key} must be a whole number.`, `${at}__${key}`);
  }
  for (const key of ['time_interval', 'seq_time_interval']) {
    if (!isAbsent(filter[key]) && !TIME_INTERVALS.has(filter[key] as string)) throw invalid(`${key} must be day, week, month or year.`, `${at}__${key}`);
  }
  if (!isAbsent(filter.operator) && !COUNT_OPERATORS.has(filter.operator as string)) {
    throw invalid('operator must be gte, lte, gt, lt or exact.', `${at}__operator`);
  }
}

function checkProperties(value: unknown, attr: string, refs: PropertyReferences): void {
  if (value === undefined || value === null) return;
  if (!Array.isArray(value)) throw invalid('Properties must be a list.', attr);
  value.forEach((filter: unknown, index) => checkProperty(filter, `${attr}__${index}`, refs));
}

function checkProperty(filter: unknown, at: string, refs: PropertyReferences, inCohort = false): void {
  if (!isObject(filter)) throw invalid('Each property filter must be an object.', at);
  if (inCohort && filter.type === 'behavioral') {
    if (isAbsent(filter.key) || filter.key === '') throw invalid('A property filter needs a key.', `${at}__key`);
    checkBehavioral(filter, at);
    refs.behavioral = true;
    return;
  }
  if (typeof filter.key !== 'string' || filter.key === '') throw invalid('A property filter needs a key.', `${at}__key`);
  if (filter.operator !== undefined && filter.operator !== null && (typeof filter.operator !== 'string' || !OPERATORS.has(filter.operator))) {
    throw invalid(`${JSON.stringify(filter.operator)} is not a valid operator.`, `${at}__operator`);
  }
  if (filter.type !== undefined && filter.type !== null && (typeof filter.type !== 'string' || !FILTER_TYPES.has(filter.type))) {
    throw invalid(`${JSON.stringify(filter.type)} is not a valid property filter type.`, `${at}__type`);
  }
  if (filter.type === 'cohort') {
    const id = idOf(filter.value);
    if (id === null) throw invalid('A cohort filter needs a cohort id as its value.', `${at}__value`);
    refs.cohortIds.add(id);
  }
  if (filter.type === 'group' && !isGroupTypeIndex(filter.group_type_index)) {
    throw invalid('A group filter needs a group_type_index between 0 and 4.', `${at}__group_type_index`);
  }
}

function checkConditions(value: unknown, attr: string, variantKeys: Set<string>, refs: PropertyReferences): void {
  if (value === undefined || value === null) return;
  if (!Array.isArray(value)) throw invalid('Condition groups must be a list.', attr);
  value.forEach((group: unknown, index) => {
    const at = `${attr}__${index}`;
    if (!isObject(group)) throw invalid('Each condition group must be an object.', at);
    checkProperties(group.properties, `${at}__properties`, refs);
    checkRollout(group.rollout_percentage, `${at}__rollout_percentage`);
    if (group.variant !== undefined && group.variant !== null && (typeof group.variant !== 'string' || !variantKeys.has(group.variant))) {
      throw invalid(`Filters are not valid (variant override does not exist)`, 'filters');
    }
  });
}

/**
 * PostHog's flag `filters` checks (`feature_flag.py` serializer): condition groups, property filters,
 * variant percentages summing to 100, payload keys naming a variant or `"true"`, the aggregation group type.
 * Returns the cohort ids the filters reference, which must exist in the project.
 */
export function validateFilters(filters: unknown): PropertyReferences {
  const refs: PropertyReferences = { cohortIds: new Set() };
  if (!isObject(filters)) throw invalid('Filters must be an object.', 'filters');
  const index = filters.aggregation_group_type_index;
  if (index !== undefined && index !== null && !isGroupTypeIndex(index)) {
    throw invalid('aggregation_group_type_index must be between 0 and 4.', 'filters');
  }
  const variantKeys = new Set<string>();
  const multivariate = filters.multivariate;
  if (multivariate !== undefined && multivariate !== null) {
    if (!isObject(multivariate) || !Array.isArray(multivariate.variants)) throw invalid('multivariate must have a list of variants.', 'filters');
    let total = 0;
    for (const variant of multivariate.variants as unknown[]) {
      if (!isObject(variant) || typeof variant.key !== 'string' || variant.key === '') throw invalid('Each variant needs a key.', 'filters');
      if (!isPercentage(variant.rollout_percentage)) throw invalid('Each variant needs a rollout_percentage between 0 and 100.', 'filters');
      if (variantKeys.has(variant.key)) throw invalid('Variant keys must be unique.', 'filters');
      variantKeys.add(variant.key);
      total += variant.rollout_percentage;
    }
    if (variantKeys.size > 0 && Math.abs(total - 100) > 1e-9) {
      throw invalid('Invalid variant definitions: Variant rollout percentages must sum to 100.', 'filters');
    }
  }
  checkConditions(filters.groups, 'filters__groups', variantKeys, refs);
  checkConditions(filters.super_groups, 'filters__super_groups', variantKeys, refs);
  checkConditions(filters.holdout_groups, 'filters__holdout_groups', variantKeys, refs);
  checkProperties(filters.properties, 'filters__properties', refs);
  const payloads = filters.payloads;
  if (payloads !== undefined && payloads !== null) {
    if (!isObject(payloads)) throw invalid('Payloads must be an object.', 'filters');
    for (const key of Object.keys(payloads)) {
      if (key !== 'true' && !variantKeys.has(key)) throw invalid('Payload keys must be the key of a variant or "true".', 'filters');
    }
  }
  return refs;
}

/** A cohort's `filters.properties`: nested `{type: AND|OR, values}` groups of person or cohort filters. */
export function validateCohortFilters(filters: unknown): PropertyReferences {
  const refs: PropertyReferences = { cohortIds: new Set() };
  if (!isObject(filters)) throw invalid('Filters must be an object.', 'filters');
  const walk = (group: unknown, attr: string): void => {
    if (!isObject(group)) throw invalid('A property group must be an object.', attr);
    if (group.type !== 'AND' && group.type !== 'OR') throw invalid('A property group type must be AND or OR.', attr);
    if (!Array.isArray(group.values)) throw invalid('A property group needs a list of values.', attr);
    group.values.forEach((value: unknown, index) => {
      if (isObject(value) && (value.type === 'AND' || value.type === 'OR')) walk(value, `${attr}__values__${index}`);
      else checkProperty(value, `${attr}__values__${index}`, refs, true);
    });
  };
  if (filters.properties !== undefined && filters.properties !== null) walk(filters.properties, 'filters__properties');
  return refs;
}

const FLAG_KEY = /^[a-zA-Z0-9_-]+$/;

/** A flag key (of a flag, or of the flag an early access feature creates): letters, digits, `-` and `_`; 400 on `attr`. */
export function checkFlagKey(key: string, attr: string): void {
  if (!FLAG_KEY.test(key)) throw errors.validation('Only letters, numbers, hyphens ("-") & underscores ("_") are allowed.', attr);
}
