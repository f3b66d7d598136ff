/**
 * Early access features and surveys: products built on flags (docs/management.md#resources).
 * An early access feature creates its flag with a super group on `$feature_enrollment/<key>`; a survey with
 * `targeting_flag_filters` creates a `survey-targeting-…` flag. Both bump the definitions version. As flags:
 * PUT is PATCH, soft delete by PATCH `deleted`, DELETE → 405.
 */
import { randomBytes } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { ApiError } from '@plover/core';
import { selectSurveys, surveyFields, writeDefinitions, type SurveyRow } from '@plover/flag-store';
import type { Sql, SqlExecutor } from '@plover/postgres';
import { pageOf, send } from '../http/render';
import { validateBody } from '../schemas';
import { authorize, isObject, refuseDelete, sendPage } from './shared';
import { validateFilters } from './validate';

const STAGES = new Set(['draft', 'concept', 'alpha', 'beta', 'general-availability', 'archived']);
const SURVEY_TYPES = new Set(['popover', 'widget', 'api', 'external_survey']);
const KEY_PATTERN = /^[a-zA-Z0-9_-]+$/;

async function insertFlag(tx: SqlExecutor, projectId: number, key: string, name: string, filters: unknown, userId: number | null): Promise<number> {
  const existing = await tx.query('flags.keyTaken', 'SELECT 1 FROM feature_flags WHERE project_id = $1 AND key = $2 AND NOT deleted', [projectId, key]);
  if (existing.rowCount > 0) throw ApiError.validation('There is already a feature flag with this key.', 'feature_flag_key', 'unique');
  const inserted = await tx.query<{ id: number }>(
    'flags.createLinked',
    `INSERT INTO feature_flags (project_id, key, name, filters, created_by_id, last_modified_by_id) VALUES ($1, $2, $3, $4, $5, $5) RETURNING id`,
    [projectId, key, name, JSON.stringify(filters), userId],
  );
  return inserted.rows[0]!.id;
}

function slug(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 380) || 'feature'
  );
}

export function productRoutes(sql: Sql): Router {
  const router = Router({ mergeParams: true });

  // Early access features.
  interface FeatureRow {
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
  const FEATURE_SELECT = `SELECT e.id, e.name, e.description, e.stage, e.documentation_url, e.created_at, f.id AS flag_id, f.key AS flag_key,
      f.filters AS flag_filters FROM early_access_features e LEFT JOIN feature_flags f ON f.id = e.feature_flag_id`;
  const serializeFeature = (row: FeatureRow) => ({
    id: row.id,
    name: row.name,
    description: row.description,
    stage: row.stage,
    documentation_url: row.documentation_url,
    created_at: row.created_at.toISOString(),
    feature_flag: row.flag_id === null ? null : { id: row.flag_id, key: row.flag_key, filters: row.flag_filters },
  });
  const readFeature = async (tx: SqlExecutor, projectId: number, id: string): Promise<FeatureRow> => {
    if (!/^[0-9a-f-]{36}$/i.test(id)) throw ApiError.notFound();
    const result = await tx.query<FeatureRow>('eaf.get', `${FEATURE_SELECT} WHERE e.project_id = $1 AND e.id = $2 AND NOT e.deleted`, [projectId, id]);
    if (!result.rows[0]) throw ApiError.notFound();
    return result.rows[0];
  };

  router.get('/early_access_features', async (req, res) => {
    const { projectId } = authorize(req, 'early_access_feature:read');
    const page = pageOf(req);
    const [rows, count] = await Promise.all([
      sql.query<FeatureRow>('eaf.list', `${FEATURE_SELECT} WHERE e.project_id = $1 AND NOT e.deleted ORDER BY e.created_at DESC LIMIT $2 OFFSET $3`, [
        projectId,
        page.limit,
        page.offset,
      ]),
      sql.query<{ count: number }>('eaf.count', 'SELECT count(*) AS count FROM early_access_features WHERE project_id = $1 AND NOT deleted', [projectId]),
    ]);
    sendPage(req, res, page, rows.rows.map(serializeFeature), Number(count.rows[0]?.count ?? 0), 'early_access_features');
  });

  router.post('/early_access_features', async (req, res) => {
    const { projectId, userId } = authorize(req, 'early_access_feature:write');
    const body: unknown = req.body;
    if (!isObject(body)) throw ApiError.validation('Expected a JSON object.', null, 'parse_error');
    validateBody('EarlyAccessFeatureWrite', body);
    if (typeof body.name !== 'string' || body.name.trim() === '') throw ApiError.validation('This field is required.', 'name', 'required');
    const stage = body.stage ?? 'draft';
    if (typeof stage !== 'string' || !STAGES.has(stage))
      throw ApiError.validation(`${JSON.stringify(stage)} is not a valid choice.`, 'stage', 'invalid_choice');
    const name = body.name;
    const row = await writeDefinitions(sql, projectId, async (tx) => {
      let flagId: number;
      if (typeof body.feature_flag_id === 'number') {
        const flag = await tx.query<{ id: number }>('eaf.flag', 'SELECT id FROM feature_flags WHERE project_id = $1 AND id = $2 AND NOT deleted', [
          projectId,
          body.feature_flag_id,
        ]);
        if (!flag.rows[0]) throw ApiError.validation('Feature flag does not exist.', 'feature_flag_id');
        flagId = flag.rows[0].id;
      } else {
        const key = typeof body.feature_flag_key === 'string' ? body.feature_flag_key : slug(name);
        if (!KEY_PATTERN.test(key)) throw ApiError.validation('Only letters, numbers, hyphens ("-") & underscores ("_") are allowed.', 'feature_flag_key');
        const filters = {
          groups: [{ properties: [], rollout_percentage: 0 }],
          super_groups: [{ properties: [{ key: `$feature_enrollment/${key}`, type: 'person', operator: 'exact', value: ['true'] }], rollout_percentage: 100 }],
        };
        flagId = await insertFlag(tx, projectId, key, `Feature flag for ${name}`, filters, userId);
      }
      const inserted = await tx.query<{ id: string }>(
        'eaf.create',
        `INSERT INTO early_access_features (project_id, feature_flag_id, name, description, stage, documentation_url) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
        [
          projectId,
          flagId,
          name,
          typeof body.description === 'string' ? body.description : '',
          stage,
          typeof body.documentation_url === 'string' ? body.documentation_url : '',
        ],
      );
      return readFeature(tx, projectId, inserted.rows[0]!.id);
    });
    send(req, res, 201, serializeFeature(row), 'early_access_feature');
  });

  router.get('/early_access_features/:id', async (req, res) => {
    const { projectId } = authorize(req, 'early_access_feature:read');
    send(req, res, 200, serializeFeature(await readFeature(sql, projectId, String(req.params.id))), 'early_access_feature');
  });

  const updateFeature = async (req: Request, res: Response) => {
    const { projectId } = authorize(req, 'early_access_feature:write');
    const body: unknown = req.body;
    if (!isObject(body)) throw ApiError.validation('Expected a JSON object.', null, 'parse_error');
    validateBody('EarlyAccessFeatureWrite', body);
    if (body.stage !== undefined && (typeof body.stage !== 'string' || !STAGES.has(body.stage)))
      throw ApiError.validation('Not a valid choice.', 'stage', 'invalid_choice');
    const id = String(req.params.id);
    const row = await writeDefinitions(sql, projectId, async (tx) => {
      await readFeature(tx, projectId, id);
      await tx.query(
        'eaf.update',
        `UPDATE early_access_features SET name = COALESCE($3, name), description = COALESCE($4, description), stage = COALESCE($5, stage),
           documentation_url = COALESCE($6, documentation_url), deleted = COALESCE($7, deleted) WHERE project_id = $1 AND id = $2`,
        [
          projectId,
          id,
          typeof body.name === 'string' ? body.name : null,
          typeof body.description === 'string' ? body.description : null,
          typeof body.stage === 'string' ? body.stage : null,
          typeof body.documentation_url === 'string' ? body.documentation_url : null,
          typeof body.deleted === 'boolean' ? body.deleted : null,
        ],
      );
      return body.deleted === true ? undefined : readFeature(tx, projectId, id);
    });
    send(req, res, 200, row ? serializeFeature(row) : { id, deleted: true }, 'early_access_feature');
  };
  router.patch('/early_access_features/:id', updateFeature);
  router.put('/early_access_features/:id', updateFeature);
  router.delete('/early_access_features/:id', refuseDelete('early_access_feature:write'));

  // Surveys.
  const serializeSurvey = (row: SurveyRow) => ({
    ...surveyFields(row),
    archived: row.archived,
    created_at: row.created_at.toISOString(),
    linked_flag: row.linked_flag_id === null ? null : { id: row.linked_flag_id, key: row.linked_flag_key },
    linked_flag_id: row.linked_flag_id,
    targeting_flag: row.targeting_flag_id === null ? null : { id: row.targeting_flag_id, key: row.targeting_flag_key, filters: row.targeting_flag_filters },
  });
  const readSurvey = async (tx: SqlExecutor, projectId: number, id: string): Promise<SurveyRow> => {
    if (!/^[0-9a-f-]{36}$/i.test(id)) throw ApiError.notFound();
    const result = await tx.query<SurveyRow>('surveys.get', selectSurveys('s.id = $2 AND NOT s.deleted'), [projectId, id]);
    if (!result.rows[0]) throw ApiError.notFound();
    return result.rows[0];
  };
  const dateOrNull = (value: unknown, attr: string): string | null => {
    if (value === undefined || value === null) return null;
    if (typeof value !== 'string' || Number.isNaN(Date.parse(value))) throw ApiError.validation('Datetime has wrong format.', attr, 'invalid');
    return value;
  };

  router.get('/surveys', async (req, res) => {
    const { projectId } = authorize(req, 'survey:read');
    const page = pageOf(req);
    const [rows, count] = await Promise.all([
      sql.query<SurveyRow>('surveys.list', `${selectSurveys('NOT s.deleted')} ORDER BY s.created_at DESC LIMIT $2 OFFSET $3`, [
        projectId,
        page.limit,
        page.offset,
      ]),
      sql.query<{ count: number }>('surveys.count', 'SELECT count(*) AS count FROM surveys WHERE project_id = $1 AND NOT deleted', [projectId]),
    ]);
    sendPage(req, res, page, rows.rows.map(serializeSurvey), Number(count.rows[0]?.count ?? 0), 'surveys');
  });

  router.post('/surveys', async (req, res) => {
    const { projectId, userId } = authorize(req, 'survey:write');
    const body: unknown = req.body;
    if (!isObject(body)) throw ApiError.validation('Expected a JSON object.', null, 'parse_error');
    validateBody('SurveyWrite', body);
    if (typeof body.name !== 'string' || body.name.trim() === '') throw ApiError.validation('This field is required.', 'name', 'required');
    const type = body.type ?? 'popover';
    if (typeof type !== 'string' || !SURVEY_TYPES.has(type)) throw ApiError.validation('Not a valid choice.', 'type', 'invalid_choice');
    const targeting = body.targeting_flag_filters;
    if (targeting !== undefined && targeting !== null) validateFilters(targeting);
    const startDate = dateOrNull(body.start_date, 'start_date');
    const endDate = dateOrNull(body.end_date, 'end_date');
    const name = body.name;
    const row = await writeDefinitions(sql, projectId, async (tx) => {
      const targetingFlagId = targeting
        ? await insertFlag(tx, projectId, `survey-targeting-${randomBytes(5).toString('hex')}`, `Targeting flag for survey ${name}`, targeting, userId)
        : null;
      let linkedFlagId: number | null = null;
      if (typeof body.linked_flag_id === 'number') {
        const flag = await tx.query<{ id: number }>('surveys.linked', 'SELECT id FROM feature_flags WHERE project_id = $1 AND id = $2 AND NOT deleted', [
          projectId,
          body.linked_flag_id,
        ]);
        if (!flag.rows[0]) throw ApiError.validation('Feature flag does not exist.', 'linked_flag_id');
        linkedFlagId = flag.rows[0].id;
      }
      const inserted = await tx.query<{ id: string }>(
        'surveys.create',
        `INSERT INTO surveys (project_id, name, description, type, questions, appearance, conditions, linked_flag_id, targeting_flag_id, start_date, end_date, created_by_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
        [
          projectId,
          name,
          typeof body.description === 'string' ? body.description : '',
          type,
          JSON.stringify(body.questions ?? []),
          isObject(body.appearance) ? JSON.stringify(body.appearance) : null,
          isObject(body.conditions) ? JSON.stringify(body.conditions) : null,
          linkedFlagId,
          targetingFlagId,
          startDate,
          endDate,
          userId,
        ],
      );
      return readSurvey(tx, projectId, inserted.rows[0]!.id);
    });
    send(req, res, 201, serializeSurvey(row), 'survey');
  });

  router.get('/surveys/:id', async (req, res) => {
    const { projectId } = authorize(req, 'survey:read');
    send(req, res, 200, serializeSurvey(await readSurvey(sql, projectId, String(req.params.id))), 'survey');
  });

  const updateSurvey = async (req: Request, res: Response) => {
    const { projectId } = authorize(req, 'survey:write');
    const body: unknown = req.body;
    if (!isObject(body)) throw ApiError.validation('Expected a JSON object.', null, 'parse_error');
    validateBody('SurveyWrite', body);
    const id = String(req.params.id);
    const row = await writeDefinitions(sql, projectId, async (tx) => {
      await readSurvey(tx, projectId, id);
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
          typeof body.name === 'string' ? body.name : null,
          typeof body.description === 'string' ? body.description : null,
          'start_date' in body,
          dateOrNull(body.start_date, 'start_date'),
          'end_date' in body,
          dateOrNull(body.end_date, 'end_date'),
          typeof body.archived === 'boolean' ? body.archived : null,
          typeof body.deleted === 'boolean' ? body.deleted : null,
          Array.isArray(body.questions) ? JSON.stringify(body.questions) : null,
          isObject(body.conditions) ? JSON.stringify(body.conditions) : null,
          isObject(body.appearance) ? JSON.stringify(body.appearance) : null,
        ],
      );
      return body.deleted === true ? undefined : readSurvey(tx, projectId, id);
    });
    send(req, res, 200, row ? serializeSurvey(row) : { id, deleted: true }, 'survey');
  };
  router.patch('/surveys/:id', updateSurvey);
  router.put('/surveys/:id', updateSurvey);
  router.delete('/surveys/:id', refuseDelete('survey:write'));

  return router;
}
