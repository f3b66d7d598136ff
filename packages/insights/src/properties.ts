/**
 * Property filters → ClickHouse conditions over one `events` row (docs/insights.md, "Which events"). The SQL
 * reads the row's own columns (`properties`, `person_properties`, `group<N>_properties`) by name, so it works in
 * any query whose FROM yields events columns; the event's person (for cohorts) is an expression the caller
 * provides. Keys and values are always bound parameters.
 */
import { MATERIALIZED_PROPERTIES } from '@plover/clickhouse';
import { ApiError } from '@plover/core';
import { parseDateText } from '@plover/flags';
import type { Params } from './params';
import { isPropertyGroup, type InsightContext, type JsonValue, type PropertyFilter, type PropertyGroup, type PropertyType } from './types';

const GROUP_COLUMNS = ['group0_properties', 'group1_properties', 'group2_properties', 'group3_properties', 'group4_properties'] as const;

/** The JSON column holding a property of this type (group filters/breakdowns name their group). */
export function propertyColumn(type: Exclude<PropertyType, 'cohort'>, groupTypeIndex: number | null | undefined): string {
  if (type === 'event') return 'properties';
  if (type === 'person') return 'person_properties';
  const column = GROUP_COLUMNS[groupTypeIndex ?? -1];
  if (column === undefined) throw ApiError.validation('group_type_index must be between 0 and 4.', 'group_type_index', 'invalid');
  return column;
}

/** The raw JSON of a property: `''` when the key is missing, `null` for a JSON null. */
function rawValue(column: string, key: string, params: Params): string {
  return `JSONExtractRaw(${column}, ${params.add(key, 'String')})`;
}

/** The text of a raw JSON value: a string's value, a number's or boolean's literal, `''` when not set (missing or null). */
export function textOfRaw(raw: string): string {
  return `multiIf(${raw} IN ('', 'null'), '', startsWith(${raw}, '"'), JSONExtractString(${raw}), ${raw})`;
}

/** A property's text (see textOfRaw) read from the JSON: as a string first, the one cheap parse that answers for most values. */
export function jsonPropertyText(column: string, key: string, params: Params): string {
  const text = `JSONExtractString(${column}, ${params.add(key, 'String')})`;
  return `if(${text} != '', ${text}, ${textOfRaw(rawValue(column, key, params))})`;
}

/** A property's text: the materialized column for the event properties that have one, else from the JSON. */
export function propertyText(column: string, key: string, params: Params): string {
  const materialized = column === 'properties' ? MATERIALIZED_PROPERTIES.get(key) : undefined;
  return materialized ?? jsonPropertyText(column, key, params);
}

/** The property as a number (a JSON number or a numeric string), NULL otherwise. */
export function propertyNumber(column: string, key: string, params: Params): string {
  return `toFloat64OrNull(${propertyText(column, key, params)})`;
}

function isSet(column: string, key: string, params: Params): string {
  return `(${rawValue(column, key, params)} NOT IN ('', 'null'))`;
}

function scalars(filter: PropertyFilter, attr: string): string[] {
  const values: readonly JsonValue[] = Array.isArray(filter.value) ? filter.value : [filter.value ?? null];
  return values.map((value) => {
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    throw ApiError.validation('Value must be a string, number or boolean.', `${attr}__value`, 'invalid');
  });
}

function firstScalar(filter: PropertyFilter, attr: string): string {
  const [first] = scalars(filter, attr);
  if (first === undefined) throw ApiError.validation('This field is required.', `${attr}__value`, 'required');
  return first;
}

export interface FilterScope {
  /** SQL for the person an event counts as (merged persons resolved), compared with cohort members. */
  personId: string;
  ctx: InsightContext;
}

async function filterCondition(filter: PropertyFilter, params: Params, scope: FilterScope, attr: string): Promise<string> {
  if (filter.type === 'cohort') {
    const members = await scope.ctx.cohortMembers(Number(filter.value));
    const inCohort = `has(${params.add(members, 'Array(UUID)')}, ${scope.personId})`;
    return filter.operator === 'not_in' ? `NOT ${inCohort}` : inCohort;
  }
  const column = propertyColumn(filter.type, filter.groupTypeIndex);
  const text = propertyText(column, filter.key, params);
  // Built only where an operator needs it: it reads the JSON even when the text has a materialized column.
  const set = () => isSet(column, filter.key, params);
  switch (filter.operator) {
    case 'is_set':
      return set();
    case 'is_not_set':
      return `NOT ${set()}`;
    case 'exact':
    case 'is_not': {
      // A non-empty text is set: only an empty value needs the (costlier) check on the JSON.
      const values = scalars(filter, attr);
      const equal = `${text} IN ${params.add(values, 'Array(String)')}`;
      const exact = values.includes('') ? `(${set()} AND ${equal})` : equal;
      return filter.operator === 'exact' ? exact : `NOT ${exact}`;
    }
    case 'icontains':
    case 'not_icontains': {
      const needle = firstScalar(filter, attr);
      const found = `positionCaseInsensitiveUTF8(${text}, ${params.add(needle, 'String')}) > 0`;
      const contains = needle === '' ? set() : found;
      return filter.operator === 'icontains' ? contains : `NOT ${contains}`;
    }
    case 'regex':
    case 'not_regex': {
      const matches = `(${set()} AND match(${text}, ${params.add(firstScalar(filter, attr), 'String')}))`;
      return filter.operator === 'regex' ? matches : `NOT ${matches}`;
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const number = Number(firstScalar(filter, attr));
      if (!Number.isFinite(number)) throw ApiError.validation('A valid number is required.', `${attr}__value`, 'invalid');
      const op = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[filter.operator];
      return `ifNull(toFloat64OrNull(${text}) ${op} ${params.add(number, 'Float64')}, 0)`;
    }
    case 'is_date_before':
    case 'is_date_after':
    case 'is_date_exact': {
      const instant = parseDateText(firstScalar(filter, attr), { nowMs: scope.ctx.now.getTime(), timezone: scope.ctx.timezone });
      if (instant === null) throw ApiError.validation('A valid date is required.', `${attr}__value`, 'invalid');
      const op = { is_date_before: '<', is_date_after: '>', is_date_exact: '=' }[filter.operator];
      const date = `parseDateTime64BestEffortOrNull(${text}, 6, ${params.add(scope.ctx.timezone, 'String')})`;
      return `ifNull(${date} ${op} fromUnixTimestamp64Milli(${params.add(instant, 'Int64')}), 0)`;
    }
    default:
      throw ApiError.validation(`"${filter.operator}" is not a valid choice.`, `${attr}__operator`, 'invalid_choice');
  }
}

/** One AND/OR group (nested) as a condition; `1` when there is nothing to filter. */
export async function propertiesCondition(group: PropertyGroup | null, params: Params, scope: FilterScope, attr = 'properties'): Promise<string> {
  if (group === null || group.values.length === 0) return '1';
  const parts = await Promise.all(
    group.values.map((value, index) =>
      isPropertyGroup(value) ? propertiesCondition(value, params, scope, `${attr}__${index}`) : filterCondition(value, params, scope, `${attr}__${index}`),
    ),
  );
  return `(${parts.join(group.type === 'AND' ? ' AND ' : ' OR ')})`;
}
