import { containsPattern, isUniqueViolation, SqlBuilder, type Sql } from '@plover/postgres';
import type { Page } from '../http/render';
import { accessLevelSql, type AccessLevel, type Caller } from '../shared/access-store';
import { newShortId, USER_JSON, type UserBasic } from '../shared/users';

export const RESOURCE = 'session_recording_playlist';

export interface PlaylistRow {
  id: number;
  short_id: string;
  name: string | null;
  derived_name: string | null;
  description: string;
  pinned: boolean;
  deleted: boolean;
  filters: Record<string, unknown>;
  type: 'collection' | 'filters';
  created_at: Date;
  created_by_id: number | null;
  created_by: UserBasic | null;
  last_modified_at: Date;
  last_modified_by: UserBasic | null;
  user_access_level: AccessLevel;
}

/** The writable fields of a playlist, each its column. */
export interface PlaylistFields {
  name?: string | null;
  derived_name?: string | null;
  description?: string;
  pinned?: boolean;
  deleted?: boolean;
  filters?: Record<string, unknown>;
}

export interface PlaylistFilter {
  createdBy?: number;
  shortId?: string;
  search?: string;
  pinned?: boolean;
  /** Only the caller's own playlists. */
  mine?: boolean;
  type?: string;
  /** Last modified after / before. */
  modifiedAfter?: Date;
  modifiedBefore?: Date;
  /** Only playlists holding this recording. */
  sessionId?: string;
  /** A column to sort by (descending with `-`), or last modified first. */
  order?: PlaylistOrder;
}

/** The `order` values a list accepts: PostHog passes any field to its ORDER BY, these are the ones its UI sends. */
export const PLAYLIST_ORDERS = ['name', '-name', 'created_at', '-created_at', 'last_modified_at', '-last_modified_at'] as const;
export type PlaylistOrder = (typeof PLAYLIST_ORDERS)[number];
const orderBy = (order: PlaylistOrder | undefined): string =>
  order === undefined ? 'pl.last_modified_at DESC' : `pl.${order.replace(/^-/, '')} ${order.startsWith('-') ? 'DESC' : 'ASC'}`;

const ACCESS = accessLevelSql(RESOURCE, 'pl.id::text', 'pl.created_by', '$1', '$2', '$3');
const callerParams = (caller: Caller): unknown[] => [caller.projectId, caller.userId, caller.admin];

/** Columns of a playlist with its users and the caller's ($2) access level. */
function selectPlaylists(where: string): string {
  return `SELECT pl.id, pl.short_id, pl.name, pl.derived_name, pl.description, pl.pinned, pl.deleted, pl.filters, pl.type,
                 pl.created_at, pl.created_by AS created_by_id, ${USER_JSON('cu')} AS created_by, pl.last_modified_at, ${USER_JSON('mu')} AS last_modified_by,
                 ${ACCESS} AS user_access_level
            FROM session_recording_playlists pl
            LEFT JOIN users cu ON cu.id = pl.created_by
            LEFT JOIN users mu ON mu.id = pl.last_modified_by
           WHERE pl.project_id = $1 AND ${where}`;
}

/** Session recording playlists and the session ids they hold (the recordings themselves: recordings/). */
export class PlaylistsStore {
  constructor(private readonly sql: Sql) {}

  /** The playlist the caller may see (deleted ones too when asked), by short_id. */
  async get(caller: Caller, shortId: string, includeDeleted: boolean): Promise<PlaylistRow | undefined> {
    const result = await this.sql.query<PlaylistRow>(
      'management.getPlaylist',
      selectPlaylists(`pl.short_id = $4${includeDeleted ? '' : ' AND NOT pl.deleted'}`),
      [...callerParams(caller), shortId],
    );
    return result.rows[0];
  }

  /** One page (and one row more) of the playlists the caller may see, last modified first, with their count. */
  async list(caller: Caller, filter: PlaylistFilter, page: Page): Promise<{ rows: PlaylistRow[]; count: number }> {
    const params = new SqlBuilder(callerParams(caller));
    const where = ['NOT pl.deleted'];
    if (filter.createdBy !== undefined) where.push(`pl.created_by = ${params.bind(filter.createdBy)}`);
    if (filter.shortId !== undefined) where.push(`pl.short_id = ${params.bind(filter.shortId)}`);
    if (filter.search !== undefined) {
      const pattern = params.bind(containsPattern(filter.search));
      where.push(`(pl.name ILIKE ${pattern} OR pl.derived_name ILIKE ${pattern})`);
    }
    if (filter.pinned !== undefined) where.push(`pl.pinned = ${params.bind(filter.pinned)}`);
    if (filter.mine) where.push('pl.created_by = $2');
    if (filter.type !== undefined) where.push(`pl.type = ${params.bind(filter.type)}`);
    if (filter.modifiedAfter !== undefined) where.push(`pl.last_modified_at > ${params.bind(filter.modifiedAfter)}`);
    if (filter.modifiedBefore !== undefined) where.push(`pl.last_modified_at < ${params.bind(filter.modifiedBefore)}`);
    if (filter.sessionId !== undefined) {
      where.push(`EXISTS (SELECT 1 FROM session_recording_playlist_items i WHERE i.playlist_id = pl.id AND i.session_id = ${params.bind(filter.sessionId)})`);
    }
    where.push(`${ACCESS} <> 'none'`);
    const condition = where.join(' AND ');
    const rows = await this.sql.query<PlaylistRow>(
      'management.listPlaylists',
      `${selectPlaylists(condition)} ORDER BY ${orderBy(filter.order)}, pl.id DESC LIMIT ${page.limit + 1} OFFSET ${page.offset}`,
      params.params,
    );
    const count = await this.sql.query<{ n: number }>(
      'management.countPlaylists',
      `SELECT count(*)::int AS n FROM session_recording_playlists pl WHERE pl.project_id = $1 AND ${condition}`,
      params.params,
    );
    return { rows: rows.rows, count: count.rows[0]?.n ?? 0 };
  }

  /** Creates a playlist under a fresh short_id (drawn again if taken) and answers that short_id. */
  async create(caller: Caller, fields: PlaylistFields, type: 'collection' | 'filters'): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      const shortId = newShortId();
      try {
        await this.sql.query(
          'management.createPlaylist',
          `INSERT INTO session_recording_playlists (project_id, short_id, name, derived_name, description, pinned, deleted, filters, type, created_by, last_modified_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
          [
            caller.projectId,
            shortId,
            fields.name ?? null,
            fields.derived_name ?? null,
            fields.description ?? '',
            fields.pinned ?? false,
            fields.deleted ?? false,
            fields.filters ?? {},
            type,
            caller.userId,
          ],
        );
        return shortId;
      } catch (error) {
        if (!isUniqueViolation(error) || attempt >= 4) throw error;
      }
    }
  }

  /** Sets the given fields; `modifiedBy` (when a material field changed) becomes the last modifier, now. */
  async update(id: number, fields: PlaylistFields, modifiedBy: number | undefined): Promise<void> {
    const params = new SqlBuilder([id]);
    const sets = Object.entries(fields).map(([column, value]) => `${column} = ${params.bind(value)}`);
    if (modifiedBy !== undefined) sets.push('last_modified_at = now()', `last_modified_by = ${params.bind(modifiedBy)}`);
    if (sets.length === 0) return;
    await this.sql.query('management.updatePlaylist', `UPDATE session_recording_playlists SET ${sets.join(', ')} WHERE id = $1`, params.params);
  }

  /** The session ids each playlist holds, by playlist id (an empty list for one without any). */
  async items(playlistIds: readonly number[]): Promise<Map<number, string[]>> {
    const items = new Map(playlistIds.map((id) => [id, [] as string[]]));
    if (playlistIds.length === 0) return items;
    const rows = await this.sql.query<{ playlist_id: number; session_id: string }>(
      'management.playlistItems',
      'SELECT playlist_id, session_id FROM session_recording_playlist_items WHERE playlist_id = ANY($1::int[]) ORDER BY created_at DESC, session_id',
      [playlistIds],
    );
    for (const row of rows.rows) items.get(row.playlist_id)!.push(row.session_id);
    return items;
  }

  /** Adds the sessions not yet in the playlist; answers how many were added. */
  async addItems(playlistId: number, sessionIds: readonly string[]): Promise<number> {
    const added = await this.sql.query(
      'management.addPlaylistItems',
      'INSERT INTO session_recording_playlist_items (playlist_id, session_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING',
      [playlistId, [...new Set(sessionIds)]],
    );
    return added.rowCount;
  }

  /** Removes the sessions from the playlist; answers how many were in it. */
  async removeItems(playlistId: number, sessionIds: readonly string[]): Promise<number> {
    const removed = await this.sql.query(
      'management.removePlaylistItems',
      'DELETE FROM session_recording_playlist_items WHERE playlist_id = $1 AND session_id = ANY($2::text[])',
      [playlistId, sessionIds],
    );
    return removed.rowCount;
  }
}
