/**
 * Funnel correlation (PostHog's legacy `insights/funnel/correlation`): which events, event property values or
 * person property values go with converting through a funnel, as odds ratios. The rules are written down in
 * docs/insights.md, "Funnel correlation"; everything is computed in one ClickHouse query with bound parameters.
 */
import { ApiError } from '@plover/core';
import { MATERIALIZED_PROPERTIES, PERSON_ID_EXPRESSION, PERSON_OVERRIDES_SUBQUERY, type ClickHouse } from '@plover/clickhouse';
import { bodyFields, choice, decode, describe, integer, isAbsent, isObject, list, object, optionalString, required, type Fields } from './fields';
import { parseEntities, parsePropertyFilters } from './filters';
import { Params } from './params';
import { propertiesCondition, textOfRaw, type FilterScope } from './properties';
import { insightRange } from './range';
import type { InsightContext, PropertyGroup, ResolvedRange, Series } from './types';

export type CorrelationType = 'events' | 'properties' | 'event_with_properties';
export const CORRELATION_TYPES: readonly CorrelationType[] = ['events', 'properties', 'event_with_properties'];

export type FunnelWindowUnit = 'second' | 'minute' | 'hour' | 'day' | 'week' | 'month';
export const FUNNEL_WINDOW_UNITS: readonly FunnelWindowUnit[] = ['second', 'minute', 'hour', 'day', 'week', 'month'];

/** An event that disqualifies a funnel attempt when it happens between steps `fromStep` and `toStep` (0-based). */
export interface FunnelExclusion {
  series: Series;
  fromStep: number;
  toStep: number;
}

export interface CorrelationInput {
  /** The funnel steps in order (an event name, null = any event, and the step's own filters). */
  steps: readonly Series[];
  exclusions: readonly FunnelExclusion[];
  /** How long after entering the funnel a person has to reach the last step. */
  window: { amount: number; unit: FunnelWindowUnit };
  /** The trend date grammar, unresolved (see TrendsInput). */
  dateFrom: string | null;
  dateTo: string | null;
  /** Filters every step and exclusion event must match too. */
  properties: PropertyGroup | null;
  correlationType: CorrelationType;
  /** `properties`: the person properties to correlate; `$all` = every key. */
  propertyNames: readonly string[];
  /** `properties`: person properties left out. */
  excludePropertyNames: readonly string[];
  /** `event_with_properties`: the events whose property values are correlated. */
  eventNames: readonly string[];
  /** `events`: events left out. */
  excludeEventNames: readonly string[];
  /** `event_with_properties`: event properties left out. */
  excludeEventPropertyNames: readonly string[];
}

export interface CorrelationEntry {
  event: { event: string; properties: Record<string, unknown>; elements: [] };
  success_count: number;
  failure_count: number;
  odds_ratio: number;
  correlation_type: 'success' | 'failure';
}

export interface CorrelationResult {
  events: CorrelationEntry[];
  skewed: boolean;
}

const DEFAULT_WINDOW_DAYS = 14;
/** At most about ten years, so that a deadline never leaves DateTime64's range. */
const MAX_WINDOW: Record<FunnelWindowUnit, number> = { second: 315_360_000, minute: 5_256_000, hour: 87_600, day: 3_650, week: 521, month: 120 };
const ALL_PROPERTIES = '$all';
const ORDER_TYPES = ['ordered'];

// ---------------------------------------------------------------------------------------------------------
// Parsing

/**
 * A correlation request: legacy funnel filter fields from the query string, overridden by the JSON body; or a
 * `query` node (object or JSON text), which replaces the funnel fields — see funnelQueryFields.
 */
export function parseCorrelationRequest(query: Record<string, unknown>, body: unknown): CorrelationInput {
  const fields: Fields = { ...query, ...bodyFields(body) };
  if (isAbsent(fields.query)) return parseCorrelationFields(fields);
  const converted = funnelQueryFields(fields.query);
  try {
    return parseCorrelationFields({ ...correlationFields(fields), ...converted.fields });
  } catch (error) {
    if (!(error instanceof ApiError) || error.attr === null) throw error;
    throw new ApiError(error.status, error.type, error.code, error.detail, queryAttr(error.attr, converted));
  }
}

/** The legacy fields of one request, however they arrived. */
function parseCorrelationFields(fields: Fields): CorrelationInput {
  if (list(fields.actions, 'actions').length > 0) throw ApiError.validation('Plover has no actions: funnel steps must be events.', 'actions');
  const steps = parseEntities(fields.events, 'events');
  if (steps.length === 1) throw ApiError.validation('A funnel needs at least 2 steps.', 'events', 'min_length');
  const orderType = optionalString(fields.funnel_order_type, 'funnel_order_type');
  if (orderType !== null && !ORDER_TYPES.includes(orderType)) {
    throw ApiError.validation(`"${orderType}" is not supported: only ordered funnels are.`, 'funnel_order_type', 'invalid_choice');
  }
  if (!isAbsent(fields.aggregation_group_type_index)) {
    throw ApiError.validation('Funnels aggregated by group are not supported.', 'aggregation_group_type_index');
  }

  const correlationType = choice(fields.funnel_correlation_type, CORRELATION_TYPES, 'funnel_correlation_type') ?? 'events';
  const input: CorrelationInput = {
    steps,
    exclusions: parseExclusions(fields.exclusions, steps),
    window: parseWindow(fields),
    dateFrom: optionalString(fields.date_from, 'date_from'),
    dateTo: optionalString(fields.date_to, 'date_to'),
    properties: parsePropertyFilters(fields.properties, 'properties'),
    correlationType,
    propertyNames: stringList(fields.funnel_correlation_names, 'funnel_correlation_names'),
    excludePropertyNames: stringList(fields.funnel_correlation_exclude_names, 'funnel_correlation_exclude_names'),
    eventNames: stringList(fields.funnel_correlation_event_names, 'funnel_correlation_event_names'),
    excludeEventNames: stringList(fields.funnel_correlation_exclude_event_names, 'funnel_correlation_exclude_event_names'),
    excludeEventPropertyNames: stringList(fields.funnel_correlation_event_exclude_property_names, 'funnel_correlation_event_exclude_property_names'),
  };
  if (correlationType === 'properties' && input.propertyNames.length === 0) {
    throw ApiError.validation('Property correlation needs at least one person property name (or $all).', 'funnel_correlation_names', 'required');
  }
  if (correlationType === 'event_with_properties' && input.eventNames.length === 0) {
    throw ApiError.validation('Event property correlation needs at least one event name.', 'funnel_correlation_event_names', 'required');
  }
  return input;
}

// ---------------------------------------------------------------------------------------------------------
// The query form: a FunnelsQuery, or PostHog's FunnelCorrelationQuery wrapping one in a FunnelsActorsQuery

/** The correlation settings' legacy names and their FunnelCorrelationQuery names. */
const CORRELATION_FIELDS: Record<string, string> = {
  funnel_correlation_type: 'funnelCorrelationType',
  funnel_correlation_names: 'funnelCorrelationNames',
  funnel_correlation_exclude_names: 'funnelCorrelationExcludeNames',
  funnel_correlation_event_names: 'funnelCorrelationEventNames',
  funnel_correlation_exclude_event_names: 'funnelCorrelationExcludeEventNames',
  funnel_correlation_event_exclude_property_names: 'funnelCorrelationEventExcludePropertyNames',
};

/** Where a legacy field sits in a FunnelsQuery (relative to it). */
const FUNNEL_FIELDS: Record<string, string> = {
  events: 'series',
  exclusions: 'funnelsFilter__exclusions',
  date_from: 'dateRange__date_from',
  date_to: 'dateRange__date_to',
  properties: 'properties',
  funnel_window_interval: 'funnelsFilter__funnelWindowInterval',
  funnel_window_interval_unit: 'funnelsFilter__funnelWindowIntervalUnit',
  funnel_order_type: 'funnelsFilter__funnelOrderType',
  aggregation_group_type_index: 'aggregation_group_type_index',
};

/** Fields of a series or exclusion entity that a node names differently. */
const ENTITY_FIELDS: Record<string, string> = { id: 'event', funnel_from_step: 'funnelFromStep', funnel_to_step: 'funnelToStep' };

interface ConvertedQuery {
  fields: Fields;
  /** The FunnelsQuery's attr path. */
  funnels: string;
  /** Whether the correlation settings came from the node (a FunnelCorrelationQuery). */
  correlationInNode: boolean;
}

function correlationFields(fields: Fields): Fields {
  return Object.fromEntries(
    Object.keys(CORRELATION_FIELDS)
      .filter((key) => key in fields)
      .map((key) => [key, fields[key]]),
  );
}

/** A legacy error attr renamed to the node's path. */
function queryAttr(attr: string, converted: ConvertedQuery): string {
  const [head = '', ...rest] = attr.split('__');
  const correlation = CORRELATION_FIELDS[head];
  if (correlation !== undefined) return converted.correlationInNode ? ['query', correlation, ...rest].join('__') : attr;
  const funnel = FUNNEL_FIELDS[head];
  if (funnel === undefined) return attr;
  const [index, field, ...more] = rest;
  const entity = index === undefined ? [] : [index, ...(field === undefined ? [] : [ENTITY_FIELDS[field] ?? field]), ...more];
  return [converted.funnels, funnel, ...entity].join('__');
}

function kindOf(node: Fields, kinds: readonly string[], attr: string): string {
  if (typeof node.kind === 'string' && kinds.includes(node.kind)) return node.kind;
  throw ApiError.validation(`${describe(node.kind)} is not a valid choice: expected ${kinds.join(' or ')}.`, `${attr}__kind`, 'invalid_choice');
}

/** An EventsNode (or an ActionsNode, which the legacy parser refuses as it refuses action entities) as a legacy entity. */
function entityOf(raw: unknown, attr: string): Fields {
  const node = object(raw, attr);
  if (node === null) throw required(attr);
  if (kindOf(node, ['EventsNode', 'ActionsNode'], attr) === 'ActionsNode') return { type: 'actions', id: node.id };
  const { kind: _kind, event, funnelFromStep, funnelToStep, ...rest } = node;
  return { ...rest, type: 'events', id: event, funnel_from_step: funnelFromStep, funnel_to_step: funnelToStep };
}

/** The legacy fields a funnel `query` node stands for. */
function funnelQueryFields(raw: unknown): ConvertedQuery {
  const node = object(raw, 'query');
  if (node === null) throw required('query');
  const wrapped = kindOf(node, ['FunnelsQuery', 'FunnelCorrelationQuery'], 'query') === 'FunnelCorrelationQuery';
  let funnelsAttr = 'query';
  let funnels = node;
  const fields: Fields = {};
  if (wrapped) {
    const actors = object(node.source, 'query__source');
    if (actors === null) throw required('query__source');
    kindOf(actors, ['FunnelsActorsQuery'], 'query__source');
    funnelsAttr = 'query__source__source';
    funnels = object(actors.source, funnelsAttr) ?? {};
    kindOf(funnels, ['FunnelsQuery'], funnelsAttr);
    for (const [legacy, name] of Object.entries(CORRELATION_FIELDS)) fields[legacy] = node[name];
  }
  const dateRange = object(funnels.dateRange, `${funnelsAttr}__dateRange`) ?? {};
  const filter = object(funnels.funnelsFilter, `${funnelsAttr}__funnelsFilter`) ?? {};
  Object.assign(fields, {
    events: list(funnels.series, `${funnelsAttr}__series`).map((item, index) => entityOf(item, `${funnelsAttr}__series__${index}`)),
    exclusions: list(filter.exclusions, `${funnelsAttr}__funnelsFilter__exclusions`).map((item, index) =>
      entityOf(item, `${funnelsAttr}__funnelsFilter__exclusions__${index}`),
    ),
    date_from: dateRange.date_from,
    date_to: dateRange.date_to,
    properties: funnels.properties,
    funnel_window_interval: filter.funnelWindowInterval,
    funnel_window_interval_unit: filter.funnelWindowIntervalUnit,
    funnel_order_type: filter.funnelOrderType,
    aggregation_group_type_index: funnels.aggregation_group_type_index,
  });
  return { fields, funnels: funnelsAttr, correlationInNode: wrapped };
}

/** `funnel_window_interval` + `funnel_window_interval_unit` (default day), else `funnel_window_days` (default 14). */
function parseWindow(fields: Fields): CorrelationInput['window'] {
  if (!isAbsent(fields.funnel_window_interval)) {
    const unit = choice(fields.funnel_window_interval_unit, FUNNEL_WINDOW_UNITS, 'funnel_window_interval_unit') ?? 'day';
    return { amount: windowAmount(fields.funnel_window_interval, unit, 'funnel_window_interval'), unit };
  }
  if (!isAbsent(fields.funnel_window_days)) return { amount: windowAmount(fields.funnel_window_days, 'day', 'funnel_window_days'), unit: 'day' };
  return { amount: DEFAULT_WINDOW_DAYS, unit: 'day' };
}

function windowAmount(raw: unknown, unit: FunnelWindowUnit, attr: string): number {
  const amount = requiredInteger(raw, attr);
  if (amount < 1 || amount > MAX_WINDOW[unit]) throw ApiError.validation(`Must be between 1 and ${MAX_WINDOW[unit]} ${unit}s.`, attr);
  return amount;
}

/** Legacy exclusion entities: an event (with filters) and the steps it must not happen between (default: all). */
function parseExclusions(raw: unknown, steps: readonly Series[]): FunnelExclusion[] {
  const items = list(raw, 'exclusions').map((item, index) => {
    const entity = decode(item, `exclusions__${index}`);
    if (!isObject(entity)) throw ApiError.validation('Must be an object.', `exclusions__${index}`);
    return entity;
  });
  // Without `order`, parseEntities keeps request order, so its series line up with the items.
  const series = parseEntities(
    items.map(({ order: _order, ...entity }) => entity),
    'exclusions',
  );
  const stepNames = new Set(steps.map((step) => step.event));
  return items.map((item, index) => {
    const attr = `exclusions__${index}`;
    const exclusion = series[index]!;
    if (exclusion.event === null) throw ApiError.validation('An exclusion must name an event.', `${attr}__id`, 'required');
    if (stepNames.has(exclusion.event)) {
      throw ApiError.validation("Exclusion steps cannot contain an event that's part of funnel steps.", `${attr}__id`);
    }
    const last = Math.max(steps.length - 1, 1);
    const fromStep = isAbsent(item.funnel_from_step) ? 0 : requiredInteger(item.funnel_from_step, `${attr}__funnel_from_step`);
    const toStep = isAbsent(item.funnel_to_step) ? last : requiredInteger(item.funnel_to_step, `${attr}__funnel_to_step`);
    if (fromStep < 0 || fromStep >= last) throw ApiError.validation(`Must be between 0 and ${last - 1}.`, `${attr}__funnel_from_step`);
    if (toStep <= fromStep || toStep > last) throw ApiError.validation(`Must be between ${fromStep + 1} and ${last}.`, `${attr}__funnel_to_step`);
    return { series: exclusion, fromStep, toStep };
  });
}

function stringList(raw: unknown, attr: string): string[] {
  return list(raw, attr).map((item, index) => {
    if (typeof item !== 'string') throw ApiError.validation('Must be a string.', `${attr}__${index}`);
    return item;
  });
}

function requiredInteger(raw: unknown, attr: string): number {
  const value = integer(raw, attr);
  if (value === null) throw required(attr);
  return value;
}

// ---------------------------------------------------------------------------------------------------------
// SQL

/** ClickHouse functions adding a window to a DateTime64 (calendar months, clamped to the month's end). */
const ADD_WINDOW: Record<FunnelWindowUnit, string> = {
  second: 'addSeconds',
  minute: 'addMinutes',
  hour: 'addHours',
  day: 'addDays',
  week: 'addWeeks',
  month: 'addMonths',
};

/** Entries with fewer persons than this (or 2 % of all who entered, if less) are dropped, as PostHog does. */
const MIN_PERSON_COUNT = 25;
const MIN_PERSON_SHARE = 0.02;
/** PostHog drops event property values seen by 2 persons or fewer. */
const MIN_EVENT_PROPERTY_PERSONS = 2;
const TOP = 10;

/**
 * `<prefix…><key>::<text>` for each key of the JSON object in `column` that is set (not missing, not null) and
 * not in `excluded`; keys = every key of the object, or the given list. `prefix` is a list of SQL strings.
 */
function propertyNames(column: string, keys: readonly string[] | 'all', excluded: readonly string[], prefix: readonly string[], params: Params): string {
  const keyList = keys === 'all' ? `JSONExtractKeys(${column})` : params.add(keys, 'Array(String)');
  const raw = `JSONExtractRaw(${column}, k)`;
  const kept = `arrayFilter(k -> ${raw} NOT IN ('', 'null') AND NOT has(${params.add(excluded, 'Array(String)')}, k), ${keyList})`;
  return `arrayMap(k -> concat(${[...prefix, 'k', "'::'", textOfRaw(raw)].join(', ')}), ${kept})`;
}

/** The materialized property columns, which filters read instead of `properties` (properties.ts). */
const MATERIALIZED_COLUMNS = [...MATERIALIZED_PROPERTIES.values()].join(', ');

interface Range {
  from: string;
  /** Exclusive. */
  end: string;
}

/**
 * The project's events in the range that satisfy `where` (event columns only), with `person` (merged persons
 * resolved) and `columns`, which may use PERSON_ID_EXPRESSION (cohort filters do).
 */
function resolvedEvents(columns: string, where: string, range: Range): string {
  return `SELECT ${PERSON_ID_EXPRESSION} AS person, ${columns}
    FROM (
      SELECT uuid, event, timestamp, person_id, properties, person_properties, ${MATERIALIZED_COLUMNS},
             group0_properties, group1_properties, group2_properties, group3_properties, group4_properties
      FROM events FINAL
      WHERE team_id = {projectId:Int64} AND timestamp >= ${range.from} AND timestamp < ${range.end} AND ${where}
    ) AS e
    LEFT JOIN (${PERSON_OVERRIDES_SUBQUERY}) AS o ON e.person_id = o.old_person_id`;
}

async function entityCondition(series: Series, global: string, params: Params, scope: FilterScope, attr: string): Promise<string> {
  const name = series.event === null ? '1' : `e.event = ${params.add(series.event, 'String')}`;
  return `(${name} AND ${await propertiesCondition(series.properties, params, scope, `${attr}__properties`)} AND ${global})`;
}

/** What a person's events contribute to: candidate events (not for `properties`) and the names each gives. */
function candidates(input: CorrelationInput, params: Params): { where: string; names: string } | null {
  const stepNames = input.steps.flatMap((step) => (step.event === null ? [] : [step.event]));
  if (input.correlationType === 'properties') return null;
  if (input.correlationType === 'events') {
    return { where: `NOT has(${params.add([...stepNames, ...input.excludeEventNames], 'Array(String)')}, e.event)`, names: '[e.event]' };
  }
  return {
    where: `e.event IN ${params.add(input.eventNames, 'Array(String)')} AND NOT has(${params.add(stepNames, 'Array(String)')}, e.event)`,
    names: propertyNames('e.properties', 'all', input.excludeEventPropertyNames, ['e.event', "'::'"], params),
  };
}

/**
 * Per person who entered the funnel: `success` and `names`, the distinct correlation names that person counts
 * towards — in one pass over the range's events, grouped by person. Each step-1 event starts an attempt; step i
 * is the first step-i event after step i-1, reached when that is within the window; attempts an exclusion
 * disqualifies are dropped; the counted attempt reaches furthest, then entered first. Its names come from the
 * candidate events strictly between entering and converting (or the window's end), or, for `properties`,
 * from the person properties stored with its entering event.
 */
async function personsQuery(input: CorrelationInput, params: Params, ctx: InsightContext, range: Range): Promise<string> {
  const scope: FilterScope = { personId: PERSON_ID_EXPRESSION, ctx };
  const global = await propertiesCondition(input.properties, params, scope, 'properties');
  const steps = await Promise.all(input.steps.map((step, i) => entityCondition(step, global, params, scope, `events__${i}`)));
  const exclusions = await Promise.all(input.exclusions.map((exclusion, i) => entityCondition(exclusion.series, global, params, scope, `exclusions__${i}`)));
  const candidate = candidates(input, params);
  const scanned = [
    ...input.steps.map((step) => step.event),
    ...input.exclusions.map((exclusion) => exclusion.series.event),
    ...(input.correlationType === 'event_with_properties' ? input.eventNames : []),
  ];
  const prefilter = input.correlationType === 'events' || scanned.includes(null) ? '1' : `event IN ${params.add(scanned, 'Array(String)')}`;
  const withProps = input.correlationType === 'properties';

  const columns = [
    `e.timestamp AS timestamp`,
    `e.uuid AS uuid`,
    ...(withProps ? ['e.person_properties AS person_properties'] : []),
    ...steps.map((condition, i) => `${condition} AS s${i}`),
    ...exclusions.map((condition, j) => `${condition} AS x${j}`),
    ...(candidate === null ? [] : [`${candidate.where} AS candidate`, `${candidate.names} AS names`]),
  ];
  const perPerson = [
    `arraySort(groupArrayIf((timestamp, uuid${withProps ? ', person_properties' : ''}), s0)) AS entries`,
    ...input.steps.slice(1).map((_, i) => `arraySort(groupArrayIf(timestamp, s${i + 1})) AS a${i + 1}`),
    ...input.exclusions.map((_, j) => `groupArrayIf(timestamp, x${j}) AS b${j}`),
    ...(candidate === null ? [] : ['groupArrayIf((timestamp, names), candidate) AS others']),
  ];

  // An attempt, for entry `en`: c[i] when step i happened, r[i] whether it was reached in time.
  const t0 = 'en.1';
  const deadline = `${ADD_WINDOW[input.window.unit]}(${t0}, ${params.add(input.window.amount, 'UInt32')})`;
  const c: string[] = [t0];
  const r: string[] = ['1'];
  for (let i = 1; i < input.steps.length; i += 1) {
    c.push(`arrayFirst(x -> x > ${c[i - 1]}, a${i})`);
    r.push(`(${i === 1 ? '' : `${r[i - 1]} AND `}${c[i]} > ${c[i - 1]} AND ${c[i]} <= ${deadline})`);
  }
  const last = input.steps.length - 1;
  const level = `(1 + ${r.slice(1).join(' + ')})`;
  const disqualified = input.exclusions.map(({ fromStep, toStep }, j) => `(${r[toStep]} AND arrayExists(y -> y > ${c[fromStep]} AND y < ${c[toStep]}, b${j}))`);
  const stepCount = params.add(input.steps.length, 'UInt8');
  const attempt = `(${level}, ${t0}, if(${level} = ${stepCount}, ${c[last]}, ${deadline}), en.2${withProps ? ', en.3' : ''})`;
  const kept = disqualified.length === 0 ? 'entries' : `arrayFilter(en -> NOT (${disqualified.join(' OR ')}), entries)`;
  const names = withProps
    ? propertyNames('best.5', input.propertyNames.includes(ALL_PROPERTIES) ? 'all' : input.propertyNames, input.excludePropertyNames, [], params)
    : 'arrayFlatten(arrayMap(o -> o.2, arrayFilter(o -> o.1 > best.2 AND o.1 < best.3, others)))';

  return `SELECT best.1 = ${stepCount} AS success, arrayDistinct(${names}) AS names
    FROM (
      SELECT attempts[1] AS best${candidate === null ? '' : ', others'}
      FROM (
        SELECT arraySort(a -> (-a.1, a.2, a.4), arrayMap(en -> ${attempt}, ${kept})) AS attempts${candidate === null ? '' : ', others'}
        FROM (
          SELECT ${perPerson.join(', ')}
          FROM (${resolvedEvents(columns.join(', '), prefilter, range)})
          GROUP BY person
          HAVING notEmpty(entries)
        )
      )
      WHERE notEmpty(attempts)
    )`;
}

interface CorrelationRow {
  /** null: the totals row. */
  name: string | null;
  success_count: string;
  failure_count: string;
  odds_ratio: number;
  bucket: 'total' | 'success' | 'failure';
}

/**
 * The totals row (name NULL: everyone who entered) and, per name, persons counted, odds ratio and direction;
 * insignificant names dropped, the top ten of each direction kept, in response order.
 */
async function correlationQuery(input: CorrelationInput, params: Params, ctx: InsightContext, range: Range): Promise<string> {
  const significant = [`vs + vf >= least(${MIN_PERSON_COUNT}, ${MIN_PERSON_SHARE} * (S + F))`];
  if (input.correlationType === 'event_with_properties') significant.push(`vs + vf > ${MIN_EVENT_PROPERTY_PERSONS}`);
  return `SELECT name, vs AS success_count, vf AS failure_count, odds_ratio, bucket
    FROM (
      SELECT name, vs, vf,
        max(if(name IS NULL, vs, 0)) OVER () AS S,
        max(if(name IS NULL, vf, 0)) OVER () AS F,
        ((vs + 1) * (F - vf + 1)) / ((S - vs + 1) * (vf + 1)) AS odds_ratio,
        multiIf(name IS NULL, 'total', odds_ratio > 1, 'success', 'failure') AS bucket
      FROM (
        SELECT name, countIf(success) AS vs, countIf(NOT success) AS vf
        FROM (${await personsQuery(input, params, ctx, range)})
        ARRAY JOIN arrayPushFront(CAST(names, 'Array(Nullable(String))'), NULL) AS name
        GROUP BY name
      )
    )
    WHERE name IS NULL OR (${significant.join(' AND ')})
    ORDER BY bucket = 'total' DESC, bucket = 'success' DESC, if(bucket = 'success', -odds_ratio, odds_ratio), name
    LIMIT ${TOP} BY bucket`;
}

/** The instants of a range resolved like a day-interval trend's (the correlation route keys its cache on it). */
function rangeBounds(range: ResolvedRange, params: Params): Range {
  const tz = params.add(range.timezone, 'String');
  return {
    from: `toDateTime64(${params.add(range.from, 'String')}, 6, ${tz})`,
    end: `toDateTime64(${params.add(range.to, 'String')}, 6, ${tz}) + INTERVAL 1 SECOND`,
  };
}

export async function runFunnelCorrelation(ch: ClickHouse, input: CorrelationInput, ctx: InsightContext): Promise<CorrelationResult> {
  if (input.steps.length === 0) return { events: [], skewed: false };
  const range = await insightRange(ch, input, 'day', ctx);
  const params = new Params();
  params.values.projectId = ctx.projectId;
  const sql = await correlationQuery(input, params, ctx, rangeBounds(range, params));
  const [totals, ...rows] = await ch.query<CorrelationRow>('insights.correlation', sql, params.values);
  const success = Number(totals?.success_count ?? 0);
  const failure = Number(totals?.failure_count ?? 0);
  if (success === 0 || failure === 0) return { events: [], skewed: true };
  return {
    events: rows.map((row) => ({
      event: { event: row.name ?? '', properties: {}, elements: [] },
      success_count: Number(row.success_count),
      failure_count: Number(row.failure_count),
      odds_ratio: row.odds_ratio,
      correlation_type: row.bucket === 'success' ? 'success' : 'failure',
    })),
    skewed: success / failure > 10 || failure / success > 10,
  };
}
