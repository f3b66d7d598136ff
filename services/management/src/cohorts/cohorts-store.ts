import { addCohortMembers, cohortMemberCountSql } from '@plover/flag-store';
import { PersonReads } from '@plover/persons';
import type { SqlExecutor } from '@plover/postgres';
import type { Page } from '../http/render';
import type { Caller } from '../shared/access-store';
import { DefinitionsStore } from '../shared/definitions-store';

export interface CohortRow {
  id: number;
  name: string;
  description: string;
  filters: Record<string, unknown>;
  is_static: boolean;
  deleted: boolean;
  version: number;
  created_at: Date;
  created_by_id: number | null;
  count: number;
  is_calculating: boolean;
  last_calculation: Date | null;
  errors_calculating: number;
}

export interface CohortFields {
  name?: string;
  description?: string;
  filters?: unknown;
  deleted?: boolean;
}

const COHORT_COLUMNS = `c.id, c.name, c.description, c.filters, c.is_static, c.deleted, c.version, c.created_at, c.created_by_id,
  ${cohortMemberCountSql('c.id')} AS count, c.is_calculating, c.last_calculation, c.errors_calculating`;

/** Cohorts (their stored members in `cohort_people`: static ones', and dynamic ones' as calculated); writes run inside `write`. */
export class CohortsStore extends DefinitionsStore {
  async cohort(projectId: number, id: number, db: SqlExecutor = this.sql): Promise<CohortRow | undefined> {
    const result = await db.query<CohortRow>('cohorts.get', `SELECT ${COHORT_COLUMNS} FROM cohorts c WHERE c.project_id = $1 AND c.id = $2`, [projectId, id]);
    return result.rows[0];
  }

  /** One page of the project's cohorts, newest first, with their count. */
  async listCohorts(projectId: number, page: Page): Promise<{ rows: CohortRow[]; count: number }> {
    const [rows, count] = await Promise.all([
      this.sql.query<CohortRow>(
        'cohorts.list',
        `SELECT ${COHORT_COLUMNS} FROM cohorts c WHERE c.project_id = $1 AND NOT c.deleted ORDER BY c.id DESC LIMIT $2 OFFSET $3`,
        [projectId, page.limit, page.offset],
      ),
      this.sql.query<{ count: number }>('cohorts.count', 'SELECT count(*) AS count FROM cohorts WHERE project_id = $1 AND NOT deleted', [projectId]),
    ]);
    return { rows: rows.rows, count: Number(count.rows[0]?.count ?? 0) };
  }

  async createCohort(tx: SqlExecutor, caller: Caller, fields: CohortFields & { filters: unknown; isStatic: boolean }): Promise<number> {
    const inserted = await tx.query<{ id: number }>(
      'cohorts.create',
      `INSERT INTO cohorts (project_id, name, description, filters, is_static, created_by_id) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
      [caller.projectId, fields.name ?? '', fields.description ?? '', JSON.stringify(fields.filters), fields.isStatic, caller.userId],
    );
    return inserted.rows[0]!.id;
  }

  async updateCohort(tx: SqlExecutor, projectId: number, id: number, fields: CohortFields): Promise<void> {
    await tx.query(
      'cohorts.update',
      `UPDATE cohorts SET name = COALESCE($3, name), description = COALESCE($4, description), filters = COALESCE($5::jsonb, filters),
         deleted = COALESCE($6, deleted), version = version + 1, updated_at = now(),
         errors_calculating = CASE WHEN $5::jsonb IS NULL THEN errors_calculating ELSE 0 END
       WHERE project_id = $1 AND id = $2`,
      [
        projectId,
        id,
        fields.name ?? null,
        fields.description ?? null,
        fields.filters === undefined ? null : JSON.stringify(fields.filters),
        fields.deleted ?? null,
      ],
    );
  }

  /** Adds the persons of the distinct ids (unknown ones skipped) to a static cohort. */
  async addMembers(tx: SqlExecutor, projectId: number, cohortId: number, distinctIds: readonly string[]): Promise<void> {
    const persons = await new PersonReads(tx).personIdsByDistinctIds(projectId, distinctIds);
    await addCohortMembers(tx, cohortId, [...persons.values()]);
  }
}
