/**
 * Request parsing for trends: PostHog's legacy filter fields (query string and/or JSON body) and the
 * `TrendsQuery` node both become one `TrendsInput`. Every rejection is an `ApiError` 400 whose `attr` names the
 * offending field, nested names joined by `__`; the first problem found is the one reported.
 */
import { ApiError, PROPERTY_VALUE_OPERATORS } from '@plover/core';
import {
  bodyFields,
  choice,
  decode,
  describe,
  integer,
  invalidChoice,
  isAbsent,
  isObject,
  list,
  object,
  optionalString,
  required,
  tryJson,
  type Fields,
} from './fields';
import { checkFormula } from './formula';
import {
  DISPLAYS,
  INSIGHT_KINDS,
  INTERVALS,
  MATH_TYPES,
  PROPERTY_MATH,
  type Breakdown,
  type CohortBreakdown,
  type BreakdownType,
  type InsightKind,
  type InsightRequest,
  type JsonValue,
  type MathType,
  type PropertyFilter,
  type PropertyGroup,
  type PropertyOperator,
  type PropertyType,
  type Series,
  type TrendsInput,
} from './types';

/**
 * A trend-endpoint request: legacy filter fields (query string merged under the JSON body), or its `query`
 * TrendsQuery when present. `shown_as: Stickiness` or `insight: STICKINESS` asks for stickiness, `insight:
 * LIFECYCLE` or `shown_as: Lifecycle` for lifecycle; neither takes a breakdown or a formula, and lifecycle takes one
 * series and no comparison. No series at all is a valid request with an empty answer.
 */
export function parseInsightRequest(query: Record<string, unknown>, body: unknown): InsightRequest {
  const fields: Fields = { ...query, ...bodyFields(body) };
  if (!isAbsent(fields.query)) return parseInsightQuery(fields.query, 'query');

  const insight = insightKind(fields);
  const series = parseEntities(fields.events, 'events', fields.actions);
  const top = section(fields, '');
  const sections = { top, dates: top, breakdown: top, trends: top, compare: top };
  return checked(insight, settings(series, sections), sections, 'events');
}

/** Stickiness and lifecycle take neither a breakdown nor a formula; lifecycle one series and no comparison. */
function checked(
  insight: InsightKind,
  input: TrendsInput,
  { breakdown, trends, compare }: Omit<Sections, 'top' | 'dates'>,
  seriesAttr: string,
): InsightRequest {
  if (insight !== 'TRENDS') {
    const name = insight === 'STICKINESS' ? 'Stickiness' : 'Lifecycle';
    if (input.breakdown !== null) throw ApiError.validation(`${name} does not take a breakdown.`, breakdown.attr('breakdown'));
    if (input.formula !== null) throw ApiError.validation(`${name} does not take a formula.`, trends.attr('formula'));
  }
  if (insight === 'LIFECYCLE') {
    if (input.series.length > 1) throw ApiError.validation('Lifecycle takes one series.', seriesAttr);
    if (input.compare) throw ApiError.validation('Lifecycle does not compare with the previous period.', compare.attr('compare'));
  }
  return { insight, input };
}

const SHOWN_AS: Record<string, InsightKind> = { Volume: 'TRENDS', Stickiness: 'STICKINESS', Lifecycle: 'LIFECYCLE' };

/** `shown_as` Stickiness wins (as in PostHog); otherwise `insight`, and a trend `shown_as` Lifecycle. */
function insightKind(fields: Fields): InsightKind {
  const shownAs = fields.shown_as;
  if (!isAbsent(shownAs) && (typeof shownAs !== 'string' || SHOWN_AS[shownAs] === undefined)) throw invalidChoice(shownAs, 'shown_as');
  const raw = fields.insight;
  const upper = typeof raw === 'string' ? raw.toUpperCase() : raw;
  if (!isAbsent(upper) && !(INSIGHT_KINDS as readonly unknown[]).includes(upper)) throw invalidChoice(raw, 'insight');
  const insight = isAbsent(upper) ? 'TRENDS' : (upper as InsightKind);
  const shown = isAbsent(shownAs) ? 'TRENDS' : SHOWN_AS[shownAs]!;
  if (shown === 'STICKINESS' || insight === 'TRENDS') return shown;
  return insight;
}

/** The query node of each insight the trend computations serve, and the sub-object holding its display settings. */
const QUERY_KINDS: Record<string, { insight: InsightKind; filter: string }> = {
  TrendsQuery: { insight: 'TRENDS', filter: 'trendsFilter' },
  StickinessQuery: { insight: 'STICKINESS', filter: 'stickinessFilter' },
  LifecycleQuery: { insight: 'LIFECYCLE', filter: 'lifecycleFilter' },
};

/**
 * A `TrendsQuery`, `StickinessQuery` or `LifecycleQuery` node (an object or its JSON text) and the insight it
 * asks for; `attr` prefixes every error's field name. Stickiness and lifecycle nodes are checked as their legacy
 * requests are.
 */
export function parseInsightQuery(node: unknown, attr = 'query', kinds: readonly string[] = Object.keys(QUERY_KINDS)): InsightRequest {
  const query = object(node, attr);
  if (query === null) throw required(attr);
  const kind = typeof query.kind === 'string' && kinds.includes(query.kind) ? QUERY_KINDS[query.kind] : undefined;
  if (kind === undefined) {
    throw ApiError.validation(
      `${describe(query.kind)} is not a valid choice: only ${kinds.join(', ')} ${kinds.length === 1 ? 'is' : 'are'} supported.`,
      `${attr}__kind`,
      'invalid_choice',
    );
  }
  if (isAbsent(query.series)) throw required(`${attr}__series`);
  const series = list(query.series, `${attr}__series`).map((item, index) => eventsNode(item, `${attr}__series__${index}`, index));
  const sub = (key: string): Section => section(object(query[key], `${attr}__${key}`), `${attr}__${key}`);
  const breakdown = sub('breakdownFilter');
  if (list(breakdown.fields.breakdowns, breakdown.attr('breakdowns')).length > 0) {
    throw ApiError.validation('Multiple breakdowns are not supported.', breakdown.attr('breakdowns'));
  }
  const sections = { top: section(query, attr), dates: sub('dateRange'), breakdown, trends: sub(kind.filter), compare: sub('compareFilter') };
  return checked(kind.insight, settings(series, sections), sections, `${attr}__series`);
}

/** A `TrendsQuery` node (an object or its JSON text); `attr` prefixes every error's field name. */
export function parseTrendsQuery(node: unknown, attr = 'query'): TrendsInput {
  return parseInsightQuery(node, attr, ['TrendsQuery']).input;
}

/**
 * Property filters: a list of filters (AND-ed), or an AND/OR group `{type, values}` whose values are filters or
 * further groups; either may arrive as JSON text. Empty groups are dropped; nothing left → null.
 */
export function parsePropertyFilters(raw: unknown, attr: string): PropertyGroup | null {
  const value = decode(raw, attr);
  if (isAbsent(value)) return null;
  if (Array.isArray(value))
    return nonEmptyGroup(
      'AND',
      value.map((item, index) => propertyNode(item, `${attr}__${index}`)),
    );
  if (isObject(value) && isGroupShape(value)) return propertyGroup(value, attr);
  throw ApiError.validation('Must be a list of property filters or a property group.', attr);
}

/**
 * The legacy entity lists — `events`, and `actions` when given (PostHog's filters keep action entities apart) —
 * validated in request order, then sorted together by `order` (stably; an entity without one keeps its position,
 * events before actions) and renumbered 0, 1, … in that order. An entity's `type` defaults to its list's.
 */
export function parseEntities(raw: unknown, attr: string, actions?: unknown): Series[] {
  const lists: [unknown, string, 'events' | 'actions'][] = [[raw, attr, 'events']];
  if (actions !== undefined) lists.push([actions, 'actions', 'actions']);
  const entities = lists.flatMap(([items, listAttr, defaultType]) =>
    list(items, listAttr).map((item, index) => {
      const itemAttr = `${listAttr}__${index}`;
      const entity = object(item, itemAttr);
      if (entity === null) throw required(itemAttr);
      const type = isAbsent(entity.type) ? defaultType : entity.type;
      if (type !== 'events' && type !== 'actions') throw invalidChoice(entity.type, `${itemAttr}__type`);
      const order = integer(entity.order, `${itemAttr}__order`) ?? index;
      return { order, series: type === 'actions' ? actionSeries(entity, itemAttr) : series(entity, 'id', itemAttr) };
    }),
  );
  return entities
    .map((entity, index) => ({ ...entity, index }))
    .sort((a, b) => a.order - b.order || a.index - b.index)
    .map((entity, position) => ({ ...entity.series, order: position }));
}

// ---------------------------------------------------------------------------------------------------------
// Settings shared by both request forms

/** Fields holding settings, and how an error names one of them. */
interface Section {
  fields: Fields;
  attr: (key: string) => string;
}

function section(fields: Fields | null, prefix: string): Section {
  return { fields: fields ?? {}, attr: (key) => (prefix === '' ? key : `${prefix}__${key}`) };
}

/** The legacy form keeps every setting at the top level; a TrendsQuery groups them in sub-objects. */
interface Sections {
  top: Section;
  dates: Section;
  breakdown: Section;
  trends: Section;
  compare: Section;
}

function settings(series: Series[], { top, dates, breakdown, trends, compare }: Sections): TrendsInput {
  return {
    series,
    dateFrom: date(dates.fields.date_from, dates.attr('date_from'), true),
    dateTo: date(dates.fields.date_to, dates.attr('date_to'), false),
    interval: choice(top.fields.interval, INTERVALS, top.attr('interval')) ?? 'day',
    properties: parsePropertyFilters(top.fields.properties, top.attr('properties')),
    breakdown: parseBreakdown(breakdown),
    compare: parseCompare(compare),
    formula: formula(trends, series.length),
    display: choice(trends.fields.display, DISPLAYS, trends.attr('display')) ?? 'ActionsLineGraph',
  };
}

const RELATIVE_DATE = /^-?\d+[hdwmqyM]$/;
const RANGE_KEYWORDS = ['dStart', 'wStart', 'mStart', 'yStart'];
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/;

function date(raw: unknown, attr: string, isFrom: boolean): string | null {
  if (isAbsent(raw)) return null;
  if (typeof raw === 'string' && (RELATIVE_DATE.test(raw) || RANGE_KEYWORDS.includes(raw) || (isFrom && raw === 'all') || isIsoDate(raw))) {
    return raw;
  }
  throw ApiError.validation(
    `${describe(raw)} is not a valid date: use a relative date like -7d, dStart/wStart/mStart/yStart${isFrom ? ', all' : ''} or an ISO date.`,
    attr,
  );
}

/** An ISO date or date-time naming a real calendar day (`Date.parse` alone rolls 30 February over to March). */
function isIsoDate(text: string): boolean {
  const match = ISO_DATE.exec(text);
  if (match === null || Number.isNaN(Date.parse(text.replace(' ', 'T')))) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const calendar = new Date(Date.UTC(year, month - 1, day));
  return calendar.getUTCMonth() === month - 1 && calendar.getUTCDate() === day;
}

/** `hogql` is accepted for the one expression Plover knows, `event`, and read as `event_metadata`. */
const BREAKDOWN_TYPES: readonly (BreakdownType | 'hogql')[] = ['event', 'person', 'group', 'event_metadata', 'hogql'];
const DEFAULT_BREAKDOWN_LIMIT = 25;
const MAX_BREAKDOWN_LIMIT = 1000;

/** Cohorts one cohort breakdown may show. */
const MAX_BREAKDOWN_COHORTS = 25;

/** `breakdown_type: "cohort"`: `breakdown` lists cohort ids and `all` (every event), as a list, its JSON text, or one id. */
function parseCohortBreakdown(raw: unknown, attr: string): CohortBreakdown {
  const parsed = typeof raw === 'string' && raw.startsWith('[') ? tryJson(raw) : raw;
  const values: unknown[] = Array.isArray(parsed) ? parsed : [parsed];
  if (values.length === 0 || values.length > MAX_BREAKDOWN_COHORTS) {
    throw ApiError.validation(`A cohort breakdown lists 1 to ${MAX_BREAKDOWN_COHORTS} cohorts.`, attr);
  }
  const cohorts = values.map((value, index) => {
    if (value === 'all' || value === 0 || value === '0') return 'all';
    const id = integer(value, `${attr}__${index}`);
    if (id === null || id < 1) throw ApiError.validation('A cohort breakdown value is a cohort id or "all".', `${attr}__${index}`);
    return id;
  });
  const unique = [...new Set(cohorts)];
  return { type: 'cohort', cohorts: unique, limit: unique.length - 1 };
}

function parseBreakdown({ fields, attr }: Section): Breakdown | null {
  const property = fields.breakdown;
  if (isAbsent(property)) return null;
  if (fields.breakdown_type === 'cohort') return parseCohortBreakdown(property, attr('breakdown'));
  if (typeof property !== 'string' || (property.startsWith('[') && Array.isArray(tryJson(property)))) {
    throw ApiError.validation('Breakdown must be a property name (or cohort ids with breakdown_type "cohort").', attr('breakdown'));
  }
  const given = choice(fields.breakdown_type, BREAKDOWN_TYPES, attr('breakdown_type')) ?? 'event';
  const type = given === 'hogql' ? 'event_metadata' : given;
  if (type === 'event_metadata' && property !== 'event') {
    const what = given === 'hogql' ? 'HogQL breakdowns support only the expression' : 'Event metadata breakdowns support only';
    throw ApiError.validation(`${what} "event" (the event name).`, attr('breakdown'));
  }
  const groupTypeIndex = type === 'group' ? requiredGroupTypeIndex(fields.breakdown_group_type_index, attr('breakdown_group_type_index')) : null;
  const limit = integer(fields.breakdown_limit, attr('breakdown_limit')) ?? DEFAULT_BREAKDOWN_LIMIT;
  if (limit < 1 || limit > MAX_BREAKDOWN_LIMIT) {
    throw ApiError.validation(`Must be between 1 and ${MAX_BREAKDOWN_LIMIT}.`, attr('breakdown_limit'));
  }
  return { property, type, groupTypeIndex, limit };
}

/** `compare` (a boolean or its text); `compare_to` (an arbitrary earlier period) is not supported. */
function parseCompare({ fields, attr }: Section): boolean {
  const raw = fields.compare;
  const text = typeof raw === 'string' ? raw.toLowerCase() : raw;
  if (!isAbsent(text) && text !== true && text !== false && text !== 'true' && text !== 'false') {
    throw ApiError.validation('Must be a valid boolean.', attr('compare'));
  }
  const compare = text === true || text === 'true';
  if (compare && !isAbsent(fields.compare_to)) {
    throw ApiError.validation('compare_to is not supported: compare always uses the previous period.', attr('compare_to'));
  }
  return compare;
}

/** `formula`, else the first of `formulas` (TrendsQuery's list, one at most). */
function formula({ fields, attr }: Section, seriesCount: number): string | null {
  let raw = fields.formula;
  let rawAttr = attr('formula');
  if (isAbsent(raw) && !isAbsent(fields.formulas)) {
    const formulas = list(fields.formulas, attr('formulas'));
    if (formulas.length > 1) throw ApiError.validation('Only one formula is supported.', attr('formulas'));
    raw = formulas[0];
    rawAttr = `${attr('formulas')}__0`;
  }
  if (isAbsent(raw)) return null;
  if (typeof raw !== 'string') throw ApiError.validation('Must be a string.', rawAttr);
  if (raw.trim() === '') return null;
  checkFormula(raw, seriesCount, rawAttr);
  return raw;
}

// ---------------------------------------------------------------------------------------------------------
// Series

export function eventsNode(raw: unknown, attr: string, order: number): Series {
  const node = object(raw, attr) ?? {};
  if (node.kind === 'ActionsNode') return { ...actionSeries(node, attr), order };
  if (node.kind !== 'EventsNode') {
    throw ApiError.validation(
      `${describe(node.kind)} is not a valid choice: only EventsNode and ActionsNode series are supported.`,
      `${attr}__kind`,
      'invalid_choice',
    );
  }
  return { ...series(node, 'event', attr), order };
}

/** One series from a legacy entity (event name in `id`) or an EventsNode (in `event`); `order` is set by the caller. */
function series(fields: Fields, eventKey: 'id' | 'event', attr: string): Series {
  const event = optionalString(fields[eventKey], `${attr}__${eventKey}`);
  const math = mathType(fields.math, `${attr}__math`);
  const mathProperty = PROPERTY_MATH.includes(math) ? optionalString(fields.math_property, `${attr}__math_property`) : null;
  if (PROPERTY_MATH.includes(math) && mathProperty === null) {
    throw ApiError.validation(`Math "${math}" needs math_property.`, `${attr}__math_property`, 'required');
  }
  return {
    event,
    action: null,
    name: optionalString(fields.name, `${attr}__name`) ?? event ?? 'All events',
    customName: optionalString(fields.custom_name, `${attr}__custom_name`),
    order: 0,
    math,
    mathProperty,
    mathGroupTypeIndex: math === 'unique_group' ? requiredGroupTypeIndex(fields.math_group_type_index, `${attr}__math_group_type_index`) : null,
    properties: parsePropertyFilters(fields.properties, `${attr}__properties`),
  };
}

function mathType(raw: unknown, attr: string): MathType {
  if (raw === 'hogql') throw ApiError.validation('HogQL math is not supported.', attr, 'invalid_choice');
  return choice(raw, MATH_TYPES, attr) ?? 'total';
}

/**
 * A series counting an action's events (a legacy `actions` entity or an ActionsNode; the action id in `id`). Its
 * name is the action's, set once the action is loaded (`withActionNames`); the settings are an event series'.
 */
function actionSeries(fields: Fields, attr: string): Series {
  const id = integer(fields.id, `${attr}__id`);
  if (id === null) throw required(`${attr}__id`);
  const { id: _id, ...settings } = fields;
  return { ...series(settings, 'id', attr), action: { id, attr: `${attr}__id` }, name: `Action ${id}` };
}

// ---------------------------------------------------------------------------------------------------------
// Property filters

const PROPERTY_TYPES: readonly PropertyType[] = ['event', 'person', 'group', 'cohort'];
const COHORT_OPERATORS: readonly PropertyOperator[] = ['in', 'not_in'];
const NUMERIC_OPERATORS: readonly PropertyOperator[] = ['gt', 'gte', 'lt', 'lte'];
const DATE_OPERATORS: readonly PropertyOperator[] = ['is_date_before', 'is_date_after', 'is_date_exact'];

function isGroupShape(value: Fields): boolean {
  return 'values' in value || value.type === 'AND' || value.type === 'OR';
}

function propertyNode(raw: unknown, attr: string): PropertyGroup | PropertyFilter | null {
  const fields = object(raw, attr);
  if (fields === null) throw required(attr);
  return isGroupShape(fields) ? propertyGroup(fields, attr) : propertyFilter(fields, attr);
}

function propertyGroup(fields: Fields, attr: string): PropertyGroup | null {
  const type = choice(fields.type, ['AND', 'OR'] as const, `${attr}__type`) ?? 'AND';
  if (isAbsent(fields.values)) throw required(`${attr}__values`);
  const values = list(fields.values, `${attr}__values`);
  return nonEmptyGroup(
    type,
    values.map((item, index) => propertyNode(item, `${attr}__values__${index}`)),
  );
}

function nonEmptyGroup(type: PropertyGroup['type'], values: (PropertyGroup | PropertyFilter | null)[]): PropertyGroup | null {
  const kept = values.filter((value) => value !== null);
  return kept.length === 0 ? null : { type, values: kept };
}

function propertyFilter(fields: Fields, attr: string): PropertyFilter {
  const type = choice(fields.type, PROPERTY_TYPES, `${attr}__type`) ?? 'event';
  if (type === 'cohort') return cohortFilter(fields, attr);

  const key = fields.key;
  if (isAbsent(key)) throw required(`${attr}__key`);
  if (typeof key !== 'string') throw ApiError.validation('Must be a string.', `${attr}__key`);
  const operator = choice(fields.operator, PROPERTY_VALUE_OPERATORS, `${attr}__operator`) ?? 'exact';
  const groupTypeIndex = type === 'group' ? requiredGroupTypeIndex(fields.group_type_index, `${attr}__group_type_index`) : undefined;
  const filter: PropertyFilter = { type, key, operator };
  if (groupTypeIndex !== undefined) filter.groupTypeIndex = groupTypeIndex;
  if (operator !== 'is_set' && operator !== 'is_not_set') filter.value = filterValue(fields.value, operator, `${attr}__value`);
  return filter;
}

function cohortFilter(fields: Fields, attr: string): PropertyFilter {
  if (!isAbsent(fields.key) && fields.key !== 'id') {
    throw ApiError.validation('Cohort filters use the key "id" (the cohort id is the value).', `${attr}__key`);
  }
  const operator = choice(fields.operator, COHORT_OPERATORS, `${attr}__operator`) ?? 'in';
  const cohortId = integer(fields.value, `${attr}__value`);
  if (cohortId === null) throw required(`${attr}__value`);
  return { type: 'cohort', key: 'id', operator, value: cohortId };
}

function filterValue(raw: unknown, operator: PropertyOperator, attr: string): JsonValue {
  if (isAbsent(raw) || (Array.isArray(raw) && raw.length === 0)) throw required(attr);
  if (NUMERIC_OPERATORS.includes(operator)) {
    if (!isNumeric(raw)) throw ApiError.validation(`Operator "${operator}" needs a numeric value.`, attr);
    return raw;
  }
  if (DATE_OPERATORS.includes(operator)) {
    if (typeof raw !== 'string' || !(RELATIVE_DATE.test(raw) || isIsoDate(raw))) {
      throw ApiError.validation(`Operator "${operator}" needs an ISO date or a relative date like -7d.`, attr);
    }
    return raw;
  }
  if (isScalar(raw) || (Array.isArray(raw) && raw.every(isScalar))) return raw;
  throw ApiError.validation('Must be a string, number or boolean, or a list of them.', attr);
}

function isScalar(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

function isNumeric(value: unknown): value is number | string {
  if (typeof value === 'number') return Number.isFinite(value);
  return typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value));
}

function requiredGroupTypeIndex(raw: unknown, attr: string): number {
  const index = integer(raw, attr);
  if (index === null) throw required(attr);
  if (index < 0 || index > 4) throw ApiError.validation('Must be between 0 and 4.', attr);
  return index;
}
