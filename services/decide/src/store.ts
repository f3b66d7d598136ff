/**
 * Decide's own reads and writes: experience-continuity overrides, and the public early access features and
 * surveys. Definitions and static cohort memberships are read through `@plover/flag-store` (which also writes
 * them), persons and groups through `@plover/persons`.
 */
import { ACTIVE_SURVEY, selectSurveys, surveyFields, type SurveyRow } from '@plover/flag-store';
import { PersonReads } from '@plover/persons';
import type { SqlExecutor } from '@plover/postgres';

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
  const persons = await new PersonReads(sql).personIdsByDistinctIds(projectId, anonDistinctId ? [distinctId, anonDistinctId] : [distinctId]);
  if (persons.size === 0) return {};
  const personIds = [...new Set(persons.values())];
  if (anonDistinctId && continuityFlagKeys.length > 0) {
    await sql.query(
      'decide.writeHashKeyOverrides',
      `INSERT INTO feature_flag_hash_key_overrides (project_id, person_id, feature_flag_key, hash_key)
       SELECT $1, p.id, k.key, $3 FROM unnest($2::bigint[]) AS p(id), unnest($4::text[]) AS k(key)
       ON CONFLICT DO NOTHING`,
      [projectId, personIds, anonDistinctId, continuityFlagKeys],
    );
  }
  const result = await sql.query<{ person_id: number; feature_flag_key: string; hash_key: string }>(
    'decide.readHashKeyOverrides',
    'SELECT person_id, feature_flag_key, hash_key FROM feature_flag_hash_key_overrides WHERE project_id = $1 AND person_id = ANY($2::bigint[])',
    [projectId, personIds],
  );
  const own = persons.get(distinctId);
  const overrides: Record<string, string> = {};
  for (const row of [...result.rows].sort((a, b) => Number(a.person_id === own) - Number(b.person_id === own))) overrides[row.feature_flag_key] = row.hash_key;
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
