import type { ClickHouse, ClickHouseParams } from '@plover/clickhouse';
import { GroupStore, PersonReads, type GroupListRow, type Person } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import type { Page } from '../http/render';

/** Where an export's batch ends: the last event's time (ClickHouse text, microseconds) and uuid. */
export interface EventCursor {
  ts: string;
  uuid_text: string;
}

/** Events as the JSON lines of the listing, with the cursor of the last line. */
export interface EventLines {
  text: string;
  count: number;
  cursor: EventCursor | undefined;
}

/**
 * The events listing's JSON object (http: data/routes.ts's eventBody), built by ClickHouse from the stored
 * columns: `properties` is the JSON text ingestion stored, and the time is cut to milliseconds as `toISOString`
 * writes it. With forward slashes unescaped, each line is the bytes `JSON.stringify` would write for the row.
 */
const EVENT_LINE = `concat('{"id":', toJSONString(toString(uuid)), ',"uuid":', toJSONString(toString(uuid)),
  ',"event":', toJSONString(event), ',"distinct_id":', toJSONString(distinct_id), ',"properties":', properties,
  ',"timestamp":"', replaceOne(toString(toDateTime64(timestamp, 3, 'UTC')), ' ', 'T'), 'Z","person_id":', toJSONString(toString(person_id)), '}')`;

/** A line of eventLines' answer: the cursor's two values, each followed by a tab, before the listing's JSON. */
const CURSOR_PREFIX = /^[^\t\n]*\t[^\t\n]*\t/gm;

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

/**
 * The FROM … LIMIT of a page of events newest first: `size` of them after `offset`, or after the event `after` (the
 * keyset an export pages with; `ts` keeps the microseconds), only from the `days` days before it when given.
 */
function eventsPage(condition: EventsCondition, size: number, offset: number, after?: EventCursor, days?: number): { sql: string; params: ClickHouseParams } {
  let keyset = '';
  const params: ClickHouseParams = { ...condition.params };
  if (after) {
    keyset = " AND (timestamp, uuid) < ({after_ts:DateTime64(6, 'UTC')}, {after_uuid:UUID}) AND timestamp <= {after_ts:DateTime64(6, 'UTC')}";
    Object.assign(params, { after_ts: after.ts, after_uuid: after.uuid_text });
    if (days !== undefined) {
      keyset += " AND timestamp >= {after_ts:DateTime64(6, 'UTC')} - toIntervalDay({days:UInt32})";
      params.days = days;
    }
  }
  return { sql: `FROM events FINAL WHERE ${condition.where}${keyset} ORDER BY timestamp DESC, uuid DESC LIMIT ${size} OFFSET ${after ? 0 : offset}`, params };
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

  /**
   * Events matching `condition`, newest first: `size` of them after `offset`, or after the event `after` (the
   * keyset an export pages with; `ts` keeps the microseconds), only from the `days` days before it when given.
   * The table's sort key leads with the day, so bounding the time both ways lets ClickHouse read those days'
   * granules only: a page of an export then costs what its window holds, not every older event.
   */
  events(condition: EventsCondition, size: number, offset: number, after?: EventCursor, days?: number): Promise<EventRow[]> {
    const { sql, params } = eventsPage(condition, size, offset, after, days);
    // Aliases differ from column names: ClickHouse substitutes SELECT aliases in WHERE and ORDER BY.
    return this.clickhouse.query<EventRow>(
      'management.listEvents',
      `SELECT toString(uuid) AS uuid_text, event, distinct_id, properties, toString(timestamp) AS ts, toString(person_id) AS person_id_text ${sql}`,
      params,
    );
  }

  /**
   * The same events as {@link events}, as the listing's JSON lines written by ClickHouse (an export passes them on
   * without parsing a row): each row comes as `<ts>\t<uuid>\t<json>`, the cursor read from the last row only.
   */
  async eventLines(condition: EventsCondition, size: number, offset: number, after?: EventCursor, days?: number): Promise<EventLines> {
    const { sql, params } = eventsPage(condition, size, offset, after, days);
    const text = await this.clickhouse.queryText('management.exportEvents', `SELECT toString(timestamp), toString(uuid), ${EVENT_LINE} ${sql}`, params, {
      output_format_json_escape_forward_slashes: 0,
    });
    if (text === '') return { text, count: 0, cursor: undefined };
    let count = 0;
    for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) count++;
    const [ts, uuid] = text.slice(text.lastIndexOf('\n', text.length - 2) + 1).split('\t', 2);
    return { text: text.replace(CURSOR_PREFIX, ''), count, cursor: { ts: ts!, uuid_text: uuid! } };
  }

  /** The time of the earliest event matching `condition` (ClickHouse text, microseconds), if any. */
  async earliestEvent(condition: EventsCondition): Promise<string | undefined> {
    const [row] = await this.clickhouse.query<{ ts: string; n: string }>(
      'management.earliestEvent',
      `SELECT toString(min(timestamp)) AS ts, count() AS n FROM events WHERE ${condition.where}`,
      condition.params,
    );
    return row && Number(row.n) > 0 ? row.ts : undefined;
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
