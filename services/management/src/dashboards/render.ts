import type { Static } from '@sinclair/typebox';
import { ApiError } from '@plover/core';
import type { InsightContext } from '@plover/insights';
import type { Caller } from '../shared/access-store';
import { CAN_EDIT, CAN_VIEW } from '../shared/dashboard-tiles';
import { insightRecord, type InsightRow } from '../shared/insight-record';
import type { NodeRunner, RunMode } from '../shared/node-runner';
import type { DashboardRow, DashboardsStore, TileRow } from './dashboards-store';
import { tileFilters, withDashboardFilters } from '../shared/dashboard-filters';
import type { Dashboard, DashboardBasic, DashboardTile } from './schemas';

/** Who looks at a dashboard: a member (with their privilege on it) or a public link. */
export interface Viewer {
  caller: Caller;
  ctx: InsightContext;
  privilege: number;
  shared: boolean;
}

/** `sm` layout position, missing values last (PostHog's sort_tiles_by_layout). */
function layoutKey(tile: TileRow): [number, number] {
  const sm = tile.layouts.sm as { x?: unknown; y?: unknown } | undefined;
  const at = (value: unknown) => (typeof value === 'number' ? value : 100);
  return [at(sm?.y), at(sm?.x)];
}

function byLayout(a: TileRow, b: TileRow): number {
  const [[ay, ax], [by, bx]] = [layoutKey(a), layoutKey(b)];
  return ay - by || ax - bx || a.id - b.id;
}

const iso = (value: Date | null) => (value === null ? null : value.toISOString());

export function basicBody(row: DashboardRow, privilege: number): Static<typeof DashboardBasic> {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    pinned: row.pinned,
    created_at: row.created_at.toISOString(),
    created_by: row.created_by,
    last_accessed_at: iso(row.last_accessed_at),
    last_viewed_at: null,
    is_shared: row.is_shared,
    deleted: row.deleted,
    creation_mode: row.creation_mode,
    tags: row.tags,
    restriction_level: row.restriction_level,
    effective_restriction_level: row.restriction_level,
    effective_privilege_level: privilege,
    user_access_level: privilege >= CAN_EDIT ? 'editor' : 'viewer',
    access_control_version: row.restriction_level > CAN_VIEW ? 'v1' : 'v2',
    last_refresh: iso(row.last_refresh),
    team_id: row.project_id,
  };
}

/** Renders dashboards for a viewer, running each tile's insight through the node runner. */
export function dashboardRenderer(store: DashboardsStore, run: NodeRunner) {
  async function tileBody(viewer: Viewer, tile: TileRow, order: number, insight: InsightRow | undefined, filters: Record<string, unknown>, mode: RunMode) {
    let computed: Record<string, unknown> | null = null;
    let error: Static<typeof DashboardTile>['error'] = null;
    let query = insight?.query ?? null;
    if (insight && query !== null) {
      query = withDashboardFilters(query, tileFilters(filters, tile.filters_overrides));
      try {
        computed = await run(query, viewer.ctx, mode);
      } catch (failure) {
        if (!(failure instanceof ApiError)) throw failure;
        error = { type: failure.code, detail: failure.detail };
      }
    }
    const record = insight && insightRecord(insight, computed, query);
    if (record && viewer.shared) {
      record.created_by = null;
      record.last_modified_by = null;
      record.user_access_level = 'viewer';
    }
    const text =
      tile.text_id === null
        ? null
        : {
            id: tile.text_id,
            body: tile.text_body ?? '',
            created_by: viewer.shared ? null : tile.text_created_by,
            last_modified_at: tile.text_last_modified_at!.toISOString(),
            last_modified_by: viewer.shared ? null : tile.text_last_modified_by,
            team: viewer.caller.projectId,
          };
    return {
      id: tile.id,
      insight: record ?? null,
      text,
      button_tile: null,
      color: tile.color,
      layouts: tile.layouts,
      filters_overrides: tile.filters_overrides,
      show_description: tile.show_description,
      transparent_background: tile.transparent_background,
      order,
      last_refresh: record?.last_refresh ?? null,
      is_cached: record?.is_cached ?? false,
      error,
    };
  }

  /**
   * The dashboard with its tiles in layout order, each insight run (mode) with the dashboard's filters, `override`
   * over them; tiles of insights the viewer may not see are left out.
   */
  async function dashboardBody(viewer: Viewer, row: DashboardRow, mode: RunMode, override: Record<string, unknown> = {}): Promise<Static<typeof Dashboard>> {
    const tiles = (await store.tiles(row.id)).sort(byLayout);
    const insights = await store.insights(
      viewer.caller,
      tiles.flatMap((tile) => (tile.insight_id === null ? [] : [tile.insight_id])),
    );
    const visible = tiles.filter((tile) => tile.insight_id === null || insights.has(tile.insight_id));
    const filters = { ...row.filters, ...override };
    const bodies = [];
    // One after another: a refresh's statements take the request's one analysis slot in turn.
    for (const [order, tile] of visible.entries()) bodies.push(await tileBody(viewer, tile, order, insights.get(tile.insight_id ?? -1), filters, mode));
    if (mode !== 'peek' && bodies.some((tile) => tile.insight !== null)) row.last_refresh = await store.refreshed(row.id);
    const basic = basicBody(row, viewer.privilege);
    return {
      ...basic,
      ...(viewer.shared ? { created_by: null, effective_privilege_level: CAN_VIEW, user_access_level: 'viewer' as const } : {}),
      tiles: bodies,
      filters,
      variables: row.variables,
      breakdown_colors: row.breakdown_colors,
      data_color_theme_id: row.data_color_theme_id,
      persisted_filters: row.filters,
      persisted_variables: row.variables,
      quick_filter_ids: [],
    };
  }

  return { dashboardBody };
}
