import { ApiError } from '@plover/core';
import { addCohortMembers, cohortMemberCountSql, writeDefinitions } from '@plover/flag-store';
import { PersonReads } from '@plover/persons';
import { containsPattern, SqlBuilder, type Sql, type SqlExecutor } from '@plover/postgres';
import type { Page } from '../http/render';
import { accessLevelSql, type AccessLevel, type Caller } from '../shared/access-store';
import type { PropertyReferences } from './validate';

export const RESOURCE = 'feature_flag';

export interface FlagRow {
  id: number;
  key: string;
  name: string;
  filters: Record<string, unknown>;
  rollout_percentage: number | null;
  active: boolean;
  deleted: boolean;
  ensure_experience_continuity: boolean;
  is_remote_configuration: boolean;
  version: number;
  created_at: Date;
  updated_at: Date;
  created_by_id: number | null;
  created_by_email: string | null;
  created_by_uuid: string | null;
  created_by_distinct_id: string | null;
  created_by_first_name: string | null;
  user_access_level: AccessLevel;
}

/** A flag's fields as a create or update gives them (undefined: not given). */
export interface FlagFields {
  key?: string;
  name?: string;
  filters?: unknown;
  active?: boolean;
  deleted?: boolean;
  ensure_experience_continuity?: boolean;
  is_remote_configuration?: boolean;
  rollout_percentage?: number | null;
}

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
}

export interface CohortFields {
  name?: string;
  description?: string;
  filters?: unknown;
  deleted?: boolean;
}

const ACCESS = accessLevelSql(RESOURCE, 'f.id::text', 'f.created_by_id', '$1', '$2', '$3');
const callerParams = (caller: Caller): unknown[] => [caller.projectId, caller.userId, caller.admin];

/** Flags of project $1 with the caller's ($2, admin $3) access level, matching `where`. */
function selectFlags(where: string): string {
  return `SELECT f.id, f.key, f.name, f.filters, f.rollout_percentage, f.active, f.deleted, f.ensure_experience_continuity,
      f.is_remote_configuration, f.version, f.created_at, f.updated_at, f.created_by_id, u.email AS created_by_email,
      u.uuid AS created_by_uuid, u.distinct_id AS created_by_distinct_id, u.first_name AS created_by_first_name,
      ${ACCESS} AS user_access_level
    FROM feature_flags f LEFT JOIN users u ON u.id = f.created_by_id
   WHERE f.project_id = $1 AND ${where}`;
}

const COHORT_COLUMNS = `c.id, c.name, c.description, c.filters, c.is_static, c.deleted, c.version, c.created_at, c.created_by_id,
  ${cohortMemberCountSql('c.id')} AS count`;

function uniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  const cause = (error as { cause?: { code?: unknown } }).cause;
  return code === '23505' || cause?.code === '23505';
}

/**
 * Feature flags and cohorts. Every write runs in `write`: one transaction that bumps the project's definitions
 * version decide polls (flag-store's writeDefinitions).
 */
export class FlagsStore {
  constructor(private readonly sql: Sql) {}

  /** A write of the project's definitions; a flag key taken twice is a 400 on `key`. */
  async write<T>(projectId: number, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    try {
      return await writeDefinitions(this.sql, projectId, fn);
    } catch (error) {
      if (uniqueViolation(error)) throw ApiError.validation('There is already a feature flag with this key.', 'key', 'unique');
      throw error;
    }
  }

  /** The flag `where` ($4 = `value`) names, with the caller's level. */
  async flag(caller: Caller, value: number | string, where = 'f.id = $4', db: SqlExecutor = this.sql): Promise<FlagRow | undefined> {
    return (await db.query<FlagRow>('flags.get', selectFlags(where), [...callerParams(caller), value])).rows[0];
  }

  /** One page of the flags the caller may see, newest first, key or name containing `search`; with their count. */
  async listFlags(caller: Caller, filter: { search?: string; active?: boolean }, page: Page): Promise<{ rows: FlagRow[]; count: number }> {
    const params = new SqlBuilder(callerParams(caller));
    let where = `NOT f.deleted AND ${ACCESS} <> 'none'`;
    if (filter.search !== undefined) {
      const pattern = params.bind(containsPattern(filter.search));
      where += ` AND (f.key ILIKE ${pattern} OR f.name ILIKE ${pattern})`;
    }
    if (filter.active !== undefined) where += ` AND f.active = ${params.bind(filter.active)}`;
    const [rows, count] = await Promise.all([
      this.sql.query<FlagRow>('flags.list', `${selectFlags(where)} ORDER BY f.id DESC LIMIT ${page.limit} OFFSET ${page.offset}`, params.params),
      this.sql.query<{ count: number }>('flags.count', `SELECT count(*) AS count FROM feature_flags f WHERE f.project_id = $1 AND ${where}`, params.params),
    ]);
    return { rows: rows.rows, count: Number(count.rows[0]?.count ?? 0) };
  }

  async createFlag(tx: SqlExecutor, caller: Caller, fields: FlagFields & { key: string; filters: unknown }): Promise<number> {
    const inserted = await tx.query<{ id: number }>(
      'flags.create',
      `INSERT INTO feature_flags (project_id, key, name, filters, rollout_percentage, active, ensure_experience_continuity,
                                  is_remote_configuration, created_by_id, last_modified_by_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING id`,
      [
        caller.projectId,
        fields.key,
        fields.name ?? '',
        JSON.stringify(fields.filters),
        fields.rollout_percentage ?? null,
        fields.active ?? true,
        fields.ensure_experience_continuity ?? false,
        fields.is_remote_configuration ?? false,
        caller.userId,
      ],
    );
    return inserted.rows[0]!.id;
  }

  /** Sets the given fields of flag `id` (rollout_percentage also to null when given as null) and bumps its version. */
  async updateFlag(tx: SqlExecutor, caller: Caller, id: number, fields: FlagFields): Promise<void> {
    await tx.query(
      'flags.update',
      `UPDATE feature_flags SET
         key = COALESCE($3, key), name = COALESCE($4, name), filters = COALESCE($5::jsonb, filters),
         active = COALESCE($6, active), deleted = COALESCE($7, deleted),
         ensure_experience_continuity = COALESCE($8, ensure_experience_continuity),
         rollout_percentage = CASE WHEN $9::boolean THEN $10 ELSE rollout_percentage END,
         is_remote_configuration = COALESCE($11, is_remote_configuration),
         version = version + 1, last_modified_by_id = $12, updated_at = now()
       WHERE project_id = $1 AND id = $2`,
      [
        caller.projectId,
        id,
        fields.key ?? null,
        fields.name ?? null,
        fields.filters === undefined ? null : JSON.stringify(fields.filters),
        fields.active ?? null,
        fields.deleted ?? null,
        fields.ensure_experience_continuity ?? null,
        'rollout_percentage' in fields,
        fields.rollout_percentage ?? null,
        fields.is_remote_configuration ?? null,
        caller.userId,
      ],
    );
  }

  /** 400 unless every cohort the filters reference exists (and is not `exclude`, the cohort being written). */
  async checkCohortRefs(tx: SqlExecutor, projectId: number, refs: PropertyReferences, exclude?: number): Promise<void> {
    if (refs.cohortIds.size === 0) return;
    const ids = [...refs.cohortIds];
    if (exclude !== undefined && refs.cohortIds.has(exclude)) throw ApiError.validation('A cohort cannot contain itself.', 'filters');
    const found = await tx.query<{ id: number }>('flags.cohortRefs', 'SELECT id FROM cohorts WHERE project_id = $1 AND id = ANY($2::int[]) AND NOT deleted', [
      projectId,
      ids,
    ]);
    const existing = new Set(found.rows.map((row) => row.id));
    const missing = ids.find((id) => !existing.has(id));
    if (missing !== undefined) throw ApiError.validation(`Cohort with id ${missing} does not exist.`, 'filters');
  }

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
         deleted = COALESCE($6, deleted), version = version + 1, updated_at = now() WHERE project_id = $1 AND id = $2`,
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
