/**
 * The `ingestion_warnings` table (migrations/002_ingestion_warnings.sql): what ingestion writes, and the listing
 * the management API serves. Reads use FINAL, since a redelivered message raises its warnings again.
 */
import type { ClickHouse } from './port';

/** One warning as ingestion writes it; `details` is JSON text, date-times as in EventRow. */
export type IngestionWarningRow = {
  team_id: number;
  type: string;
  details: string;
  timestamp: string;
  event_uuid: string;
};

export async function insertIngestionWarnings(ch: ClickHouse, rows: readonly IngestionWarningRow[]): Promise<void> {
  await ch.insert('ingestion_warnings', rows);
}

/** A project's warnings, newest first, each once. */
export async function listIngestionWarnings(
  ch: ClickHouse,
  projectId: number,
  options: { limit?: number; offset?: number } = {},
): Promise<IngestionWarningRow[]> {
  const rows = await ch.query<Omit<IngestionWarningRow, 'team_id'> & { team_id: string }>(
    'ingestionWarnings.list',
    `SELECT team_id, type, details, timestamp, event_uuid FROM ingestion_warnings FINAL
      WHERE team_id = {projectId:Int64}
      ORDER BY timestamp DESC, type, event_uuid
      LIMIT {limit:UInt32} OFFSET {offset:UInt32}`,
    { projectId, limit: options.limit ?? 100, offset: options.offset ?? 0 },
  );
  return rows.map((row) => ({ ...row, team_id: Number(row.team_id) }));
}
