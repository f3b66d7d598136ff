import { ApiError, PROPERTY_VALUE_OPERATORS, type PropertyValueOperator } from '@plover/core';
import { containsPattern, type SqlBuilder } from '@plover/postgres';

/**
 * Person property filters → a SQL condition on `p.properties` (table alias `p` = persons), with every value
 * bound. Input: a list of filters (AND) or a group `{type: "AND"|"OR", values: [...]}` whose values may be
 * filters or groups. A filter: `{key, value, operator = "exact", type = "person"}`. Bad input is a 400 whose
 * `attr` names the offending part (`properties__0__value`, …).
 */
const NUMERIC = `'^\\s*-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?\\s*$'`;
const MAX_DEPTH = 5;

const invalid = (detail: string, attr: string, code = 'invalid_input') => ApiError.validation(detail, attr, code);
const required = (attr: string) => ApiError.validation('This field is required.', attr, 'required');

function scalarText(value: unknown, attr: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw invalid('Value must be a string, number or boolean.', attr, 'invalid');
}

function values(value: unknown, attr: string): string[] {
  if (Array.isArray(value)) {
    if (value.length === 0) throw invalid('This list may not be empty.', attr, 'empty');
    return value.map((item, index) => scalarText(item, `${attr}__${index}`));
  }
  return [scalarText(value, attr)];
}

/** One filter (or a group in its place) as a condition; undefined when it filters nothing (an empty group). */
export function filterCondition(filter: unknown, attr: string, sql: SqlBuilder): string | undefined {
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) {
    throw invalid('Expected a property filter object.', attr, 'invalid');
  }
  const item = filter as Record<string, unknown>;
  if ('values' in item) return groupCondition(item, attr, sql, 1);
  const type = item.type ?? 'person';
  if (type !== 'person') throw invalid(`Property filter type ${JSON.stringify(type)} is not supported here; use "person".`, `${attr}__type`, 'invalid_choice');
  if (typeof item.key !== 'string' || item.key === '') throw required(`${attr}__key`);
  const operator = (item.operator ?? 'exact') as PropertyValueOperator;
  if (!(PROPERTY_VALUE_OPERATORS as readonly string[]).includes(operator)) {
    throw invalid(`"${String(item.operator)}" is not a valid choice.`, `${attr}__operator`, 'invalid_choice');
  }
  const key = sql.bind(item.key);
  const text = `(p.properties ->> ${key})`;
  if (operator === 'is_set') return `(p.properties ? ${key})`;
  if (operator === 'is_not_set') return `(NOT (p.properties ? ${key}))`;
  if (item.value === undefined || item.value === null) throw required(`${attr}__value`);
  const valueAttr = `${attr}__value`;
  switch (operator) {
    case 'exact':
      return `(${text} = ANY(${sql.bind(values(item.value, valueAttr))}::text[]))`;
    case 'is_not':
      return `(${text} IS NULL OR NOT (${text} = ANY(${sql.bind(values(item.value, valueAttr))}::text[])))`;
    case 'icontains':
    case 'not_icontains': {
      const patterns = values(item.value, valueAttr).map((v) => containsPattern(v));
      const match = `(${text} ILIKE ANY(${sql.bind(patterns)}::text[]))`;
      return operator === 'icontains' ? match : `(${text} IS NULL OR NOT ${match})`;
    }
    case 'regex':
    case 'not_regex': {
      const pattern = scalarText(item.value, valueAttr);
      try {
        new RegExp(pattern);
      } catch {
        throw invalid('Invalid regular expression.', valueAttr, 'invalid');
      }
      const match = `(${text} ~ ${sql.bind(pattern)})`;
      return operator === 'regex' ? match : `(${text} IS NULL OR NOT ${match})`;
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const number = Number(scalarText(item.value, valueAttr));
      if (!Number.isFinite(number)) throw invalid('A valid number is required.', valueAttr, 'invalid');
      const op = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[operator];
      return `(CASE WHEN ${text} ~ ${NUMERIC} THEN ${text}::numeric ${op} ${sql.bind(number)}::numeric ELSE false END)`;
    }
    case 'is_date_exact':
    case 'is_date_before':
    case 'is_date_after': {
      const date = new Date(scalarText(item.value, valueAttr));
      if (Number.isNaN(date.getTime())) throw invalid('A valid date is required.', valueAttr, 'invalid');
      const op = { is_date_exact: '=', is_date_before: '<', is_date_after: '>' }[operator];
      return `(plover_try_timestamptz(${text}) ${op} ${sql.bind(date.toISOString())}::timestamptz)`;
    }
  }
}

function groupCondition(group: Record<string, unknown>, attr: string, sql: SqlBuilder, depth: number): string | undefined {
  if (depth > MAX_DEPTH) throw invalid('Property groups are nested too deeply.', attr, 'invalid');
  const prefix = attr ? `${attr}__` : '';
  const type = group.type ?? 'AND';
  if (type !== 'AND' && type !== 'OR') throw invalid(`${JSON.stringify(type)} is not a valid choice.`, `${prefix}type`, 'invalid_choice');
  if (!Array.isArray(group.values)) throw invalid('Expected a list of items.', `${prefix}values`, 'not_a_list');
  const parts = group.values
    .map((value, index) => {
      const itemAttr = `${prefix}values__${index}`;
      if (typeof value === 'object' && value !== null && 'values' in value) {
        return groupCondition(value as Record<string, unknown>, itemAttr, sql, depth + 1);
      }
      return filterCondition(value, itemAttr, sql);
    })
    .filter((part): part is string => part !== undefined);
  if (parts.length === 0) return undefined;
  return `(${parts.join(type === 'AND' ? ' AND ' : ' OR ')})`;
}

/** The condition for the API's `properties` parameter (JSON text), or undefined when it filters nothing. */
export function propertiesCondition(raw: string, sql: SqlBuilder): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw invalid('Properties are unparsable!', 'properties');
  }
  if (Array.isArray(parsed)) {
    const parts = parsed.map((filter, index) => filterCondition(filter, `properties__${index}`, sql)).filter((part): part is string => part !== undefined);
    return parts.length === 0 ? undefined : `(${parts.join(' AND ')})`;
  }
  if (typeof parsed === 'object' && parsed !== null) return groupCondition(parsed as Record<string, unknown>, 'properties', sql, 1);
  throw invalid('Properties must be a list of filters or a property group.', 'properties');
}
