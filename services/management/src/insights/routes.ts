import type { Request } from 'express';
import type { ManagementDeps } from '../http/deps';
import { accessControlRoutes, callerOf, requireAccess } from '../http/access';
import { projectOf } from '../http/auth';
import { errors } from '../shared/errors';
import { Type, type Static } from '@sinclair/typebox';
import { pageFrom, Q, route, updates, type Route } from '../http/route-table';
import type { AccessTarget } from '../shared/access-store';
import { computeRoutes } from './compute';
import { setInsightDashboards } from '../shared/dashboard-tiles';
import { insightContext } from '../shared/insight-context';
import { Insight, INSIGHT_RESOURCE, insightRecord, type InsightRow } from '../shared/insight-record';
import { RefreshParam, runModeOf, type NodeRunner } from '../shared/node-runner';
import { COLUMNS, InsightsStore, type Field } from './insights-store';
import { InsightBasic, InsightViewed, InsightWrite } from './schemas';
import { timingRoutes } from './timing';

const INSIGHT = '/insights/:id';
const MAX_ID = 2_147_483_647;

function basicBody(row: InsightRow): Static<typeof InsightBasic> {
  const full: Record<string, unknown> = { ...insightRecord(row), refreshing: false };
  // In the schema's order: InsightBasicSerializer's (a CSV's columns).
  return Object.fromEntries(Object.keys(InsightBasic.properties).map((field) => [field, full[field]])) as Static<typeof InsightBasic>;
}

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

/** The fields a validated body sets (`dashboards` is written as tiles, shared/dashboard-tiles.ts). */
function fieldsOf(body: Static<typeof InsightWrite>): Partial<Record<Field, unknown>> {
  const fields: Partial<Record<Field, unknown>> = {};
  for (const field of Object.keys(COLUMNS) as Field[]) {
    if (body[field] !== undefined) fields[field] = body[field];
  }
  if (fields.filters === null) fields.filters = {};
  if (fields.query !== undefined) fields.query = queryNode(fields.query);
  return fields;
}

/** A numeric path id that fits the column, else null (then it can only be a short_id). */
function numericId(raw: string): number | null {
  return /^[0-9]{1,10}$/.test(raw) && Number(raw) <= MAX_ID ? Number(raw) : null;
}

/** `created_by`: one user id or a JSON list of them (PostHog's form). */
function createdByFilter(raw: string | undefined): number[] | undefined {
  if (raw === undefined) return undefined;
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

/**
 * `/insights` under a project: the computed insights (`trend`, `funnel/correlation`), `timing`, and saved insights
 * (list, create, retrieve by id or short_id recording a view, update with soft delete and restore through
 * `deleted`, DELETE → 405 empty, `my_last_viewed`, `viewed`, access controls).
 */
export function insightRoutes(deps: ManagementDeps, run: NodeRunner): Route[] {
  const store = new InsightsStore(deps.sql);
  const target = (row: InsightRow): AccessTarget => ({ resource: INSIGHT_RESOURCE, resourceId: String(row.id), createdBy: row.created_by_id });

  /** Writes the insight's fields and the dashboards it is on in one transaction; answers its id. */
  async function write(req: Request, body: Static<typeof InsightWrite>, id?: number): Promise<number> {
    const fields = fieldsOf(body);
    const caller = callerOf(req);
    return deps.sql.transaction(async (tx) => {
      const insights = new InsightsStore(tx);
      const written = id ?? (await insights.create(caller, fields));
      if (id !== undefined) await insights.update(id, fields, caller.userId);
      if (body.dashboards !== undefined) await setInsightDashboards(tx, caller, written, body.dashboards);
      return written;
    });
  }

  /** The path's insight, by integer id or short_id (a numeric string tries the id first); invisible to the caller → 404. */
  async function load(req: Request, includeDeleted = false, raw = String(req.params.id)): Promise<InsightRow> {
    const row = await store.get(callerOf(req), numericId(raw), raw, includeDeleted);
    if (!row || row.user_access_level === 'none') throw errors.notFound();
    return row;
  }

  return [
    ...computeRoutes(deps),
    ...timingRoutes(deps),
    route({
      method: 'get',
      path: '/insights',
      scope: 'insight:read',
      summary: 'List saved insights by `order`, then last modified',
      paginated: 'envelope',
      query: Type.Object({ saved: Q.boolean, favorited: Q.boolean, search: Q.string, short_id: Q.string, created_by: Q.string, user: Q.boolean }),
      csv: { file: 'insights' },
      response: { status: 200, schema: Insight },
      async handler(req, { page, query }) {
        const { rows, count } = await store.list(
          callerOf(req),
          {
            saved: query.saved,
            favorited: query.favorited,
            shortId: query.short_id,
            search: query.search,
            createdBy: createdByFilter(query.created_by),
            mine: query.user === true,
          },
          page,
        );
        return pageFrom(rows, page, (row) => insightRecord(row), count);
      },
    }),
    route({
      method: 'post',
      path: '/insights',
      scope: 'insight:write',
      summary: 'Create a saved insight (counts as a view)',
      body: InsightWrite,
      csv: { file: 'insight' },
      response: { status: 201, schema: Insight },
      async handler(req, { body }) {
        const id = await write(req, body);
        // Creating counts as a view (PostHog creates the InsightViewed row with the insight).
        await store.recordViews(callerOf(req), [id]);
        return insightRecord(await load(req, true, String(id)));
      },
    }),
    route({
      method: 'get',
      path: '/insights/my_last_viewed',
      scope: 'insight:read',
      summary: 'Your 5 most recently viewed insights, newest first',
      csv: { file: 'insights' },
      response: { status: 200, schema: Type.Array(InsightBasic) },
      handler: async (req) => (await store.lastViewed(callerOf(req))).map(basicBody),
    }),
    route({
      method: 'post',
      path: '/insights/viewed',
      scope: 'insight:read',
      summary: 'Record views of insights',
      body: InsightViewed,
      response: { status: 201 },
      async handler(req, { body }) {
        await store.recordViews(callerOf(req), body.insight_ids);
      },
    }),
    route({
      method: 'get',
      path: INSIGHT,
      scope: 'insight:read',
      summary: 'A saved insight by id or short_id with its result from the cache (`refresh` computes it); records a view',
      query: Type.Object({ refresh: RefreshParam }),
      csv: { file: 'insight' },
      response: { status: 200, schema: Insight },
      async handler(req, { query }) {
        const row = await load(req);
        row.last_viewed_at = (await store.recordViews(callerOf(req), [row.id])).get(row.id) ?? row.last_viewed_at;
        const computed = row.query === null ? null : await run(row.query, insightContext(deps.sql, projectOf(req)), runModeOf(query.refresh));
        return insightRecord(row, computed);
      },
    }),
    ...updates({
      path: INSIGHT,
      scope: 'insight:write',
      summary: 'Update a saved insight; `deleted: true` soft-deletes',
      body: InsightWrite,
      csv: { file: 'insight' },
      response: { status: 200, schema: Insight },
      async handler(req, { body }) {
        // Soft-deleted insights stay reachable here, so `{"deleted": false}` restores one.
        const current = await load(req, true);
        await requireAccess(deps.sql, req, target(current), 'editor');
        await write(req, body, current.id);
        return insightRecord(await load(req, true, String(current.id)));
      },
    }),
    route({
      method: 'delete',
      path: INSIGHT,
      scope: 'insight:write',
      summary: 'Hard delete is not allowed: 405, empty body (PATCH `deleted: true` instead)',
      response: { status: 405 },
      handler: () => undefined,
    }),
    ...accessControlRoutes(deps.sql, INSIGHT, 'an insight', async (req) => target(await load(req))),
  ];
}
