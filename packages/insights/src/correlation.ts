/**
 * Funnel correlation (PostHog's legacy `insights/funnel/correlation`): which events, event property values or
 * person property values go with converting through a funnel, as odds ratios. The rules are written down in
 * docs/insights.md, "Funnel correlation"; everything is computed in one ClickHouse query with bound parameters.
 */
import { ApiError } from '@plover/core';
import { MATERIALIZED_PROPERTIES, PERSON_ID_EXPRESSION, PERSON_OVERRIDES_SUBQUERY, type ClickHouse } from '@plover/clickhouse';
import { bodyFields, choice, decode, integer, isAbsent, isObject, list, optionalString, required, type Fields } from './fields';
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

/** A correlation request: legacy funnel filter fields from the query string, overridden by the JSON body. */
export function parseCorrelationRequest(query: Record<string, unknown>, body: unknown): CorrelationInput {
  const fields: Fields = { ...query, ...bodyFields(body) };

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
 * The team's events in the range that satisfy `where` (event columns only), with `person` (merged persons
 * resolved) and `columns`, which may use PERSON_ID_EXPRESSION (cohort filters do).
 */
function resolvedEvents(columns: string, where: string, range: Range): string {
  return `SELECT ${PERSON_ID_EXPRESSION} AS person, ${columns}
    FROM (
      SELECT uuid, event, timestamp, person_id, properties, person_properties, ${MATERIALIZED_COLUMNS},
             group0_properties, group1_properties, group2_properties, group3_properties, group4_properties
      FROM events FINAL
      WHERE team_id = {teamId:Int64} AND timestamp >= ${range.from} AND timestamp < ${range.end} AND ${where}
    ) AS e
    LEFT JOIN (${PERSON_OVERRIDES_SUBQUERY}) AS o ON e.person_id = o.old_person_id`;
}

async function entityCondition(series: Series, global: string, params: Params, scope: FilterScope, attr: string): Promise<string> {
  const name = series.event === null ? '1' : `e.event = ${params.add(series.event, 'String')}`;
  return `(${name} AND ${await propertiesCondition(series.properties, params, scope, `${attr}__properties`)} AND ${global})`;
}

/**
 * One row per person who entered the funnel: `success`, `t0` (when the counted attempt entered), `until`
 * (when it converted, or its window's end) and `props` (person properties stored with the entering event).
 */
async function actorsQuery(input: CorrelationInput, params: Params, ctx: InsightContext, range: Range): Promise<string> {
  const scope: FilterScope = { personId: PERSON_ID_EXPRESSION, ctx };
  const global = await propertiesCondition(input.properties, params, scope, 'properties');
  const steps = await Promise.all(input.steps.map((step, i) => entityCondition(step, global, params, scope, `events__${i}`)));
  const exclusions = await Promise.all(input.exclusions.map((exclusion, i) => entityCondition(exclusion.series, global, params, scope, `exclusions__${i}`)));
  const names = [...input.steps.map((step) => step.event), ...input.exclusions.map((exclusion) => exclusion.series.event)];
  const prefilter = names.includes(null) ? '1' : `event IN ${params.add(names, 'Array(String)')}`;
  const last = input.steps.length - 1;
  const laterSteps = input.steps.slice(1).map((_, i) => i + 1);
  const entryProps = input.correlationType === 'properties' ? ', person_properties' : '';

  const flags = [...steps.map((condition, i) => `${condition} AS s${i}`), ...exclusions.map((condition, j) => `${condition} AS x${j}`)];
  const perPerson = [
    `arraySort(groupArrayIf((timestamp, uuid${entryProps}), s0)) AS entries`,
    ...laterSteps.map((i) => `arraySort(groupArrayIf(timestamp, s${i})) AS a${i}`),
    ...input.exclusions.map((_, j) => `groupArrayIf(timestamp, x${j}) AS b${j}`),
  ];
  // Each step-1 event starts an attempt; step i is the first step-i event after step i-1 (c0 = t0), reached
  // (r_i) when that is within the window.
  const chain = laterSteps.map((i) => {
    const previous = i === 1 ? 't0' : `c${i - 1}`;
    const reached = i === 1 ? '' : `r${i - 1} AND `;
    return `arrayFirst(x -> x > ${previous}, a${i}) AS c${i}, ${reached}c${i} > ${previous} AND c${i} <= deadline AS r${i}`;
  });
  const at = (step: number) => (step === 0 ? 't0' : `c${step}`);
  const disqualified = input.exclusions.map(
    ({ fromStep, toStep }, j) => `(r${toStep} AND arrayExists(x -> x > ${at(fromStep)} AND x < ${at(toStep)}, b${j}))`,
  );
  const windowEnd = `${ADD_WINDOW[input.window.unit]}(t0, ${params.add(input.window.amount, 'UInt32')})`;
  const stepCount = params.add(input.steps.length, 'UInt8');

  return `SELECT person, best.1 = ${stepCount} AS success, best.2 AS t0, best.3 AS until${entryProps === '' ? '' : ', best.4 AS props'}
    FROM (
      SELECT person, argMin((level, t0, if(level = ${stepCount}, c${last}, deadline)${entryProps === '' ? '' : ', entry.3'}), (-level, t0, entry.2)) AS best
      FROM (
        SELECT person, entry, entry.1 AS t0, ${windowEnd} AS deadline, ${chain.join(', ')}, 1 + ${laterSteps.map((i) => `r${i}`).join(' + ')} AS level
        FROM (
          SELECT person, ${perPerson.join(', ')}
          FROM (${resolvedEvents(`e.timestamp AS timestamp, e.uuid AS uuid, e.person_properties AS person_properties, ${flags.join(', ')}`, prefilter, range)})
          GROUP BY person
          HAVING notEmpty(entries)
        )
        ARRAY JOIN entries AS entry
        ${disqualified.length === 0 ? '' : `WHERE NOT (${disqualified.join(' OR ')})`}
      )
      GROUP BY person
    )`;
}

/** Per entering person: `success` and `names`, the distinct correlation names that person counts towards. */
async function namesQuery(input: CorrelationInput, params: Params, ctx: InsightContext, range: Range): Promise<string> {
  const actors = await actorsQuery(input, params, ctx, range);
  if (input.correlationType === 'properties') {
    const keys = input.propertyNames.includes(ALL_PROPERTIES) ? 'all' : input.propertyNames;
    return `SELECT success, arrayDistinct(${propertyNames('props', keys, input.excludePropertyNames, [], params)}) AS names FROM (${actors})`;
  }
  const stepNames = input.steps.flatMap((step) => (step.event === null ? [] : [step.event]));
  const events =
    input.correlationType === 'events'
      ? { where: `NOT has(${params.add([...stepNames, ...input.excludeEventNames], 'Array(String)')}, event)`, names: '[e.event]' }
      : {
          where: `event IN ${params.add(input.eventNames, 'Array(String)')} AND NOT has(${params.add(stepNames, 'Array(String)')}, event)`,
          names: propertyNames('e.properties', 'all', input.excludeEventPropertyNames, ['e.event', "'::'"], params),
        };
  // Actors on the right, so that persons without any such event are still counted in the totals.
  return `SELECT a.person, any(a.success) AS success, groupUniqArrayArrayIf(v.names, v.timestamp > a.t0 AND v.timestamp < a.until) AS names
    FROM (${resolvedEvents(`e.timestamp AS timestamp, ${events.names} AS names`, events.where, range)}) AS v
    RIGHT JOIN (${actors}) AS a ON v.person = a.person
    GROUP BY a.person`;
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
        FROM (${await namesQuery(input, params, ctx, range)})
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
  params.values.teamId = ctx.teamId;
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
