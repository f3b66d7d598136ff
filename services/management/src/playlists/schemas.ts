import { Type } from '@sinclair/typebox';
import { component, Enum, Nullable, Types } from '../shared/schema';
import { UserOrNull } from '../shared/users';

export const SessionRecordingPlaylistWrite = component(
  'SessionRecordingPlaylistWrite',
  Type.Object({
    name: Type.Optional(Nullable(Type.String({ maxLength: 400 }))),
    derived_name: Type.Optional(Nullable(Type.String({ maxLength: 400 }))),
    description: Type.Optional(Nullable(Type.String())),
    pinned: Type.Optional(Type.Boolean()),
    deleted: Type.Optional(Type.Boolean()),
    filters: Type.Optional(Types<Record<string, unknown> | null>(['object', 'null'], { additionalProperties: true })),
    type: Type.Optional(Types<string | null>(['string', 'null'], { description: '`collection` or `filters`; create only' })),
  }),
);

export const PlaylistRecordingAdd = component('PlaylistRecordingAdd', Type.Object({}, { description: 'no fields: the recording is named by the path' }));

export const PlaylistRecordingsBulk = component(
  'PlaylistRecordingsBulk',
  Type.Object({
    session_recording_ids: Type.Optional(Type.Array(Type.String(), { maxItems: 1000, description: 'one to 20 recording (session) ids' })),
  }),
);

export const PlaylistBulkAdded = component(
  'PlaylistBulkAdded',
  Type.Object({ success: Type.Boolean(), added_count: Type.Integer(), total_requested: Type.Integer() }),
);

export const PlaylistBulkDeleted = component(
  'PlaylistBulkDeleted',
  Type.Object({ success: Type.Boolean(), deleted_count: Type.Integer(), total_requested: Type.Integer() }),
);

const count = Nullable(Type.Integer());

export const SessionRecordingPlaylist = component(
  'SessionRecordingPlaylist',
  Type.Object({
    id: Type.Integer(),
    short_id: Type.String(),
    name: Nullable(Type.String()),
    derived_name: Nullable(Type.String()),
    description: Type.String(),
    pinned: Type.Boolean(),
    created_at: Type.String({ format: 'date-time' }),
    created_by: UserOrNull,
    deleted: Type.Boolean(),
    filters: Types<Record<string, unknown> | null>(['object', 'null']),
    last_modified_at: Type.String({ format: 'date-time' }),
    last_modified_by: UserOrNull,
    type: Enum(['collection', 'filters']),
    is_synthetic: Type.Boolean(),
    user_access_level: Enum(['none', 'viewer', 'editor']),
    recordings_counts: Type.Object({
      collection: Type.Object({ count, watched_count: Type.Integer() }),
      saved_filters: Type.Object({
        count,
        has_more: Nullable(Type.Boolean()),
        watched_count: count,
        increased: Nullable(Type.Boolean()),
        last_refreshed_at: Nullable(Type.String()),
      }),
    }),
  }),
);
