import { randomInt } from 'node:crypto';
import { Router, type Request } from 'express';
import type { ClickHouse } from '@plover/clickhouse';
import { StorageError } from '@plover/core';
import type { Sql, SqlExecutor } from '@plover/postgres';
import { accessLevelSql, getAccessControls, isAdmin, putAccessControl, requireAccess, type AccessLevel } from '../http/access';
import { principalOf, projectOf, requireScope } from '../http/auth';
import { bodyOf, optionalBoolean, optionalString, queryBoolean, type Body } from '../http/body';
import { errors } from '../http/errors';
import { envelope, pageOf, queryValue, send } from '../http/render';
import { validateBody } from '../schemas';
import { personBody, type PersonBody } from './persons';
import { containsPattern } from '../http/like';

export const RESOURCE = 'session_recording_playlist';
const SHORT_ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const MATERIAL = ['name', 'description', 'filters'] as const;

/** 8 characters of [A-Za-z0-9] from a CSPRNG, as PostHog's generate_short_id. */
export function newShortId(): string {
  let id = '';
  for (let i = 0; i < 8; i++) id += SHORT_ID_ALPHABET[randomInt(SHORT_ID_ALPHABET.length)]!;
  return id;
}

export interface UserBasic {
  id: number;
  uuid: string;
  distinct_id: string;
  first_name: string;
  last_name: string;
  email: string;
  is_email_verified: boolean;
  hedgehog_config: Record<string, unknown> | null;
  role_at_organization: string;
}

export const USER_JSON = (alias: string) =>
  `CASE WHEN ${alias}.id IS NULL THEN NULL ELSE json_build_object('id', ${alias}.id, 'uuid', ${alias}.uuid, 'distinct_id', ${alias}.distinct_id,
    'first_name', ${alias}.first_name, 'last_name', ${alias}.last_name, 'email', ${alias}.email, 'is_email_verified', ${alias}.is_email_verified,
    'hedgehog_config', ${alias}.hedgehog_config, 'role_at_organization', ${alias}.role_at_organization) END`;

interface PlaylistRow {
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
  item_count: number;
  watched_count: number;
  user_access_level: AccessLevel;
}

/** Columns of a playlist with its users, counts for the caller ($2) and the caller's access level. */
function selectPlaylists(where: string): string {
  return `SELECT pl.id, pl.short_id, pl.name, pl.derived_name, pl.description, pl.pinned, pl.deleted, pl.filters, pl.type,
                 pl.created_at, pl.created_by AS created_by_id, ${USER_JSON('cu')} AS created_by, pl.last_modified_at, ${USER_JSON('mu')} AS last_modified_by,
                 (SELECT count(*)::int FROM session_recording_playlist_items i WHERE i.playlist_id = pl.id) AS item_count,
                 (SELECT count(*)::int FROM session_recording_playlist_items i JOIN session_recording_views v
                     ON v.project_id = pl.project_id AND v.user_id = $2 AND v.session_id = i.session_id
                   WHERE i.playlist_id = pl.id) AS watched_count,
                 ${accessLevelSql(RESOURCE, 'pl.id::text', 'pl.created_by', '$1', '$2', '$3')} AS user_access_level
            FROM session_recording_playlists pl
            LEFT JOIN users cu ON cu.id = pl.created_by
            LEFT JOIN users mu ON mu.id = pl.last_modified_by
           WHERE pl.project_id = $1 AND ${where}`;
}

function playlistBody(row: PlaylistRow): Record<string, unknown> {
  return {
    id: row.id,
    short_id: row.short_id,
    name: row.name,
    derived_name: row.derived_name,
    description: row.description,
    pinned: row.pinned,
    created_at: row.created_at.toISOString(),
    created_by: row.created_by,
    deleted: row.deleted,
    filters: row.filters,
    last_modified_at: row.last_modified_at.toISOString(),
    last_modified_by: row.last_modified_by,
    type: row.type,
    is_synthetic: false,
    user_access_level: row.user_access_level,
    // saved_filters counts come from a filter-matching cache Plover does not keep (always null here;
    // docs/management.md#resources).
    recordings_counts: {
      collection: { count: row.item_count === 0 ? null : row.item_count, watched_count: row.watched_count },
      saved_filters: { count: null, has_more: null, watched_count: null, increased: null, last_refreshed_at: null },
    },
  };
}

function isEmptyFilters(filters: Record<string, unknown>): boolean {
  return Object.keys(filters).length === 0;
}

interface PlaylistFields {
  name?: string | null;
  derived_name?: string | null;
  description?: string;
  pinned?: boolean;
  deleted?: boolean;
  filters?: Record<string, unknown>;
}

function fieldsOf(body: Body): PlaylistFields {
  validateBody('SessionRecordingPlaylistWrite', body);
  const fields: PlaylistFields = {};
  const name = optionalString(body, 'name', { max: 400, nullable: true });
  if (name !== undefined) fields.name = name;
  const derived = optionalString(body, 'derived_name', { max: 400, nullable: true });
  if (derived !== undefined) fields.derived_name = derived;
  const description = optionalString(body, 'description', { nullable: true });
  if (description !== undefined) fields.description = description ?? '';
  const pinned = optionalBoolean(body, 'pinned');
  if (pinned !== undefined) fields.pinned = pinned;
  const deleted = optionalBoolean(body, 'deleted');
  if (deleted !== undefined) fields.deleted = deleted;
  if (body.filters !== undefined) {
    const filters = body.filters;
    if (filters !== null && (typeof filters !== 'object' || Array.isArray(filters)))
      throw errors.validation('Expected a dictionary of items.', 'filters', 'invalid');
    fields.filters = (filters ?? {}) as Record<string, unknown>;
  }
  return fields;
}

function isUniqueViolation(error: unknown): boolean {
  return error instanceof StorageError && error.code === '23505';
}

interface RecordingMeta {
  session_id: string;
  start_time: string;
  end_time: string;
  distinct_id: string;
  event_count: string | number;
}

/** `/session_recording_playlists` (and a recording's own GET, which marks it watched) under a project. */
export function playlistRoutes(sql: Sql, clickhouse: ClickHouse): Router {
  const router = Router({ mergeParams: true });
  const base = '/session_recording_playlists';

  const callerParams = (req: Request) => [projectOf(req).id, principalOf(req).user.id, isAdmin(req)];

  async function load(db: SqlExecutor, req: Request, shortId: string, includeDeleted: boolean): Promise<PlaylistRow> {
    const row = (
      await db.query<PlaylistRow>('management.getPlaylist', selectPlaylists(`pl.short_id = $4${includeDeleted ? '' : ' AND NOT pl.deleted'}`), [
        ...callerParams(req),
        shortId,
      ])
    ).rows[0];
    if (!row || row.user_access_level === 'none') throw errors.notFound();
    return row;
  }

  const target = (row: PlaylistRow) => ({ resource: RESOURCE, resourceId: String(row.id), createdBy: row.created_by_id });

  router.get(base, async (req, res) => {
    requireScope(req, 'session_recording_playlist:read');
    const page = pageOf(req);
    const params: unknown[] = callerParams(req);
    const where = ['NOT pl.deleted'];
    const bind = (value: unknown) => {
      params.push(value);
      return `$${params.length}`;
    };
    const createdBy = queryValue(req, 'created_by');
    if (createdBy !== undefined && createdBy !== '') {
      if (!/^[0-9]{1,9}$/.test(createdBy)) throw errors.validation('A valid integer is required.', 'created_by', 'invalid');
      where.push(`pl.created_by = ${bind(Number(createdBy))}`);
    }
    const shortId = queryValue(req, 'short_id');
    if (shortId !== undefined && shortId !== '') where.push(`pl.short_id = ${bind(shortId)}`);
    const search = queryValue(req, 'search');
    if (search !== undefined && search !== '') {
      const pattern = bind(containsPattern(search));
      where.push(`(pl.name ILIKE ${pattern} OR pl.derived_name ILIKE ${pattern})`);
    }
    const pinned = queryBoolean(queryValue(req, 'pinned'), 'pinned');
    if (pinned !== undefined) where.push(`pl.pinned = ${bind(pinned)}`);
    if (queryBoolean(queryValue(req, 'user'), 'user')) where.push('pl.created_by = $2');
    const type = queryValue(req, 'type');
    if (type !== undefined && type !== '') {
      if (type !== 'collection' && type !== 'filters') throw errors.validation(`"${type}" is not a valid choice.`, 'type', 'invalid_choice');
      where.push(`pl.type = ${bind(type)}`);
    }
    const visible = `${accessLevelSql(RESOURCE, 'pl.id::text', 'pl.created_by', '$1', '$2', '$3')} <> 'none'`;
    where.push(visible);
    const condition = where.join(' AND ');
    const rows = await sql.query<PlaylistRow>(
      'management.listPlaylists',
      `${selectPlaylists(condition)} ORDER BY pl.last_modified_at DESC, pl.id DESC LIMIT ${page.limit + 1} OFFSET ${page.offset}`,
      params,
    );
    const count = await sql.query<{ n: number }>(
      'management.countPlaylists',
      `SELECT count(*)::int AS n FROM session_recording_playlists pl WHERE pl.project_id = $1 AND ${condition}`,
      params,
    );
    const results = rows.rows.slice(0, page.limit).map(playlistBody);
    send(req, res, 200, envelope(req, page, results, count.rows[0]?.n ?? 0, rows.rows.length > page.limit), 'session_recording_playlists');
  });

  router.post(base, async (req, res) => {
    requireScope(req, 'session_recording_playlist:write');
    const body = bodyOf(req);
    const fields = fieldsOf(body);
    const filters = fields.filters ?? {};
    let type = body.type;
    if (type === undefined || type === null) type = isEmptyFilters(filters) ? 'collection' : 'filters';
    if (type !== 'collection' && type !== 'filters')
      throw errors.validation('Must provide a valid playlist type: either filters or collection', 'type', 'invalid_choice');
    if (type === 'collection' && !isEmptyFilters(filters)) throw errors.validation('You cannot create a collection with filters', 'filters');
    if (type === 'filters' && isEmptyFilters(filters)) throw errors.validation('You must provide a valid filters when creating a saved filter', 'filters');
    const project = projectOf(req);
    const userId = principalOf(req).user.id;
    let shortId: string;
    for (let attempt = 0; ; attempt++) {
      shortId = newShortId();
      try {
        await sql.query(
          'management.createPlaylist',
          `INSERT INTO session_recording_playlists (project_id, short_id, name, derived_name, description, pinned, deleted, filters, type, created_by, last_modified_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
          [
            project.id,
            shortId,
            fields.name ?? null,
            fields.derived_name ?? null,
            fields.description ?? '',
            fields.pinned ?? false,
            fields.deleted ?? false,
            filters,
            type,
            userId,
          ],
        );
        break;
      } catch (error) {
        if (!isUniqueViolation(error) || attempt >= 4) throw error;
      }
    }
    send(req, res, 201, playlistBody(await load(sql, req, shortId, true)), 'session_recording_playlist');
  });

  router.get(`${base}/:short_id`, async (req, res) => {
    requireScope(req, 'session_recording_playlist:read');
    send(req, res, 200, playlistBody(await load(sql, req, req.params.short_id, false)), 'session_recording_playlist');
  });

  const update = async (req: Request, res: import('express').Response) => {
    requireScope(req, 'session_recording_playlist:write');
    const body = bodyOf(req);
    const fields = fieldsOf(body);
    const userId = principalOf(req).user.id;
    const shortId = req.params.short_id as string;
    // Soft-deleted playlists stay reachable here, so `{"deleted": false}` restores one.
    const current = await load(sql, req, shortId, true);
    await requireAccess(sql, req, target(current), 'editor');
    if (current.type === 'collection' && fields.filters !== undefined && !isEmptyFilters(fields.filters)) {
      throw errors.validation('You cannot update a collection to add filters', 'filters');
    }
    if (current.type === 'filters' && fields.filters !== undefined && isEmptyFilters(fields.filters)) {
      throw errors.validation('You cannot remove all filters when updating a saved filter', 'filters');
    }
    const sets: string[] = [];
    const params: unknown[] = [current.id];
    for (const [column, value] of Object.entries(fields)) {
      params.push(value);
      sets.push(`${column} = $${params.length}`);
    }
    const material = MATERIAL.some((key) => fields[key] !== undefined && JSON.stringify(fields[key]) !== JSON.stringify(current[key]));
    if (material) {
      params.push(userId);
      sets.push(`last_modified_at = now()`, `last_modified_by = $${params.length}`);
    }
    if (sets.length > 0) {
      await sql.query('management.updatePlaylist', `UPDATE session_recording_playlists SET ${sets.join(', ')} WHERE id = $1`, params);
    }
    send(req, res, 200, playlistBody(await load(sql, req, shortId, true)), 'session_recording_playlist');
  };
  router.patch(`${base}/:short_id`, update);
  router.put(`${base}/:short_id`, update);

  router.delete(`${base}/:short_id`, (req, res) => {
    requireScope(req, 'session_recording_playlist:write');
    // Hard delete is refused with an empty body; PATCH {"deleted": true} instead.
    res.status(405).end();
  });

  router.get(`${base}/:short_id/access_controls`, async (req, res) => {
    const playlist = await load(sql, req, req.params.short_id, false);
    await getAccessControls(sql, req, res, target(playlist));
  });
  router.put(`${base}/:short_id/access_controls`, async (req, res) => {
    const playlist = await load(sql, req, req.params.short_id, false);
    await putAccessControl(sql, req, res, target(playlist));
  });

  router.get(`${base}/:short_id/recordings`, async (req, res) => {
    requireScope(req, 'session_recording_playlist:read');
    const page = pageOf(req);
    const playlist = await load(sql, req, req.params.short_id, false);
    const items = await sql.query<{ session_id: string }>(
      'management.playlistItems',
      `SELECT session_id FROM session_recording_playlist_items WHERE playlist_id = $1 ORDER BY created_at DESC, session_id
        LIMIT ${page.limit + 1} OFFSET ${page.offset}`,
      [playlist.id],
    );
    const ids = items.rows.slice(0, page.limit).map((row) => row.session_id);
    const results = await recordings(req, ids);
    send(req, res, 200, { results, has_next: items.rows.length > page.limit, version: 4 }, 'recordings');
  });

  router.post(`${base}/:short_id/recordings/:session_recording_id`, async (req, res) => {
    requireScope(req, 'session_recording_playlist:write');
    validateBody('PlaylistRecordingAdd', req.body);
    const playlist = await load(sql, req, req.params.short_id, false);
    await requireAccess(sql, req, target(playlist), 'editor');
    if (playlist.type === 'filters') throw errors.validation("Cannot add recordings to a playlist that is type 'filters'.");
    const sessionId = req.params.session_recording_id;
    if (sessionId.length > 200) throw errors.validation('Ensure this field has no more than 200 characters.', 'session_recording_id', 'max_length');
    await sql.query(
      'management.addPlaylistItem',
      'INSERT INTO session_recording_playlist_items (playlist_id, session_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
      [playlist.id, sessionId],
    );
    send(req, res, 200, { success: true }, 'result');
  });

  router.delete(`${base}/:short_id/recordings/:session_recording_id`, async (req, res) => {
    requireScope(req, 'session_recording_playlist:write');
    const playlist = await load(sql, req, req.params.short_id, false);
    await requireAccess(sql, req, target(playlist), 'editor');
    const removed = await sql.query(
      'management.removePlaylistItem',
      'DELETE FROM session_recording_playlist_items WHERE playlist_id = $1 AND session_id = $2',
      [playlist.id, req.params.session_recording_id],
    );
    if (removed.rowCount === 0) throw errors.notFound();
    res.status(204).end();
  });

  router.get('/session_recordings/:session_recording_id', async (req, res) => {
    requireScope(req, 'session_recording:read');
    const sessionId = req.params.session_recording_id;
    const [recording] = await recordings(req, [sessionId]);
    if (!recording || recording.start_time === null) throw errors.notFound();
    await sql.query(
      'management.markViewed',
      `INSERT INTO session_recording_views (project_id, user_id, session_id) VALUES ($1, $2, $3)
       ON CONFLICT (project_id, user_id, session_id) DO UPDATE SET viewed_at = now()`,
      [projectOf(req).id, principalOf(req).user.id, sessionId],
    );
    send(req, res, 200, { ...recording, viewed: true }, 'recording');
  });

  interface Recording {
    id: string;
    distinct_id: string | null;
    viewed: boolean;
    recording_duration: number;
    start_time: string | null;
    end_time: string | null;
    event_count: number;
    person: PersonBody | null;
  }

  /** Metadata of sessions (events sharing `$session_id`) in the given order; unknown ids come back as stubs. */
  async function recordings(req: Request, ids: string[]): Promise<Recording[]> {
    if (ids.length === 0) return [];
    const project = projectOf(req);
    const meta = await clickhouse.query<RecordingMeta>(
      'management.recordingMetadata',
      `SELECT session_id, toString(min(timestamp)) AS start_time, toString(max(timestamp)) AS end_time,
              argMin(distinct_id, timestamp) AS distinct_id, count() AS event_count
         FROM events FINAL WHERE team_id = {team:Int64} AND session_id IN {ids:Array(String)}
        GROUP BY session_id`,
      { team: project.id, ids },
    );
    const bySession = new Map(meta.map((row) => [row.session_id, row]));
    const distinctIds = [...new Set(meta.map((row) => row.distinct_id))];
    const persons = new Map<string, PersonBody>();
    if (distinctIds.length > 0) {
      const rows = await sql.query<{
        lookup: string;
        id: number;
        uuid: string;
        properties: Record<string, unknown>;
        created_at: Date;
        is_identified: boolean;
        distinct_ids: string[];
      }>(
        'management.recordingPersons',
        `SELECT d.distinct_id AS lookup, p.id, p.uuid, p.properties, p.created_at, p.is_identified,
                ARRAY(SELECT x.distinct_id FROM person_distinct_ids x WHERE x.person_id = p.id ORDER BY x.id LIMIT 1000) AS distinct_ids
           FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
          WHERE d.project_id = $1 AND d.distinct_id = ANY($2::text[])`,
        [project.id, distinctIds],
      );
      for (const row of rows.rows) {
        persons.set(
          row.lookup,
          personBody({
            id: row.id,
            uuid: row.uuid,
            properties: row.properties,
            createdAt: row.created_at,
            isIdentified: row.is_identified,
            distinctIds: row.distinct_ids,
          }),
        );
      }
    }
    const viewed = await sql.query<{ session_id: string }>(
      'management.viewedSessions',
      'SELECT session_id FROM session_recording_views WHERE project_id = $1 AND user_id = $2 AND session_id = ANY($3::text[])',
      [project.id, principalOf(req).user.id, ids],
    );
    const seen = new Set(viewed.rows.map((row) => row.session_id));
    return ids.map((id) => {
      const row = bySession.get(id);
      if (!row) {
        return { id, distinct_id: null, viewed: seen.has(id), recording_duration: 0, start_time: null, end_time: null, event_count: 0, person: null };
      }
      const start = new Date(`${row.start_time.replace(' ', 'T')}Z`);
      const end = new Date(`${row.end_time.replace(' ', 'T')}Z`);
      return {
        id,
        distinct_id: row.distinct_id,
        viewed: seen.has(id),
        recording_duration: Math.round((end.getTime() - start.getTime()) / 1000),
        start_time: start.toISOString(),
        end_time: end.toISOString(),
        event_count: Number(row.event_count),
        person: persons.get(row.distinct_id) ?? null,
      };
    });
  }

  return router;
}
