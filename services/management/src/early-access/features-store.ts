import type { SqlExecutor } from '@plover/postgres';
import type { Page } from '../http/render';
import { DefinitionsStore, UUID_TEXT } from '../shared/definitions-store';

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

const FEATURE_SELECT = `SELECT e.id, e.name, e.description, e.stage, e.documentation_url, e.created_at, f.id AS flag_id, f.key AS flag_key,
    f.filters AS flag_filters FROM early_access_features e LEFT JOIN feature_flags f ON f.id = e.feature_flag_id`;
/** Early access features, each with its flag; writes run inside `write`. */
export class FeaturesStore extends DefinitionsStore {
  async feature(projectId: number, id: string, db: SqlExecutor = this.sql): Promise<FeatureRow | undefined> {
    if (!UUID_TEXT.test(id)) return undefined;
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
}
