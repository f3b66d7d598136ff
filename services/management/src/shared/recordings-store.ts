import {
  deleteSessions,
  deleteSessionsOfDistinctIds,
  getSessionSummary,
  listSessionSummaries,
  listSnapshotBlocks,
  readSnapshotBlocks,
  type ClickHouse,
  type SessionListQuery,
  type SessionSummary,
  type SnapshotBlock,
  type SnapshotBlockWithData,
} from '@plover/clickhouse';
import { PersonReads, type Person } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import type { Caller } from './access-store';

/** Who has watched a recording: the caller, and the other users by email. */
export interface RecordingViews {
  viewed: boolean;
  viewers: string[];
}

/**
 * Session recordings of a project: their summaries and blocks in ClickHouse (the replay store of
 * @plover/clickhouse), their persons, and in Postgres which users watched them (`session_recording_views`).
 */
export class RecordingsStore {
  private readonly persons: PersonReads;

  constructor(
    private readonly sql: Sql,
    private readonly clickhouse: ClickHouse,
  ) {
    this.persons = new PersonReads(sql);
  }

  list(projectId: number, query: SessionListQuery): Promise<SessionSummary[]> {
    return listSessionSummaries(this.clickhouse, projectId, query);
  }

  get(projectId: number, sessionId: string): Promise<SessionSummary | null> {
    return getSessionSummary(this.clickhouse, projectId, sessionId);
  }

  blocks(projectId: number, sessionId: string): Promise<SnapshotBlock[]> {
    return listSnapshotBlocks(this.clickhouse, projectId, sessionId);
  }

  readBlocks(projectId: number, sessionId: string, offset: number, limit: number): Promise<SnapshotBlockWithData[]> {
    return readSnapshotBlocks(this.clickhouse, projectId, sessionId, { offset, limit });
  }

  /** Deletes the recording; false when there was none. */
  async delete(projectId: number, sessionId: string): Promise<boolean> {
    return (await deleteSessions(this.clickhouse, projectId, [sessionId])).length > 0;
  }

  /** Deletes every recording with data from one of the distinct ids (a person's recordings). */
  async deleteOfDistinctIds(projectId: number, distinctIds: readonly string[]): Promise<void> {
    await deleteSessionsOfDistinctIds(this.clickhouse, projectId, distinctIds);
  }

  /** The persons of the distinct ids that have one, by distinct id. */
  personsOf(projectId: number, distinctIds: readonly string[]): Promise<Map<string, Person>> {
    return this.persons.byDistinctIds(projectId, distinctIds);
  }

  /** The distinct ids of the person with this uuid, or undefined when there is none. */
  async distinctIdsOfPerson(projectId: number, uuid: string): Promise<string[] | undefined> {
    return (await this.persons.get(projectId, uuid))?.distinctIds;
  }

  /** For each session, whether the caller watched it and which other users did. */
  async views(caller: Caller, sessionIds: readonly string[]): Promise<Map<string, RecordingViews>> {
    const views = new Map(sessionIds.map((id) => [id, { viewed: false, viewers: [] as string[] }]));
    if (sessionIds.length === 0) return views;
    const rows = await this.sql.query<{ session_id: string; user_id: number; email: string }>(
      'management.recordingViews',
      `SELECT v.session_id, v.user_id, u.email FROM session_recording_views v JOIN users u ON u.id = v.user_id
        WHERE v.project_id = $1 AND v.session_id = ANY($2::text[]) ORDER BY v.viewed_at, u.email`,
      [caller.projectId, sessionIds],
    );
    for (const row of rows.rows) {
      const view = views.get(row.session_id)!;
      if (row.user_id === caller.userId) view.viewed = true;
      else view.viewers.push(row.email);
    }
    return views;
  }

  async markViewed(caller: Caller, sessionId: string): Promise<void> {
    await this.sql.query(
      'management.markViewed',
      `INSERT INTO session_recording_views (project_id, user_id, session_id) VALUES ($1, $2, $3)
       ON CONFLICT (project_id, user_id, session_id) DO UPDATE SET viewed_at = now()`,
      [caller.projectId, caller.userId, sessionId],
    );
  }
}
