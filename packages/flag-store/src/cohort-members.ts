/**
 * `cohort_people`, the members of static cohorts: added by the management API (a CSV upload, or persons added
 * by hand), counted in its cohort listings, and read by decide to evaluate a flag on a static cohort.
 */
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
  return `(SELECT count(*) FROM cohort_people p WHERE p.cohort_id = ${cohortIdExpr})`;
}

/** Which of `cohortIds` the person is a member of. */
export async function staticCohortMemberships(sql: SqlExecutor, personId: number, cohortIds: readonly number[]): Promise<Set<number>> {
  if (cohortIds.length === 0) return new Set();
  const result = await sql.query<{ cohort_id: number }>(
    'cohorts.memberships',
    'SELECT cohort_id FROM cohort_people WHERE person_id = $1 AND cohort_id = ANY($2::int[])',
    [personId, cohortIds],
  );
  return new Set(result.rows.map((row) => row.cohort_id));
}
