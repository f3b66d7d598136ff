import { randomBytes } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import { surveyFields, type SurveyRow } from '@plover/flag-store';
import type { ManagementDeps } from '../http/deps';
import { callerOf } from '../http/access';
import { found, pageOf, requiredName, resourceRoutes } from '../http/resource-routes';
import type { Route } from '../http/route-table';
import { errors } from '../shared/errors';
import { isObject, validateFilters } from '../shared/flag-filters';
import { Survey, SurveyUpdated, SurveyWrite } from './schemas';
import { SurveysStore, type SurveyFields } from './surveys-store';

const SURVEY_TYPES = new Set(['popover', 'widget', 'api', 'external_survey']);

const serializeSurvey = (row: SurveyRow): Static<typeof Survey> => ({
  ...surveyFields(row),
  archived: row.archived,
  created_at: row.created_at.toISOString(),
  linked_flag: row.linked_flag_id === null ? null : { id: row.linked_flag_id, key: row.linked_flag_key },
  linked_flag_id: row.linked_flag_id,
  targeting_flag: row.targeting_flag_id === null ? null : { id: row.targeting_flag_id, key: row.targeting_flag_key, filters: row.targeting_flag_filters },
});

function dateOrNull(value: string | null | undefined, attr: string): string | null {
  if (value === undefined || value === null) return null;
  if (Number.isNaN(Date.parse(value))) throw errors.validation('Datetime has wrong format.', attr, 'invalid');
  return value;
}

/**
 * `/surveys/` under a project. A survey with `targeting_flag_filters` creates a `survey-targeting-…` flag
 * (docs/management.md#resources); `linked_flag_id` names an existing flag.
 */
export function surveyRoutes({ sql }: Pick<ManagementDeps, 'sql'>): Route[] {
  const products = new SurveysStore(sql);
  return resourceRoutes({
    base: '/surveys',
    object: 'survey',
    schema: Survey,
    body: SurveyWrite,
    updated: SurveyUpdated,
    names: ['a survey', 'surveys'],
    file: ['survey', 'surveys'],
    async list(req, { page }) {
      const { rows, count } = await products.listSurveys(callerOf(req).projectId, page);
      return pageOf(rows.map(serializeSurvey), count, page.offset, page.limit);
    },
    async create(req, { body }) {
      const caller = callerOf(req);
      const name = requiredName(body.name);
      const type = body.type ?? 'popover';
      if (!SURVEY_TYPES.has(type)) throw errors.validation('Not a valid choice.', 'type', 'invalid_choice');
      const targeting = body.targeting_flag_filters;
      if (targeting !== undefined && targeting !== null) validateFilters(targeting);
      const fields: SurveyFields = {
        ...body,
        start_date: dateOrNull(body.start_date, 'start_date'),
        end_date: dateOrNull(body.end_date, 'end_date'),
      };
      const row = await products.write(caller.projectId, async (tx) => {
        const targetingId = isObject(targeting)
          ? await products.insertFlag(
              tx,
              caller.projectId,
              `survey-targeting-${randomBytes(5).toString('hex')}`,
              `Targeting flag for survey ${name}`,
              targeting,
              caller.userId,
            )
          : null;
        let linked: number | null = null;
        if (typeof body.linked_flag_id === 'number') {
          const existing = await products.liveFlag(tx, caller.projectId, body.linked_flag_id);
          if (existing === undefined) throw errors.validation('Feature flag does not exist.', 'linked_flag_id');
          linked = existing;
        }
        const id = await products.createSurvey(tx, caller.projectId, caller.userId, { ...fields, name, type }, { linked, targeting: targetingId });
        return found(await products.survey(caller.projectId, id, tx));
      });
      return serializeSurvey(row);
    },
    retrieve: async (req) => serializeSurvey(found(await products.survey(callerOf(req).projectId, String(req.params.id)))),
    async update(req, { body }) {
      const { projectId } = callerOf(req);
      const id = String(req.params.id);
      const fields: SurveyFields = { ...body };
      if ('start_date' in body) fields.start_date = dateOrNull(body.start_date, 'start_date');
      if ('end_date' in body) fields.end_date = dateOrNull(body.end_date, 'end_date');
      const row = await products.write(projectId, async (tx) => {
        found(await products.survey(projectId, id, tx));
        await products.updateSurvey(tx, projectId, id, fields);
        return body.deleted === true ? undefined : found(await products.survey(projectId, id, tx));
      });
      return row ? serializeSurvey(row) : { id, deleted: true as const };
    },
  });
}
