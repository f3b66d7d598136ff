/**
 * The project settings replay ingestion obeys (docs/replay.md): whether the project records sessions at all
 * (`projects.session_recording_opt_in`, PostHog's team setting of that name) and how long it keeps them
 * (`projects.session_recording_retention_period`: `30d`, `90d`, `1y` or `5y`).
 */
import { DEFAULT_RETENTION_DAYS } from '@plover/clickhouse';
import type { Sql } from '@plover/postgres';

export interface RecordingSettings {
  enabled: boolean;
  retentionDays: number;
}

const RETENTION_DAYS: Readonly<Record<string, number>> = { '30d': 30, '90d': 90, '1y': 365, '5y': 5 * 365 };

/** The settings of the projects among `teamIds` that exist; a project missing from the map records nothing. */
export async function recordingSettings(sql: Sql, teamIds: readonly number[]): Promise<Map<number, RecordingSettings>> {
  if (teamIds.length === 0) return new Map();
  const { rows } = await sql.query<{ id: number; session_recording_opt_in: boolean | null; session_recording_retention_period: string | null }>(
    'replay.recordingSettings',
    'SELECT id, session_recording_opt_in, session_recording_retention_period FROM projects WHERE id = ANY($1::int[])',
    [teamIds],
  );
  return new Map(
    rows.map((row) => [
      row.id,
      {
        enabled: row.session_recording_opt_in === true,
        retentionDays: RETENTION_DAYS[row.session_recording_retention_period ?? ''] ?? DEFAULT_RETENTION_DAYS,
      },
    ]),
  );
}
