/**
 * Feature flags, cohorts, early access features and surveys (`/feature_flags/`, `/cohorts/`,
 * `/early_access_features/`, `/surveys/` under a project), PostHog's shapes: PUT is PATCH, soft delete by PATCH
 * `deleted`, DELETE → 405 once the key holds the write scope. Every write bumps the project's definitions version
 * in its transaction (decide polls it). Flags carry object-level access control (http/access.ts): a
 * `user_access_level` on every flag, `none` hides a flag, writes need `editor`.
 * An early access feature creates its flag with a super group on `$feature_enrollment/<key>`; a survey with
 * `targeting_flag_filters` creates a `survey-targeting-…` flag (docs/management.md#resources).
 */
import { randomBytes } from 'node:crypto';
import type { Request } from 'express';
import { ApiError } from '@plover/core';
import { surveyFields, type SurveyRow } from '@plover/flag-store';
import type { SqlExecutor } from '@plover/postgres';
import type { ManagementDeps } from '../deps';
import { accessControlRoutes, callerOf, requireAccess } from '../http/access';
import { errors } from '../http/errors';
import { Q, updates, type Paged, type Route } from '../http/route-table';
import type { BodySchemaName, ResponseSchemaName } from '../schemas';
import type { AccessTarget } from '../shared/access-store';
import { FlagsStore, RESOURCE, type CohortFields, type CohortRow, type FlagFields, type FlagRow } from './flags-store';
import { ProductsStore, type FeatureFields, type FeatureRow, type SurveyFields } from './products-store';
import { isObject, validateCohortFilters, validateFilters } from './validate';

const KEY_PATTERN = /^[a-zA-Z0-9_-]+$/;
const KEY_DETAIL = 'Only letters, numbers, hyphens ("-") & underscores ("_") are allowed.';
const STAGES = new Set(['draft', 'concept', 'alpha', 'beta', 'general-availability', 'archived']);
const SURVEY_TYPES = new Set(['popover', 'widget', 'api', 'external_survey']);

/** The path's integer `:id`; anything else names nothing (404). */
function idParam(req: Request): number {
  const raw = String(req.params.id ?? '');
  if (!/^\d+$/.test(raw) || Number(raw) > 2_147_483_647) throw ApiError.notFound();
  return Number(raw);
}

const found = <T>(row: T | undefined): T => {
  if (row === undefined) throw ApiError.notFound();
  return row;
};

function serializeFlag(row: FlagRow): Record<string, unknown> {
  const filters = row.filters;
  const groups = Array.isArray(filters.groups) ? (filters.groups as Record<string, unknown>[]) : [];
  return {
    id: row.id,
    name: row.name,
    key: row.key,
    filters,
    deleted: row.deleted,
    active: row.active,
    created_by:
      row.created_by_id === null
        ? null
        : {
            id: row.created_by_id,
            uuid: row.created_by_uuid,
            distinct_id: row.created_by_distinct_id,
            first_name: row.created_by_first_name ?? '',
            email: row.created_by_email,
          },
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    version: row.version,
    is_simple_flag:
      !filters.multivariate &&
      groups.length === 1 &&
      (!Array.isArray(groups[0]?.properties) || groups[0].properties.length === 0) &&
      filters.aggregation_group_type_index == null,
    rollout_percentage: groups.length === 1 ? (groups[0]?.rollout_percentage ?? null) : row.rollout_percentage,
    ensure_experience_continuity: row.ensure_experience_continuity,
    is_remote_configuration: row.is_remote_configuration,
    has_encrypted_payloads: false,
    experiment_set: [],
    surveys: [],
    features: [],
    rollback_conditions: null,
    performed_rollback: false,
    tags: [],
    can_edit: row.user_access_level === 'editor',
    status: row.deleted ? 'DELETED' : 'ACTIVE',
    user_access_level: row.user_access_level,
  };
}

const serializeCohort = (row: CohortRow) => ({
  id: row.id,
  name: row.name,
  description: row.description,
  filters: row.filters,
  groups: [],
  query: null,
  is_static: row.is_static,
  deleted: row.deleted,
  version: row.version,
  is_calculating: false,
  errors_calculating: 0,
  count: row.is_static ? Number(row.count) : null,
  created_by: row.created_by_id === null ? null : { id: row.created_by_id },
  created_at: row.created_at.toISOString(),
});

const serializeFeature = (row: FeatureRow) => ({
  id: row.id,
  name: row.name,
  description: row.description,
  stage: row.stage,
  documentation_url: row.documentation_url,
  created_at: row.created_at.toISOString(),
  feature_flag: row.flag_id === null ? null : { id: row.flag_id, key: row.flag_key, filters: row.flag_filters },
});

const serializeSurvey = (row: SurveyRow) => ({
  ...surveyFields(row),
  archived: row.archived,
  created_at: row.created_at.toISOString(),
  linked_flag: row.linked_flag_id === null ? null : { id: row.linked_flag_id, key: row.linked_flag_key },
  linked_flag_id: row.linked_flag_id,
  targeting_flag: row.targeting_flag_id === null ? null : { id: row.targeting_flag_id, key: row.targeting_flag_key, filters: row.targeting_flag_filters },
});

function slug(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 380) || 'feature'
  );
}

/** A name a create requires (the schema, shared with updates, leaves it optional). */
function requiredName(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw ApiError.validation('This field is required.', 'name', 'required');
  return value;
}

function dateOrNull(value: unknown, attr: string): string | null {
  if (value === undefined || value === null) return null;
  if (Number.isNaN(Date.parse(value as string))) throw ApiError.validation('Datetime has wrong format.', attr, 'invalid');
  return value as string;
}

/** The list, create, retrieve, update and refused DELETE of one flag-side object kind. */
interface Resource {
  base: string;
  object: string;
  schema: ResponseSchemaName;
  body: BodySchemaName;
  names: [one: string, many: string];
  file: [one: string, many: string];
  query?: Route['query'];
  list: Route['handler'];
  create: Route['handler'];
  retrieve: Route['handler'];
  update: Route['handler'];
}

function resourceRoutes(r: Resource): Route[] {
  const item = `${r.base}/:id`;
  const [one, many] = r.names;
  return [
    {
      method: 'get',
      path: r.base,
      scope: `${r.object}:read`,
      summary: `List ${many}, newest first`,
      paginated: 'envelope',
      ...(r.query ? { query: r.query } : {}),
      csv: { file: r.file[1] },
      response: { status: 200, schema: r.schema },
      handler: r.list,
    },
    {
      method: 'post',
      path: r.base,
      scope: `${r.object}:write`,
      summary: `Create ${one}`,
      body: r.body,
      csv: { file: r.file[0] },
      response: { status: 201, schema: r.schema },
      handler: r.create,
    },
    {
      method: 'get',
      path: item,
      scope: `${r.object}:read`,
      summary: `Retrieve ${one}`,
      csv: { file: r.file[0] },
      response: { status: 200, schema: r.schema },
      handler: r.retrieve,
    },
    ...updates({
      path: item,
      scope: `${r.object}:write`,
      summary: `Update ${one}; \`deleted: true\` soft-deletes`,
      body: r.body,
      csv: { file: r.file[0] },
      response: { status: 200, schema: r.schema },
      handler: r.update,
    }),
    {
      method: 'delete',
      path: item,
      scope: `${r.object}:write`,
      summary: 'Hard delete is not allowed: 405 (PATCH `deleted: true` instead)',
      response: { status: 405 },
      handler(req) {
        throw errors.methodNotAllowed(req.method);
      },
    },
  ];
}

/** One page of a listing whose total is counted. */
const pageOf = <T>(rows: T[], count: number, offset: number, limit: number): Paged<T> => ({ results: rows, count, hasMore: offset + limit < count });

/** The routes of flags, cohorts, early access features and surveys under a project. */
export function featureFlagRoutes({ sql }: Pick<ManagementDeps, 'sql'>): Route[] {
  const flags = new FlagsStore(sql);
  const products = new ProductsStore(sql);
  const target = (row: FlagRow): AccessTarget => ({ resource: RESOURCE, resourceId: String(row.id), createdBy: row.created_by_id });

  /** The flag `where` ($4 = `value`) names, or 404 (also when the caller's level is `none`). */
  async function readFlag(req: Request, value: number | string, where?: string, db: SqlExecutor = sql): Promise<FlagRow> {
    const row = await flags.flag(callerOf(req), value, where, db);
    if (!row || row.user_access_level === 'none') throw ApiError.notFound();
    return row;
  }

  /** A flag body's key (required on create) must be a slug. */
  function checkKey(body: FlagFields, creating: boolean): void {
    if (!creating && body.key === undefined) return;
    if (typeof body.key !== 'string' || body.key === '') throw ApiError.validation('This field is required.', 'key', 'required');
    if (!KEY_PATTERN.test(body.key)) throw ApiError.validation(KEY_DETAIL, 'key');
  }

  const flagRoutes = resourceRoutes({
    base: '/feature_flags',
    object: 'feature_flag',
    schema: 'FeatureFlag',
    body: 'FeatureFlagWrite',
    names: ['a feature flag', 'feature flags'],
    file: ['feature_flag', 'feature_flags'],
    query: { properties: { search: Q.string, active: Q.boolean } },
    async list(req, { page, query }) {
      const { rows, count } = await flags.listFlags(
        callerOf(req),
        { search: query.search as string | undefined, active: query.active as boolean | undefined },
        page,
      );
      return pageOf(rows.map(serializeFlag), count, page.offset, page.limit);
    },
    async create(req, { body }) {
      const fields = body as FlagFields;
      checkKey(fields, true);
      const filters = fields.filters ?? { groups: [{ properties: [], rollout_percentage: fields.rollout_percentage ?? null }] };
      const refs = validateFilters(filters);
      const caller = callerOf(req);
      const row = await flags.write(caller.projectId, async (tx) => {
        await flags.checkCohortRefs(tx, caller.projectId, refs);
        return readFlag(req, await flags.createFlag(tx, caller, { ...fields, key: fields.key!, filters }), undefined, tx);
      });
      return serializeFlag(row);
    },
    retrieve: async (req) => serializeFlag(await readFlag(req, idParam(req))),
    async update(req, { body }) {
      const id = idParam(req);
      const fields = body as FlagFields;
      checkKey(fields, false);
      const refs = fields.filters !== undefined ? validateFilters(fields.filters) : undefined;
      await requireAccess(sql, req, target(await readFlag(req, id)), 'editor');
      const caller = callerOf(req);
      const row = await flags.write(caller.projectId, async (tx) => {
        if (refs) await flags.checkCohortRefs(tx, caller.projectId, refs);
        await flags.updateFlag(tx, caller, id, fields);
        return readFlag(req, id, undefined, tx);
      });
      return serializeFlag(row);
    },
  });

  const cohortRoutes = resourceRoutes({
    base: '/cohorts',
    object: 'cohort',
    schema: 'Cohort',
    body: 'CohortWrite',
    names: ['a cohort', 'cohorts'],
    file: ['cohort', 'cohorts'],
    async list(req, { page }) {
      const { rows, count } = await flags.listCohorts(callerOf(req).projectId, page);
      return pageOf(rows.map(serializeCohort), count, page.offset, page.limit);
    },
    async create(req, { body }) {
      const caller = callerOf(req);
      const isStatic = body.is_static === true;
      const filters = body.filters ?? { properties: { type: 'AND', values: [] } };
      const refs = isStatic ? { cohortIds: new Set<number>() } : validateCohortFilters(filters);
      const row = await flags.write(caller.projectId, async (tx) => {
        await flags.checkCohortRefs(tx, caller.projectId, refs);
        const id = await flags.createCohort(tx, caller, { ...(body as CohortFields), filters: isStatic ? {} : filters, isStatic });
        if (isStatic) await flags.addMembers(tx, caller.projectId, id, ((body.distinct_ids ?? []) as unknown[]).map(String));
        return found(await flags.cohort(caller.projectId, id, tx));
      });
      return serializeCohort(row);
    },
    retrieve: async (req) => serializeCohort(found(await flags.cohort(callerOf(req).projectId, idParam(req)))),
    async update(req, { body }) {
      const { projectId } = callerOf(req);
      const id = idParam(req);
      const row = await flags.write(projectId, async (tx) => {
        const existing = found(await flags.cohort(projectId, id, tx));
        const filters = body.filters !== undefined && !existing.is_static ? body.filters : undefined;
        if (filters !== undefined) await flags.checkCohortRefs(tx, projectId, validateCohortFilters(filters), id);
        await flags.updateCohort(tx, projectId, id, { ...(body as CohortFields), filters });
        if (existing.is_static && body.distinct_ids !== undefined) await flags.addMembers(tx, projectId, id, (body.distinct_ids as unknown[]).map(String));
        return found(await flags.cohort(projectId, id, tx));
      });
      return serializeCohort(row);
    },
  });

  const featureRoutes = resourceRoutes({
    base: '/early_access_features',
    object: 'early_access_feature',
    schema: 'EarlyAccessFeature',
    body: 'EarlyAccessFeatureWrite',
    names: ['an early access feature', 'early access features'],
    file: ['early_access_feature', 'early_access_features'],
    async list(req, { page }) {
      const { rows, count } = await products.listFeatures(callerOf(req).projectId, page);
      return pageOf(rows.map(serializeFeature), count, page.offset, page.limit);
    },
    async create(req, { body }) {
      const caller = callerOf(req);
      const name = requiredName(body.name);
      const stage = (body.stage as string | undefined) ?? 'draft';
      if (!STAGES.has(stage)) throw ApiError.validation(`${JSON.stringify(stage)} is not a valid choice.`, 'stage', 'invalid_choice');
      const row = await flags.write(caller.projectId, async (tx) => {
        let flagId: number;
        if (body.feature_flag_id !== undefined) {
          const existing = await products.liveFlag(tx, caller.projectId, body.feature_flag_id as number);
          if (existing === undefined) throw ApiError.validation('Feature flag does not exist.', 'feature_flag_id');
          flagId = existing;
        } else {
          const key = (body.feature_flag_key as string | undefined) ?? slug(name);
          if (!KEY_PATTERN.test(key)) throw ApiError.validation(KEY_DETAIL, 'feature_flag_key');
          const filters = {
            groups: [{ properties: [], rollout_percentage: 0 }],
            super_groups: [
              { properties: [{ key: `$feature_enrollment/${key}`, type: 'person', operator: 'exact', value: ['true'] }], rollout_percentage: 100 },
            ],
          };
          flagId = await products.insertFlag(tx, caller.projectId, key, `Feature flag for ${name}`, filters, caller.userId);
        }
        const id = await products.createFeature(tx, caller.projectId, flagId, { ...(body as FeatureFields), name, stage });
        return found(await products.feature(caller.projectId, id, tx));
      });
      return serializeFeature(row);
    },
    retrieve: async (req) => serializeFeature(found(await products.feature(callerOf(req).projectId, String(req.params.id)))),
    async update(req, { body }) {
      if (body.stage !== undefined && !STAGES.has(body.stage as string)) throw ApiError.validation('Not a valid choice.', 'stage', 'invalid_choice');
      const { projectId } = callerOf(req);
      const id = String(req.params.id);
      const row = await flags.write(projectId, async (tx) => {
        found(await products.feature(projectId, id, tx));
        await products.updateFeature(tx, projectId, id, body);
        return body.deleted === true ? undefined : found(await products.feature(projectId, id, tx));
      });
      return row ? serializeFeature(row) : { id, deleted: true };
    },
  });

  const surveyRoutes = resourceRoutes({
    base: '/surveys',
    object: 'survey',
    schema: 'Survey',
    body: 'SurveyWrite',
    names: ['a survey', 'surveys'],
    file: ['survey', 'surveys'],
    async list(req, { page }) {
      const { rows, count } = await products.listSurveys(callerOf(req).projectId, page);
      return pageOf(rows.map(serializeSurvey), count, page.offset, page.limit);
    },
    async create(req, { body }) {
      const caller = callerOf(req);
      const name = requiredName(body.name);
      const type = (body.type as string | undefined) ?? 'popover';
      if (!SURVEY_TYPES.has(type)) throw ApiError.validation('Not a valid choice.', 'type', 'invalid_choice');
      const targeting = body.targeting_flag_filters;
      if (targeting !== undefined && targeting !== null) validateFilters(targeting);
      const fields: SurveyFields = {
        ...(body as SurveyFields),
        start_date: dateOrNull(body.start_date, 'start_date'),
        end_date: dateOrNull(body.end_date, 'end_date'),
      };
      const row = await flags.write(caller.projectId, async (tx) => {
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
          if (existing === undefined) throw ApiError.validation('Feature flag does not exist.', 'linked_flag_id');
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
      const fields: SurveyFields = { ...(body as SurveyFields) };
      if ('start_date' in body) fields.start_date = dateOrNull(body.start_date, 'start_date');
      if ('end_date' in body) fields.end_date = dateOrNull(body.end_date, 'end_date');
      const row = await flags.write(projectId, async (tx) => {
        found(await products.survey(projectId, id, tx));
        await products.updateSurvey(tx, projectId, id, fields);
        return body.deleted === true ? undefined : found(await products.survey(projectId, id, tx));
      });
      return row ? serializeSurvey(row) : { id, deleted: true };
    },
  });

  return [
    ...flagRoutes,
    ...accessControlRoutes(sql, '/feature_flags/:id', 'a feature flag', async (req) => target(await readFlag(req, idParam(req)))),
    {
      method: 'get',
      path: '/feature_flags/:id/remote_config',
      scope: 'feature_flag:read',
      summary: 'The payload of a remote-configuration flag, by id or key, JSON-encoded',
      response: { status: 200 },
      // The stored `"true"` payload, itself a JSON string, JSON-encoded once more (or null), for SDKs'
      // getRemoteConfigPayload (posthog-node 4.6.0+). Payloads are stored in clear: there is nothing to decrypt.
      async handler(req) {
        const raw = String(req.params.id);
        const flag = /^\d+$/.test(raw) ? await readFlag(req, idParam(req)) : await readFlag(req, raw, 'f.key = $4 AND NOT f.deleted');
        if (!flag.is_remote_configuration) throw ApiError.notFound();
        const payloads = isObject(flag.filters.payloads) ? flag.filters.payloads : {};
        return payloads.true ?? null;
      },
    },
    ...cohortRoutes,
    ...featureRoutes,
    ...surveyRoutes,
  ];
}
