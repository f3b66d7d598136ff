import type { SqlExecutor } from '@plover/postgres';
import type { Caller } from './access-store';
import { errors } from './errors';

/** PostHog's restriction and privilege levels (they share the numbers). */
export const CAN_VIEW = 21;
export const CAN_EDIT = 37;

/** Live tiles (insights and text cards) a dashboard may hold: what one dashboard request may compute is bounded. */
export const MAX_TILES_PER_DASHBOARD = 100;

/**
 * The caller's privilege on a dashboard: everyone edits one at restriction level 21; at 37 only its creator and
 * the organization's admins do, the others view.
 */
export function dashboardPrivilege(caller: Caller, dashboard: { restriction_level: number; created_by_id: number | null }): number {
  if (dashboard.restriction_level === CAN_VIEW || caller.admin || dashboard.created_by_id === caller.userId) return CAN_EDIT;
  return CAN_VIEW;
}

interface DashboardRef {
  id: number;
  restriction_level: number;
  created_by_id: number | null;
  tiles: number;
}

/**
 * Puts an insight on exactly the dashboards `wanted` (PostHog's `dashboards` write on an insight): a tile is
 * created for each dashboard it is not on yet (or its old tile undeleted, keeping its layout), and its tiles
 * on dashboards no longer listed are soft-deleted. Every dashboard added or removed must be a live dashboard of
 * the project (else 400) the caller may edit (else 403), and one that gets a tile must have room for it.
 */
export async function setInsightDashboards(tx: SqlExecutor, caller: Caller, insightId: number, wanted: readonly number[]): Promise<void> {
  const current = (
    await tx.query<{ dashboard_id: number }>(
      'management.insightDashboards',
      `SELECT t.dashboard_id FROM dashboard_tiles t JOIN dashboards d ON d.id = t.dashboard_id
        WHERE t.insight_id = $1 AND NOT t.deleted AND NOT d.deleted`,
      [insightId],
    )
  ).rows.map((row) => row.dashboard_id);
  const added = [...new Set(wanted)].filter((id) => !current.includes(id));
  const removed = current.filter((id) => !wanted.includes(id));
  if (added.length === 0 && removed.length === 0) return;
  const dashboards = (
    await tx.query<DashboardRef>(
      'management.tileDashboards',
      `SELECT d.id, d.restriction_level, d.created_by_id,
              (SELECT count(*)::int FROM dashboard_tiles t WHERE t.dashboard_id = d.id AND NOT t.deleted) AS tiles
         FROM dashboards d WHERE d.project_id = $1 AND d.id = ANY($2::int[]) AND NOT d.deleted`,
      [caller.projectId, [...added, ...removed]],
    )
  ).rows;
  for (const id of [...added, ...removed]) {
    const dashboard = dashboards.find((row) => row.id === id);
    if (!dashboard) throw errors.validation('Dashboard not found', 'dashboards');
    if (dashboardPrivilege(caller, dashboard) < CAN_EDIT) {
      const verb = added.includes(id) ? 'add insights to' : 'remove insights from';
      throw errors.forbidden(`You don't have permission to ${verb} dashboard: ${id}`);
    }
    if (added.includes(id) && dashboard.tiles >= MAX_TILES_PER_DASHBOARD) {
      throw errors.validation(`Dashboard ${id} already has ${MAX_TILES_PER_DASHBOARD} tiles, the most one may have.`, 'dashboards', 'max_tiles');
    }
  }
  if (added.length > 0) {
    await tx.query(
      'management.addInsightTiles',
      `INSERT INTO dashboard_tiles (project_id, dashboard_id, insight_id) SELECT $1, unnest($2::int[]), $3
       ON CONFLICT (dashboard_id, insight_id) DO UPDATE SET deleted = false`,
      [caller.projectId, added, insightId],
    );
  }
  if (removed.length > 0) {
    await tx.query('management.removeInsightTiles', 'UPDATE dashboard_tiles SET deleted = true WHERE insight_id = $1 AND dashboard_id = ANY($2::int[])', [
      insightId,
      removed,
    ]);
  }
}
