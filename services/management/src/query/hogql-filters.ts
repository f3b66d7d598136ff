/**
 * PostHog property filters as HogQL expressions over the `events` virtual table, so that the query kinds built on
 * HogQL (EventsQuery, HogQLQuery's `{filters}`) read properties exactly as HogQL does. The semantics are the insights' (docs/insights.md,
 * "Which events"): a missing key is "not set", `is_not` and the negated operators match it.
 */
import { and, call, constant, field, template, type AstNode } from '@plover/hogql';
import { isPropertyGroup, parsePropertyFilters, resolveInstant, type InsightContext, type PropertyFilter, type PropertyGroup } from '@plover/insights';
import { errors } from '../shared/errors';

/** The text of a filter's property, NULL when not set. */
function propertyField(filter: PropertyFilter): AstNode {
  if (filter.type === 'person') return field('person', 'properties', filter.key);
  if (filter.type === 'group') return field(`group_${filter.groupTypeIndex ?? 0}`, 'properties', filter.key);
  return field('properties', filter.key);
}

const texts = (value: PropertyFilter['value']): string[] => (Array.isArray(value) ? value : [value]).map((item) => String(item));
const likePattern = (value: string) => `%${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

async function filterAst(filter: PropertyFilter, ctx: InsightContext, attr: string): Promise<AstNode> {
  if (filter.type === 'cohort') {
    const members = await ctx.cohortMembers(Number(filter.value));
    const inCohort = await template('has({members}, toString(person_id))', { members: constant(members) });
    return filter.operator === 'not_in' ? call('not', inCohort) : inCohort;
  }
  const f = propertyField(filter);
  const first = texts(filter.value)[0] ?? '';
  switch (filter.operator) {
    case 'exact':
      return template('ifNull(has({v}, {f}), false)', { f, v: constant(texts(filter.value)) });
    case 'is_not':
      return template('ifNull(not(has({v}, {f})), true)', { f, v: constant(texts(filter.value)) });
    case 'icontains':
      return template('ifNull({f} ilike {v}, false)', { f, v: constant(likePattern(first)) });
    case 'not_icontains':
      return template('ifNull(not({f} ilike {v}), true)', { f, v: constant(likePattern(first)) });
    case 'regex':
      return template('ifNull(match({f}, {v}), false)', { f, v: constant(first) });
    case 'not_regex':
      return template('ifNull(not(match({f}, {v})), true)', { f, v: constant(first) });
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const op = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[filter.operator];
      return template(`ifNull(toFloat64OrNull({f}) ${op} {v}, false)`, { f, v: constant(Number(filter.value)) });
    }
    case 'is_set':
      return template('{f} is not null', { f });
    case 'is_not_set':
      return template('{f} is null', { f });
    case 'is_date_before':
    case 'is_date_after':
    case 'is_date_exact': {
      const op = { is_date_before: '<', is_date_after: '>', is_date_exact: '=' }[filter.operator];
      const instant = resolveInstant(first, ctx, false, `${attr}__value`).toISOString().replace('T', ' ').replace('Z', '');
      return template(`ifNull(parseDateTime64BestEffortOrNull({f}, 6, {tz}) ${op} toDateTime64({v}, 6, 'UTC'), false)`, {
        f,
        tz: constant(ctx.timezone),
        v: constant(instant),
      });
    }
    default:
      throw errors.validation(`Operator "${String(filter.operator)}" is not supported here.`, `${attr}__operator`);
  }
}

/** A property group (AND/OR, nested) as one HogQL condition; null for no filters. */
export async function propertiesAst(group: PropertyGroup | null, ctx: InsightContext, attr: string): Promise<AstNode | null> {
  if (group === null) return null;
  const parts: AstNode[] = [];
  for (const [index, value] of group.values.entries()) {
    const part = isPropertyGroup(value) ? await propertiesAst(value, ctx, `${attr}__values__${index}`) : await filterAst(value, ctx, `${attr}__${index}`);
    if (part !== null) parts.push(part);
  }
  if (parts.length === 0) return null;
  return group.type === 'AND' ? and(parts) : parts.length === 1 ? parts[0]! : { node: 'Or', exprs: parts };
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const instantText = (date: Date) => date.toISOString().replace('T', ' ').replace('Z', '');

/**
 * HogQLQuery's `filters` — `{dateRange: {date_from?, date_to?}, properties?}` — as the condition its `{filters}`
 * placeholder stands for, over the `events` table in scope: `true` when they set nothing. Dates take the
 * insights' grammar in the project's timezone; `date_to` includes the whole day it names.
 */
export async function hogqlFiltersAst(raw: unknown, ctx: InsightContext): Promise<AstNode> {
  if (raw === undefined || raw === null) return constant(true);
  if (!isObject(raw)) throw errors.validation('filters must be an object.', 'filters');
  const parts: AstNode[] = [];
  const range = raw.dateRange ?? null;
  if (range !== null && !isObject(range)) throw errors.validation('dateRange must be an object.', 'filters__dateRange');
  for (const [key, op, end] of [
    ['date_from', '>=', false],
    ['date_to', '<=', true],
  ] as const) {
    const value = range?.[key];
    if (value === undefined || value === null || value === 'all') continue;
    if (typeof value !== 'string') throw errors.validation('Must be a date.', `filters__dateRange__${key}`);
    const instant = resolveInstant(value, ctx, end, `filters__dateRange__${key}`);
    parts.push(await template(`timestamp ${op} toDateTime64({t}, 6, 'UTC')`, { t: constant(instantText(instant)) }));
  }
  const properties = await propertiesAst(parsePropertyFilters(raw.properties, 'filters__properties'), ctx, 'filters__properties');
  if (properties !== null) parts.push(properties);
  return parts.length === 0 ? constant(true) : and(parts);
}

/**
 * HogQLQuery's `variables` — `{<id>: {variableId, code_name, value}}` — as the values of `{variables.code_name}`
 * placeholders.
 */
export function variableValues(raw: unknown): Record<string, unknown> {
  if (raw === undefined || raw === null) return {};
  if (!isObject(raw)) throw errors.validation('variables must be an object.', 'variables');
  const values: Record<string, unknown> = {};
  for (const [id, variable] of Object.entries(raw)) {
    if (!isObject(variable) || typeof variable.code_name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,99}$/.test(variable.code_name)) {
      throw errors.validation('A variable is {variableId, code_name, value}, code_name an identifier.', `variables__${id}`);
    }
    const { value } = variable;
    const scalar = (item: unknown) => item === null || ['string', 'number', 'boolean'].includes(typeof item);
    if (variable.isNull !== true && !(scalar(value) || (Array.isArray(value) && value.every(scalar)))) {
      throw errors.validation('A variable value is text, a number, a boolean or a list of them.', `variables__${id}__value`);
    }
    values[`variables.${variable.code_name}`] = variable.isNull === true ? null : value;
  }
  return values;
}
