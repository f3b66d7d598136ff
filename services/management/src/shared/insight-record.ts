import { Type, type Static } from '@sinclair/typebox';
import { accessLevelSql, type AccessLevel, type Caller } from './access-store';
import { AnyObject, component, Enum, Nullable, Types } from './schema';
import { USER_JSON, UserOrNull, type UserBasic } from './users';

/**
 * A saved insight as every folder that shows one reads and renders it (insights, and the tiles of dashboards):
 * its row with the caller's access level and its dashboards from its live tiles, and PostHog's InsightSerializer
 * body around a computed (or cached) result.
 */
export const INSIGHT_RESOURCE = 'insight';

export interface TileLink {
  id: number;
  dashboard_id: number;
  deleted: boolean;
}

export interface InsightRow {
  id: number;
  short_id: string;
  name: string | null;
  derived_name: string | null;
  description: string | null;
  filters: Record<string, unknown>;
  query: Record<string, unknown> | null;
  order: number | null;
  deleted: boolean;
  /** The dashboards of its live tiles (neither the tile nor the dashboard deleted). */
  dashboards: number[];
  /** Every tile of it on a dashboard that is not deleted. */
  dashboard_tiles: TileLink[];
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
const ACCESS = accessLevelSql(INSIGHT_RESOURCE, 'i.id::text', 'i.created_by_id', '$1', '$2', '$3');
/** Insights the caller may see. */
export const VISIBLE_INSIGHT = `${ACCESS} <> 'none'`;
export const callerParams = (caller: Caller): unknown[] => [caller.projectId, caller.userId, caller.admin];

/** Insights with their users, dashboards, the project timezone, the caller's last view ($2) and access level. */
export function selectInsights(where: string): string {
  return `SELECT i.id, i.short_id, i.name, i.derived_name, i.description, i.filters, i.query, i."order", i.deleted, i.tags,
                 COALESCE((SELECT array_agg(t.dashboard_id ORDER BY t.dashboard_id) FROM dashboard_tiles t JOIN dashboards d ON d.id = t.dashboard_id
                            WHERE t.insight_id = i.id AND NOT t.deleted AND NOT d.deleted), '{}') AS dashboards,
                 COALESCE((SELECT json_agg(json_build_object('id', t.id, 'dashboard_id', t.dashboard_id, 'deleted', t.deleted) ORDER BY t.id)
                             FROM dashboard_tiles t JOIN dashboards d ON d.id = t.dashboard_id WHERE t.insight_id = i.id AND NOT d.deleted), '[]') AS dashboard_tiles,
                 i.favorited, i.saved, i.created_at, i.created_by_id, ${USER_JSON('cu')} AS created_by, i.updated_at,
                 i.last_modified_at, ${USER_JSON('mu')} AS last_modified_by, pr.timezone, v.last_viewed_at, ${ACCESS} AS user_access_level
            FROM insights i
            JOIN projects pr ON pr.id = i.project_id
            LEFT JOIN users cu ON cu.id = i.created_by_id
            LEFT JOIN users mu ON mu.id = i.last_modified_by_id
            LEFT JOIN insight_views v ON v.project_id = i.project_id AND v.user_id = $2 AND v.insight_id = i.id
           WHERE i.project_id = $1 AND ${where}`;
}

const dateTime = Type.String({ format: 'date-time' });

export const Insight = component(
  'Insight',
  Type.Object({
    id: Type.Integer(),
    short_id: Type.String(),
    name: Nullable(Type.String()),
    derived_name: Nullable(Type.String()),
    filters: AnyObject(),
    query: Types<Record<string, unknown> | null>(['object', 'null']),
    order: Nullable(Type.Integer()),
    deleted: Type.Boolean(),
    dashboards: Type.Array(Type.Integer(), { description: 'the dashboards of its live tiles' }),
    dashboard_tiles: Type.Array(Type.Object({ id: Type.Integer(), dashboard_id: Type.Integer(), deleted: Type.Boolean() })),
    result: Type.Unknown({ description: "the query's results from the cache (computed with `refresh`), null when none" }),
    last_refresh: Types<string | null>(['string', 'null'], { format: 'date-time' }),
    is_cached: Type.Boolean(),
    created_at: dateTime,
    created_by: UserOrNull,
    description: Nullable(Type.String()),
    updated_at: dateTime,
    tags: Type.Array(Type.String()),
    favorited: Type.Boolean(),
    saved: Type.Boolean(),
    last_modified_at: dateTime,
    last_modified_by: UserOrNull,
    is_sample: Type.Boolean(),
    timezone: Type.String(),
    user_access_level: Enum(['none', 'viewer', 'editor']),
    last_viewed_at: Types<string | null>(['string', 'null'], { format: 'date-time' }),
  }),
);

const iso = (value: Date | null) => (value === null ? null : value.toISOString());

/**
 * InsightSerializer's fields that Plover has data for. `computed` is the query's response (the node runner's,
 * shared/node-runner.ts) or null when none is cached; `query` replaces the stored query when it ran with
 * dashboard filters applied.
 */
export function insightRecord(row: InsightRow, computed: Record<string, unknown> | null = null, query = row.query): Static<typeof Insight> {
  return {
    id: row.id,
    short_id: row.short_id,
    name: row.name,
    derived_name: row.derived_name,
    filters: row.filters,
    query,
    order: row.order,
    deleted: row.deleted,
    dashboards: row.dashboards,
    dashboard_tiles: row.dashboard_tiles,
    result: computed?.results ?? null,
    last_refresh: typeof computed?.last_refresh === 'string' ? computed.last_refresh : null,
    is_cached: computed?.is_cached === true,
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
