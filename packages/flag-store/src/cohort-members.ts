/**
 * `cohort_people`, the stored members of cohorts: a static cohort's (added by the management API, a CSV upload
 * or persons added by hand, at version 0) and a dynamic cohort's calculated ones (one version per calculation,
 * docs/cohorts.md); counted in the cohort listings, and read by decide to evaluate a flag on a static cohort.
 */
import { cohortPeopleSql } from '@plover/persons';
import type { SqlExecutor } from '@plover/postgres';

/** Adds persons to a static cohort; persons already in it stay as they are. */
export async function addCohortMembers(tx: SqlExecutor, cohortId: number, personIds: readonly number[]): Promise<void> {
  await tx.query('cohorts.addMembers', 'INSERT INTO cohort_people (cohort_id, person_id) SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING', [
    cohortId,
    [...new Set(personIds)],
  ]);
}

/** SQL expression: the member count of the cohort whose id is `cohortIdExpr`, for a listing's select list. */
export function cohortMemberCountSql(cohortIdExpr: string): string {
  return `(SELECT count(*) FROM (${cohortPeopleSql(cohortIdExpr)}) members)`;
}

/** Which of `cohortIds` the person is a member of. */
export async function staticCohortMemberships(sql: SqlExecutor, personId: number, cohortIds: readonly number[]): Promise<Set<number>> {
  if (cohortIds.length === 0) return new Set();
  const result = await sql.query<{ cohort_id: number }>(
    'cohorts.memberships',
    `SELECT cp.cohort_id FROM cohort_people cp JOIN cohorts c ON c.id = cp.cohort_id AND cp.version = c.people_version
      WHERE cp.person_id = $1 AND cp.cohort_id = ANY($2::int[])`,
    [personId, cohortIds],
  );
  return new Set(result.rows.map((row) => row.cohort_id));
}
