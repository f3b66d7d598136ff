import { containsPattern, SqlBuilder, type SqlExecutor } from '@plover/postgres';
import { accessLevelSql, type AccessLevel, type Caller } from './access-store';
import { DefinitionsStore } from './definitions-store';

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
  /** The live experiments running on the flag, by id. */
  experiment_set: number[];
}

/** A flag's fields as a create or update gives them (undefined: not given). */
export interface FlagFields {
  key?: string;
  name?: string | null;
  filters?: unknown;
  active?: boolean;
  deleted?: boolean;
  ensure_experience_continuity?: boolean;
  is_remote_configuration?: boolean;
  rollout_percentage?: number | null;
}

const ACCESS = accessLevelSql(RESOURCE, 'f.id::text', 'f.created_by_id', '$1', '$2', '$3');
const callerParams = (caller: Caller): unknown[] => [caller.projectId, caller.userId, caller.admin];

/** Flags of project $1 with the caller's ($2, admin $3) access level, matching `where`. */
function selectFlags(where: string): string {
  return `SELECT f.id, f.key, f.name, f.filters, f.rollout_percentage, f.active, f.deleted, f.ensure_experience_continuity,
      f.is_remote_configuration, f.version, f.created_at, f.updated_at, f.created_by_id, u.email AS created_by_email,
      u.uuid AS created_by_uuid, u.distinct_id AS created_by_distinct_id, u.first_name AS created_by_first_name,
      ${ACCESS} AS user_access_level,
      ARRAY(SELECT x.id FROM experiments x WHERE x.feature_flag_id = f.id AND NOT x.deleted ORDER BY x.id) AS experiment_set
    FROM feature_flags f LEFT JOIN users u ON u.id = f.created_by_id
   WHERE f.project_id = $1 AND ${where}`;
}

/** Feature flags: reads with the caller's access level, and their writes (inside `write`). */
export class FlagsStore extends DefinitionsStore {
  /** The flag `where` ($4 = `value`) names, with the caller's level. */
  async flag(caller: Caller, value: number | string, where = 'f.id = $4', db: SqlExecutor = this.sql): Promise<FlagRow | undefined> {
    return (await db.query<FlagRow>('flags.get', selectFlags(where), [...callerParams(caller), value])).rows[0];
  }

  /** One page of the flags the caller may see, newest first, key or name containing `search`; with their count. */
  async listFlags(
    caller: Caller,
    filter: { search?: string; active?: boolean },
    page: { limit: number; offset: number },
  ): Promise<{ rows: FlagRow[]; count: number }> {
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

  /** Whether a live experiment runs on flag `id` (such a flag cannot be deleted). */
  async usedByExperiment(tx: SqlExecutor, projectId: number, id: number): Promise<boolean> {
    const found = await tx.query('flags.experiments', 'SELECT 1 FROM experiments WHERE project_id = $1 AND feature_flag_id = $2 AND NOT deleted LIMIT 1', [
      projectId,
      id,
    ]);
    return found.rows.length > 0;
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
}
