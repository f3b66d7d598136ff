/**
 * Session replay storage (migrations/005_session_replay.sql, docs/replay.md): one row per `$snapshot` message in
 * `session_replay_snapshots` (its rrweb events as JSONL) and in `session_replay_summaries` (its counts), written
 * by the replay consumer; and the reads and deletes the recordings API needs. Every read goes through FINAL, so
 * a redelivered message is seen once, and skips rows past their retention.
 */
import { mutationTarget } from './cluster';
import type { ClickHouse, ClickHouseParams } from './port';

/** What one `$snapshot` message contributes to its session's summary (docs/replay.md, "Summary"). */
export interface ReplayActivity {
  click_count: number;
  keypress_count: number;
  mouse_activity_count: number;
  active_milliseconds: number;
  console_log_count: number;
  console_warn_count: number;
  console_error_count: number;
  event_count: number;
  /** The first page address among the events, if any. */
  first_url: string | null;
  /** Distinct page addresses in order of appearance, at most 25. */
  urls: string[];
}

/** One `$snapshot` message, ready to store. Text fields must already be storable (no NUL, no unpaired surrogate). */
export interface SnapshotBatch extends ReplayActivity {
  team_id: number;
  session_id: string;
  window_id: string;
  /** The message's uuid: a redelivered message carries the same one and is stored once. */
  batch_uuid: string;
  distinct_id: string;
  /** Earliest and latest event time, milliseconds since the epoch. */
  first_timestamp: number;
  last_timestamp: number;
  /** The events as JSONL lines, each `["<window_id>", <event>]` and a newline. */
  data: string;
  snapshot_source: string;
  snapshot_library: string;
  /** The project's retention; DEFAULT_RETENTION_DAYS when absent. */
  retention_period_days?: number;
}

export const DEFAULT_RETENTION_DAYS = 30;

const DAY_MS = 86_400_000;

/**
 * Stores messages in both tables. A message's rows expire `retention_period_days` after the UTC day its session
 * started, as far as stored rows and this call tell: the whole session then expires at once. Storing a message
 * again changes nothing a read sees.
 */
export async function insertSnapshotBatches(ch: ClickHouse, batches: readonly SnapshotBatch[]): Promise<void> {
  if (batches.length === 0) return;
  const starts = await sessionStarts(ch, batches);
  for (const batch of batches) {
    const key = sessionKey(batch.team_id, batch.session_id);
    starts.set(key, Math.min(starts.get(key) ?? Infinity, batch.first_timestamp));
  }
  const rows = batches.map((batch) => {
    const retention = batch.retention_period_days ?? DEFAULT_RETENTION_DAYS;
    const start = starts.get(sessionKey(batch.team_id, batch.session_id)) ?? batch.first_timestamp;
    const expiresAt = Math.floor(start / DAY_MS) * DAY_MS + retention * DAY_MS;
    return {
      common: {
        team_id: batch.team_id,
        session_id: batch.session_id,
        batch_uuid: batch.batch_uuid,
        first_timestamp: new Date(batch.first_timestamp).toISOString(),
        last_timestamp: new Date(batch.last_timestamp).toISOString(),
        event_count: batch.event_count,
        size: Buffer.byteLength(batch.data),
        expires_at: new Date(expiresAt).toISOString(),
      },
      batch,
      retention,
    };
  });
  // Snapshots first: a summary row is what lists a session, and its blocks should be there when it is.
  for (const chunk of bySize(rows, ({ common }) => common.size)) {
    await ch.insert(
      'session_replay_snapshots',
      chunk.map(({ common, batch }) => ({ ...common, window_id: batch.window_id, data: batch.data })),
    );
  }
  await ch.insert(
    'session_replay_summaries',
    rows.map(({ common, batch, retention }) => ({
      ...common,
      distinct_id: batch.distinct_id,
      first_url: batch.first_url,
      urls: batch.urls,
      click_count: batch.click_count,
      keypress_count: batch.keypress_count,
      mouse_activity_count: batch.mouse_activity_count,
      active_milliseconds: batch.active_milliseconds,
      console_log_count: batch.console_log_count,
      console_warn_count: batch.console_warn_count,
      console_error_count: batch.console_error_count,
      snapshot_source: batch.snapshot_source,
      snapshot_library: batch.snapshot_library,
      retention_period_days: retention,
    })),
  );
}

/** Most bytes of JSONL one insert carries: the adapters hold an insert's whole body in memory, more than once. */
const MAX_INSERT_BYTES = 16 * 1024 * 1024;

/** `items` in order, cut into runs of at most MAX_INSERT_BYTES (a larger item alone). */
export function bySize<T>(items: readonly T[], size: (item: T) => number): T[][] {
  const chunks: T[][] = [];
  let bytes = Infinity;
  for (const item of items) {
    if (bytes + size(item) > MAX_INSERT_BYTES) {
      chunks.push([]);
      bytes = 0;
    }
    chunks[chunks.length - 1]!.push(item);
    bytes += size(item);
  }
  return chunks;
}

function sessionKey(projectId: number, sessionId: string): string {
  return `${projectId}:${sessionId}`;
}

/** The earliest stored event time of each session the batches belong to, by sessionKey. */
async function sessionStarts(ch: ClickHouse, batches: readonly SnapshotBatch[]): Promise<Map<string, number>> {
  const rows = await ch.query<{ team_id: string; session_id: string; start: string }>(
    'replay.sessionStarts',
    `SELECT team_id, session_id, toUnixTimestamp64Milli(min(first_timestamp)) AS start FROM session_replay_summaries
      WHERE team_id IN {projectIds:Array(Int64)} AND session_id IN {sessions:Array(String)}
      GROUP BY team_id, session_id`,
    { projectIds: [...new Set(batches.map((batch) => batch.team_id))], sessions: [...new Set(batches.map((batch) => batch.session_id))] },
  );
  return new Map(rows.map((row) => [sessionKey(Number(row.team_id), row.session_id), Number(row.start)]));
}

/** A session's summary: the sums and extremes over its messages. Times are ISO-8601 UTC with milliseconds. */
export interface SessionSummary extends Omit<ReplayActivity, 'urls'> {
  session_id: string;
  /** The distinct id of the session's first message. */
  distinct_id: string;
  /** Every distinct id the session's messages came from (an identify mid-session adds one), sorted. */
  distinct_ids: string[];
  start_time: string;
  end_time: string;
  /** Whole seconds from start to end. */
  duration: number;
  /** active_milliseconds / 1000, not rounded. */
  active_seconds: number;
  /** duration − active_seconds, at least 0. */
  inactive_seconds: number;
  /** Distinct page addresses in order of appearance, at most 25. */
  all_urls: string[];
  /** Bytes of the session's JSONL lines. */
  size: number;
  /** `$snapshot` messages stored. */
  message_count: number;
  snapshot_source: string;
  snapshot_library: string;
  retention_period_days: number;
  /** When the session's data stops being served (and is then deleted). */
  expires_at: string;
  /** When the newest message of the session was stored: recent for an ongoing recording. */
  last_ingested_at: string;
  /**
   * (active seconds + clicks + keypresses + console errors) / (mouse activity + duration + console errors,
   * warnings and logs) × 100, rounded to 2 decimals; 0 when the divisor is 0.
   */
  activity_score: number;
}

/** Numeric summary fields a listing can filter and order by. */
export const SESSION_METRICS = [
  'duration',
  'active_seconds',
  'inactive_seconds',
  'click_count',
  'keypress_count',
  'mouse_activity_count',
  'console_log_count',
  'console_warn_count',
  'console_error_count',
  'activity_score',
] as const;

export type SessionMetric = (typeof SESSION_METRICS)[number];

export type SessionOrder = 'start_time' | SessionMetric;

const COMPARISONS = { gt: '>', gte: '>=', lt: '<', lte: '<=', exact: '=' } as const;

export interface SessionPredicate {
  key: SessionMetric;
  operator: keyof typeof COMPARISONS;
  value: number;
}

/** A condition on a session's summary: one comparison, or all or any of other conditions. */
export type SessionCondition = SessionPredicate | { all: readonly SessionCondition[] } | { any: readonly SessionCondition[] };

export interface SessionListQuery {
  /** Sessions that started at or after this time. */
  dateFrom?: Date;
  /** Sessions that started at or before this time. */
  dateTo?: Date;
  /** Sessions with a message from one of these distinct ids. */
  distinctIds?: readonly string[];
  /** Only these sessions (an empty list matches none). */
  sessionIds?: readonly string[];
  /** Conditions on the summary, all of which must hold. */
  having?: readonly SessionPredicate[];
  /** A further condition on the summary, which must hold too (filters combined with OR). */
  condition?: SessionCondition;
  /** Default start_time; ties are broken by session id. */
  orderBy?: SessionOrder;
  /** Default DESC. */
  direction?: 'ASC' | 'DESC';
  /** Default 50. */
  limit?: number;
  offset?: number;
}

/** The summary fields ClickHouse computes as 64-bit integers, which come back as strings. */
const INT64_FIELDS = [
  'duration',
  'active_milliseconds',
  'click_count',
  'keypress_count',
  'mouse_activity_count',
  'console_log_count',
  'console_warn_count',
  'console_error_count',
  'event_count',
  'size',
  'message_count',
] as const satisfies readonly (keyof SessionSummary)[];

type SummaryRecord = Omit<SessionSummary, (typeof INT64_FIELDS)[number]> & Record<(typeof INT64_FIELDS)[number], string>;

/**
 * The summary of the sessions whose live rows the inner query selects (`{projectId:Int64}` bound). The aggregate
 * is computed from the rows FINAL leaves, one per message however often it was stored. Ties within a session
 * (two messages with the same first time) are broken by the message uuid, so every `argMin` is deterministic.
 */
function summarySql(sessionCondition: string, having: string, order: string): string {
  // The inner query renames the columns (b_…) so that no aggregate's alias shadows the column it aggregates.
  return `SELECT
      session_id,
      argMin(b_distinct_id, (b_first_timestamp, b_uuid)) AS distinct_id,
      min(b_first_timestamp) AS start_time,
      max(b_last_timestamp) AS end_time,
      dateDiff('second', start_time, end_time) AS duration,
      sum(b_active_milliseconds) AS active_milliseconds,
      active_milliseconds / 1000 AS active_seconds,
      greatest(duration - active_seconds, 0) AS inactive_seconds,
      sum(b_click_count) AS click_count,
      sum(b_keypress_count) AS keypress_count,
      sum(b_mouse_activity_count) AS mouse_activity_count,
      sum(b_console_log_count) AS console_log_count,
      sum(b_console_warn_count) AS console_warn_count,
      sum(b_console_error_count) AS console_error_count,
      sum(b_event_count) AS event_count,
      argMin(b_first_url, (b_first_timestamp, b_uuid)) AS first_url,
      arraySlice(arrayDistinct(arrayFlatten(arrayMap(b -> b.3, arraySort(groupArray((b_first_timestamp, b_uuid, b_urls)))))), 1, 25) AS all_urls,
      sum(b_size) AS size,
      count() AS message_count,
      arraySort(groupUniqArray(b_distinct_id)) AS distinct_ids,
      argMin(b_snapshot_source, (b_first_timestamp, b_uuid)) AS snapshot_source,
      argMin(b_snapshot_library, (b_first_timestamp, b_uuid)) AS snapshot_library,
      max(b_retention_period_days) AS retention_period_days,
      min(b_expires_at) AS expires_at,
      max(b_inserted_at) AS last_ingested_at,
      if(mouse_activity_count + duration + console_error_count + console_log_count + console_warn_count = 0, 0,
         round((active_seconds + click_count + keypress_count + console_error_count)
               / (mouse_activity_count + duration + console_error_count + console_log_count + console_warn_count) * 100, 2)) AS activity_score
    FROM (
      SELECT session_id, batch_uuid AS b_uuid, distinct_id AS b_distinct_id, first_timestamp AS b_first_timestamp,
             last_timestamp AS b_last_timestamp, first_url AS b_first_url, urls AS b_urls, click_count AS b_click_count,
             keypress_count AS b_keypress_count, mouse_activity_count AS b_mouse_activity_count,
             active_milliseconds AS b_active_milliseconds, console_log_count AS b_console_log_count,
             console_warn_count AS b_console_warn_count, console_error_count AS b_console_error_count,
             event_count AS b_event_count, size AS b_size, snapshot_source AS b_snapshot_source,
             snapshot_library AS b_snapshot_library, retention_period_days AS b_retention_period_days,
             expires_at AS b_expires_at, inserted_at AS b_inserted_at
        FROM session_replay_summaries FINAL
       WHERE team_id = {projectId:Int64} AND expires_at > now() AND ${sessionCondition}
    )
    GROUP BY session_id
    ${having}
    ${order}`;
}

function summaryOf(record: SummaryRecord): SessionSummary {
  return {
    ...record,
    ...(Object.fromEntries(INT64_FIELDS.map((field) => [field, Number(record[field])])) as Record<(typeof INT64_FIELDS)[number], number>),
    start_time: isoTime(record.start_time),
    end_time: isoTime(record.end_time),
    expires_at: isoTime(record.expires_at),
    last_ingested_at: isoTime(record.last_ingested_at),
  };
}

/** ClickHouse's UTC text (`2026-01-01 00:00:00.005`, fractions optional) as ISO-8601 with milliseconds. */
function isoTime(text: string): string {
  return new Date(`${text.replace(' ', 'T')}Z`).toISOString();
}

/** A page of a project's live sessions with their summaries. Fetch `limit + 1` to learn whether a next page exists. */
export async function listSessionSummaries(ch: ClickHouse, projectId: number, query: SessionListQuery = {}): Promise<SessionSummary[]> {
  const params: ClickHouseParams = { projectId, limit: query.limit ?? 50, offset: query.offset ?? 0 };
  const sessionConditions: string[] = [];
  const having: string[] = [];
  if (query.sessionIds) {
    sessionConditions.push('session_id IN {sessionIds:Array(String)}');
    params.sessionIds = query.sessionIds;
  }
  // Sessions that started in the range have a message that did: the inner scan looks at those sessions only.
  if (query.dateFrom || query.dateTo) {
    const range: string[] = [];
    if (query.dateFrom) {
      range.push("first_timestamp >= {dateFrom:DateTime64(3, 'UTC')}");
      having.push("start_time >= {dateFrom:DateTime64(3, 'UTC')}");
      params.dateFrom = query.dateFrom;
    }
    if (query.dateTo) {
      range.push("first_timestamp <= {dateTo:DateTime64(3, 'UTC')}");
      having.push("start_time <= {dateTo:DateTime64(3, 'UTC')}");
      params.dateTo = query.dateTo;
    }
    sessionConditions.push(`session_id IN (SELECT session_id FROM session_replay_summaries WHERE team_id = {projectId:Int64} AND ${range.join(' AND ')})`);
  }
  if (query.distinctIds) {
    having.push('hasAny(distinct_ids, {distinctIds:Array(String)})');
    params.distinctIds = query.distinctIds;
  }
  let bound = 0;
  const compare = (predicate: SessionPredicate): string => {
    if (!(SESSION_METRICS as readonly string[]).includes(predicate.key) || !Object.hasOwn(COMPARISONS, predicate.operator)) {
      throw new RangeError(`Unknown session predicate ${JSON.stringify(predicate.key)} ${JSON.stringify(predicate.operator)}`);
    }
    const name = `having${bound++}`;
    params[name] = predicate.value;
    return `${predicate.key} ${COMPARISONS[predicate.operator]} {${name}:Float64}`;
  };
  const compile = (condition: SessionCondition): string => {
    if ('key' in condition) return compare(condition);
    const [parts, joiner, none] = 'all' in condition ? [condition.all, ' AND ', '1'] : [condition.any, ' OR ', '0'];
    return parts.length === 0 ? none : `(${parts.map(compile).join(joiner)})`;
  };
  for (const predicate of query.having ?? []) having.push(compare(predicate));
  if (query.condition) having.push(compile(query.condition));
  const orderBy = query.orderBy ?? 'start_time';
  if (orderBy !== 'start_time' && !(SESSION_METRICS as readonly string[]).includes(orderBy))
    throw new RangeError(`Unknown session order ${JSON.stringify(orderBy)}`);
  const direction = query.direction === 'ASC' ? 'ASC' : 'DESC';
  const records = await ch.query<SummaryRecord>(
    'replay.listSessions',
    summarySql(
      sessionConditions.length > 0 ? sessionConditions.join(' AND ') : '1',
      having.length > 0 ? `HAVING ${having.join(' AND ')}` : '',
      `ORDER BY ${orderBy} ${direction}, session_id ${direction} LIMIT {limit:UInt32} OFFSET {offset:UInt32}`,
    ),
    params,
  );
  return records.map(summaryOf);
}

/** One live session's summary, or null when the project has no live data for it. */
export async function getSessionSummary(ch: ClickHouse, projectId: number, sessionId: string): Promise<SessionSummary | null> {
  const [record] = await ch.query<SummaryRecord>('replay.getSession', summarySql('session_id = {sessionId:String}', '', ''), { projectId, sessionId });
  return record ? summaryOf(record) : null;
}

/** One stored `$snapshot` message of a session (a block of its recording). Times are ISO-8601 UTC. */
export interface SnapshotBlock {
  window_id: string;
  batch_uuid: string;
  first_timestamp: string;
  last_timestamp: string;
  event_count: number;
  /** Bytes of its JSONL lines. */
  size: number;
}

export interface SnapshotBlockWithData extends SnapshotBlock {
  /** JSONL lines `["<window_id>", <event>]`, each ending in a newline, events as the SDK sent them. */
  data: string;
}

type BlockRecord = Omit<SnapshotBlock, 'event_count' | 'size'> & { event_count: number; size: string; data?: string };

const BLOCK_COLUMNS = 'window_id, batch_uuid, first_timestamp, last_timestamp, event_count, size';

function blockOf(record: BlockRecord): SnapshotBlock {
  return {
    window_id: record.window_id,
    batch_uuid: record.batch_uuid,
    first_timestamp: isoTime(record.first_timestamp),
    last_timestamp: isoTime(record.last_timestamp),
    event_count: record.event_count,
    size: Number(record.size),
  };
}

function blocksSql(columns: string, windowId: string | undefined, page: string): string {
  return `SELECT ${columns} FROM session_replay_snapshots FINAL
     WHERE team_id = {projectId:Int64} AND session_id = {sessionId:String} AND expires_at > now()
       ${windowId === undefined ? '' : 'AND window_id = {windowId:String}'}
     ORDER BY first_timestamp, batch_uuid ${page}`;
}

/**
 * A live session's blocks in time order (by first event, then uuid), without their data: the order is stable, so
 * an index into it names a block for readSnapshotBlocks. Optionally one window's blocks only.
 */
export async function listSnapshotBlocks(ch: ClickHouse, projectId: number, sessionId: string, options: { windowId?: string } = {}): Promise<SnapshotBlock[]> {
  const records = await ch.query<BlockRecord>('replay.listBlocks', blocksSql(BLOCK_COLUMNS, options.windowId, ''), {
    projectId,
    sessionId,
    ...(options.windowId === undefined ? {} : { windowId: options.windowId }),
  });
  return records.map(blockOf);
}

/**
 * `limit` blocks (default 100) from position `offset` of listSnapshotBlocks' order, with their JSONL lines. The
 * lines of each block are in the order the SDK sent the events; concatenated, the blocks give the session.
 */
export async function readSnapshotBlocks(
  ch: ClickHouse,
  projectId: number,
  sessionId: string,
  options: { windowId?: string; offset?: number; limit?: number } = {},
): Promise<SnapshotBlockWithData[]> {
  const records = await ch.query<BlockRecord & { data: string }>(
    'replay.readBlocks',
    blocksSql(`${BLOCK_COLUMNS}, data`, options.windowId, 'LIMIT {limit:UInt32} OFFSET {offset:UInt32}'),
    {
      projectId,
      sessionId,
      limit: options.limit ?? 100,
      offset: options.offset ?? 0,
      ...(options.windowId === undefined ? {} : { windowId: options.windowId }),
    },
  );
  return records.map((record) => ({ ...blockOf(record), data: record.data }));
}

/**
 * Deletes sessions of a project from both tables (summaries first, so a session stops being listed before its blocks
 * go), waiting until the deletion is applied. Returns the ids that had data. A message of a deleted session that
 * arrives later (a recording still going on) starts it again.
 */
export async function deleteSessions(ch: ClickHouse, projectId: number, sessionIds: readonly string[]): Promise<string[]> {
  if (sessionIds.length === 0) return [];
  const found = await ch.query<{ session_id: string }>(
    'replay.sessionsToDelete',
    'SELECT DISTINCT session_id FROM session_replay_summaries WHERE team_id = {projectId:Int64} AND session_id IN {sessionIds:Array(String)} ORDER BY session_id',
    { projectId, sessionIds },
  );
  const ids = found.map((row) => row.session_id);
  if (ids.length === 0) return [];
  for (const table of ['session_replay_summaries', 'session_replay_snapshots']) {
    await ch.command(
      'replay.deleteSessions',
      `ALTER TABLE ${mutationTarget(ch, table)} DELETE WHERE team_id = {projectId:Int64} AND session_id IN {sessionIds:Array(String)} SETTINGS mutations_sync = 2`,
      { projectId, sessionIds: ids },
    );
  }
  return ids;
}

/** Deletes every session of a project that has a message from one of `distinctIds` (a person's recordings). */
export async function deleteSessionsOfDistinctIds(ch: ClickHouse, projectId: number, distinctIds: readonly string[]): Promise<string[]> {
  if (distinctIds.length === 0) return [];
  const sessions = await ch.query<{ session_id: string }>(
    'replay.sessionsOfDistinctIds',
    'SELECT DISTINCT session_id FROM session_replay_summaries WHERE team_id = {projectId:Int64} AND distinct_id IN {distinctIds:Array(String)}',
    { projectId, distinctIds },
  );
  return deleteSessions(
    ch,
    projectId,
    sessions.map((row) => row.session_id),
  );
}
