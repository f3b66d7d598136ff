import { Router, type Request, type Response } from 'express';
import type { Sql } from '@plover/postgres';
import { accessLevelSql, getAccessControls, isAdmin, putAccessControl, requireAccess, type AccessLevel } from '../http/access';
import { principalOf, projectOf, requireScope } from '../http/auth';
import { bodyOf, queryBoolean, type Body } from '../http/body';
import { errors } from '../http/errors';
import { envelope, pageOf, queryValue, send } from '../http/render';
import { newShortId, USER_JSON, type UserBasic } from '../routes/playlists';
import { SqlBuilder } from '../routes/person-filters';
import { validateBody } from '../schemas';
import { containsPattern } from '../http/like';

export const RESOURCE = 'insight';
const BASE = '/insights';
/** Action paths under `/insights/` that a detail route must not read as an id or short_id. */
const ACTIONS = new Set(['my_last_viewed', 'viewed', 'timing', 'trend']);
const MAX_ID = 2_147_483_647;

interface InsightRow {
  id: number;
  short_id: string;
  name: string | null;
  derived_name: string | null;
  description: string | null;
  filters: Record<string, unknown>;
  query: Record<string, unknown> | null;
  order: number | null;
  deleted: boolean;
  dashboards: number[];
  tags: string[];
  favorited: boolean;
  saved: boolean;
  created_at: Date;
  created_by_id: number | null;
  created_by: UserBasic | null;
  updated_at: Date;
  last_modified_at: Date;
  last_modified_by: UserBasic | null;
  timezone: string;
  last_viewed_at: Date | null;
  user_access_level: AccessLevel;
}

/** The caller's level on each insight; `$1` project, `$2` user, `$3` whether they administer the organization. */
const ACCESS = accessLevelSql(RESOURCE, 'i.id::text', 'i.created_by_id', '$1', '$2', '$3');
const VISIBLE = `${ACCESS} <> 'none'`;

/** Insights with their users, the project timezone, the caller's last view ($2) and access level. */
function selectInsights(where: string): string {
  return `SELECT i.id, i.short_id, i.name, i.derived_name, i.description, i.filters, i.query, i."order", i.deleted, i.dashboards, i.tags,
                 i.favorited, i.saved, i.created_at, i.created_by_id, ${USER_JSON('cu')} AS created_by, i.updated_at,
                 i.last_modified_at, ${USER_JSON('mu')} AS last_modified_by, pr.timezone, v.last_viewed_at, ${ACCESS} AS user_access_level
            FROM insights i
            JOIN projects pr ON pr.id = i.project_id
            LEFT JOIN users cu ON cu.id = i.created_by_id
            LEFT JOIN users mu ON mu.id = i.last_modified_by_id
            LEFT JOIN insight_views v ON v.project_id = i.project_id AND v.user_id = $2 AND v.insight_id = i.id
           WHERE i.project_id = $1 AND ${where}`;
}

const iso = (value: Date | null) => (value === null ? null : value.toISOString());

/** InsightSerializer's fields that Plover has data for; results are computed by `/insights/trend/`, never stored. */
function insightBody(row: InsightRow): Record<string, unknown> {
  return {
    id: row.id,
    short_id: row.short_id,
    name: row.name,
    derived_name: row.derived_name,
    filters: row.filters,
    query: row.query,
    order: row.order,
    deleted: row.deleted,
    dashboards: row.dashboards,
    dashboard_tiles: [],
    last_refresh: null,
    result: null,
    created_at: row.created_at.toISOString(),
    created_by: row.created_by,
    description: row.description,
    updated_at: row.updated_at.toISOString(),
    tags: row.tags,
    favorited: row.favorited,
    saved: row.saved,
    last_modified_at: row.last_modified_at.toISOString(),
    last_modified_by: row.last_modified_by,
    is_sample: false,
    timezone: row.timezone,
    user_access_level: row.user_access_level,
    last_viewed_at: iso(row.last_viewed_at),
  };
}

/** InsightBasicSerializer's fields (my_last_viewed), in its order; `refreshing` is the only one the full body lacks. */
const BASIC_FIELDS = [
  'id',
  'short_id',
  'name',
  'derived_name',
  'filters',
  'query',
  'dashboards',
  'dashboard_tiles',
  'description',
  'last_refresh',
  'refreshing',
  'saved',
  'tags',
  'updated_at',
  'created_by',
  'created_at',
  'last_modified_at',
  'favorited',
  'user_access_level',
  'last_viewed_at',
] as const;

function basicBody(row: InsightRow): Record<string, unknown> {
  const full: Record<string, unknown> = { ...insightBody(row), refreshing: false };
  return Object.fromEntries(BASIC_FIELDS.map((field) => [field, full[field]]));
}

/** Writable fields, each the column it is stored in. */
const COLUMNS = {
  name: 'name',
  derived_name: 'derived_name',
  description: 'description',
  filters: 'filters',
  query: 'query',
  order: '"order"',
  deleted: 'deleted',
  dashboards: 'dashboards',
  tags: 'tags',
  favorited: 'favorited',
  saved: 'saved',
} as const;
type Field = keyof typeof COLUMNS;
/** Changes to these bump last_modified_at/by (PostHog's MATERIAL_INSIGHT_FIELDS, plus the query node). */
const MATERIAL: Record<'name' | 'description' | 'filters' | 'query', string> = { name: 'text', description: 'text', filters: 'jsonb', query: 'jsonb' };

/** A query node, or its JSON text: an object with a string `kind`. */
function queryNode(value: unknown): Record<string, unknown> | null {
  if (value === null) return null;
  let node: unknown = value;
  if (typeof value === 'string') {
    try {
      node = JSON.parse(value);
    } catch {
      throw errors.validation('Query is not valid JSON.', 'query', 'invalid_input');
    }
  }
  if (typeof node !== 'object' || node === null || Array.isArray(node) || typeof (node as Record<string, unknown>).kind !== 'string') {
    throw errors.validation('A query must be an object with a string "kind".', 'query', 'invalid_input');
  }
  return node as Record<string, unknown>;
}

function fieldsOf(body: Body): Partial<Record<Field, unknown>> {
  validateBody('InsightWrite', body);
  const fields: Partial<Record<Field, unknown>> = {};
  for (const field of Object.keys(COLUMNS) as Field[]) {
    if (body[field] !== undefined) fields[field] = body[field];
  }
  // PostHog checks each id against its dashboards; Plover has none, so any id names a missing one.
  const [dashboard] = (fields.dashboards ?? []) as number[];
  if (dashboard !== undefined) throw errors.validation(`Invalid pk "${dashboard}" - object does not exist.`, 'dashboards', 'does_not_exist');
  if (fields.filters === null) fields.filters = {};
  if (fields.query !== undefined) fields.query = queryNode(fields.query);
  return fields;
}

/** A numeric path id that fits the column, else null (then it can only be a short_id). */
function numericId(raw: string): number | null {
  return /^[0-9]{1,10}$/.test(raw) && Number(raw) <= MAX_ID ? Number(raw) : null;
}

/**
 * Saved insights under a project: list, create, retrieve (by id or short_id; records a view), update (soft delete
 * and restore through `deleted`), DELETE → 405 empty, `my_last_viewed`, `viewed` and `access_controls`.
 */
export function savedInsightRoutes(sql: Sql): Router {
  const router = Router({ mergeParams: true });
  const callerParams = (req: Request): unknown[] => [projectOf(req).id, principalOf(req).user.id, isAdmin(req)];
  const target = (row: InsightRow) => ({ resource: RESOURCE, resourceId: String(row.id), createdBy: row.created_by_id });

  /** The path's `:id`; an action name reached with a method it does not support is a 405. */
  function detailParam(req: Request): string {
    const raw = req.params.id as string;
    if (ACTIONS.has(raw)) throw errors.methodNotAllowed(req.method);
    return raw;
  }

  /** By integer id or short_id (a numeric string tries the id first); invisible to the caller → 404. */
  async function load(req: Request, raw: string, includeDeleted: boolean): Promise<InsightRow> {
    const id = numericId(raw);
    const row = (
      await sql.query<InsightRow>(
        'management.getInsight',
        `${selectInsights(`(i.id = $4::int OR i.short_id = $5)${includeDeleted ? '' : ' AND NOT i.deleted'}`)}
          ORDER BY CASE WHEN i.id = $4::int THEN 0 ELSE 1 END LIMIT 1`,
        [...callerParams(req), id, raw],
      )
    ).rows[0];
    if (!row || row.user_access_level === 'none') throw errors.notFound();
    return row;
  }

  /** Upserts the caller's views of the given insights, skipping those deleted, elsewhere or invisible to them. */
  async function recordViews(req: Request, ids: readonly number[]): Promise<Map<number, Date>> {
    const rows = await sql.query<{ insight_id: number; last_viewed_at: Date }>(
      'management.recordInsightViews',
      `INSERT INTO insight_views (project_id, user_id, insight_id, last_viewed_at)
       SELECT $1, $2, i.id, clock_timestamp() FROM insights i
        WHERE i.project_id = $1 AND i.id = ANY($4::int[]) AND NOT i.deleted AND ${VISIBLE}
       ON CONFLICT (project_id, user_id, insight_id) DO UPDATE SET last_viewed_at = excluded.last_viewed_at
       RETURNING insight_id, last_viewed_at`,
      [...callerParams(req), ids],
    );
    return new Map(rows.rows.map((row) => [row.insight_id, row.last_viewed_at]));
  }

  router.get(BASE, async (req, res) => {
    requireScope(req, 'insight:read');
    const page = pageOf(req);
    const params = new SqlBuilder(callerParams(req));
    const where = ['NOT i.deleted', VISIBLE];
    for (const field of ['saved', 'favorited'] as const) {
      const value = queryBoolean(queryValue(req, field), field);
      if (value !== undefined) where.push(`i.${field} = ${params.bind(value)}`);
    }
    const shortId = queryValue(req, 'short_id');
    if (shortId !== undefined && shortId !== '') where.push(`i.short_id = ${params.bind(shortId)}`);
    const search = queryValue(req, 'search');
    if (search !== undefined && search !== '') {
      const pattern = params.bind(containsPattern(search));
      where.push(`(i.name ILIKE ${pattern} OR i.derived_name ILIKE ${pattern})`);
    }
    const createdBy = createdByFilter(queryValue(req, 'created_by'));
    if (createdBy !== undefined) where.push(`i.created_by_id = ANY(${params.bind(createdBy)}::int[])`);
    if (queryBoolean(queryValue(req, 'user'), 'user')) where.push('i.created_by_id = $2');
    const condition = where.join(' AND ');
    const rows = await sql.query<InsightRow>(
      'management.listInsights',
      `${selectInsights(condition)} ORDER BY i."order" NULLS LAST, i.last_modified_at DESC, i.id DESC LIMIT ${page.limit + 1} OFFSET ${page.offset}`,
      params.params,
    );
    const count = await sql.query<{ n: number }>(
      'management.countInsights',
      `SELECT count(*)::int AS n FROM insights i WHERE i.project_id = $1 AND ${condition}`,
      params.params,
    );
    const results = rows.rows.slice(0, page.limit).map(insightBody);
    send(req, res, 200, envelope(req, page, results, count.rows[0]?.n ?? 0, rows.rows.length > page.limit), 'insights');
  });

  router.post(BASE, async (req, res) => {
    requireScope(req, 'insight:write');
    const fields = fieldsOf(bodyOf(req));
    // $3 is the short_id, drawn again if it is taken.
    const insert = new SqlBuilder([projectOf(req).id, principalOf(req).user.id, null]);
    const columns = Object.keys(fields) as Field[];
    const values = columns.map((field) => insert.bind(fields[field]));
    let id: number | undefined;
    for (let attempt = 0; id === undefined; attempt++) {
      if (attempt >= 5) throw new Error('could not allocate a unique insight short_id');
      insert.params[2] = newShortId();
      id = (
        await sql.query<{ id: number }>(
          'management.createInsight',
          `INSERT INTO insights (project_id, created_by_id, last_modified_by_id, short_id${columns.map((field) => `, ${COLUMNS[field]}`).join('')})
           VALUES ($1, $2, $2, $3${values.map((value) => `, ${value}`).join('')})
           ON CONFLICT (project_id, short_id) DO NOTHING RETURNING id`,
          insert.params,
        )
      ).rows[0]?.id;
    }
    // Creating counts as a view (PostHog creates the InsightViewed row with the insight).
    await recordViews(req, [id]);
    send(req, res, 201, insightBody(await load(req, String(id), true)), 'insight');
  });

  router.get(`${BASE}/my_last_viewed`, async (req, res) => {
    requireScope(req, 'insight:read');
    const rows = await sql.query<InsightRow>(
      'management.lastViewedInsights',
      `${selectInsights(`v.last_viewed_at IS NOT NULL AND NOT i.deleted AND ${VISIBLE}`)} ORDER BY v.last_viewed_at DESC LIMIT 5`,
      callerParams(req),
    );
    send(req, res, 200, rows.rows.map(basicBody), 'insights');
  });

  router.post(`${BASE}/viewed`, async (req, res) => {
    requireScope(req, 'insight:read');
    const body = bodyOf(req);
    validateBody('InsightViewed', body);
    await recordViews(req, body.insight_ids as number[]);
    res.status(201).end();
  });

  router.get(`${BASE}/:id`, async (req, res) => {
    requireScope(req, 'insight:read');
    const row = await load(req, detailParam(req), false);
    row.last_viewed_at = (await recordViews(req, [row.id])).get(row.id) ?? row.last_viewed_at;
    send(req, res, 200, insightBody(row), 'insight');
  });

  const update = async (req: Request, res: Response) => {
    requireScope(req, 'insight:write');
    const raw = detailParam(req);
    const fields = fieldsOf(bodyOf(req));
    // Soft-deleted insights stay reachable here, so `{"deleted": false}` restores one.
    const current = await load(req, raw, true);
    await requireAccess(sql, req, target(current), 'editor');
    const params = new SqlBuilder([current.id]);
    const placeholders = new Map(Object.entries(fields).map(([field, value]) => [field, params.bind(value)]));
    const sets = [...placeholders].map(([field, placeholder]) => `${COLUMNS[field as Field]} = ${placeholder}`);
    const changed = Object.entries(MATERIAL)
      .filter(([field]) => placeholders.has(field))
      .map(([field, type]) => `${placeholders.get(field)!}::${type} IS DISTINCT FROM ${field}`);
    if (changed.length > 0) {
      const material = `(${changed.join(' OR ')})`;
      sets.push(`last_modified_at = CASE WHEN ${material} THEN now() ELSE last_modified_at END`);
      sets.push(`last_modified_by_id = CASE WHEN ${material} THEN ${params.bind(principalOf(req).user.id)}::int ELSE last_modified_by_id END`);
    }
    await sql.query('management.updateInsight', `UPDATE insights SET ${[...sets, 'updated_at = now()'].join(', ')} WHERE id = $1`, params.params);
    send(req, res, 200, insightBody(await load(req, String(current.id), true)), 'insight');
  };
  router.patch(`${BASE}/:id`, update);
  router.put(`${BASE}/:id`, update);

  router.delete(`${BASE}/:id`, (req, res) => {
    requireScope(req, 'insight:write');
    // Hard delete is refused with an empty body; PATCH {"deleted": true} instead.
    res.status(405).end();
  });

  router.get(`${BASE}/:id/access_controls`, async (req, res) => {
    await getAccessControls(sql, req, res, target(await load(req, req.params.id, false)));
  });
  router.put(`${BASE}/:id/access_controls`, async (req, res) => {
    await putAccessControl(sql, req, res, target(await load(req, req.params.id, false)));
  });

  return router;
}

/** `created_by`: one user id or a JSON list of them (PostHog's form). */
function createdByFilter(raw: string | undefined): number[] | undefined {
  if (raw === undefined || raw === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  const ids = Array.isArray(parsed) ? (parsed as unknown[]) : [parsed];
  if (!ids.every((id) => Number.isInteger(id) && (id as number) > 0 && (id as number) <= MAX_ID)) {
    throw errors.validation('A valid integer or list of integers is required.', 'created_by', 'invalid');
  }
  return ids as number[];
}
