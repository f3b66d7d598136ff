import { readSessionReplaySettings, type SessionReplaySettings } from '@plover/accounts';
import type { Cohort, FeatureFlag } from '@plover/flags';
import { GroupStore } from '@plover/persons';
import type { Sql, SqlExecutor } from '@plover/postgres';
import { ACTIVE_SURVEY } from './surveys';

/**
 * The read side of `writeDefinitions`: what decide evaluates flags with, and the version that tells it when
 * to read again.
 */
export interface ProjectDefinitions {
  flags: FeatureFlag[];
  cohorts: Cohort[];
  /** Group type index (as a string) → group type name. */
  groupTypeMapping: Record<string, string>;
  /** The project's IANA timezone: naive and relative dates in filters are read in it. */
  timezone: string;
  /** The project has a launched, unfinished survey: decide then answers `surveys: true`. */
  hasActiveSurveys: boolean;
  /** What decide's remote config tells posthog-js's recorder; undefined for a project that does not exist. */
  replaySettings: SessionReplaySettings | undefined;
}

interface FlagRow {
  id: number;
  key: string;
  name: string;
  filters: FeatureFlag['filters'];
  rollout_percentage: number | null;
  active: boolean;
  ensure_experience_continuity: boolean;
  version: number;
}

interface CohortRow {
  id: number;
  name: string;
  filters: Cohort['filters'];
  is_static: boolean;
}

/**
 * A project's non-deleted flags and cohorts, its group types (from packages/persons), timezone, whether it has an
 * active survey, and its session replay settings (from packages/accounts; written inside `writeDefinitions`).
 */
export async function loadDefinitions(sql: Sql, projectId: number): Promise<ProjectDefinitions> {
  const [flags, cohorts, groupTypes, project, surveys, replaySettings] = await Promise.all([
    sql.query<FlagRow>(
      'decide.loadFlags',
      `SELECT id, key, name, filters, rollout_percentage, active, ensure_experience_continuity, version
         FROM feature_flags WHERE project_id = $1 AND NOT deleted ORDER BY id`,
      [projectId],
    ),
    sql.query<CohortRow>('decide.loadCohorts', 'SELECT id, name, filters, is_static FROM cohorts WHERE project_id = $1 AND NOT deleted ORDER BY id', [
      projectId,
    ]),
    new GroupStore(sql).listGroupTypes(projectId),
    sql.query<{ timezone: string }>('decide.loadProject', 'SELECT timezone FROM projects WHERE id = $1', [projectId]),
    sql.query('decide.activeSurveys', `SELECT 1 FROM surveys s WHERE s.project_id = $1 AND ${ACTIVE_SURVEY} LIMIT 1`, [projectId]),
    readSessionReplaySettings(sql, projectId),
  ]);
  return {
    flags: flags.rows.map((row) => ({
      id: row.id,
      team_id: projectId,
      key: row.key,
      name: row.name,
      filters: row.filters,
      rollout_percentage: row.rollout_percentage,
      active: row.active,
      deleted: false,
      ensure_experience_continuity: row.ensure_experience_continuity,
      version: row.version,
    })),
    cohorts: cohorts.rows.map((row) => ({ id: row.id, is_static: row.is_static, deleted: false, filters: row.filters })),
    groupTypeMapping: Object.fromEntries(groupTypes.map((type) => [String(type.groupTypeIndex), type.groupType])),
    timezone: project.rows[0]?.timezone ?? 'UTC',
    hasActiveSurveys: surveys.rowCount > 0,
    replaySettings,
  };
}

/**
 * Current definitions versions of the given projects: the flag/cohort version (0 for a project never changed)
 * and the number of group types, which ingestion adds without bumping the version. Counting group types here
 * (a table packages/persons writes) keeps the poll of every cached project to one statement.
 */
export async function definitionVersions(sql: SqlExecutor, projectIds: readonly number[]): Promise<Map<number, string>> {
  const result = await sql.query<{ project_id: number; version: number | null; group_types: number }>(
    'decide.definitionVersions',
    `SELECT p.id AS project_id, v.version,
            (SELECT count(*) FROM group_type_mappings g WHERE g.project_id = p.id) AS group_types
       FROM projects p LEFT JOIN flag_definition_versions v ON v.project_id = p.id
      WHERE p.id = ANY($1::int[])`,
    [projectIds],
  );
  return new Map(result.rows.map((row) => [row.project_id, `${Number(row.version ?? 0)}:${Number(row.group_types)}`]));
}
