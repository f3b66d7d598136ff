/**
 * Reads of flag definitions and of the stored data a flag evaluation needs. Writes belong to the management
 * API (services/management/src/feature-flags) through `@plover/flag-store` `writeDefinitions`, which bumps
 * `flag_definition_versions` in the same transaction and signals this process.
 */
import { selectSurveys, surveyFields, type SurveyRow } from '@plover/flag-store';
import type { Cohort, FeatureFlag, Properties } from '@plover/flags';
import type { SqlExecutor } from '@plover/postgres';

export interface ProjectDefinitions {
  flags: FeatureFlag[];
  cohorts: Cohort[];
  /** Group type index (as a string) → group type name. */
  groupTypeMapping: Record<string, string>;
  /** The project's IANA timezone: naive and relative dates in filters are read in it. */
  timezone: string;
  /** The project has a launched, unfinished survey: decide then answers `surveys: true`. */
  hasActiveSurveys: boolean;
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

/** A launched, unfinished survey (table alias `s`): decide serves only these. */
const ACTIVE_SURVEY = 'NOT s.deleted AND NOT s.archived AND s.start_date IS NOT NULL AND (s.end_date IS NULL OR s.end_date > now())';

export async function loadDefinitions(sql: SqlExecutor, projectId: number): Promise<ProjectDefinitions> {
  const [flags, cohorts, groupTypes, project, surveys] = await Promise.all([
    sql.query<FlagRow>(
      'decide.loadFlags',
      `SELECT id, key, name, filters, rollout_percentage, active, ensure_experience_continuity, version
         FROM feature_flags WHERE project_id = $1 AND NOT deleted ORDER BY id`,
      [projectId],
    ),
    sql.query<CohortRow>('decide.loadCohorts', 'SELECT id, name, filters, is_static FROM cohorts WHERE project_id = $1 AND NOT deleted ORDER BY id', [
      projectId,
    ]),
    sql.query<{ group_type: string; group_type_index: number }>(
      'decide.loadGroupTypes',
      'SELECT group_type, group_type_index FROM group_type_mappings WHERE project_id = $1 ORDER BY group_type_index',
      [projectId],
    ),
    sql.query<{ timezone: string }>('decide.loadProject', 'SELECT timezone FROM projects WHERE id = $1', [projectId]),
    sql.query('decide.activeSurveys', `SELECT 1 FROM surveys s WHERE s.project_id = $1 AND ${ACTIVE_SURVEY} LIMIT 1`, [projectId]),
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
    groupTypeMapping: Object.fromEntries(groupTypes.rows.map((row) => [String(row.group_type_index), row.group_type])),
    timezone: project.rows[0]?.timezone ?? 'UTC',
    hasActiveSurveys: surveys.rowCount > 0,
  };
}

/**
 * Current definitions versions of the given projects: the flag/cohort version (0 for a project never changed)
 * and the number of group types, which ingestion adds without bumping the version.
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

export interface PersonRow {
  id: number;
  properties: Properties;
}

export async function findPerson(sql: SqlExecutor, projectId: number, distinctId: string): Promise<PersonRow | undefined> {
  const result = await sql.query<PersonRow>(
    'decide.findPerson',
    `SELECT p.id, p.properties FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
      WHERE d.project_id = $1 AND d.distinct_id = $2`,
    [projectId, distinctId],
  );
  return result.rows[0];
}

export async function findGroups(sql: SqlExecutor, projectId: number, groups: readonly { index: number; key: string }[]): Promise<Map<string, Properties>> {
  if (groups.length === 0) return new Map();
  const result = await sql.query<{ group_type_index: number; group_key: string; group_properties: Properties }>(
    'decide.findGroups',
    `SELECT group_type_index, group_key, group_properties FROM groups
      WHERE project_id = $1 AND group_type_index = ANY($2::smallint[]) AND group_key = ANY($3::text[])`,
    [projectId, groups.map((group) => group.index), groups.map((group) => group.key)],
  );
  return new Map(result.rows.map((row) => [`${row.group_type_index}:${row.group_key}`, row.group_properties]));
}

export async function staticCohortMemberships(sql: SqlExecutor, personId: number, cohortIds: readonly number[]): Promise<Set<number>> {
  if (cohortIds.length === 0) return new Set();
  const result = await sql.query<{ cohort_id: number }>(
    'decide.staticCohorts',
    'SELECT cohort_id FROM cohort_people WHERE person_id = $1 AND cohort_id = ANY($2::int[])',
    [personId, cohortIds],
  );
  return new Set(result.rows.map((row) => row.cohort_id));
}

/**
 * Continuity write + read (PostHog's hash-key overrides): first override wins; the distinct id's own person has
 * priority.
 */
export async function hashKeyOverrides(
  sql: SqlExecutor,
  projectId: number,
  distinctId: string,
  anonDistinctId: string | null,
  continuityFlagKeys: readonly string[],
): Promise<Record<string, string>> {
  const ids = anonDistinctId ? [distinctId, anonDistinctId] : [distinctId];
  if (anonDistinctId && continuityFlagKeys.length > 0) {
    await sql.query(
      'decide.writeHashKeyOverrides',
      `INSERT INTO feature_flag_hash_key_overrides (project_id, person_id, feature_flag_key, hash_key)
       SELECT $1, d.person_id, k.key, $3 FROM person_distinct_ids d, unnest($4::text[]) AS k(key)
        WHERE d.project_id = $1 AND d.distinct_id = ANY($2::text[])
       ON CONFLICT DO NOTHING`,
      [projectId, ids, anonDistinctId, continuityFlagKeys],
    );
  }
  const result = await sql.query<{ feature_flag_key: string; hash_key: string; own: boolean }>(
    'decide.readHashKeyOverrides',
    `SELECT o.feature_flag_key, o.hash_key, d.distinct_id = $3 AS own
       FROM person_distinct_ids d JOIN feature_flag_hash_key_overrides o ON o.project_id = d.project_id AND o.person_id = d.person_id
      WHERE d.project_id = $1 AND d.distinct_id = ANY($2::text[])`,
    [projectId, ids, distinctId],
  );
  const overrides: Record<string, string> = {};
  for (const row of [...result.rows].sort((a, b) => Number(a.own) - Number(b.own))) overrides[row.feature_flag_key] = row.hash_key;
  return overrides;
}

/** `GET /api/early_access_features/?token=` (posthog-js `getEarlyAccessFeatures`). */
export async function publicEarlyAccessFeatures(sql: SqlExecutor, projectId: number): Promise<Record<string, unknown>[]> {
  const result = await sql.query<{ id: string; name: string; description: string; stage: string; documentation_url: string; flag_key: string | null }>(
    'decide.earlyAccessFeatures',
    `SELECT e.id, e.name, e.description, e.stage, e.documentation_url, f.key AS flag_key
       FROM early_access_features e LEFT JOIN feature_flags f ON f.id = e.feature_flag_id AND NOT f.deleted
      WHERE e.project_id = $1 AND NOT e.deleted AND e.stage <> 'archived' ORDER BY e.created_at`,
    [projectId],
  );
  return result.rows.map((row) => ({
    id: row.id,
    name: row.name,
    description: row.description,
    stage: row.stage,
    documentationUrl: row.documentation_url,
    flagKey: row.flag_key,
  }));
}

/** `GET /api/surveys/?token=` (posthog-js surveys): launched, unfinished, unarchived surveys. */
export async function publicSurveys(sql: SqlExecutor, projectId: number): Promise<Record<string, unknown>[]> {
  const result = await sql.query<SurveyRow>('decide.surveys', `${selectSurveys(ACTIVE_SURVEY)} ORDER BY s.created_at`, [projectId]);
  return result.rows.map((row) => ({ ...surveyFields(row), linked_flag_key: row.linked_flag_key, targeting_flag_key: row.targeting_flag_key }));
}
