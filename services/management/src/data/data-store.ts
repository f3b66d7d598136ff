import type { ClickHouse, ClickHouseParams } from '@plover/clickhouse';
import { GroupStore, PersonReads, type GroupListRow, type Person } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import type { Page } from '../http/render';

/**
 * Events one statement of an events export sorts at most (unless a day alone holds more): about 30 MiB of lines,
 * which ClickHouse holds while it sorts them.
 */
export const EXPORT_WINDOW_ROWS = 50_000;

/** The events of one day matching a condition (`day` as ClickHouse writes a Date), counted before merges. */
export interface EventDay {
  day: string;
  n: number;
}

/**
 * The events listing's JSON object (http: data/routes.ts's eventBody), built by ClickHouse from the stored
 * columns: `properties` is the JSON text ingestion stored, and the time is cut to milliseconds as `toISOString`
 * writes it. With forward slashes unescaped, each line is the bytes `JSON.stringify` would write for the row.
 */
const EVENT_LINE = `concat('{"id":', toJSONString(toString(uuid)), ',"uuid":', toJSONString(toString(uuid)),
  ',"event":', toJSONString(event), ',"distinct_id":', toJSONString(distinct_id), ',"properties":', properties,
  ',"timestamp":"', replaceOne(toString(toDateTime64(timestamp, 3, 'UTC')), ' ', 'T'), 'Z","person_id":', toJSONString(toString(person_id)), '}')`;

export interface EventRow {
  uuid_text: string;
  event: string;
  distinct_id: string;
  properties: string;
  ts: string;
  person_id_text: string;
}

export interface IngestionWarningRow {
  type: string;
  details: string;
  ts: string;
  event_uuid_text: string;
}

/** An events condition in ClickHouse SQL and its parameters. */
export interface EventsCondition {
  where: string;
  params: ClickHouseParams;
}

/** The read-only data of a project: group types and groups (Postgres), events and ingestion warnings (ClickHouse). */
export class DataStore {
  readonly groupTypes: GroupStore;
  private readonly persons: PersonReads;

  constructor(
    private readonly sql: Sql,
    private readonly clickhouse: ClickHouse,
  ) {
    this.groupTypes = new GroupStore(sql);
    this.persons = new PersonReads(sql);
  }

  person(projectId: number, ref: number | string): Promise<Person | undefined> {
    return this.persons.get(projectId, ref);
  }

  /** One page (and one row more) of the groups of a type, newest first, key or name containing `search`; with their count. */
  groups(projectId: number, typeIndex: number, search: string | undefined, page: Page): Promise<{ rows: GroupListRow[]; count: number }> {
    return this.groupTypes.list(projectId, typeIndex, search, page);
  }

  /** Events matching `condition`, newest first (to the millisecond, then by uuid): `size` of them after `offset`. */
  events(condition: EventsCondition, size: number, offset: number): Promise<EventRow[]> {
    // Aliases differ from column names: ClickHouse substitutes SELECT aliases in WHERE and ORDER BY.
    return this.clickhouse.query<EventRow>(
      'management.listEvents',
      `SELECT toString(uuid) AS uuid_text, event, distinct_id, properties, toString(timestamp) AS ts, toString(person_id) AS person_id_text
        FROM events FINAL WHERE ${condition.where} ORDER BY toDateTime64(timestamp, 3, 'UTC') DESC, uuid DESC LIMIT ${size} OFFSET ${offset}`,
      condition.params,
    );
  }

  /**
   * The days holding events that match `condition`, newest first, with how many each holds (without FINAL: rows
   * not yet merged count twice), for cutting an export into windows of whole days.
   */
  async eventDays(condition: EventsCondition): Promise<EventDay[]> {
    const rows = await this.clickhouse.query<{ day: string; n: string }>(
      'management.eventDays',
      `SELECT toString(toDate(timestamp)) AS day, count() AS n FROM events WHERE ${condition.where} GROUP BY day ORDER BY day DESC`,
      condition.params,
    );
    return rows.map((row) => ({ day: row.day, n: Number(row.n) }));
  }

  /**
   * The events of the days `from` to `to` (inclusive) matching `condition`, in the listing's order, as its JSON
   * lines written by ClickHouse and streamed as the engine writes them: one statement that sorts those days' events.
   */
  eventLines(condition: EventsCondition, from: string, to: string): AsyncIterable<Uint8Array> {
    return this.clickhouse.queryRawStream(
      'management.exportEvents',
      `SELECT ${EVENT_LINE} FROM events FINAL WHERE ${condition.where} AND toDate(timestamp) BETWEEN {from_day:Date} AND {to_day:Date}
        ORDER BY toDateTime64(timestamp, 3, 'UTC') DESC, uuid DESC`,
      { ...condition.params, from_day: from, to_day: to },
      { output_format_json_escape_forward_slashes: 0 },
    );
  }

  async countEvents(condition: EventsCondition): Promise<number> {
    const counted = await this.clickhouse.query<{ n: string }>(
      'management.countEvents',
      `SELECT count() AS n FROM events FINAL WHERE ${condition.where}`,
      condition.params,
    );
    return Number(counted[0]?.n ?? 0);
  }

  /** One page (and one row more) of the project's ingestion warnings, newest first, with their count. */
  async ingestionWarnings(projectId: number, page: Page): Promise<{ rows: IngestionWarningRow[]; count: number }> {
    const params: ClickHouseParams = { projectId };
    const rows = await this.clickhouse.query<IngestionWarningRow>(
      'management.listIngestionWarnings',
      `SELECT type, details, toString(timestamp) AS ts, toString(event_uuid) AS event_uuid_text FROM ingestion_warnings FINAL
        WHERE team_id = {projectId:Int64} ORDER BY timestamp DESC, type, event_uuid LIMIT ${page.limit + 1} OFFSET ${page.offset}`,
      params,
    );
    const counted = await this.clickhouse.query<{ n: string }>(
      'management.countIngestionWarnings',
      'SELECT count() AS n FROM ingestion_warnings FINAL WHERE team_id = {projectId:Int64}',
      params,
    );
    return { rows, count: Number(counted[0]?.n ?? 0) };
  }
}
