/**
 * PostHog's web analytics queries (docs/web-analytics.md#queries): `WebOverviewQuery` and `WebStatsTableQuery`.
 * Session first, in two levels as PostHog computes them: the period's `$pageview`/`$screen` events grouped by
 * session (and breakdown value), then the sessions aggregated. A session counts in a period only when it started
 * inside it; only sessions whose `$session_id` is a UUIDv7 exist. Sessions and events are the HogQL virtual
 * tables' (`@plover/hogql`), so the session fields have one definition.
 */
import { ApiError } from '@plover/core';
import { MATERIALIZED_PROPERTIES, type ClickHouse } from '@plover/clickhouse';
import { TEAM_PARAM, VIRTUAL_TABLES } from '@plover/hogql';
import { actionCondition } from './actions';
import type { ActionDefinition } from './types';
import { previousRange, resolveRange } from './dates';
import { isAbsent, isObject } from './fields';
import { parsePropertyFilters } from './filters';
import { Params } from './params';
import { jsonPropertyText, propertiesCondition, propertyText } from './properties';
import type { InsightContext, PropertyFilter, PropertyGroup, ResolvedRange } from './types';

export interface WebQueryInput {
  dateFrom: string | null;
  dateTo: string | null;
  properties: PropertyGroup | null;
  compare: boolean;
  filterTestAccounts: boolean;
}

export const WEB_BREAKDOWNS = [
  'Page',
  'InitialPage',
  'ExitPage',
  'InitialReferringDomain',
  'InitialChannelType',
  'InitialUTMSource',
  'InitialUTMMedium',
  'InitialUTMCampaign',
  'InitialUTMTerm',
  'InitialUTMContent',
  'Browser',
  'OS',
  'DeviceType',
  'Viewport',
  'Country',
  'Region',
  'City',
  'Language',
  'Timezone',
] as const;
export type WebBreakdown = (typeof WEB_BREAKDOWNS)[number];

export interface WebStatsInput extends WebQueryInput {
  breakdownBy: WebBreakdown;
  includeBounceRate: boolean;
  limit: number;
}

/**
 * PostHog's default test-account filter of a new project (Plover keeps no per-project list): events from a
 * localhost page are internal.
 */
export const TEST_ACCOUNT_FILTER: PropertyFilter = { key: '$host', operator: 'not_regex', value: '^(localhost|127\\.0\\.0\\.1)($|:)', type: 'event' };

const MAX_LIMIT = 1000;

function field(node: Record<string, unknown>, key: string): Record<string, unknown> | null {
  const value = node[key];
  if (isAbsent(value)) return null;
  if (!isObject(value)) throw ApiError.validation('Must be an object.', key);
  return value;
}

function dateText(value: unknown, attr: string): string | null {
  if (isAbsent(value)) return null;
  if (typeof value !== 'string' || value.length > 100) throw ApiError.validation('Must be a date or a relative date such as -7d.', attr);
  return value;
}

function flag(value: unknown, attr: string): boolean {
  if (isAbsent(value)) return false;
  if (typeof value !== 'boolean') throw ApiError.validation('Must be a boolean.', attr);
  return value;
}

export function parseWebQuery(node: Record<string, unknown>): WebQueryInput {
  const dateRange = field(node, 'dateRange');
  const compareFilter = field(node, 'compareFilter');
  return {
    dateFrom: dateText(dateRange?.date_from, 'dateRange__date_from'),
    dateTo: dateText(dateRange?.date_to, 'dateRange__date_to'),
    properties: parsePropertyFilters(node.properties, 'properties'),
    compare: flag(compareFilter?.compare, 'compareFilter__compare') || flag(node.compare, 'compare'),
    filterTestAccounts: flag(node.filterTestAccounts, 'filterTestAccounts'),
  };
}

/** A table's row limit: `fallback` when absent. */
function tableLimit(node: Record<string, unknown>, fallback: number): number {
  const limit = node.limit ?? fallback;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw ApiError.validation(`Must be an integer from 1 to ${MAX_LIMIT}.`, 'limit');
  }
  return limit;
}

export function parseWebStatsQuery(node: Record<string, unknown>): WebStatsInput {
  const breakdownBy = node.breakdownBy;
  if (!(WEB_BREAKDOWNS as readonly unknown[]).includes(breakdownBy)) {
    throw ApiError.validation(`${JSON.stringify(breakdownBy ?? null)} is not a valid choice.`, 'breakdownBy', 'invalid_choice');
  }
  return {
    ...parseWebQuery(node),
    breakdownBy: breakdownBy as WebBreakdown,
    includeBounceRate: flag(node.includeBounceRate, 'includeBounceRate'),
    limit: tableLimit(node, 10),
  };
}

export interface WebExternalClicksInput extends WebQueryInput {
  limit: number;
  /** The links' URLs without their query string and fragment, so that one destination counts as one row. */
  stripQueryParams: boolean;
}

export function parseWebExternalClicksQuery(node: Record<string, unknown>): WebExternalClicksInput {
  return { ...parseWebQuery(node), limit: tableLimit(node, 100), stripQueryParams: flag(node.stripQueryParams, 'stripQueryParams') };
}

/** The period and, with compare, the one as long just before it (days, in the project's timezone). */
function periods(input: WebQueryInput, ctx: InsightContext): { current: ResolvedRange; previous: ResolvedRange | null } {
  const current = resolveRange(input.dateFrom, input.dateTo, 'day', ctx);
  return { current, previous: input.compare ? previousRange(current) : null };
}

function source(table: string, used: readonly string[]): string {
  return VIRTUAL_TABLES.get(table)!.source(used);
}

/** The events web analytics counts as views. */
const VIEWS = `ev.event IN ('$pageview', '$screen')`;

/**
 * The period's events (of the caller's kinds: `VIEWS` mostly) joined to their session (an inner join: events of a
 * `$session_id` that is no UUIDv7 have none), those in the period that pass the filters, and the condition that
 * the session started in the period. The events' columns are also reachable unqualified (action conditions).
 */
async function sessionEvents(
  params: Params,
  input: WebQueryInput,
  range: ResolvedRange,
  ctx: InsightContext,
  sessionFields: readonly string[],
  eventFields: readonly string[] = [],
) {
  const scope = await periodEvents(params, input, range, ctx, eventFields);
  const sessions = source('sessions', ['session_id', '$start_timestamp', ...sessionFields]);
  return {
    from: `(${scope.events}) AS ev INNER JOIN (${sessions}) AS s ON s.session_id = ev.\`$session_id\``,
    inPeriod: scope.inPeriod,
    started: `s.\`$start_timestamp\` >= ${scope.from} AND s.\`$start_timestamp\` < ${scope.end}`,
  };
}

/** The project's events (`events`, to alias `ev`) and the condition of those in the period that pass the filters. */
async function periodEvents(params: Params, input: WebQueryInput, range: ResolvedRange, ctx: InsightContext, eventFields: readonly string[]) {
  params.values[TEAM_PARAM] = ctx.projectId;
  const tz = params.add(range.timezone, 'String');
  const from = `toDateTime64(${params.add(range.from, 'String')}, 6, ${tz})`;
  const end = `toDateTime64(${params.add(range.to, 'String')}, 6, ${tz}) + INTERVAL 1 SECOND`;
  const filters: PropertyGroup | null =
    input.filterTestAccounts || input.properties
      ? { type: 'AND', values: [...(input.properties ? [input.properties] : []), ...(input.filterTestAccounts ? [TEST_ACCOUNT_FILTER] : [])] }
      : null;
  const condition = await propertiesCondition(filters, params, { personId: 'person_id', ctx });
  const columns = ['event', 'timestamp', '$session_id', 'person_id', 'properties', 'person.properties', ...eventFields];
  // Property conditions read the materialized columns of the events table (`mat_$pathname`…) by name: the
  // virtual table has none, so they are computed here from `properties`, as the columns are (unused ones are pruned).
  const materialized = [...MATERIALIZED_PROPERTIES].map(([key, column]) => `${jsonPropertyText('properties', key, params)} AS ${column}`).join(', ');
  return {
    events: `SELECT *, \`person.properties\` AS person_properties, ${materialized} FROM (${source('events', columns)})`,
    inPeriod: `ev.timestamp >= ${from} AND ev.timestamp < ${end} AND (${condition})`,
    from,
    end,
  };
}

interface OverviewRow {
  visitors: string | number;
  views: string | number;
  sessions: string | number;
  duration: number | null;
  bounce: number | null;
}

async function overviewOf(ch: ClickHouse, input: WebQueryInput, range: ResolvedRange, ctx: InsightContext): Promise<OverviewRow> {
  const params = new Params();
  const scope = await sessionEvents(params, input, range, ctx, ['$session_duration', '$is_bounce']);
  const sql = `SELECT uniq(person_id) AS visitors, sum(views) AS views, uniq(session_id) AS sessions,
      if(count() = 0, NULL, avg(duration)) AS duration, if(countIf(is_bounce IS NOT NULL) = 0, NULL, avg(is_bounce)) AS bounce
    FROM (
      SELECT any(ev.person_id) AS person_id, ev.\`$session_id\` AS session_id, count() AS views,
        any(s.\`$session_duration\`) AS duration, any(s.\`$is_bounce\`) AS is_bounce
      FROM ${scope.from}
      WHERE ${VIEWS} AND ${scope.inPeriod} AND ${scope.started}
      GROUP BY session_id
    )`;
  const [row] = await ch.query<OverviewRow>('web.overview', sql, params.values);
  return row ?? { visitors: 0, views: 0, sessions: 0, duration: null, bounce: null };
}

export interface WebOverviewItem {
  key: string;
  kind: 'unit' | 'duration_s' | 'percentage';
  value: number | null;
  previous: number | null;
  changeFromPreviousPct: number | null;
  isIncreaseBad?: boolean;
}

/** PostHog's change: the rounded percentage from `previous` to `value`, none without a (non-zero) previous. */
export function changeFromPrevious(value: number | null, previous: number | null): number | null {
  if (value === null || previous === null || previous === 0) return null;
  return Math.round((100 * (value - previous)) / previous);
}

function item(key: string, kind: WebOverviewItem['kind'], value: number | null, previous: number | null | undefined, isIncreaseBad?: boolean): WebOverviewItem {
  const prev = previous ?? null;
  return { key, kind, value, previous: prev, changeFromPreviousPct: changeFromPrevious(value, prev), ...(isIncreaseBad ? { isIncreaseBad } : {}) };
}

const num = (value: string | number | null): number | null => (value === null ? null : Number(value));

export async function runWebOverview(ch: ClickHouse, input: WebQueryInput, ctx: InsightContext) {
  const { current, previous } = periods(input, ctx);
  const [now, before] = await Promise.all([overviewOf(ch, input, current, ctx), previous ? overviewOf(ch, input, previous, ctx) : undefined]);
  const percent = (value: number | null) => (value === null ? null : value * 100);
  return {
    results: [
      item('visitors', 'unit', num(now.visitors), before && num(before.visitors)),
      item('views', 'unit', num(now.views), before && num(before.views)),
      item('sessions', 'unit', num(now.sessions), before && num(before.sessions)),
      item('session duration', 'duration_s', num(now.duration), before && num(before.duration)),
      item('bounce rate', 'percentage', percent(num(now.bounce)), before && percent(num(before.bounce)), true),
    ],
    dateFrom: current.from,
    dateTo: current.to,
    samplingRate: { numerator: 1, denominator: null },
    usedPreAggregatedTables: false,
  };
}

/** The breakdown value of an event (event-level breakdowns) or of its session (`s.` fields). */
function breakdownValue(by: WebBreakdown, params: Params): { sql: string; sessionFields: string[] } {
  const text = (key: string) => `nullIf(${propertyText('ev.properties', key, params)}, '')`;
  const session = (name: string) => ({ sql: `nullIf(s.\`${name}\`, '')`, sessionFields: [name] });
  switch (by) {
    case 'Page':
      return { sql: text('$pathname'), sessionFields: [] };
    case 'InitialPage':
      return session('$entry_pathname');
    case 'ExitPage':
      return session('$end_pathname');
    case 'InitialReferringDomain':
      return session('$entry_referring_domain');
    case 'InitialChannelType':
      return session('$channel_type');
    case 'InitialUTMSource':
      return session('$entry_utm_source');
    case 'InitialUTMMedium':
      return session('$entry_utm_medium');
    case 'InitialUTMCampaign':
      return session('$entry_utm_campaign');
    case 'InitialUTMTerm':
      return session('$entry_utm_term');
    case 'InitialUTMContent':
      return session('$entry_utm_content');
    case 'Browser':
      return { sql: text('$browser'), sessionFields: [] };
    case 'OS':
      return { sql: text('$os'), sessionFields: [] };
    case 'DeviceType':
      return { sql: text('$device_type'), sessionFields: [] };
    case 'Language':
      return { sql: text('$browser_language'), sessionFields: [] };
    case 'Country':
      return { sql: text('$geoip_country_code'), sessionFields: [] };
    case 'Viewport':
      return {
        sql: `[toString(toInt64OrNull(${text('$viewport_width')})), toString(toInt64OrNull(${text('$viewport_height')}))]`,
        sessionFields: [],
      };
    case 'Region':
      return { sql: `[${text('$geoip_country_code')}, ${text('$geoip_subdivision_1_code')}, ${text('$geoip_subdivision_1_name')}]`, sessionFields: [] };
    case 'City':
      return { sql: `[${text('$geoip_country_code')}, ${text('$geoip_city_name')}]`, sessionFields: [] };
    case 'Timezone':
      // posthog-js's `$timezone_offset` is `Date.getTimezoneOffset()`: minutes, positive west of UTC. As hours east
      // of UTC (`0 -` rather than a negation, so that UTC is 0 and not -0).
      return { sql: `0 - toFloat64OrNull(${text('$timezone_offset')}) / 60`, sessionFields: [] };
  }
}

interface StatsRow {
  value: unknown;
  visitors: string | number;
  views: string | number;
  bounce: number | null;
}

/** Rows of a previous period read to find the shown values' previous figures. */
const PREVIOUS_ROWS = 10_000;

async function statsOf(ch: ClickHouse, input: WebStatsInput, range: ResolvedRange, ctx: InsightContext, limit: number): Promise<StatsRow[]> {
  const params = new Params();
  const breakdown = breakdownValue(input.breakdownBy, params);
  const scope = await sessionEvents(params, input, range, ctx, ['$is_bounce', '$entry_pathname', ...breakdown.sessionFields]);
  // Page: the bounce rate of the sessions that entered on the path, not of those that saw it. The values are
  // compared as JSON inside a tuple, so that null ("none") matches null and arrays compare whole.
  const bounceKey = input.breakdownBy === 'Page' ? 'entry' : 'value';
  const sql = `SELECT value, visitors, views, if(b.found = 1, b.bounce, NULL) AS bounce FROM (
      SELECT value, uniq(person_id) AS visitors, sum(views) AS views FROM (
        SELECT any(ev.person_id) AS person_id, ev.\`$session_id\` AS session_id, ${breakdown.sql} AS value, count() AS views
        FROM ${scope.from} WHERE ${VIEWS} AND ${scope.inPeriod} AND ${scope.started}
        GROUP BY session_id, value
      ) GROUP BY value
    ) AS t LEFT JOIN (
      SELECT ${bounceKey} AS key, 1 AS found, avg(is_bounce) AS bounce FROM (
        SELECT ev.\`$session_id\` AS session_id, any(${breakdown.sql}) AS value, any(nullIf(s.\`$entry_pathname\`, '')) AS entry, any(s.\`$is_bounce\`) AS is_bounce
        FROM ${scope.from} WHERE ${VIEWS} AND ${scope.inPeriod} AND ${scope.started}
        GROUP BY session_id
      ) GROUP BY key
    ) AS b ON toJSONString(tuple(b.key)) = toJSONString(tuple(t.value))
    ORDER BY visitors DESC, views DESC, toJSONString(value) ASC
    LIMIT ${params.add(limit, 'UInt32')}`;
  return ch.query<StatsRow>('web.stats', sql, params.values);
}

export async function runWebStatsTable(ch: ClickHouse, input: WebStatsInput, ctx: InsightContext) {
  const { current, previous } = periods(input, ctx);
  const rows = await statsOf(ch, input, current, ctx, input.limit + 1);
  const shown = rows.slice(0, input.limit);
  const before = previous ? new Map((await statsOf(ch, input, previous, ctx, PREVIOUS_ROWS)).map((row) => [JSON.stringify(row.value), row])) : undefined;
  const columns = ['context.columns.breakdown_value', 'context.columns.visitors', 'context.columns.views'];
  if (input.includeBounceRate) columns.push('context.columns.bounce_rate');
  return {
    columns,
    results: shown.map((row) => {
      const past = before?.get(JSON.stringify(row.value));
      const pair = (now: number | null, then: number | null | undefined) => [now, previous ? (then ?? null) : null];
      const cells: unknown[] = [row.value, pair(num(row.visitors), past && num(past.visitors)), pair(num(row.views), past && num(past.views))];
      if (input.includeBounceRate) cells.push(pair(row.bounce, past?.bounce));
      return cells;
    }),
    hasMore: rows.length > input.limit,
    limit: input.limit,
    offset: 0,
    samplingRate: { numerator: 1, denominator: null },
    usedPreAggregatedTables: false,
  };
}

interface GoalsRow {
  visitors: string | number;
  totals: Array<string | number>;
  uniques: Array<string | number>;
}

/**
 * Per action: its events in the period (`totals`) and the persons who did one (`uniques`), over the sessions that
 * started in the period and have a view or an action event in it; `visitors` the persons of those sessions.
 */
async function goalsOf(
  ch: ClickHouse,
  input: WebQueryInput,
  actions: readonly ActionDefinition[],
  range: ResolvedRange,
  ctx: InsightContext,
): Promise<GoalsRow> {
  const params = new Params();
  const scope = await sessionEvents(params, input, range, ctx, [], ['elements_chain']);
  const conditions = await Promise.all(actions.map((action) => actionCondition(action, params, { personId: 'ev.person_id', ctx })));
  const counts = conditions.map((condition) => `countIf(${condition})`).join(', ');
  const uniques = actions.map((_, index) => `uniqIf(person_id, counts[${index + 1}] > 0)`).join(', ');
  const sql = `SELECT uniq(person_id) AS visitors, sumForEach(counts) AS totals, [${uniques}] AS uniques
    FROM (
      SELECT any(ev.person_id) AS person_id, ev.\`$session_id\` AS session_id, [${counts}] AS counts
      FROM ${scope.from}
      WHERE (${[VIEWS, ...conditions].join(' OR ')}) AND ${scope.inPeriod} AND ${scope.started}
      GROUP BY session_id
    )`;
  const [row] = await ch.query<GoalsRow>('web.goals', sql, params.values);
  return row ?? { visitors: 0, totals: [], uniques: [] };
}

/** The goals shown: PostHog takes a project's first five actions. */
export const WEB_GOALS = 5;

/**
 * `WebGoalsQuery`: per goal action its name, `[converting persons, previous]`, `[conversions, previous]` and
 * `[conversion rate 0–1, previous]` (converting persons over visitors, 0 without visitors); no rows without actions.
 */
export async function runWebGoals(ch: ClickHouse, input: WebQueryInput, ctx: InsightContext) {
  const actions = ((await ctx.goalActions?.()) ?? []).slice(0, WEB_GOALS);
  const { current, previous } = periods(input, ctx);
  const figures = async (range: ResolvedRange) => (actions.length === 0 ? undefined : goalsOf(ch, input, actions, range, ctx));
  const [now, before] = await Promise.all([figures(current), previous ? figures(previous) : undefined]);
  const rate = (row: GoalsRow | undefined, index: number) => {
    if (!row) return null;
    const visitors = Number(row.visitors);
    return visitors > 0 ? Number(row.uniques[index]) / visitors : 0;
  };
  const pair = (row: GoalsRow | undefined, values: (row: GoalsRow) => Array<string | number>, index: number) => [
    // No session at all: `sumForEach` of no rows is an empty array.
    now ? Number(values(now)[index] ?? 0) : 0,
    row ? Number(values(row)[index] ?? 0) : null,
  ];
  return {
    columns: ['context.columns.action_name', 'context.columns.converting_users', 'context.columns.total_conversions', 'context.columns.conversion_rate'],
    results: actions.map((action, index) => [
      action.name,
      pair(before, (row) => row.uniques, index),
      pair(before, (row) => row.totals, index),
      [rate(now, index), rate(before, index)],
    ]),
    hasMore: false,
    limit: WEB_GOALS,
    offset: 0,
    samplingRate: { numerator: 1, denominator: null },
    usedPreAggregatedTables: false,
  };
}

interface ExternalClicksRow {
  url: string;
  visitors: string | number;
  clicks: string | number;
}

/**
 * `WebExternalClicksTableQuery`: the links to other sites clicked in the period (autocaptured clicks that carry
 * posthog-js's `$external_click_url`), each with its visitors (persons, counted once per session and link) and
 * clicks; most visitors first. Events in the period, whatever their session's start (PostHog's definition).
 */
export async function runWebExternalClicks(ch: ClickHouse, input: WebExternalClicksInput, ctx: InsightContext) {
  const { current } = periods({ ...input, compare: false }, ctx);
  const params = new Params();
  const scope = await periodEvents(params, input, current, ctx, []);
  const link = propertyText('ev.properties', '$external_click_url', params);
  const url = input.stripQueryParams ? `cutQueryStringAndFragment(${link})` : link;
  const sql = `SELECT url, uniq(person_id) AS visitors, sum(clicks) AS clicks FROM (
      SELECT any(ev.person_id) AS person_id, count() AS clicks, ${url} AS url
      FROM (${scope.events}) AS ev
      WHERE ev.event = '$autocapture' AND ${propertyText('ev.properties', '$event_type', params)} = 'click' AND url != '' AND ${scope.inPeriod}
      GROUP BY ev.\`$session_id\`, url
    )
    GROUP BY url
    ORDER BY visitors DESC, url ASC
    LIMIT ${params.add(input.limit + 1, 'UInt32')}`;
  const rows = await ch.query<ExternalClicksRow>('web.external_clicks', sql, params.values);
  return {
    columns: ['context.columns.url', 'context.columns.visitors', 'context.columns.clicks'],
    results: rows.slice(0, input.limit).map((row) => [row.url, Number(row.visitors), Number(row.clicks)]),
    hasMore: rows.length > input.limit,
    limit: input.limit,
    offset: 0,
    samplingRate: { numerator: 1, denominator: null },
    usedPreAggregatedTables: false,
  };
}
