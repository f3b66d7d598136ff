/**
 * The `events` table (migrations/001_events.sql): its row type, writes, and the reads that must never show a
 * redelivered event twice. Every read goes through `FROM events FINAL` (see the migration for why).
 */
import type { ClickHouse } from './port';

export type PersonMode = 'full' | 'propertyless' | 'force_upgrade';

/**
 * One event as ingestion writes it and as the reads below return it. Date-times are ClickHouse text in UTC,
 * `YYYY-MM-DD HH:MM:SS.ffffff` (milliseconds for the `*_created_at` of persons and groups); ISO-8601 strings
 * are accepted on insert too, but come back in ClickHouse's form. JSON columns hold JSON text.
 * (A type rather than an interface so that it is assignable to the port's `Record<string, unknown>` rows.)
 */
export type EventRow = {
  uuid: string;
  event: string;
  properties: string;
  timestamp: string;
  /** A Postgres project id, far below 2^53, so a number even though the column is Int64. */
  team_id: number;
  distinct_id: string;
  elements_chain: string;
  created_at: string;
  person_id: string;
  person_properties: string;
  person_created_at: string;
  person_mode: PersonMode;
  group0_properties: string;
  group1_properties: string;
  group2_properties: string;
  group3_properties: string;
  group4_properties: string;
  group0_created_at: string;
  group1_created_at: string;
  group2_created_at: string;
  group3_created_at: string;
  group4_created_at: string;
  $group_0: string;
  $group_1: string;
  $group_2: string;
  $group_3: string;
  $group_4: string;
  session_id: string;
  window_id: string;
  historical_migration: boolean;
};

/** The group columns of an event in no group, as ingestion writes them: empty properties and keys, zero times. */
export const NO_GROUPS = {
  group0_properties: '',
  group1_properties: '',
  group2_properties: '',
  group3_properties: '',
  group4_properties: '',
  group0_created_at: '1970-01-01 00:00:00.000',
  group1_created_at: '1970-01-01 00:00:00.000',
  group2_created_at: '1970-01-01 00:00:00.000',
  group3_created_at: '1970-01-01 00:00:00.000',
  group4_created_at: '1970-01-01 00:00:00.000',
  $group_0: '',
  $group_1: '',
  $group_2: '',
  $group_3: '',
  $group_4: '',
} as const satisfies Partial<EventRow>;

/** Every column of EventRow, in table order (`inserted_at`, the dedupe version, is left to its default). */
export const EVENT_COLUMNS = [
  'uuid',
  'event',
  'properties',
  'timestamp',
  'team_id',
  'distinct_id',
  'elements_chain',
  'created_at',
  'person_id',
  'person_properties',
  'person_created_at',
  'person_mode',
  'group0_properties',
  'group1_properties',
  'group2_properties',
  'group3_properties',
  'group4_properties',
  'group0_created_at',
  'group1_created_at',
  'group2_created_at',
  'group3_created_at',
  'group4_created_at',
  '$group_0',
  '$group_1',
  '$group_2',
  '$group_3',
  '$group_4',
  'session_id',
  'window_id',
  'historical_migration',
] as const satisfies readonly (keyof EventRow)[];

// Fails to compile when EventRow gains a field that EVENT_COLUMNS lacks.
const _everyColumnListed: Exclude<keyof EventRow, (typeof EVENT_COLUMNS)[number]> extends never ? true : never = true;

/** `$group_0` needs quoting in SQL. */
const SELECT_LIST = EVENT_COLUMNS.map((column) => `\`${column}\``).join(', ');

export async function insertEvents(ch: ClickHouse, rows: readonly EventRow[]): Promise<void> {
  await ch.insert('events', rows);
}

/** How many distinct events a project has; a redelivered event counts once. */
export async function countEvents(ch: ClickHouse, projectId: number): Promise<number> {
  const [row] = await ch.query<{ count: string }>('events.count', 'SELECT count() AS count FROM events FINAL WHERE team_id = {projectId:Int64}', { projectId });
  return Number(row?.count ?? 0);
}

/** A project's events in time order, each once. */
export async function listEvents(ch: ClickHouse, projectId: number, options: { limit?: number } = {}): Promise<EventRow[]> {
  const rows = await ch.query<Omit<EventRow, 'team_id'> & { team_id: string }>(
    'events.list',
    `SELECT ${SELECT_LIST} FROM events FINAL WHERE team_id = {projectId:Int64} ORDER BY timestamp, uuid LIMIT {limit:UInt32}`,
    { projectId, limit: options.limit ?? 100 },
  );
  return rows.map((row) => ({ ...row, team_id: Number(row.team_id) }));
}

/**
 * Event properties that have a materialized column (migrations/004_materialized_properties.sql), by key: the
 * column holds the property's text, so queries read it instead of parsing `properties`.
 */
export const MATERIALIZED_PROPERTIES: ReadonlyMap<string, string> = new Map(
  ['$browser', '$os', '$device_type', '$lib', '$host', '$pathname', '$current_url', '$referring_domain'].map((key) => [key, `\`mat_${key}\``]),
);
