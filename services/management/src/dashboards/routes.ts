import type { Request } from 'express';
import { Type, type Static } from '@sinclair/typebox';
import type { SqlExecutor } from '@plover/postgres';
import type { ManagementDeps } from '../http/deps';
import { callerOf, requireAccess } from '../http/access';
import { projectOf } from '../http/auth';
import { found, idParam } from '../http/resource-routes';
import { pageFrom, Q, route, updates, type Route } from '../http/route-table';
import type { Caller } from '../shared/access-store';
import { CAN_EDIT, dashboardPrivilege, MAX_TILES_PER_DASHBOARD } from '../shared/dashboard-tiles';
import { errors } from '../shared/errors';
import { insightContext } from '../shared/insight-context';
import { INSIGHT_RESOURCE } from '../shared/insight-record';
import { RefreshParam, runModeOf, type NodeRunner } from '../shared/node-runner';
import { DASHBOARD_COLUMNS, DashboardsStore, type DashboardField, type DashboardRow } from './dashboards-store';
import { basicBody, dashboardRenderer, type Viewer } from './render';
import { Dashboard, DashboardBasic, DashboardWrite, TileWrite } from './schemas';
import { sharingRoutes } from './sharing';

const DASHBOARD = '/dashboards/:id';

/** A `filters_override` query parameter: a JSON object. */
function filtersOverride(raw: string | undefined): Record<string, unknown> {
  if (raw === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw errors.validation('filters_override must be a JSON object.', 'filters_override');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw errors.validation('filters_override must be a JSON object.', 'filters_override');
  return value as Record<string, unknown>;
}

/** The fields of a dashboard write that are columns. */
function columnsOf(body: Static<typeof DashboardWrite>): Partial<Record<DashboardField, unknown>> {
  const fields: Partial<Record<DashboardField, unknown>> = {};
  for (const field of Object.keys(DASHBOARD_COLUMNS) as DashboardField[]) {
    if (body[field] !== undefined) fields[field] = body[field];
  }
  return fields;
}

const tileFields = (tile: Static<typeof TileWrite>) => ({
  color: tile.color,
  layouts: tile.layouts,
  filters_overrides: tile.filters_overrides,
  show_description: tile.show_description,
  transparent_background: tile.transparent_background,
  deleted: tile.deleted,
});

/**
 * `/dashboards/` under a project: CRUD with soft delete (DELETE → 405), tiles holding an insight or a text card,
 * dashboard filters applied to every tile's query, results from the process's result cache (a plain GET never
 * computes; `refresh` does), duplication (`use_dashboard`), and the sharing links of dashboards and insights
 * with the public page a link opens (`sharedRoutes`). docs/dashboards.md.
 */
export function dashboardRoutes(deps: ManagementDeps, run: NodeRunner): Route[] {
  const store = new DashboardsStore(deps.sql);
  const { dashboardBody } = dashboardRenderer(store, run);

  async function load(req: Request, includeDeleted = false): Promise<DashboardRow> {
    return found(await store.get(projectOf(req).id, idParam(req), includeDeleted));
  }

  const viewerOf = (req: Request, row: DashboardRow): Viewer => {
    const caller = callerOf(req);
    return { caller, ctx: insightContext(deps.sql, projectOf(req)), privilege: dashboardPrivilege(caller, row), shared: false };
  };

  /** Updates tiles by id and adds text cards, within the tile cap. */
  async function writeTiles(tx: SqlExecutor, caller: Caller, dashboardId: number, tiles: Static<typeof TileWrite>[]): Promise<void> {
    const tileStore = new DashboardsStore(tx);
    let count = await tileStore.tileCount(dashboardId);
    for (const [index, tile] of tiles.entries()) {
      if (tile.id !== undefined) {
        if (!(await tileStore.updateTile(caller, dashboardId, tile.id, tileFields(tile), tile.text?.body))) {
          throw errors.validation(`Tile ${tile.id} is not on this dashboard.`, `tiles__${index}__id`);
        }
      } else if (tile.text !== undefined) {
        if (++count > MAX_TILES_PER_DASHBOARD) throw errors.validation(`A dashboard holds at most ${MAX_TILES_PER_DASHBOARD} tiles.`, 'tiles', 'max_tiles');
        await tileStore.addText(caller, dashboardId, tile.text.body, tileFields(tile));
      } else {
        throw errors.validation('A new tile needs a text card; insights are added through the insight’s `dashboards`.', `tiles__${index}`);
      }
    }
  }

  function requireEdit(req: Request, row: DashboardRow): void {
    if (dashboardPrivilege(callerOf(req), row) < CAN_EDIT) throw errors.forbidden("You don't have edit permissions for this dashboard.");
  }

  return [
    route({
      method: 'get',
      path: '/dashboards',
      scope: 'dashboard:read',
      summary: 'List dashboards, pinned first, then by name (unlisted and deleted ones left out)',
      paginated: 'envelope',
      query: Type.Object({ search: Q.string, pinned: Q.boolean }),
      csv: { file: 'dashboards' },
      response: { status: 200, schema: DashboardBasic },
      async handler(req, { page, query }) {
        const caller = callerOf(req);
        const { rows, count } = await store.list(caller.projectId, { search: query.search, pinned: query.pinned }, page);
        return pageFrom(rows, page, (row) => basicBody(row, dashboardPrivilege(caller, row)), count);
      },
    }),
    route({
      method: 'post',
      path: '/dashboards',
      scope: 'dashboard:write',
      summary: 'Create a dashboard, empty or as a copy of another (`use_dashboard`, with `duplicate_tiles` copying its insights too)',
      body: DashboardWrite,
      csv: { file: 'dashboard' },
      response: { status: 201, schema: Dashboard },
      async handler(req, { body }) {
        const caller = callerOf(req);
        const source = body.use_dashboard === undefined ? undefined : await store.get(caller.projectId, body.use_dashboard);
        if (body.use_dashboard !== undefined && !source) throw errors.validation('Dashboard not found', 'use_dashboard');
        const fields = columnsOf(body);
        if (source) {
          fields.filters ??= source.filters;
          fields.variables ??= source.variables;
          fields.description ??= source.description;
        }
        const id = await deps.sql.transaction(async (tx) => {
          const dashboards = new DashboardsStore(tx);
          const created = await dashboards.create(caller, fields, source ? 'duplicate' : 'default');
          if (source) await dashboards.copyTiles(caller, source.id, created, body.duplicate_tiles === true);
          if (body.tiles) await writeTiles(tx, caller, created, body.tiles);
          return created;
        });
        const row = found(await store.get(caller.projectId, id));
        return dashboardBody(viewerOf(req, row), row, 'peek');
      },
    }),
    route({
      method: 'get',
      path: DASHBOARD,
      scope: 'dashboard:read',
      summary: "A dashboard with its tiles: each insight's result from the cache, never computed unless `refresh` asks; `filters_override` for this request",
      query: Type.Object({ refresh: RefreshParam, filters_override: Q.string }),
      csv: { file: 'dashboard' },
      response: { status: 200, schema: Dashboard },
      async handler(req, { query }) {
        const row = await load(req);
        const override = filtersOverride(query.filters_override);
        row.last_accessed_at = await store.touchAccessed(row.id);
        return dashboardBody(viewerOf(req, row), row, runModeOf(query.refresh), override);
      },
    }),
    ...updates({
      path: DASHBOARD,
      scope: 'dashboard:write',
      summary: 'Update a dashboard and its tiles; `deleted: true` soft-deletes it (with `delete_insights`, its insights on no other dashboard too)',
      body: DashboardWrite,
      csv: { file: 'dashboard' },
      response: { status: 200, schema: Dashboard },
      async handler(req, { body }) {
        const caller = callerOf(req);
        // Deleted dashboards stay reachable here, so `{"deleted": false}` restores one.
        const row = await load(req, true);
        requireEdit(req, row);
        if (body.restriction_level !== undefined && body.restriction_level !== row.restriction_level && !caller.admin && row.created_by_id !== caller.userId) {
          throw errors.forbidden(
            "Only the dashboard owner and project admins have the restriction rights required to change the dashboard's restriction level.",
          );
        }
        await deps.sql.transaction(async (tx) => {
          const dashboards = new DashboardsStore(tx);
          await dashboards.update(row.id, columnsOf(body));
          if (body.tiles) await writeTiles(tx, caller, row.id, body.tiles);
          if (body.deleted !== undefined && body.deleted !== row.deleted)
            await dashboards.setDeleted(row.id, body.deleted, body.delete_insights === true || !body.deleted);
        });
        const updated = found(await store.get(caller.projectId, row.id, true));
        return dashboardBody(viewerOf(req, updated), updated, 'peek');
      },
    }),
    route({
      method: 'delete',
      path: DASHBOARD,
      scope: 'dashboard:write',
      summary: 'Hard delete is not allowed: 405 (PATCH `deleted: true` instead)',
      response: { status: 405 },
      handler(req) {
        throw errors.methodNotAllowed(req.method);
      },
    }),
    ...sharingRoutes(deps.sql, {
      path: `${DASHBOARD}/sharing`,
      what: 'a dashboard',
      async target(req, edit) {
        const row = await load(req);
        if (edit) requireEdit(req, row);
        return { dashboard_id: row.id };
      },
    }),
    ...sharingRoutes(deps.sql, {
      path: '/insights/:id/sharing',
      what: 'an insight',
      async target(req, edit) {
        const insight = found(await store.insight(callerOf(req), String(req.params.id)));
        const target = { resource: INSIGHT_RESOURCE, resourceId: String(insight.id), createdBy: insight.created_by_id };
        await requireAccess(deps.sql, req, target, edit ? 'editor' : 'viewer');
        return { insight_id: insight.id };
      },
    }),
  ];
}
