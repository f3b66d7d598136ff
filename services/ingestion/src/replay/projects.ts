/**
 * The project settings replay ingestion obeys (docs/replay.md), read through `@plover/accounts`, which owns the
 * `projects` table: whether the project records sessions at all (`session_recording_opt_in`) and how long it
 * keeps them (`session_recording_retention_period`).
 */
import { readSessionReplaySettings, type SessionReplaySettings } from '@plover/accounts';
import type { Sql } from '@plover/postgres';

export interface RecordingSettings {
  enabled: boolean;
  retentionDays: number;
}

const RETENTION_DAYS: Readonly<Record<SessionReplaySettings['session_recording_retention_period'], number>> = {
  '30d': 30,
  '90d': 90,
  '1y': 365,
  '5y': 5 * 365,
};

/** The settings of the projects among `projectIds` that exist; a project missing from the map records nothing. */
export async function recordingSettings(sql: Sql, projectIds: readonly number[]): Promise<Map<number, RecordingSettings>> {
  // One read per project: a batch holds the messages of few projects (the bus keys them by project and session).
  const read = await Promise.all(projectIds.map(async (id) => [id, await readSessionReplaySettings(sql, id)] as const));
  const settings = new Map<number, RecordingSettings>();
  for (const [id, project] of read) {
    if (project) settings.set(id, { enabled: project.session_recording_opt_in, retentionDays: RETENTION_DAYS[project.session_recording_retention_period] });
  }
  return settings;
}
