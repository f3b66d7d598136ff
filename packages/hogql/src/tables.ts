/**
 * The tables a HogQL query can name. Each is virtual: the printer replaces every reference to one by a subquery
 * over Plover's ClickHouse tables that keeps the project's rows only (`team_id = {hogql_team:Int64}`, bound, in
 * the subquery itself), so no part of a query — a join, a CTE, a subquery in an expression — can see another
 * project's rows or a table that is not listed here. A subquery selects only the columns the query uses, and
 * joins person overrides only when the query asks for the person.
 *
 * Persons, distinct ids and groups live in Postgres; here they are derived from the copies every event carries
 * (the person and group properties as ingestion stamped them), the latest event winning.
 */
import { channelTypeSql } from './channel';
import { HogQLError } from './errors';

/**
 * A column: SQL over the table's source; `json` when it holds JSON text whose keys `col.key.key` reach; `time` when
 * it is a DateTime, which the printer reads in the project's timezone.
 */
export interface LeafColumn {
  sql: string;
  json?: boolean;
  time?: boolean;
}

/** A column that is a group of columns: `person.properties`, `person.id`. */
export interface ObjectColumn {
  fields: Readonly<Record<string, Column>>;
}

export type Column = LeafColumn | ObjectColumn;

export interface VirtualTable {
  readonly columns: Readonly<Record<string, Column>>;
  /** The columns `*` stands for, in order. */
  readonly star: readonly string[];
  /** The subquery for the columns `used` (leaf paths such as `person.properties`), each selected AS its path. */
  source(used: readonly string[]): string;
}

/** The bound parameter every table's team guard compares with. */
export const TEAM_PARAM = 'hogql_team';
const TEAM = `{${TEAM_PARAM}:Int64}`;

const OVERRIDES = `(SELECT old_person_id, argMax(override_person_id, version) AS override_person_id
    FROM person_overrides WHERE team_id = ${TEAM} GROUP BY old_person_id) AS o ON e.person_id = o.old_person_id`;
const PERSON_ID = `if(o.old_person_id = toUUID('00000000-0000-0000-0000-000000000000'), e.person_id, o.override_person_id)`;

/** A name as a quoted ClickHouse identifier; control characters are refused rather than escaped. */
export function quoteIdentifier(name: string): string {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f]/.test(name)) throw new HogQLError('query_error', 'Identifiers cannot contain control characters');
  return '`' + name.replace(/\\/g, '\\\\').replace(/`/g, '\\`') + '`';
}

function isLeaf(column: Column): column is LeafColumn {
  return 'sql' in column;
}

/** Every leaf of `columns` by its path. */
function leaves(columns: Readonly<Record<string, Column>>, prefix = ''): Map<string, LeafColumn> {
  const out = new Map<string, LeafColumn>();
  for (const [name, column] of Object.entries(columns)) {
    if (isLeaf(column)) out.set(prefix + name, column);
    else for (const [path, leaf] of leaves(column.fields, `${prefix}${name}.`)) out.set(path, leaf);
  }
  return out;
}

function selectList(all: Map<string, LeafColumn>, used: readonly string[]): string {
  const columns = used.map((path) => `${all.get(path)!.sql} AS ${quoteIdentifier(path)}`);
  return columns.length > 0 ? columns.join(', ') : '1 AS `_`';
}

function table(columns: Record<string, Column>, star: readonly string[], from: (used: readonly string[]) => string): VirtualTable {
  const all = leaves(columns);
  return { columns, star, source: (used) => `SELECT ${selectList(all, used)} ${from(used)}` };
}

const json = (sql: string): LeafColumn => ({ sql, json: true });
const col = (sql: string): LeafColumn => ({ sql });
const time = (sql: string): LeafColumn => ({ sql, time: true });
const prop = (key: string) => `JSONExtractString(e.properties, '${key}')`;

const usesPerson = (used: readonly string[]) => used.some((path) => path === 'person_id' || path === 'person.id');
const eventsFrom = (join: boolean) => `FROM events AS e FINAL ${join ? `LEFT JOIN ${OVERRIDES} ` : ''}WHERE e.team_id = ${TEAM}`;

const groupColumns = Object.fromEntries(
  [0, 1, 2, 3, 4].flatMap((i) => [
    [`$group_${i}`, col(`e.\`$group_${i}\``)],
    [`group_${i}`, { fields: { key: col(`e.\`$group_${i}\``), properties: json(`e.group${i}_properties`), created_at: time(`e.group${i}_created_at`) } }],
  ]),
) as Record<string, Column>;

const events = table(
  {
    uuid: col('e.uuid'),
    event: col('e.event'),
    properties: json('e.properties'),
    timestamp: time('e.timestamp'),
    team_id: col('e.team_id'),
    distinct_id: col('e.distinct_id'),
    elements_chain: col('e.elements_chain'),
    created_at: time('e.created_at'),
    $session_id: col('e.session_id'),
    $window_id: col('e.window_id'),
    person_id: col(PERSON_ID),
    person: { fields: { id: col(PERSON_ID), properties: json('e.person_properties'), created_at: time('e.person_created_at') } },
    ...groupColumns,
  },
  ['uuid', 'event', 'properties', 'timestamp', 'distinct_id', 'elements_chain', 'created_at', '$session_id', '$window_id', 'person_id'],
  (used) => eventsFrom(usesPerson(used)),
);

const persons = table(
  {
    id: col('id'),
    properties: json('argMax(person_properties, timestamp)'),
    created_at: time('min(person_created_at)'),
    team_id: col('any(tid)'),
  },
  ['id', 'properties', 'created_at'],
  () =>
    `FROM (SELECT ${PERSON_ID} AS id, e.person_properties AS person_properties, e.person_created_at AS person_created_at, e.timestamp AS timestamp, e.team_id AS tid ${eventsFrom(true)}) GROUP BY id`,
);

const personDistinctIds = table(
  {
    distinct_id: col('distinct_id'),
    person_id: col('argMax(pid, timestamp)'),
    team_id: col('any(tid)'),
  },
  ['distinct_id', 'person_id'],
  () => `FROM (SELECT e.distinct_id AS distinct_id, ${PERSON_ID} AS pid, e.timestamp AS timestamp, e.team_id AS tid ${eventsFrom(true)}) GROUP BY distinct_id`,
);

const GROUP_SLOTS = [0, 1, 2, 3, 4];
const groups = table(
  {
    index: col('index'),
    key: col('key'),
    properties: json('argMax(props, timestamp)'),
    created_at: time('min(created)'),
    updated_at: time('max(timestamp)'),
    team_id: col('any(tid)'),
  },
  ['index', 'key', 'properties', 'created_at', 'updated_at'],
  () =>
    `FROM (SELECT index, key, props, created, e.timestamp AS timestamp, e.team_id AS tid FROM events AS e FINAL
      ARRAY JOIN [${GROUP_SLOTS.join(', ')}] AS index, [${GROUP_SLOTS.map((i) => `e.\`$group_${i}\``).join(', ')}] AS key,
        [${GROUP_SLOTS.map((i) => `e.group${i}_properties`).join(', ')}] AS props,
        [${GROUP_SLOTS.map((i) => `e.group${i}_created_at`).join(', ')}] AS created
      WHERE e.team_id = ${TEAM} AND key != '') GROUP BY index, key`,
);

const url = prop('$current_url');
/** The `$current_url` of the session's first / last event carrying one; pathname and hostname are taken from it. */
const ENTRY_URL = `argMinIf(${url}, e.timestamp, ${url} != '')`;
const EXIT_URL = `argMaxIf(${url}, e.timestamp, ${url} != '')`;
const PAGEVIEWS = `countIf(e.event = '$pageview')`;
const SCREENS = `countIf(e.event = '$screen')`;
const AUTOCAPTURES = `countIf(e.event = '$autocapture')`;
const DURATION = `dateDiff('second', min(e.timestamp), max(e.timestamp))`;
const FIRST = (key: string) => `argMinIf(${prop(key)}, e.timestamp, ${prop(key)} != '')`;
const REFERRER = FIRST('$referring_domain');
/** PostHog's channel type of the session's first-touch values (channel.ts). */
const CHANNEL = channelTypeSql({
  source: FIRST('utm_source'),
  medium: FIRST('utm_medium'),
  campaign: FIRST('utm_campaign'),
  referringDomain: REFERRER,
  gclid: FIRST('gclid'),
  gadSource: FIRST('gad_source'),
  fbclid: FIRST('fbclid'),
});

/**
 * PostHog's sessions table keeps only events whose `$session_id` is a UUIDv7 (version nibble 7; the id then also
 * says when the session started), so a session with another id does not exist.
 */
const UUID_V7 = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-7[0-9a-fA-F]{3}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

/** One row per session, as PostHog's sessions table: first-touch fields by the earliest event carrying them. */
const sessions = table(
  {
    session_id: col('e.session_id'),
    id: col('e.session_id'),
    team_id: col('any(e.team_id)'),
    distinct_id: col('argMax(e.distinct_id, e.timestamp)'),
    $start_timestamp: time('min(e.timestamp)'),
    $end_timestamp: time('max(e.timestamp)'),
    $session_duration: col(DURATION),
    duration: col(DURATION),
    $pageview_count: col(PAGEVIEWS),
    $screen_count: col(SCREENS),
    $autocapture_count: col(AUTOCAPTURES),
    $urls: col(`groupUniqArrayIf(${url}, ${url} != '')`),
    $num_uniq_urls: col(`uniqExactIf(${url}, ${url} != '')`),
    $entry_current_url: col(ENTRY_URL),
    $entry_pathname: col(`path(${ENTRY_URL})`),
    $entry_hostname: col(`domain(${ENTRY_URL})`),
    $end_current_url: col(EXIT_URL),
    $end_pathname: col(`path(${EXIT_URL})`),
    $end_hostname: col(`domain(${EXIT_URL})`),
    $exit_current_url: col(EXIT_URL),
    $exit_pathname: col(`path(${EXIT_URL})`),
    $entry_referring_domain: col(REFERRER),
    $entry_utm_source: col(FIRST('utm_source')),
    $entry_utm_medium: col(FIRST('utm_medium')),
    $entry_utm_campaign: col(FIRST('utm_campaign')),
    $entry_utm_term: col(FIRST('utm_term')),
    $entry_utm_content: col(FIRST('utm_content')),
    $entry_gclid: col(FIRST('gclid')),
    $entry_gad_source: col(FIRST('gad_source')),
    $entry_fbclid: col(FIRST('fbclid')),
    $is_bounce: col(`if(${PAGEVIEWS} + ${SCREENS} = 0, NULL, NOT (${PAGEVIEWS} + ${SCREENS} > 1 OR ${AUTOCAPTURES} > 0 OR ${DURATION} >= 10))`),
    $channel_type: col(CHANNEL),
  },
  [
    'session_id',
    'distinct_id',
    '$start_timestamp',
    '$end_timestamp',
    '$session_duration',
    '$pageview_count',
    '$autocapture_count',
    '$entry_current_url',
    '$end_current_url',
  ],
  () => `FROM events AS e FINAL WHERE e.team_id = ${TEAM} AND match(e.session_id, '${UUID_V7}') GROUP BY e.session_id`,
);

const sessionReplayEvents = table(
  {
    session_id: col('r.session_id'),
    team_id: col('any(r.team_id)'),
    distinct_id: col('argMin(r.distinct_id, r.first_timestamp)'),
    start_time: time('min(r.first_timestamp)'),
    end_time: time('max(r.last_timestamp)'),
    first_url: col('argMinIf(r.first_url, r.first_timestamp, r.first_url IS NOT NULL)'),
    click_count: col('sum(r.click_count)'),
    keypress_count: col('sum(r.keypress_count)'),
    mouse_activity_count: col('sum(r.mouse_activity_count)'),
    active_milliseconds: col('sum(r.active_milliseconds)'),
    console_log_count: col('sum(r.console_log_count)'),
    console_warn_count: col('sum(r.console_warn_count)'),
    console_error_count: col('sum(r.console_error_count)'),
    event_count: col('sum(r.event_count)'),
    size: col('sum(r.size)'),
  },
  ['session_id', 'distinct_id', 'start_time', 'end_time', 'first_url', 'click_count', 'keypress_count', 'active_milliseconds', 'event_count'],
  () => `FROM session_replay_summaries AS r FINAL WHERE r.team_id = ${TEAM} GROUP BY r.session_id`,
);

/** OpenTelemetry log records (`/i/v1/logs`), one row each; rows past their retention are hidden before the TTL removes them. */
const logs = table(
  {
    uuid: col('l.uuid'),
    team_id: col('l.team_id'),
    timestamp: col('l.timestamp'),
    observed_timestamp: col('l.observed_timestamp'),
    severity_text: col('l.severity_text'),
    severity_number: col('l.severity_number'),
    // PostHog's name for the level, lowercase (`info`, `warn`, `error`, …).
    level: col('lower(l.severity_text)'),
    body: col('l.body'),
    trace_id: col('l.trace_id'),
    span_id: col('l.span_id'),
    attributes: json('l.attributes'),
    resource_attributes: json('l.resource_attributes'),
    service_name: col('l.service_name'),
    session_id: col('l.session_id'),
    $session_id: col('l.session_id'),
    distinct_id: col('l.distinct_id'),
  },
  ['uuid', 'timestamp', 'severity_text', 'body', 'service_name', 'session_id', 'distinct_id', 'trace_id', 'span_id', 'attributes'],
  () => `FROM logs AS l FINAL WHERE l.team_id = ${TEAM} AND l.expires_at > now()`,
);

export const VIRTUAL_TABLES: ReadonlyMap<string, VirtualTable> = new Map([
  ['events', events],
  ['persons', persons],
  ['person_distinct_ids', personDistinctIds],
  ['groups', groups],
  ['sessions', sessions],
  ['session_replay_events', sessionReplayEvents],
  ['logs', logs],
]);

/** The leaf path `chain` names in `table`, and how many of its names that took (the rest are JSON keys). */
export function lookupColumn(
  columns: Readonly<Record<string, Column>>,
  chain: readonly string[],
): { path: string; leaf: LeafColumn; used: number } | undefined {
  let current: Readonly<Record<string, Column>> = columns;
  const path: string[] = [];
  for (let i = 0; i < chain.length; i++) {
    const column = Object.hasOwn(current, chain[i]!) ? current[chain[i]!] : undefined;
    if (!column) return undefined;
    path.push(chain[i]!);
    if (isLeaf(column)) return { path: path.join('.'), leaf: column, used: i + 1 };
    current = column.fields;
  }
  return undefined;
}
