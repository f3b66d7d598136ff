import type { Request } from 'express';
import type { ManagementDeps } from '../http/deps';
import { accessControlRoutes, callerOf, requireAccess } from '../http/access';
import { principalOf } from '../http/auth';
import { errors } from '../shared/errors';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Q, route, updates, type Route, type StaticOr } from '../http/route-table';
import { RecordingsStore } from '../shared/recordings-store';
import { recordingsOf, SessionRecording } from '../shared/recordings';
import { Enum, Success } from '../shared/schema';
import type { AccessTarget, Caller } from '../shared/access-store';
import { resolveInstant } from '@plover/insights';
import { projectOf } from '../http/auth';
import { PLAYLIST_ORDERS, PlaylistsStore, RESOURCE, type PlaylistFields, type PlaylistRow } from './playlists-store';
import {
  PlaylistBulkAdded,
  PlaylistBulkDeleted,
  PlaylistRecordingAdd,
  PlaylistRecordingsBulk,
  SessionRecordingPlaylist,
  SessionRecordingPlaylistWrite,
} from './schemas';

const MATERIAL = ['name', 'description', 'filters'] as const;
const PLAYLIST = '/session_recording_playlists/:short_id';
/** The longest session id a playlist stores. */
const MAX_RECORDING_ID = 200;
/** The most recordings one bulk add or delete names (PostHog's limit). */
const MAX_BULK = 20;

/** A session id from a path or a bulk body, within what a playlist stores. */
function checkedSessionId(sessionId: string, attr: string): string {
  if (sessionId.length > MAX_RECORDING_ID) throw errors.validation(`Ensure this field has no more than ${MAX_RECORDING_ID} characters.`, attr, 'max_length');
  return sessionId;
}

/** A bulk body's session ids, refused as PostHog refuses an empty list or more than it takes at once. */
function bulkIds(ids: readonly string[] | undefined): string[] {
  if (ids === undefined || ids.length === 0) throw errors.validation('session_recording_ids must be provided as a non-empty array', 'session_recording_ids');
  if (ids.length > MAX_BULK) throw errors.validation(`Cannot process more than ${MAX_BULK} recordings at once`, 'session_recording_ids');
  return ids.map((id, index) => checkedSessionId(id, `session_recording_ids__${index}`));
}

/** A collection's items (every recording added to it, also one with no replay data yet) and how many the caller watched. */
interface CollectionCounts {
  count: number;
  watched: number;
}

function playlistBody(row: PlaylistRow, counts: CollectionCounts): Static<typeof SessionRecordingPlaylist> {
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
      collection: { count: counts.count === 0 ? null : counts.count, watched_count: counts.watched },
      saved_filters: { count: null, has_more: null, watched_count: null, increased: null, last_refreshed_at: null },
    },
  };
}

const isEmptyFilters = (filters: Record<string, unknown>) => Object.keys(filters).length === 0;

/** The fields a validated body sets (`description: null` is the empty text, `filters: null` none). */
function fieldsOf(body: Static<typeof SessionRecordingPlaylistWrite>): PlaylistFields {
  const fields: PlaylistFields = {};
  for (const key of ['name', 'derived_name', 'pinned', 'deleted'] as const) if (body[key] !== undefined) Object.assign(fields, { [key]: body[key] });
  if (body.description !== undefined) fields.description = body.description ?? '';
  if (body.filters !== undefined) fields.filters = body.filters ?? {};
  return fields;
}

/** `/session_recording_playlists`, with their recordings and access controls. */
export function playlistRoutes({ sql, clickhouse }: ManagementDeps): Route[] {
  const store = new PlaylistsStore(sql);
  const recordings = new RecordingsStore(sql, clickhouse);
  const target = (row: PlaylistRow): AccessTarget => ({ resource: RESOURCE, resourceId: String(row.id), createdBy: row.created_by_id });

  /** The path's playlist, or 404 (also when the caller's level is `none`). */
  async function load(req: Request, includeDeleted = false): Promise<PlaylistRow> {
    const row = await store.get(callerOf(req), String(req.params.short_id), includeDeleted);
    if (!row || row.user_access_level === 'none') throw errors.notFound();
    return row;
  }

  /** The playlists' bodies, counting their items as PostHog does (not only those with replay data). */
  async function bodies(caller: Caller, rows: readonly PlaylistRow[]): Promise<Array<Static<typeof SessionRecordingPlaylist>>> {
    const items = await store.items(rows.map((row) => row.id));
    const views = await recordings.views(caller, [...new Set([...items.values()].flat())]);
    return rows.map((row) => {
      const ids = items.get(row.id)!;
      return playlistBody(row, { count: ids.length, watched: ids.filter((id) => views.get(id)!.viewed).length });
    });
  }
  const shown = async (req: Request, row: PlaylistRow) => (await bodies(callerOf(req), [row]))[0]!;
  /** The path's playlist when the caller may edit it. */
  async function editable(req: Request): Promise<PlaylistRow> {
    const playlist = await load(req);
    await requireAccess(sql, req, target(playlist), 'editor');
    return playlist;
  }
  /** `recordings/bulk_add` or `recordings/bulk_delete`: 1–20 ids in the body, applied to a playlist the caller may edit. */
  function bulkRoute<S extends TSchema>(
    action: string,
    summary: string,
    schema: S,
    apply: (playlist: PlaylistRow, ids: string[]) => Promise<StaticOr<S, void>>,
  ): Route {
    return route<typeof PlaylistRecordingsBulk, undefined, S>({
      method: 'post',
      path: `${PLAYLIST}/recordings/${action}`,
      scope: 'session_recording_playlist:write',
      summary,
      body: PlaylistRecordingsBulk,
      csv: { file: 'result' },
      response: { status: 200, schema },
      async handler(req, { body }) {
        const ids = bulkIds(body.session_recording_ids);
        return apply(await editable(req), ids);
      },
    });
  }
  const refuseFilters = (playlist: PlaylistRow) => {
    if (playlist.type === 'filters') throw errors.validation("Cannot add recordings to a playlist that is type 'filters'.");
  };

  return [
    route({
      method: 'get',
      path: '/session_recording_playlists',
      scope: 'session_recording_playlist:read',
      summary: 'List playlists',
      paginated: 'envelope',
      query: Type.Object({
        created_by: Type.Optional(Type.Integer({ minimum: 0, maximum: 2147483647 })),
        short_id: Q.string,
        search: Q.string,
        pinned: Q.boolean,
        type: Type.Optional(Enum(['collection', 'filters'])),
        user: Q.boolean,
        order: Type.Optional(Enum(PLAYLIST_ORDERS)),
        date_from: Type.Optional(Type.String({ maxLength: 64, description: 'last modified after: relative (`-7d`) or a date' })),
        date_to: Type.Optional(Type.String({ maxLength: 64, description: 'last modified before: relative (`-1d`) or a date' })),
        session_recording_id: Type.Optional(Type.String({ maxLength: MAX_RECORDING_ID, description: 'only playlists holding this recording' })),
      }),
      csv: { file: 'session_recording_playlists' },
      response: { status: 200, schema: SessionRecordingPlaylist },
      async handler(req, { page, query }) {
        const dates = { now: new Date(), timezone: projectOf(req).timezone };
        const { rows, count } = await store.list(
          callerOf(req),
          {
            createdBy: query.created_by,
            shortId: query.short_id,
            search: query.search,
            pinned: query.pinned,
            mine: query.user === true,
            type: query.type,
            order: query.order,
            modifiedAfter: query.date_from === undefined ? undefined : resolveInstant(query.date_from, dates, false, 'date_from'),
            modifiedBefore: query.date_to === undefined ? undefined : resolveInstant(query.date_to, dates, true, 'date_to'),
            sessionId: query.session_recording_id,
          },
          page,
        );
        return { results: await bodies(callerOf(req), rows.slice(0, page.limit)), count, hasMore: rows.length > page.limit };
      },
    }),
    route({
      method: 'post',
      path: '/session_recording_playlists',
      scope: 'session_recording_playlist:write',
      summary: 'Create a playlist',
      body: SessionRecordingPlaylistWrite,
      csv: { file: 'session_recording_playlist' },
      response: { status: 201, schema: SessionRecordingPlaylist },
      async handler(req, { body }) {
        const fields = fieldsOf(body);
        const filters = fields.filters ?? {};
        const type = body.type ?? (isEmptyFilters(filters) ? 'collection' : 'filters');
        if (type !== 'collection' && type !== 'filters')
          throw errors.validation('Must provide a valid playlist type: either filters or collection', 'type', 'invalid_choice');
        if (type === 'collection' && !isEmptyFilters(filters)) throw errors.validation('You cannot create a collection with filters', 'filters');
        if (type === 'filters' && isEmptyFilters(filters)) throw errors.validation('You must provide a valid filters when creating a saved filter', 'filters');
        const shortId = await store.create(callerOf(req), fields, type);
        return shown(req, (await store.get(callerOf(req), shortId, true))!);
      },
    }),
    route({
      method: 'get',
      path: PLAYLIST,
      scope: 'session_recording_playlist:read',
      summary: 'A playlist',
      csv: { file: 'session_recording_playlist' },
      response: { status: 200, schema: SessionRecordingPlaylist },
      handler: async (req) => shown(req, await load(req)),
    }),
    ...updates({
      path: PLAYLIST,
      scope: 'session_recording_playlist:write',
      summary: 'Update a playlist; `deleted: true` soft-deletes',
      body: SessionRecordingPlaylistWrite,
      csv: { file: 'session_recording_playlist' },
      response: { status: 200, schema: SessionRecordingPlaylist },
      async handler(req, { body }) {
        const fields = fieldsOf(body);
        // Soft-deleted playlists stay reachable here, so `{"deleted": false}` restores one.
        const current = await load(req, true);
        await requireAccess(sql, req, target(current), 'editor');
        if (current.type === 'collection' && fields.filters !== undefined && !isEmptyFilters(fields.filters)) {
          throw errors.validation('You cannot update a collection to add filters', 'filters');
        }
        if (current.type === 'filters' && fields.filters !== undefined && isEmptyFilters(fields.filters)) {
          throw errors.validation('You cannot remove all filters when updating a saved filter', 'filters');
        }
        const material = MATERIAL.some((key) => fields[key] !== undefined && JSON.stringify(fields[key]) !== JSON.stringify(current[key]));
        await store.update(current.id, fields, material ? principalOf(req).user.id : undefined);
        return shown(req, await load(req, true));
      },
    }),
    route({
      method: 'delete',
      path: PLAYLIST,
      scope: 'session_recording_playlist:write',
      summary: 'Hard delete is not allowed: 405, empty body (PATCH `deleted: true` instead)',
      response: { status: 405 },
      handler: () => undefined,
    }),
    ...accessControlRoutes(sql, PLAYLIST, 'a playlist', async (req) => target(await load(req))),
    route({
      method: 'get',
      path: `${PLAYLIST}/recordings`,
      scope: 'session_recording_playlist:read',
      summary: 'Recordings in a playlist',
      paginated: 'has_next',
      csv: { file: 'recordings' },
      response: { status: 200, schema: SessionRecording },
      async handler(req, { page }) {
        const playlist = await load(req);
        const caller = callerOf(req);
        const ids = (await store.items([playlist.id])).get(playlist.id)!;
        const summaries = ids.length === 0 ? [] : await recordings.list(caller.projectId, { sessionIds: ids, limit: page.limit + 1, offset: page.offset });
        return {
          results: await recordingsOf(recordings, caller, summaries.slice(0, page.limit)),
          hasMore: summaries.length > page.limit,
          fields: { version: 4 },
        };
      },
    }),
    // Before `recordings/:session_recording_id`, which would read `bulk_add` as a recording's id.
    bulkRoute('bulk_add', 'Add up to 20 recordings at once (idempotent)', PlaylistBulkAdded, async (playlist, ids) => {
      refuseFilters(playlist);
      return { success: true, added_count: await store.addItems(playlist.id, ids), total_requested: ids.length };
    }),
    bulkRoute('bulk_delete', 'Remove up to 20 recordings at once (those not in the playlist are skipped)', PlaylistBulkDeleted, async (playlist, ids) => ({
      success: true,
      deleted_count: await store.removeItems(playlist.id, ids),
      total_requested: ids.length,
    })),
    route({
      method: 'post',
      path: `${PLAYLIST}/recordings/:session_recording_id`,
      scope: 'session_recording_playlist:write',
      summary: 'Add a recording (idempotent)',
      body: PlaylistRecordingAdd,
      csv: { file: 'result' },
      response: { status: 200, schema: Success },
      async handler(req) {
        const playlist = await editable(req);
        refuseFilters(playlist);
        await store.addItems(playlist.id, [checkedSessionId(String(req.params.session_recording_id), 'session_recording_id')]);
        return { success: true };
      },
    }),
    route({
      method: 'delete',
      path: `${PLAYLIST}/recordings/:session_recording_id`,
      scope: 'session_recording_playlist:write',
      summary: 'Remove a recording (404 when it is not in the playlist)',
      csv: { file: 'result' },
      response: { status: 200, schema: Success },
      async handler(req) {
        const playlist = await editable(req);
        if ((await store.removeItems(playlist.id, [String(req.params.session_recording_id)])) === 0) throw errors.notFound();
        return { success: true };
      },
    }),
  ];
}
