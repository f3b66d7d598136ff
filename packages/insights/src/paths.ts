/**
 * Paths (docs/insights.md, "Paths"): which way actors go — per person, their events in time order as path items
 * (a page's URL, a screen's name or an event's name), cut into sessions at 30-minute gaps, consecutive repeats
 * collapsed, cut to a start and/or end point and a step limit; the edges between consecutive items keyed by
 * position (`1_/home` → `2_/pricing`), counted. Requests are PostHog's legacy path fields or a `PathsQuery`;
 * everything is one ClickHouse query with bound parameters. The same per-path rows answer "who is behind this
 * node" (paths-actors.ts).
 */
import { ApiError, StorageError } from '@plover/core';
import { PERSON_ID_EXPRESSION, PERSON_OVERRIDES_SUBQUERY, type ClickHouse } from '@plover/clickhouse';
import { bodyFields, choice, integer, isAbsent, isObject, list, object, optionalString, required, type Fields } from './fields';
import { parsePropertyFilters } from './filters';
import { kindOf, parseFunnelRequest, parseFunnelsQuery, withNodeAttrs, WINDOW_UNIT_SECONDS, type FunnelInput } from './funnel-input';
import { actorFunnelSql } from './funnel-sql';
import { Params } from './params';
import { propertiesCondition, propertyText, type FilterScope } from './properties';
import { insightRange } from './range';
import { query } from './trends';
import type { InsightContext, PropertyGroup, ResolvedRange } from './types';

export type PathEventType = '$pageview' | '$screen' | 'custom_event';
const EVENT_TYPES: readonly PathEventType[] = ['$pageview', '$screen', 'custom_event'];
export type FunnelPathType = 'funnel_path_before_step' | 'funnel_path_after_step' | 'funnel_path_between_steps';
const FUNNEL_PATH_TYPES: readonly FunnelPathType[] = ['funnel_path_before_step', 'funnel_path_after_step', 'funnel_path_between_steps'];

/** A regex → alias rewrite of path items (ClickHouse `replaceRegexpAll`: RE2, `\1` for groups). */
export interface PathCleaningRule {
  regex: string;
  alias: string;
}

/** Paths around a step of a funnel: its actors only, and their events before, after or between steps. */
export interface FunnelPaths {
  type: FunnelPathType;
  funnel: FunnelInput;
  /** 1-based; negative: the actors who dropped off before step |step| (after-step paths only). */
  step: number;
}

export interface PathsInput {
  /** Event kinds making up paths; empty: every event. */
  includeEventTypes: readonly PathEventType[];
  startPoint: string | null;
  endPoint: string | null;
  /** Items per path. */
  stepLimit: number;
  edgeLimit: number;
  minEdgeWeight: number | null;
  maxEdgeWeight: number | null;
  /** Wildcard patterns (`/product/*`): an item matching one becomes the pattern. */
  pathGroupings: readonly string[];
  /** Path items left out (only with `includeEventTypes` set, as in PostHog). */
  excludeEvents: readonly string[];
  cleaning: readonly PathCleaningRule[];
  dateFrom: string | null;
  dateTo: string | null;
  properties: PropertyGroup | null;
  funnelPaths: FunnelPaths | null;
}

/** One edge of PostHog's paths result: positions-prefixed items, path count, mean seconds between them ×1000. */
export interface PathEdge {
  source: string;
  target: string;
  value: number;
  average_conversion_time: number;
}

const DEFAULT_STEP_LIMIT = 5;
const MAX_STEP_LIMIT = 20;
const DEFAULT_EDGE_LIMIT = 50;
const MAX_EDGE_LIMIT = 10_000;
const MAX_LIST = 100;
const MAX_TEXT = 2000;
/** A gap of this long (or longer) between two events starts a new path. */
const SESSION_GAP_SECONDS = 30 * 60;

// ---------------------------------------------------------------------------------------------------------
// Parsing

/** Where a legacy field sits in a PathsQuery. */
const PATHS_FIELDS: Record<string, string> = {
  include_event_types: 'pathsFilter__includeEventTypes',
  start_point: 'pathsFilter__startPoint',
  end_point: 'pathsFilter__endPoint',
  step_limit: 'pathsFilter__stepLimit',
  edge_limit: 'pathsFilter__edgeLimit',
  min_edge_weight: 'pathsFilter__minEdgeWeight',
  max_edge_weight: 'pathsFilter__maxEdgeWeight',
  path_groupings: 'pathsFilter__pathGroupings',
  exclude_events: 'pathsFilter__excludeEvents',
  path_replacements: 'pathsFilter__pathReplacements',
  local_path_cleaning_filters: 'pathsFilter__localPathCleaningFilters',
  paths_hogql_expression: 'pathsFilter__pathsHogQLExpression',
  funnel_paths: 'funnelPathsFilter__funnelPathType',
  funnel_step: 'funnelPathsFilter__funnelStep',
  funnel_filter: 'funnelPathsFilter__funnelSource',
  date_from: 'dateRange__date_from',
  date_to: 'dateRange__date_to',
  properties: 'properties',
};

/** A paths request: legacy fields (query string under the JSON body), or a PathsQuery `query` node. */
export function parsePathsRequest(queryFields: Record<string, unknown>, body: unknown): PathsInput {
  const fields: Fields = { ...queryFields, ...bodyFields(body) };
  if (isAbsent(fields.query)) return parsePathsFields(fields);
  return parsePathsQuery(fields.query, 'query');
}

/** The legacy fields a PathsQuery node stands for (`pathsFilter`, `funnelPathsFilter`, dates, properties). */
function pathsQueryFields(node: Fields, attr: string): Fields {
  kindOf(node, ['PathsQuery'], attr);
  const filter = object(node.pathsFilter, `${attr}__pathsFilter`) ?? {};
  const funnel = object(node.funnelPathsFilter, `${attr}__funnelPathsFilter`);
  const dateRange = object(node.dateRange, `${attr}__dateRange`) ?? {};
  return {
    include_event_types: filter.includeEventTypes,
    start_point: filter.startPoint,
    end_point: filter.endPoint,
    step_limit: filter.stepLimit,
    edge_limit: filter.edgeLimit,
    min_edge_weight: filter.minEdgeWeight,
    max_edge_weight: filter.maxEdgeWeight,
    path_groupings: filter.pathGroupings,
    exclude_events: filter.excludeEvents,
    path_replacements: filter.pathReplacements,
    local_path_cleaning_filters: filter.localPathCleaningFilters,
    paths_hogql_expression: filter.pathsHogQLExpression,
    funnel_paths: funnel?.funnelPathType,
    funnel_step: funnel?.funnelStep,
    funnel_source: funnel === null ? undefined : parseFunnelsQuery(funnel.funnelSource, `${attr}__funnelPathsFilter__funnelSource`),
    date_from: dateRange.date_from,
    date_to: dateRange.date_to,
    properties: node.properties,
  };
}

/** A PathsQuery node (object or JSON text) at `attr`. */
export function parsePathsQuery(raw: unknown, attr: string): PathsInput {
  const node = object(raw, attr);
  if (node === null) throw required(attr);
  const fields = pathsQueryFields(node, attr);
  return withNodeAttrs({ fields, funnels: attr }, () => parsePathsFields(fields), PATHS_FIELDS);
}

function bounded(raw: unknown, attr: string, min: number, max: number): number | null {
  const value = integer(raw, attr);
  if (value !== null && (value < min || value > max)) throw ApiError.validation(`Must be between ${min} and ${max}.`, attr);
  return value;
}

function text(raw: unknown, attr: string): string {
  if (typeof raw !== 'string') throw ApiError.validation('Must be a string.', attr);
  if (raw.length > MAX_TEXT) throw ApiError.validation(`Must be at most ${MAX_TEXT} characters.`, attr);
  return raw;
}

function texts(raw: unknown, attr: string): string[] {
  const items = list(raw, attr);
  if (items.length > MAX_LIST) throw ApiError.validation(`At most ${MAX_LIST} items.`, attr);
  return items.map((item, i) => text(item, `${attr}__${i}`));
}

/** `include_event_types` (the older `path_type` names one). */
function eventTypes(fields: Fields): PathEventType[] {
  const raw =
    isAbsent(fields.include_event_types) && !isAbsent(fields.path_type) ? [fields.path_type] : list(fields.include_event_types, 'include_event_types');
  return [
    ...new Set(
      raw.map((item, i) => {
        if (item === 'hogql') throw ApiError.validation('HogQL path items are not supported.', `include_event_types__${i}`);
        const kind = choice(item, EVENT_TYPES, `include_event_types__${i}`);
        if (kind === null) throw required(`include_event_types__${i}`);
        return kind;
      }),
    ),
  ];
}

/** A start or end point; one trailing `/` is dropped when it is the only point, as PostHog does. */
function point(raw: unknown, attr: string): string | null {
  const value = optionalString(raw, attr);
  return value === null ? null : text(value, attr);
}

function cleaningRules(raw: unknown): PathCleaningRule[] {
  const items = list(raw, 'local_path_cleaning_filters');
  if (items.length > MAX_LIST) throw ApiError.validation(`At most ${MAX_LIST} rules.`, 'local_path_cleaning_filters');
  return items.map((item, i) => {
    const attr = `local_path_cleaning_filters__${i}`;
    if (!isObject(item)) throw ApiError.validation('Must be an object.', attr);
    if (isAbsent(item.regex)) throw required(`${attr}__regex`);
    return { regex: text(item.regex, `${attr}__regex`), alias: isAbsent(item.alias) ? '' : text(item.alias, `${attr}__alias`) };
  });
}

function parseFunnelPaths(fields: Fields): FunnelPaths | null {
  const type = choice(fields.funnel_paths, FUNNEL_PATH_TYPES, 'funnel_paths');
  if (type === null) return null;
  // A node's funnelSource is parsed with the node; the legacy `funnel_filter` holds legacy funnel fields and `funnel_step`.
  let funnel = fields.funnel_source as FunnelInput | undefined;
  let rawStep = fields.funnel_step;
  if (funnel === undefined) {
    const source = object(fields.funnel_filter, 'funnel_filter');
    if (source === null) throw required('funnel_filter');
    rawStep = source.funnel_step;
    try {
      funnel = parseFunnelRequest({}, source);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      throw new ApiError(error.status, error.type, error.code, error.detail, `funnel_filter__${error.attr ?? ''}`.replace(/__$/, ''));
    }
  }
  if (funnel.aggregationGroupTypeIndex !== null)
    throw ApiError.validation('Funnel paths follow persons: the funnel must not aggregate by group.', 'funnel_filter');
  const steps = funnel.steps.length;
  const step = integer(rawStep, 'funnel_step');
  if (step === null) throw required('funnel_step');
  const valid =
    type === 'funnel_path_between_steps'
      ? step >= 2 && step <= steps
      : type === 'funnel_path_after_step'
        ? (step >= 1 && step <= steps) || (step <= -2 && step >= -steps)
        : step >= 1 && step <= steps;
  if (!valid) throw ApiError.validation(`${step} is not a step of this funnel for ${type}.`, 'funnel_step');
  return { type, funnel: { ...funnel, breakdown: null, vizType: 'steps' }, step };
}

function parsePathsFields(fields: Fields): PathsInput {
  if (!isAbsent(fields.paths_hogql_expression)) throw ApiError.validation('HogQL path items are not supported.', 'paths_hogql_expression');
  if (
    !isAbsent(fields.path_replacements) &&
    typeof fields.path_replacements !== 'boolean' &&
    fields.path_replacements !== 'true' &&
    fields.path_replacements !== 'false'
  ) {
    throw ApiError.validation('Must be a valid boolean.', 'path_replacements');
  }
  const startPoint = point(fields.start_point, 'start_point');
  const endPoint = point(fields.end_point, 'end_point');
  if (startPoint !== null && startPoint === endPoint) throw ApiError.validation('The end point must differ from the start point.', 'end_point');
  const minEdgeWeight = bounded(fields.min_edge_weight, 'min_edge_weight', 0, Number.MAX_SAFE_INTEGER);
  const maxEdgeWeight = bounded(fields.max_edge_weight, 'max_edge_weight', 0, Number.MAX_SAFE_INTEGER);
  if (minEdgeWeight && maxEdgeWeight && minEdgeWeight > maxEdgeWeight) {
    throw ApiError.validation('The maximum edge weight must be at least the minimum.', 'max_edge_weight');
  }
  const funnelPaths = parseFunnelPaths(fields);
  return {
    includeEventTypes: eventTypes(fields),
    startPoint,
    endPoint,
    stepLimit: bounded(fields.step_limit, 'step_limit', 2, MAX_STEP_LIMIT) ?? DEFAULT_STEP_LIMIT,
    edgeLimit: bounded(fields.edge_limit, 'edge_limit', 1, MAX_EDGE_LIMIT) ?? DEFAULT_EDGE_LIMIT,
    // 0 means "no bound", as in PostHog.
    minEdgeWeight: minEdgeWeight || null,
    maxEdgeWeight: maxEdgeWeight || null,
    pathGroupings: texts(fields.path_groupings, 'path_groupings'),
    excludeEvents: texts(fields.exclude_events, 'exclude_events'),
    cleaning: cleaningRules(fields.local_path_cleaning_filters),
    dateFrom: optionalString(fields.date_from, 'date_from'),
    dateTo: optionalString(fields.date_to, 'date_to'),
    properties: parsePropertyFilters(fields.properties, 'properties'),
    funnelPaths,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Computing

/** A grouping pattern as a regex: the text literal, `*` any run of characters (unanchored, as PostHog's). */
export function groupingRegex(pattern: string): string {
  return pattern.replace(/[.*+?^${}()|[\]\\]/g, (c) => `\\${c}`).replace(/\\\*/g, '.*');
}

/** Whether an item kind is mapped (URL, screen name) rather than named by its event. */
function mapped(input: PathsInput, event: '$pageview' | '$screen'): boolean {
  return input.includeEventTypes.length === 0 ? !input.excludeEvents.includes(event) : input.includeEventTypes.includes(event);
}

/** The path item of an event `e`: cleaned, then grouped. */
function itemExpression(input: PathsInput, params: Params): string {
  const pageview = params.add('$pageview', 'String');
  const screen = params.add('$screen', 'String');
  let item = 'e.event';
  if (mapped(input, '$pageview'))
    item = `if(e.event = ${pageview}, replaceRegexpAll(${propertyText('properties', '$current_url', params)}, '(.)/$', '\\\\1'), ${item})`;
  if (mapped(input, '$screen')) item = `if(e.event = ${screen}, ${propertyText('properties', '$screen_name', params)}, ${item})`;
  for (const rule of input.cleaning) item = `replaceRegexpAll(${item}, ${params.add(rule.regex, 'String')}, ${params.add(rule.alias, 'String')})`;
  if (input.pathGroupings.length === 0) return item;
  const patterns = params.add(input.pathGroupings, 'Array(String)');
  const regexes = params.add(input.pathGroupings.map(groupingRegex), 'Array(String)');
  return `arrayMap(it -> if(arrayFirstIndex(r -> match(it, r), ${regexes}) > 0, ${patterns}[arrayFirstIndex(r -> match(it, r), ${regexes})], it), [${item}])[1]`;
}

/** Which events make up paths (none: every event), and the excluded items. */
function eventTypeCondition(input: PathsInput, params: Params): string {
  if (input.includeEventTypes.length === 0) return '1';
  const kinds = input.includeEventTypes.map((kind) => (kind === 'custom_event' ? "NOT startsWith(e.event, '$')" : `e.event = ${params.add(kind, 'String')}`));
  const excluded = input.excludeEvents.length === 0 ? '1' : `item NOT IN ${params.add(input.excludeEvents, 'Array(String)')}`;
  return `(${kinds.join(' OR ')}) AND ${excluded}`;
}

/** A window (`amount unit`) added to a time in microseconds; months are calendar months. */
function plusWindow(micros: string, window: FunnelInput['window'], params: Params): string {
  if (window.unit === 'month') return `toUnixTimestamp64Micro(addMonths(fromUnixTimestamp64Micro(${micros}, 'UTC'), ${params.add(window.amount, 'Int64')}))`;
  return `(${micros} + ${params.add(window.amount * WINDOW_UNIT_SECONDS[window.unit] * 1_000_000, 'Int64')})`;
}

/** Microseconds of the gap that starts a new path: 30 minutes, or with funnel paths the funnel's window. */
function sessionGapMicros(input: PathsInput): number {
  const window = input.funnelPaths?.funnel.window;
  if (window === undefined) return SESSION_GAP_SECONDS * 1_000_000;
  if (window.unit === 'month') return (Date.UTC(2018, window.amount, 1) - Date.UTC(2018, 0, 1)) * 1000;
  return window.amount * WINDOW_UNIT_SECONDS[window.unit] * 1_000_000;
}

/** The funnel's actors at the step, and the times their events must lie between (micros, inclusive). */
async function funnelJoin(paths: FunnelPaths, params: Params, ch: ClickHouse, ctx: InsightContext): Promise<{ actors: string; condition: string }> {
  const range = await insightRange(ch, paths.funnel, 'day', ctx);
  const bounds = { from: range.from, to: range.to, tz: params.add(ctx.timezone, 'String') };
  const funnel = await actorFunnelSql(paths.funnel, params, ctx, bounds, { byPeriod: false });
  const { step } = paths;
  // 0-based: the step whose time bounds the paths, and who is in.
  const at = step > 0 ? step - 1 : -step - 2;
  const reached = step > 0 ? `reached >= ${at}` : `reached = ${at}`;
  const actors = `SELECT actor AS f_actor, times AS f_times FROM (${funnel}) WHERE ${reached}`;
  const time = (index: number) => `f.f_times[${index + 1}]`;
  const condition = {
    funnel_path_after_step: `ev.ts >= ${step > 0 ? time(at) : plusWindow(time(at), paths.funnel.window, params)}`,
    funnel_path_before_step: `ev.ts <= ${time(at)}`,
    funnel_path_between_steps: `ev.ts >= ${time(at - 1)} AND ev.ts <= ${time(at)}`,
  }[paths.type];
  return { actors, condition };
}

/** Checks every cleaning rule compiles (RE2), so that a bad one is a 400 naming it. */
async function checkCleaningRules(ch: ClickHouse, input: PathsInput, attr: (i: number) => string): Promise<void> {
  for (const [i, rule] of input.cleaning.entries()) {
    try {
      await ch.query('insights.paths.checkRegex', "SELECT replaceRegexpAll('', {regex:String}, '') AS x", { regex: rule.regex });
    } catch (error) {
      if (error instanceof StorageError) throw ApiError.validation('Not a valid regular expression (RE2 syntax).', attr(i));
      throw error;
    }
  }
}

export interface PathRowsSql {
  sql: string;
  params: Params;
  range: ResolvedRange;
}

/**
 * One row per item of every kept path: `actor`, `idx` (1-based position), `path_key` (`idx_item`),
 * `last_path_key` (the previous item's key, '' at position 1), `dropoff_key` (the path's last key),
 * `conversion_time` (seconds since the previous item, 0 at position 1) and `events` (the kept path's events as
 * `(uuid, session id, window id, time in micros)`, for actors).
 */
export async function pathRowsSql(ch: ClickHouse, input: PathsInput, ctx: InsightContext, attr: (i: number) => string): Promise<PathRowsSql> {
  await checkCleaningRules(ch, input, attr);
  const range = await insightRange(ch, input, 'day', ctx);
  const params = new Params();
  params.values.projectId = ctx.projectId;
  const scope: FilterScope = { personId: PERSON_ID_EXPRESSION, ctx };
  const tz = params.add(ctx.timezone, 'String');
  const global = await propertiesCondition(input.properties, params, scope, 'properties');
  let events = `SELECT toString(${PERSON_ID_EXPRESSION}) AS actor, toUnixTimestamp64Micro(e.timestamp) AS ts, toString(e.uuid) AS uuid,
      e.session_id AS sid, e.window_id AS wid, ${itemExpression(input, params)} AS item
    FROM events AS e FINAL LEFT JOIN (${PERSON_OVERRIDES_SUBQUERY}) AS o ON e.person_id = o.old_person_id
    WHERE e.team_id = {projectId:Int64}
      AND e.timestamp >= toDateTime64(${params.add(range.from, 'String')}, 6, ${tz})
      AND e.timestamp < toDateTime64(${params.add(range.to, 'String')}, 6, ${tz}) + INTERVAL 1 SECOND
      AND ${global} AND ${eventTypeCondition(input, params)}`;
  if (input.funnelPaths !== null) {
    const join = await funnelJoin(input.funnelPaths, params, ch, ctx);
    events = `SELECT ev.* FROM (${events}) AS ev INNER JOIN (${join.actors}) AS f ON ev.actor = f.f_actor WHERE ${join.condition}`;
  }
  const gap = params.add(sessionGapMicros(input), 'Int64');
  const limit = params.add(input.stepLimit, 'Int64');
  const half = params.add(Math.floor(input.stepLimit / 2), 'Int64');
  const items = (arr: string) => `arrayMap(x -> x.3, ${arr})`;
  // The one point given alone loses a trailing '/'; with both, neither does (as PostHog).
  const single = (value: string) => params.add(value.length > 1 && value.endsWith('/') ? value.slice(0, -1) : value, 'String');
  let cut: string;
  let kept: string;
  if (input.startPoint !== null && input.endPoint !== null) {
    const fromStart = `if(s_at > 0, arraySlice(c, s_at), c)`;
    cut = `indexOf(${items('c')}, ${params.add(input.startPoint, 'String')}) AS s_at, ${fromStart} AS sf,
      indexOf(${items('sf')}, ${params.add(input.endPoint, 'String')}) AS e_at, if(e_at > 0, arrayResize(sf, e_at), sf) AS f,
      if(length(f) > ${limit}, arrayConcat(arraySlice(f, 1, ${half}), [(f[1 + ${half}].1, f[1 + ${half}].2, '...', f[1 + ${half}].4, f[1 + ${half}].5)], arraySlice(f, -${half}, ${half})), f) AS lim`;
    kept = 's_at > 0 AND e_at > 0';
  } else if (input.endPoint !== null) {
    cut = `indexOf(${items('c')}, ${single(input.endPoint)}) AS t_at, arraySlice(if(t_at > 0, arrayResize(c, t_at), c), -${limit}) AS lim`;
    kept = 't_at > 0';
  } else if (input.startPoint !== null) {
    cut = `indexOf(${items('c')}, ${single(input.startPoint)}) AS t_at, arraySlice(if(t_at > 0, arraySlice(c, t_at), c), 1, ${limit}) AS lim`;
    kept = 't_at > 0';
  } else {
    cut = `arraySlice(c, 1, ${limit}) AS lim`;
    kept = '1';
  }
  const sql = `SELECT actor, idx,
      concat(toString(idx), '_', lim[idx].3) AS path_key,
      if(idx > 1, concat(toString(idx - 1), '_', lim[idx - 1].3), '') AS last_path_key,
      concat(toString(length(lim)), '_', lim[-1].3) AS dropoff_key,
      if(idx > 1, (lim[idx].1 - lim[idx - 1].1) / 1e6, 0) AS conversion_time,
      arrayMap(x -> (x.2, x.4, x.5, x.1), lim) AS events
    FROM (
      SELECT actor, ${cut}
      FROM (
        SELECT actor, arrayFilter((x, i) -> x.3 != if(i < length(s), s[i + 1].3, ''), s, arrayEnumerate(s)) AS c
        FROM (
          SELECT actor, arraySort(x -> (x.1, x.2), groupArray((ts, uuid, item, sid, wid))) AS evs
          FROM (${events}) GROUP BY actor
        )
        ARRAY JOIN arraySplit((x, i) -> i > 1 AND x.1 - evs[i - 1].1 >= ${gap}, evs, arrayEnumerate(evs)) AS s
      )
      WHERE ${kept}
    )
    ARRAY JOIN arrayEnumerate(lim) AS idx`;
  return { sql, params, range };
}

/** Only edges reachable from a first-position node survive (PostHog's check of its own result). */
function reachable(edges: PathEdge[]): PathEdge[] {
  const next = new Map<string, string[]>();
  for (const edge of edges) next.set(edge.source, [...(next.get(edge.source) ?? []), edge.target]);
  const seen = new Set<string>();
  const stack = edges.filter((edge) => edge.source.startsWith('1_')).map((edge) => edge.source);
  while (stack.length > 0) {
    const node = stack.pop()!;
    seen.add(node);
    for (const target of next.get(node) ?? []) if (!seen.has(target)) stack.push(target);
  }
  return edges.filter((edge) => seen.has(edge.source));
}

/** Where a cleaning rule sits in a PathsQuery, for errors. */
export const nodeRuleAttr = (i: number) => `query__pathsFilter__localPathCleaningFilters__${i}__regex`;
export const legacyRuleAttr = (i: number) => `local_path_cleaning_filters__${i}__regex`;

export async function runPaths(ch: ClickHouse, input: PathsInput, ctx: InsightContext, attr = legacyRuleAttr): Promise<PathEdge[]> {
  const { sql: rows, params } = await pathRowsSql(ch, input, ctx, attr);
  const having = [
    input.minEdgeWeight === null ? null : `value >= ${params.add(input.minEdgeWeight, 'UInt64')}`,
    input.maxEdgeWeight === null ? null : `value <= ${params.add(input.maxEdgeWeight, 'UInt64')}`,
  ].filter((condition) => condition !== null);
  const sql = `SELECT last_path_key AS source, path_key AS target, count() AS value, avg(conversion_time) AS average
    FROM (${rows}) WHERE idx > 1
    GROUP BY source, target ${having.length > 0 ? `HAVING ${having.join(' AND ')}` : ''}
    ORDER BY value DESC, source, target LIMIT ${params.add(input.edgeLimit, 'UInt64')}`;
  const result = await query(ch, 'insights.paths', sql, params);
  return reachable(
    result.map((row) => ({
      source: String(row.source),
      target: String(row.target),
      value: Number(row.value),
      average_conversion_time: Number(row.average) * 1000,
    })),
  );
}

/** The range a paths input covers (its cache scope). */
export function pathsRange(ch: ClickHouse, input: PathsInput, ctx: InsightContext): Promise<ResolvedRange> {
  return insightRange(ch, input, 'day', ctx);
}
