import { selectSurveys, type SurveyRow } from '@plover/flag-store';
import type { SqlExecutor } from '@plover/postgres';
import type { Page } from '../http/render';
import { DefinitionsStore, UUID_TEXT } from '../shared/definitions-store';

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

/** Surveys, with their linked and targeting flags; writes run inside `write`. */
export class SurveysStore extends DefinitionsStore {
  async survey(projectId: number, id: string, db: SqlExecutor = this.sql): Promise<SurveyRow | undefined> {
    if (!UUID_TEXT.test(id)) return undefined;
    return (await db.query<SurveyRow>('surveys.get', selectSurveys('s.id = $2 AND NOT s.deleted'), [projectId, id])).rows[0];
  }

  /** Ids, start (start date or creation) and end of the project's live surveys; only the unarchived ones when `unarchivedOnly`. */
  async surveyWindows(projectId: number, unarchivedOnly: boolean): Promise<Array<{ id: string; start: Date; end: Date | null }>> {
    const rows = await this.sql.query<{ id: string; start: Date; end_date: Date | null }>(
      'surveys.windows',
      `SELECT id, coalesce(start_date, created_at) AS start, end_date FROM surveys
        WHERE project_id = $1 AND NOT deleted${unarchivedOnly ? ' AND NOT archived' : ''} ORDER BY created_at`,
      [projectId],
    );
    return rows.rows.map((row) => ({ id: row.id, start: row.start, end: row.end_date }));
  }

  /** The archived response uuids of the given surveys. */
  async archivedResponses(surveyIds: readonly string[]): Promise<string[]> {
    if (surveyIds.length === 0) return [];
    const rows = await this.sql.query<{ response_uuid: string }>(
      'surveys.archivedResponses',
      'SELECT response_uuid FROM survey_response_archives WHERE survey_id = ANY($1::uuid[]) ORDER BY response_uuid',
      [surveyIds],
    );
    return rows.rows.map((row) => row.response_uuid);
  }

  /** Archives (or, with `archived` false, unarchives) one response of a survey; idempotent. */
  async setResponseArchived(surveyId: string, responseUuid: string, archived: boolean): Promise<void> {
    if (archived) {
      await this.sql.query(
        'surveys.archiveResponse',
        'INSERT INTO survey_response_archives (survey_id, response_uuid) VALUES ($1, $2) ON CONFLICT DO NOTHING',
        [surveyId, responseUuid],
      );
    } else {
      await this.sql.query('surveys.unarchiveResponse', 'DELETE FROM survey_response_archives WHERE survey_id = $1 AND response_uuid = $2', [
        surveyId,
        responseUuid,
      ]);
    }
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
