/**
 * The operators, by PostHog's names, with which a property filter compares a property's value: what person
 * listings, cohorts and insight filters accept. Insight filters on cohorts add `in` and `not_in`.
 */
export const PROPERTY_VALUE_OPERATORS = [
  'exact',
  'is_not',
  'icontains',
  'not_icontains',
  'regex',
  'not_regex',
  'gt',
  'gte',
  'lt',
  'lte',
  'is_set',
  'is_not_set',
  'is_date_before',
  'is_date_after',
  'is_date_exact',
] as const;

export type PropertyValueOperator = (typeof PROPERTY_VALUE_OPERATORS)[number];
