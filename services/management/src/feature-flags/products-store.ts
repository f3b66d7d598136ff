import { ApiError } from '@plover/core';
import { selectSurveys, type SurveyRow } from '@plover/flag-store';
import type { Sql, SqlExecutor } from '@plover/postgres';
import type { Page } from '../http/render';

export interface FeatureRow {
  id: string;
  name: string;
  description: string;
  stage: string;
  documentation_url: string;
  created_at: Date;
  flag_id: number | null;
  flag_key: string | null;
  flag_filters: unknown;
}

export interface FeatureFields {
  name?: string;
  description?: string;
  stage?: string;
  documentation_url?: string;
  deleted?: boolean;
}

export interface SurveyFields {
  name?: string;
  description?: string;
  type?: string;
  questions?: unknown[];
  appearance?: Record<string, unknown> | null;
  conditions?: Record<string, unknown> | null;
  start_date?: string | null;
  end_date?: string | null;
  archived?: boolean;
  deleted?: boolean;
}

const FEATURE_SELECT = `SELECT e.id, e.name, e.description, e.stage, e.documentation_url, e.created_at, f.id AS flag_id, f.key AS flag_key,
    f.filters AS flag_filters FROM early_access_features e LEFT JOIN feature_flags f ON f.id = e.feature_flag_id`;
const UUID = /^[0-9a-f-]{36}$/i;

/** Early access features and surveys, the products built on flags; writes run inside FlagsStore.write. */
export class ProductsStore {
  constructor(private readonly sql: Sql) {}

  /** A live flag of the project, or undefined. */
  async liveFlag(tx: SqlExecutor, projectId: number, id: number): Promise<number | undefined> {
    const flag = await tx.query<{ id: number }>('eaf.flag', 'SELECT id FROM feature_flags WHERE project_id = $1 AND id = $2 AND NOT deleted', [projectId, id]);
    return flag.rows[0]?.id;
  }

  /** Creates the flag a product needs under `key` (400 on `feature_flag_key` when a live flag has it). */
  async insertFlag(tx: SqlExecutor, projectId: number, key: string, name: string, filters: unknown, userId: number): Promise<number> {
    const existing = await tx.query('flags.keyTaken', 'SELECT 1 FROM feature_flags WHERE project_id = $1 AND key = $2 AND NOT deleted', [projectId, key]);
    if (existing.rowCount > 0) throw ApiError.validation('There is already a feature flag with this key.', 'feature_flag_key', 'unique');
    const inserted = await tx.query<{ id: number }>(
      'flags.createLinked',
      `INSERT INTO feature_flags (project_id, key, name, filters, created_by_id, last_modified_by_id) VALUES ($1, $2, $3, $4, $5, $5) RETURNING id`,
      [projectId, key, name, JSON.stringify(filters), userId],
    );
    return inserted.rows[0]!.id;
  }

  async feature(projectId: number, id: string, db: SqlExecutor = this.sql): Promise<FeatureRow | undefined> {
    if (!UUID.test(id)) return undefined;
    return (await db.query<FeatureRow>('eaf.get', `${FEATURE_SELECT} WHERE e.project_id = $1 AND e.id = $2 AND NOT e.deleted`, [projectId, id])).rows[0];
  }

  async listFeatures(projectId: number, page: Page): Promise<{ rows: FeatureRow[]; count: number }> {
    const [rows, count] = await Promise.all([
      this.sql.query<FeatureRow>('eaf.list', `${FEATURE_SELECT} WHERE e.project_id = $1 AND NOT e.deleted ORDER BY e.created_at DESC LIMIT $2 OFFSET $3`, [
        projectId,
        page.limit,
        page.offset,
      ]),
      this.sql.query<{ count: number }>('eaf.count', 'SELECT count(*) AS count FROM early_access_features WHERE project_id = $1 AND NOT deleted', [projectId]),
    ]);
    return { rows: rows.rows, count: Number(count.rows[0]?.count ?? 0) };
  }

  async createFeature(tx: SqlExecutor, projectId: number, flagId: number, fields: FeatureFields & { name: string; stage: string }): Promise<string> {
    const inserted = await tx.query<{ id: string }>(
      'eaf.create',
      `INSERT INTO early_access_features (project_id, feature_flag_id, name, description, stage, documentation_url) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
      [projectId, flagId, fields.name, fields.description ?? '', fields.stage, fields.documentation_url ?? ''],
    );
    return inserted.rows[0]!.id;
  }

  async updateFeature(tx: SqlExecutor, projectId: number, id: string, fields: FeatureFields): Promise<void> {
    await tx.query(
      'eaf.update',
      `UPDATE early_access_features SET name = COALESCE($3, name), description = COALESCE($4, description), stage = COALESCE($5, stage),
         documentation_url = COALESCE($6, documentation_url), deleted = COALESCE($7, deleted) WHERE project_id = $1 AND id = $2`,
      [projectId, id, fields.name ?? null, fields.description ?? null, fields.stage ?? null, fields.documentation_url ?? null, fields.deleted ?? null],
    );
  }

  async survey(projectId: number, id: string, db: SqlExecutor = this.sql): Promise<SurveyRow | undefined> {
    if (!UUID.test(id)) return undefined;
    return (await db.query<SurveyRow>('surveys.get', selectSurveys('s.id = $2 AND NOT s.deleted'), [projectId, id])).rows[0];
  }

  async listSurveys(projectId: number, page: Page): Promise<{ rows: SurveyRow[]; count: number }> {
    const [rows, count] = await Promise.all([
      this.sql.query<SurveyRow>('surveys.list', `${selectSurveys('NOT s.deleted')} ORDER BY s.created_at DESC LIMIT $2 OFFSET $3`, [
        projectId,
        page.limit,
        page.offset,
      ]),
      this.sql.query<{ count: number }>('surveys.count', 'SELECT count(*) AS count FROM surveys WHERE project_id = $1 AND NOT deleted', [projectId]),
    ]);
    return { rows: rows.rows, count: Number(count.rows[0]?.count ?? 0) };
  }

  async createSurvey(
    tx: SqlExecutor,
    projectId: number,
    userId: number,
    fields: SurveyFields & { name: string; type: string },
    flags: { linked: number | null; targeting: number | null },
  ): Promise<string> {
    const inserted = await tx.query<{ id: string }>(
      'surveys.create',
      `INSERT INTO surveys (project_id, name, description, type, questions, appearance, conditions, linked_flag_id, targeting_flag_id, start_date, end_date, created_by_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
      [
        projectId,
        fields.name,
        fields.description ?? '',
        fields.type,
        JSON.stringify(fields.questions ?? []),
        fields.appearance ? JSON.stringify(fields.appearance) : null,
        fields.conditions ? JSON.stringify(fields.conditions) : null,
        flags.linked,
        flags.targeting,
        fields.start_date ?? null,
        fields.end_date ?? null,
        userId,
      ],
    );
    return inserted.rows[0]!.id;
  }

  /** Sets the given fields (dates also to null when given as null). */
  async updateSurvey(tx: SqlExecutor, projectId: number, id: string, fields: SurveyFields): Promise<void> {
    await tx.query(
      'surveys.update',
      `UPDATE surveys SET name = COALESCE($3, name), description = COALESCE($4, description),
         start_date = CASE WHEN $5::boolean THEN $6::timestamptz ELSE start_date END,
         end_date = CASE WHEN $7::boolean THEN $8::timestamptz ELSE end_date END,
         archived = COALESCE($9, archived), deleted = COALESCE($10, deleted),
         questions = COALESCE($11::jsonb, questions), conditions = COALESCE($12::jsonb, conditions), appearance = COALESCE($13::jsonb, appearance)
       WHERE project_id = $1 AND id = $2`,
      [
        projectId,
        id,
        fields.name ?? null,
        fields.description ?? null,
        'start_date' in fields,
        fields.start_date ?? null,
        'end_date' in fields,
        fields.end_date ?? null,
        fields.archived ?? null,
        fields.deleted ?? null,
        fields.questions ? JSON.stringify(fields.questions) : null,
        fields.conditions ? JSON.stringify(fields.conditions) : null,
        fields.appearance ? JSON.stringify(fields.appearance) : null,
      ],
    );
  }
}
