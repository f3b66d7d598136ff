/**
 * Funnel correlation (PostHog's legacy `insights/funnel/correlation`): which events, event property values or
 * person property values go with converting through a funnel, as odds ratios. The rules are written down in
 * docs/insights.md, "Funnel correlation"; everything is computed in one ClickHouse query with bound parameters.
 */
import { ApiError } from '@plover/core';
import { MATERIALIZED_PROPERTIES, PERSON_ID_EXPRESSION, PERSON_OVERRIDES_SUBQUERY, type ClickHouse } from '@plover/clickhouse';
import { bodyFields, choice, isAbsent, list, object, optionalString, required, type Fields } from './fields';
import { funnelsQueryFields, kindOf, parseFunnelCore, withNodeAttrs, type ConvertedQuery, type FunnelCore, type FunnelWindowUnit } from './funnel-input';
import { Params } from './params';
import { propertiesCondition, textOfRaw, type FilterScope } from './properties';
import { insightRange } from './range';
import type { InsightContext, ResolvedRange, Series } from './types';

export type CorrelationType = 'events' | 'properties' | 'event_with_properties';
export const CORRELATION_TYPES: readonly CorrelationType[] = ['events', 'properties', 'event_with_properties'];

export interface CorrelationInput extends FunnelCore {
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
  const converted = correlationQueryFields(fields.query);
  try {
    return withNodeAttrs(converted, () => parseCorrelationFields({ ...correlationFields(fields), ...converted.fields }));
  } catch (error) {
    if (!(error instanceof ApiError) || error.attr === null || !converted.correlationInNode) throw error;
    const [head = '', ...rest] = error.attr.split('__');
    const name = CORRELATION_FIELDS[head];
    if (name === undefined) throw error;
    throw new ApiError(error.status, error.type, error.code, error.detail, ['query', name, ...rest].join('__'));
  }
}

/** The legacy fields of one request, however they arrived. */
function parseCorrelationFields(fields: Fields): CorrelationInput {
  const core = parseFunnelCore(fields, true);
  const actionSeries = [...core.steps, ...core.exclusions.map((exclusion) => exclusion.series)].find((series) => series.action !== null);
  if (actionSeries?.action) throw ApiError.validation('Funnel correlation takes event steps only, not actions.', actionSeries.action.attr);
  const orderType = optionalString(fields.funnel_order_type, 'funnel_order_type');
  if (orderType !== null && !ORDER_TYPES.includes(orderType)) {
    throw ApiError.validation(`"${orderType}" is not supported: only ordered funnels are.`, 'funnel_order_type', 'invalid_choice');
  }
  if (!isAbsent(fields.aggregation_group_type_index)) {
    throw ApiError.validation('Funnels aggregated by group are not supported.', 'aggregation_group_type_index');
  }

  const correlationType = choice(fields.funnel_correlation_type, CORRELATION_TYPES, 'funnel_correlation_type') ?? 'events';
  const input: CorrelationInput = {
    ...core,
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

interface CorrelationQuery extends ConvertedQuery {
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

/** The legacy fields a FunnelsQuery, or a FunnelCorrelationQuery around one, stands for. */
function correlationQueryFields(raw: unknown): CorrelationQuery {
  const node = object(raw, 'query');
  if (node === null) throw required('query');
  if (kindOf(node, ['FunnelsQuery', 'FunnelCorrelationQuery'], 'query') === 'FunnelsQuery') {
    return { fields: funnelsQueryFields(node, 'query'), funnels: 'query', correlationInNode: false };
  }
  const actors = object(node.source, 'query__source');
  if (actors === null) throw required('query__source');
  kindOf(actors, ['FunnelsActorsQuery'], 'query__source');
  const funnelsAttr = 'query__source__source';
  const funnels = object(actors.source, funnelsAttr) ?? {};
  const fields = funnelsQueryFields(funnels, funnelsAttr);
  for (const [legacy, name] of Object.entries(CORRELATION_FIELDS)) fields[legacy] = node[name];
  return { fields, funnels: funnelsAttr, correlationInNode: true };
}

function stringList(raw: unknown, attr: string): string[] {
  return list(raw, attr).map((item, index) => {
    if (typeof item !== 'string') throw ApiError.validation('Must be a string.', `${attr}__${index}`);
    return item;
  });
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
