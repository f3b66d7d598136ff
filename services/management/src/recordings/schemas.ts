import { Type } from '@sinclair/typebox';
import { component, Types } from '../shared/schema';

export const SessionRecordingUpdate = component(
  'SessionRecordingUpdate',
  Type.Object({
    viewed: Type.Optional(Type.Boolean({ description: 'true marks the recording watched by the caller' })),
    player_metadata: Type.Optional(Types<Record<string, unknown> | null>(['object', 'null'], { description: 'accepted as the web app sends it, not kept' })),
  }),
);

/** The blocks of a recording's snapshots (the `source=blob_v2` answer is JSON lines). */
export const SnapshotSources = component(
  'SnapshotSources',
  Type.Object({
    sources: Type.Array(
      Type.Object({ source: Type.Literal('blob_v2'), start_timestamp: Type.String(), end_timestamp: Type.String(), blob_key: Type.String() }),
    ),
  }),
);
