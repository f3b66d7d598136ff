/**
 * Feature flag and cohort management (`/api/projects/:id/feature_flags/`, `/cohorts/`; same under
 * `/api/environments/:id/`; paths here are relative to the project router), PostHog's shapes: PUT is PATCH, soft delete by PATCH
 * `deleted`, DELETE → 405 (after the scope check; other unserved methods → 405 from app.ts). Every write bumps
 * the project's definitions version in its transaction and signals decide in this process.
 * Flags carry object-level access control (http/access.ts, as playlists): `user_access_level` on every flag,
 * `none` hides a flag, writes need `editor`.
 */
import { Router, type Request, type Response } from 'express';
import { ApiError } from '@plover/core';
import { writeDefinitions } from '@plover/flag-store';
import type { Sql, SqlExecutor } from '@plover/postgres';
import { accessLevelSql, getAccessControls, isAdmin, putAccessControl, requireAccess, type AccessLevel, type AccessTarget } from '../http/access';
import { principalOf, projectOf } from '../http/auth';
import { queryBoolean } from '../http/body';
import { pageOf, queryValue, send } from '../http/render';
import { validateBody } from '../schemas';
import { authorize, idParam, isObject, refuseDelete, sendPage } from './shared';
import { productRoutes } from './products';
import { validateCohortFilters, validateFilters, type PropertyReferences } from './validate';
import { containsPattern } from '../http/like';

const RESOURCE = 'feature_flag';

interface FlagRow {
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

/** Flags of project $1 with the caller's ($2, admin $3) access level, matching `where`. */
function selectFlags(where: string): string {
  return `SELECT f.id, f.key, f.name, f.filters, f.rollout_percentage, f.active, f.deleted, f.ensure_experience_continuity,
      f.is_remote_configuration, f.version, f.created_at, f.updated_at, f.created_by_id, u.email AS created_by_email,
      u.uuid AS created_by_uuid, u.distinct_id AS created_by_distinct_id, u.first_name AS created_by_first_name,
      ${accessLevelSql(RESOURCE, 'f.id::text', 'f.created_by_id', '$1', '$2', '$3')} AS user_access_level
    FROM feature_flags f LEFT JOIN users u ON u.id = f.created_by_id
   WHERE f.project_id = $1 AND ${where}`;
}

/** The parameters $1–$3 of selectFlags. */
function callerParams(req: Request): unknown[] {
  return [projectOf(req).id, principalOf(req).user.id, isAdmin(req)];
}

const target = (row: FlagRow): AccessTarget => ({ resource: RESOURCE, resourceId: String(row.id), createdBy: row.created_by_id });

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

async function checkCohortRefs(tx: SqlExecutor, projectId: number, refs: PropertyReferences, exclude?: number): Promise<void> {
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

const KEY_PATTERN = /^[a-zA-Z0-9_-]+$/;

function flagInput(body: unknown, creating: boolean): Record<string, unknown> {
  if (!isObject(body)) throw ApiError.validation('Expected a JSON object.', null, 'parse_error');
  validateBody('FeatureFlagWrite', body);
  if (creating || body.key !== undefined) {
    if (typeof body.key !== 'string' || body.key === '') throw ApiError.validation('This field is required.', 'key', 'required');
    if (!KEY_PATTERN.test(body.key)) throw ApiError.validation('Only letters, numbers, hyphens ("-") & underscores ("_") are allowed.', 'key');
  }
  if (body.rollout_percentage !== undefined && body.rollout_percentage !== null) {
    const value = body.rollout_percentage;
    if (typeof value !== 'number' || value < 0 || value > 100) throw ApiError.validation('Rollout percentage must be between 0 and 100.', 'rollout_percentage');
  }
  return body;
}

function uniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  const cause = (error as { cause?: { code?: unknown } }).cause;
  return code === '23505' || cause?.code === '23505';
}

/** The routes as mounted on the management API's project router (its authentication and project resolution). */
export function projectFlagRoutes(sql: Sql): Router {
  const router = Router({ mergeParams: true });
  const flagsPath = '/feature_flags';
  const flagPath = '/feature_flags/:id';
  const cohortsPath = '/cohorts';
  const cohortPath = '/cohorts/:id';

  /** The flag `where` ($4 = `value`) names, or 404 (also when the caller's level is `none`). */
  async function readFlag(tx: SqlExecutor, req: Request, value: number | string, where = 'f.id = $4'): Promise<FlagRow> {
    const result = await tx.query<FlagRow>('flags.get', selectFlags(where), [...callerParams(req), value]);
    const row = result.rows[0];
    if (!row || row.user_access_level === 'none') throw ApiError.notFound();
    return row;
  }

  async function write<T>(projectId: number, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    try {
      return await writeDefinitions(sql, projectId, fn);
    } catch (error) {
      if (uniqueViolation(error)) throw ApiError.validation('There is already a feature flag with this key.', 'key', 'unique');
      throw error;
    }
  }

  router.get(flagsPath, async (req, res) => {
    authorize(req, 'feature_flag:read');
    const page = pageOf(req);
    const params = callerParams(req);
    let where = `NOT f.deleted AND ${accessLevelSql(RESOURCE, 'f.id::text', 'f.created_by_id', '$1', '$2', '$3')} <> 'none'`;
    if (typeof req.query.search === 'string' && req.query.search !== '') {
      params.push(containsPattern(req.query.search));
      where += ` AND (f.key ILIKE $${params.length} OR f.name ILIKE $${params.length})`;
    }
    const active = queryBoolean(queryValue(req, 'active'), 'active');
    if (active !== undefined) where += ` AND f.active = ${active}`;
    const [rows, count] = await Promise.all([
      sql.query<FlagRow>('flags.list', `${selectFlags(where)} ORDER BY f.id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`, [
        ...params,
        page.limit,
        page.offset,
      ]),
      sql.query<{ count: number }>('flags.count', `SELECT count(*) AS count FROM feature_flags f WHERE f.project_id = $1 AND ${where}`, params),
    ]);
    sendPage(req, res, page, rows.rows.map(serializeFlag), Number(count.rows[0]?.count ?? 0), 'feature_flags');
  });

  router.post(flagsPath, async (req, res) => {
    const { projectId, userId } = authorize(req, 'feature_flag:write');
    const body = flagInput(req.body, true);
    const filters = body.filters ?? { groups: [{ properties: [], rollout_percentage: body.rollout_percentage ?? null }] };
    const refs = validateFilters(filters);
    const row = await write(projectId, async (tx) => {
      await checkCohortRefs(tx, projectId, refs);
      const inserted = await tx.query<{ id: number }>(
        'flags.create',
        `INSERT INTO feature_flags (project_id, key, name, filters, rollout_percentage, active, ensure_experience_continuity,
                                    is_remote_configuration, created_by_id, last_modified_by_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING id`,
        [
          projectId,
          body.key,
          body.name ?? '',
          JSON.stringify(filters),
          body.rollout_percentage ?? null,
          body.active ?? true,
          body.ensure_experience_continuity ?? false,
          body.is_remote_configuration ?? false,
          userId,
        ],
      );
      return readFlag(tx, req, inserted.rows[0]!.id);
    });
    send(req, res, 201, serializeFlag(row), 'feature_flag');
  });

  router.get(flagPath, async (req, res) => {
    authorize(req, 'feature_flag:read');
    send(req, res, 200, serializeFlag(await readFlag(sql, req, idParam(req))), 'feature_flag');
  });

  const update = async (req: Request, res: Response) => {
    const { projectId, userId } = authorize(req, 'feature_flag:write');
    const id = idParam(req);
    const body = flagInput(req.body, false);
    const refs = body.filters !== undefined ? validateFilters(body.filters) : undefined;
    await requireAccess(sql, req, target(await readFlag(sql, req, id)), 'editor');
    const row = await write(projectId, async (tx) => {
      if (refs) await checkCohortRefs(tx, projectId, refs);
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
          projectId,
          id,
          body.key ?? null,
          body.name ?? null,
          body.filters === undefined ? null : JSON.stringify(body.filters),
          body.active ?? null,
          body.deleted ?? null,
          body.ensure_experience_continuity ?? null,
          'rollout_percentage' in body,
          body.rollout_percentage ?? null,
          body.is_remote_configuration ?? null,
          userId,
        ],
      );
      return readFlag(tx, req, id);
    });
    send(req, res, 200, serializeFlag(row), 'feature_flag');
  };
  router.patch(flagPath, update);
  router.put(flagPath, update);
  router.delete(flagPath, refuseDelete('feature_flag:write'));

  router.get(`${flagPath}/access_controls`, async (req, res) => {
    await getAccessControls(sql, req, res, target(await readFlag(sql, req, idParam(req))));
  });
  router.put(`${flagPath}/access_controls`, async (req, res) => {
    await putAccessControl(sql, req, res, target(await readFlag(sql, req, idParam(req))));
  });

  // A remote-config flag's payload, by id or key, for SDKs' getRemoteConfigPayload (posthog-node 4.6.0+):
  // the stored `"true"` payload, itself a JSON string, JSON-encoded once more (or null). Payloads are stored in
  // clear, so there is nothing to decrypt (`has_encrypted_payloads` is always false).
  router.get(`${flagPath}/remote_config`, async (req, res) => {
    authorize(req, 'feature_flag:read');
    const raw = String(req.params.id);
    const flag = /^\d+$/.test(raw) ? await readFlag(sql, req, idParam(req)) : await readFlag(sql, req, raw, 'f.key = $4 AND NOT f.deleted');
    if (!flag.is_remote_configuration) throw ApiError.notFound();
    const payloads = isObject(flag.filters.payloads) ? flag.filters.payloads : {};
    res.json(payloads.true ?? null);
  });

  // Cohorts.
  interface CohortRow {
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
  const COHORT_COLUMNS = `c.id, c.name, c.description, c.filters, c.is_static, c.deleted, c.version, c.created_at, c.created_by_id,
    (SELECT count(*) FROM cohort_people p WHERE p.cohort_id = c.id) AS count`;
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
  async function readCohort(tx: SqlExecutor, projectId: number, id: number): Promise<CohortRow> {
    const result = await tx.query<CohortRow>('cohorts.get', `SELECT ${COHORT_COLUMNS} FROM cohorts c WHERE c.project_id = $1 AND c.id = $2`, [projectId, id]);
    if (!result.rows[0]) throw ApiError.notFound();
    return result.rows[0];
  }
  async function addMembers(tx: SqlExecutor, projectId: number, cohortId: number, distinctIds: unknown): Promise<void> {
    if (distinctIds === undefined) return;
    if (!Array.isArray(distinctIds) || distinctIds.some((id) => typeof id !== 'string' && typeof id !== 'number')) {
      throw ApiError.validation('distinct_ids must be a list of distinct ids.', 'distinct_ids');
    }
    await tx.query(
      'cohorts.addMembers',
      `INSERT INTO cohort_people (cohort_id, person_id)
       SELECT DISTINCT $2::int, person_id FROM person_distinct_ids WHERE project_id = $1 AND distinct_id = ANY($3::text[])
       ON CONFLICT DO NOTHING`,
      [projectId, cohortId, distinctIds.map(String)],
    );
  }

  router.get(cohortsPath, async (req, res) => {
    const { projectId } = authorize(req, 'cohort:read');
    const page = pageOf(req);
    const [rows, count] = await Promise.all([
      sql.query<CohortRow>(
        'cohorts.list',
        `SELECT ${COHORT_COLUMNS} FROM cohorts c WHERE c.project_id = $1 AND NOT c.deleted ORDER BY c.id DESC LIMIT $2 OFFSET $3`,
        [projectId, page.limit, page.offset],
      ),
      sql.query<{ count: number }>('cohorts.count', 'SELECT count(*) AS count FROM cohorts WHERE project_id = $1 AND NOT deleted', [projectId]),
    ]);
    sendPage(req, res, page, rows.rows.map(serializeCohort), Number(count.rows[0]?.count ?? 0), 'cohorts');
  });

  router.post(cohortsPath, async (req, res) => {
    const { projectId, userId } = authorize(req, 'cohort:write');
    const body: unknown = req.body;
    if (!isObject(body)) throw ApiError.validation('Expected a JSON object.', null, 'parse_error');
    validateBody('CohortWrite', body);
    const isStatic = body.is_static === true;
    const filters = body.filters ?? { properties: { type: 'AND', values: [] } };
    const refs = isStatic ? { cohortIds: new Set<number>() } : validateCohortFilters(filters);
    const row = await write(projectId, async (tx) => {
      await checkCohortRefs(tx, projectId, refs);
      const inserted = await tx.query<{ id: number }>(
        'cohorts.create',
        `INSERT INTO cohorts (project_id, name, description, filters, is_static, created_by_id) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
        [projectId, body.name ?? '', typeof body.description === 'string' ? body.description : '', JSON.stringify(isStatic ? {} : filters), isStatic, userId],
      );
      const id = inserted.rows[0]!.id;
      if (isStatic) await addMembers(tx, projectId, id, body.distinct_ids ?? []);
      return readCohort(tx, projectId, id);
    });
    send(req, res, 201, serializeCohort(row), 'cohort');
  });

  router.get(cohortPath, async (req, res) => {
    const { projectId } = authorize(req, 'cohort:read');
    send(req, res, 200, serializeCohort(await readCohort(sql, projectId, idParam(req))), 'cohort');
  });

  const updateCohort = async (req: Request, res: Response) => {
    const { projectId } = authorize(req, 'cohort:write');
    const id = idParam(req);
    const body: unknown = req.body;
    if (!isObject(body)) throw ApiError.validation('Expected a JSON object.', null, 'parse_error');
    validateBody('CohortWrite', body);
    const row = await write(projectId, async (tx) => {
      const existing = await readCohort(tx, projectId, id);
      let filters: string | null = null;
      if (body.filters !== undefined && !existing.is_static) {
        await checkCohortRefs(tx, projectId, validateCohortFilters(body.filters), id);
        filters = JSON.stringify(body.filters);
      }
      await tx.query(
        'cohorts.update',
        `UPDATE cohorts SET name = COALESCE($3, name), description = COALESCE($4, description), filters = COALESCE($5::jsonb, filters),
           deleted = COALESCE($6, deleted), version = version + 1, updated_at = now() WHERE project_id = $1 AND id = $2`,
        [
          projectId,
          id,
          typeof body.name === 'string' ? body.name : null,
          typeof body.description === 'string' ? body.description : null,
          filters,
          typeof body.deleted === 'boolean' ? body.deleted : null,
        ],
      );
      if (existing.is_static) await addMembers(tx, projectId, id, body.distinct_ids);
      return readCohort(tx, projectId, id);
    });
    send(req, res, 200, serializeCohort(row), 'cohort');
  };
  router.patch(cohortPath, updateCohort);
  router.put(cohortPath, updateCohort);
  router.delete(cohortPath, refuseDelete('cohort:write'));

  router.use(productRoutes(sql));
  return router;
}
