import { randomBytes } from 'node:crypto';
import { containsPattern, SqlBuilder, type SqlExecutor } from '@plover/postgres';
import type { Page } from '../http/render';
import type { Caller } from '../shared/access-store';
import { errors } from '../shared/errors';
import { callerParams, selectInsights, VISIBLE_INSIGHT, type InsightRow } from '../shared/insight-record';
import { newShortId, USER_JSON, type UserBasic } from '../shared/users';

export interface DashboardRow {
  id: number;
  project_id: number;
  name: string | null;
  description: string;
  pinned: boolean;
  filters: Record<string, unknown>;
  variables: Record<string, unknown>;
  breakdown_colors: unknown;
  data_color_theme_id: number | null;
  creation_mode: 'default' | 'template' | 'duplicate' | 'unlisted';
  restriction_level: number;
  tags: string[];
  deleted: boolean;
  created_by_id: number | null;
  created_by: UserBasic | null;
  created_at: Date;
  last_accessed_at: Date | null;
  last_refresh: Date | null;
  is_shared: boolean;
}

export interface TileRow {
  id: number;
  insight_id: number | null;
  text_id: number | null;
  text_body: string | null;
  text_created_by: UserBasic | null;
  text_last_modified_at: Date | null;
  text_last_modified_by: UserBasic | null;
  layouts: Record<string, unknown>;
  color: string | null;
  filters_overrides: Record<string, unknown>;
  show_description: boolean | null;
  transparent_background: boolean | null;
}

export interface SharingRow {
  project_id: number;
  dashboard_id: number | null;
  insight_id: number | null;
  enabled: boolean;
  access_token: string;
  settings: Record<string, unknown>;
  created_at: Date;
}

/** Writable columns of a dashboard. */
export const DASHBOARD_COLUMNS = {
  name: 'name',
  description: 'description',
  pinned: 'pinned',
  filters: 'filters',
  variables: 'variables',
  breakdown_colors: 'breakdown_colors',
  data_color_theme_id: 'data_color_theme_id',
  tags: 'tags',
  restriction_level: 'restriction_level',
} as const;
export type DashboardField = keyof typeof DASHBOARD_COLUMNS;

/** Display fields of a tile a PATCH may change. */
const TILE_COLUMNS = ['color', 'layouts', 'filters_overrides', 'show_description', 'transparent_background', 'deleted'] as const;
export type TileFields = Partial<Record<(typeof TILE_COLUMNS)[number], unknown>>;

const SELECT_DASHBOARD = `SELECT d.id, d.project_id, d.name, d.description, d.pinned, d.filters, d.variables, d.breakdown_colors, d.data_color_theme_id,
       d.creation_mode, d.restriction_level, d.tags, d.deleted, d.created_by_id, ${USER_JSON('cu')} AS created_by, d.created_at,
       d.last_accessed_at, d.last_refresh, COALESCE(s.enabled, false) AS is_shared
  FROM dashboards d
  LEFT JOIN users cu ON cu.id = d.created_by_id
  LEFT JOIN sharing_configurations s ON s.dashboard_id = d.id`;

/** A sharing link's token: 22 random bytes, URL-safe (PostHog's `secrets.token_urlsafe(22)`). */
const newAccessToken = (): string => randomBytes(22).toString('base64url');

/** Dashboards, their tiles and text cards, and the sharing links of dashboards and insights. */
export class DashboardsStore {
  constructor(private readonly sql: SqlExecutor) {}

  async get(projectId: number, id: number, includeDeleted = false): Promise<DashboardRow | undefined> {
    const rows = await this.sql.query<DashboardRow>(
      'management.getDashboard',
      `${SELECT_DASHBOARD} WHERE d.project_id = $1 AND d.id = $2${includeDeleted ? '' : ' AND NOT d.deleted'}`,
      [projectId, id],
    );
    return rows.rows[0];
  }

  /** One page (and one row more) of the project's live, listed dashboards, pinned first, then by name; with their count. */
  async list(projectId: number, filter: { search?: string; pinned?: boolean }, page: Page): Promise<{ rows: DashboardRow[]; count: number }> {
    const params = new SqlBuilder([projectId]);
    const where = ['d.project_id = $1', 'NOT d.deleted', `d.creation_mode <> 'unlisted'`];
    if (filter.search !== undefined) where.push(`d.name ILIKE ${params.bind(containsPattern(filter.search))}`);
    if (filter.pinned !== undefined) where.push(`d.pinned = ${params.bind(filter.pinned)}`);
    const condition = where.join(' AND ');
    const rows = await this.sql.query<DashboardRow>(
      'management.listDashboards',
      `${SELECT_DASHBOARD} WHERE ${condition} ORDER BY d.pinned DESC, d.name NULLS LAST, d.id LIMIT ${page.limit + 1} OFFSET ${page.offset}`,
      params.params,
    );
    const count = await this.sql.query<{ n: number }>(
      'management.countDashboards',
      `SELECT count(*)::int AS n FROM dashboards d WHERE ${condition}`,
      params.params,
    );
    return { rows: rows.rows, count: count.rows[0]?.n ?? 0 };
  }

  async create(caller: Caller, fields: Partial<Record<DashboardField, unknown>>, creationMode: DashboardRow['creation_mode']): Promise<number> {
    const params = new SqlBuilder([caller.projectId, caller.userId, creationMode]);
    const columns = Object.keys(fields) as DashboardField[];
    const values = columns.map((field) => params.bind(fields[field]));
    const rows = await this.sql.query<{ id: number }>(
      'management.createDashboard',
      `INSERT INTO dashboards (project_id, created_by_id, creation_mode${columns.map((field) => `, ${DASHBOARD_COLUMNS[field]}`).join('')})
       VALUES ($1, $2, $3${values.map((value) => `, ${value}`).join('')}) RETURNING id`,
      params.params,
    );
    return rows.rows[0]!.id;
  }

  async update(id: number, fields: Partial<Record<DashboardField, unknown>>): Promise<void> {
    if (Object.keys(fields).length === 0) return;
    const params = new SqlBuilder([id]);
    const sets = Object.entries(fields).map(([field, value]) => `${DASHBOARD_COLUMNS[field as DashboardField]} = ${params.bind(value)}`);
    await this.sql.query('management.updateDashboard', `UPDATE dashboards SET ${sets.join(', ')} WHERE id = $1`, params.params);
  }

  /**
   * Soft-deletes (or restores) a dashboard and its tiles; with `insights`, also the insights on its tiles that
   * are on no other live dashboard (restoring brings those back too).
   */
  async setDeleted(id: number, deleted: boolean, insights: boolean): Promise<void> {
    if (insights) {
      await this.sql.query(
        'management.deleteDashboardInsights',
        `UPDATE insights i SET deleted = $2, updated_at = now()
          WHERE i.id IN (SELECT t.insight_id FROM dashboard_tiles t WHERE t.dashboard_id = $1 AND t.insight_id IS NOT NULL AND NOT t.deleted)
            AND NOT EXISTS (SELECT 1 FROM dashboard_tiles o JOIN dashboards od ON od.id = o.dashboard_id
                             WHERE o.insight_id = i.id AND o.dashboard_id <> $1 AND NOT o.deleted AND NOT od.deleted)`,
        [id, deleted],
      );
    }
    await this.sql.query('management.deleteDashboard', 'UPDATE dashboards SET deleted = $2 WHERE id = $1', [id, deleted]);
  }

  async touchAccessed(id: number): Promise<Date> {
    const rows = await this.sql.query<{ at: Date }>(
      'management.dashboardAccessed',
      'UPDATE dashboards SET last_accessed_at = now() WHERE id = $1 RETURNING last_accessed_at AS at',
      [id],
    );
    return rows.rows[0]!.at;
  }

  async refreshed(id: number): Promise<Date> {
    const rows = await this.sql.query<{ at: Date }>(
      'management.dashboardRefreshed',
      'UPDATE dashboards SET last_refresh = now() WHERE id = $1 RETURNING last_refresh AS at',
      [id],
    );
    return rows.rows[0]!.at;
  }

  /** The live tiles of a dashboard, in id order (the caller sorts them by layout). */
  async tiles(dashboardId: number): Promise<TileRow[]> {
    const rows = await this.sql.query<TileRow>(
      'management.dashboardTiles',
      `SELECT t.id, t.insight_id, t.text_id, x.body AS text_body, ${USER_JSON('cu')} AS text_created_by, x.last_modified_at AS text_last_modified_at,
              ${USER_JSON('mu')} AS text_last_modified_by, t.layouts, t.color, t.filters_overrides, t.show_description, t.transparent_background
         FROM dashboard_tiles t
         LEFT JOIN insights i ON i.id = t.insight_id
         LEFT JOIN dashboard_texts x ON x.id = t.text_id
         LEFT JOIN users cu ON cu.id = x.created_by_id
         LEFT JOIN users mu ON mu.id = x.last_modified_by_id
        WHERE t.dashboard_id = $1 AND NOT t.deleted AND (t.insight_id IS NULL OR NOT i.deleted)
        ORDER BY t.id`,
      [dashboardId],
    );
    return rows.rows;
  }

  /** Live tiles on a dashboard, whatever they hold. */
  async tileCount(dashboardId: number): Promise<number> {
    const rows = await this.sql.query<{ n: number }>(
      'management.countTiles',
      'SELECT count(*)::int AS n FROM dashboard_tiles WHERE dashboard_id = $1 AND NOT deleted',
      [dashboardId],
    );
    return rows.rows[0]!.n;
  }

  /** The insights of tiles the caller may see, by id. */
  async insights(caller: Caller, ids: number[]): Promise<Map<number, InsightRow>> {
    if (ids.length === 0) return new Map();
    const rows = await this.sql.query<InsightRow>('management.tileInsights', selectInsights(`i.id = ANY($4::int[]) AND NOT i.deleted AND ${VISIBLE_INSIGHT}`), [
      ...callerParams(caller),
      ids,
    ]);
    return new Map(rows.rows.map((row) => [row.id, row]));
  }

  /** A live insight the caller may see, by integer id or short_id. */
  async insight(caller: Caller, raw: string): Promise<InsightRow | undefined> {
    const id = /^[0-9]{1,9}$/.test(raw) ? Number(raw) : null;
    const rows = await this.sql.query<InsightRow>(
      'management.sharedInsight',
      `${selectInsights(`(i.id = $4::int OR i.short_id = $5) AND NOT i.deleted AND ${VISIBLE_INSIGHT}`)} ORDER BY CASE WHEN i.id = $4::int THEN 0 ELSE 1 END LIMIT 1`,
      [...callerParams(caller), id, raw],
    );
    return rows.rows[0];
  }

  /** Adds a text card tile. */
  async addText(caller: Caller, dashboardId: number, body: string, fields: TileFields): Promise<void> {
    const text = await this.sql.query<{ id: number }>(
      'management.createText',
      'INSERT INTO dashboard_texts (project_id, body, created_by_id, last_modified_by_id) VALUES ($1, $2, $3, $3) RETURNING id',
      [caller.projectId, body, caller.userId],
    );
    await this.insertTile(caller.projectId, dashboardId, { text_id: text.rows[0]!.id }, fields);
  }

  /** Adds a tile holding an insight (or undeletes its old one). */
  async addInsight(projectId: number, dashboardId: number, insightId: number, fields: TileFields): Promise<void> {
    await this.insertTile(projectId, dashboardId, { insight_id: insightId }, fields);
  }

  private async insertTile(projectId: number, dashboardId: number, content: { insight_id?: number; text_id?: number }, fields: TileFields): Promise<void> {
    const params = new SqlBuilder([projectId, dashboardId, content.insight_id ?? null, content.text_id ?? null]);
    const columns = TILE_COLUMNS.filter((column) => fields[column] !== undefined && column !== 'deleted');
    const values = columns.map((column) => params.bind(column === 'layouts' || column === 'filters_overrides' ? (fields[column] ?? {}) : fields[column]));
    await this.sql.query(
      'management.insertTile',
      `INSERT INTO dashboard_tiles (project_id, dashboard_id, insight_id, text_id${columns.map((column) => `, ${column}`).join('')})
       VALUES ($1, $2, $3, $4${values.map((value) => `, ${value}`).join('')})
       ON CONFLICT (dashboard_id, insight_id) DO UPDATE SET deleted = false`,
      params.params,
    );
  }

  /** Updates a tile of the dashboard (its display fields, and its text card's body); false when it has no such tile. */
  async updateTile(caller: Caller, dashboardId: number, tileId: number, fields: TileFields, body: string | undefined): Promise<boolean> {
    const params = new SqlBuilder([dashboardId, tileId]);
    const sets = TILE_COLUMNS.filter((column) => fields[column] !== undefined).map(
      (column) => `${column} = ${params.bind(column === 'layouts' || column === 'filters_overrides' ? (fields[column] ?? {}) : fields[column])}`,
    );
    const rows = await this.sql.query<{ text_id: number | null }>(
      'management.updateTile',
      `UPDATE dashboard_tiles SET ${[...sets, 'id = id'].join(', ')} WHERE dashboard_id = $1 AND id = $2 RETURNING text_id`,
      params.params,
    );
    const tile = rows.rows[0];
    if (!tile) return false;
    if (body !== undefined) {
      if (tile.text_id === null) throw errors.validation('Only a text card has a body.', 'tiles');
      await this.sql.query('management.updateText', 'UPDATE dashboard_texts SET body = $2, last_modified_at = now(), last_modified_by_id = $3 WHERE id = $1', [
        tile.text_id,
        body,
        caller.userId,
      ]);
    }
    return true;
  }

  /**
   * Copies `from`'s live tiles onto `to`: the same insights, or copies of them (`duplicate`); text cards are
   * always copied.
   */
  async copyTiles(caller: Caller, from: number, to: number, duplicate: boolean): Promise<void> {
    for (const tile of await this.tiles(from)) {
      const fields: TileFields = { color: tile.color, layouts: tile.layouts, filters_overrides: tile.filters_overrides };
      if (tile.text_id !== null) await this.addText(caller, to, tile.text_body ?? '', fields);
      else await this.addInsight(caller.projectId, to, duplicate ? await this.copyInsight(caller, tile.insight_id!) : tile.insight_id!, fields);
    }
  }

  private async copyInsight(caller: Caller, id: number): Promise<number> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const rows = await this.sql.query<{ id: number }>(
        'management.copyInsight',
        `INSERT INTO insights (project_id, short_id, name, derived_name, description, filters, query, tags, saved, created_by_id, last_modified_by_id)
         SELECT project_id, $3, name, derived_name, description, filters, query, tags, saved, $4, $4 FROM insights WHERE id = $2 AND project_id = $1
         ON CONFLICT (project_id, short_id) DO NOTHING RETURNING id`,
        [caller.projectId, id, newShortId(), caller.userId],
      );
      if (rows.rows[0]) return rows.rows[0].id;
    }
    throw new Error('could not allocate a unique insight short_id');
  }

  /** The sharing configuration of a dashboard or insight, created (disabled, with a fresh token) when missing. */
  async sharing(projectId: number, target: { dashboard_id: number } | { insight_id: number }): Promise<SharingRow> {
    const [column, id] = 'dashboard_id' in target ? ['dashboard_id', target.dashboard_id] : ['insight_id', target.insight_id];
    await this.sql.query(
      'management.createSharing',
      `INSERT INTO sharing_configurations (project_id, ${column}, access_token) VALUES ($1, $2, $3) ON CONFLICT (${column}) DO NOTHING`,
      [projectId, id, newAccessToken()],
    );
    const rows = await this.sql.query<SharingRow>(
      'management.getSharing',
      `SELECT project_id, dashboard_id, insight_id, enabled, access_token, settings, created_at FROM sharing_configurations WHERE ${column} = $1`,
      [id],
    );
    return rows.rows[0]!;
  }

  /** Sets `enabled`/`settings`, or gives the link a new token (the old one stops working at once). */
  async updateSharing(target: SharingRow, change: { enabled?: boolean; settings?: Record<string, unknown>; rotate?: boolean }): Promise<void> {
    const [column, id] = target.dashboard_id !== null ? ['dashboard_id', target.dashboard_id] : ['insight_id', target.insight_id];
    await this.sql.query(
      'management.updateSharing',
      `UPDATE sharing_configurations SET enabled = COALESCE($2, enabled), settings = COALESCE($3, settings),
              access_token = CASE WHEN $4::boolean THEN $5 ELSE access_token END
        WHERE ${column} = $1`,
      [id, change.enabled ?? null, change.settings ?? null, change.rotate === true, newAccessToken()],
    );
  }
}
