import { randomUUID } from 'node:crypto';
import type { SnapshotBatch } from '@plover/clickhouse';

const SECOND = 1000;

/**
 * A `$snapshot` message as the replay consumer stores it: `at` seconds after `start`, lasting `seconds`, its block
 * one line (a mouse move at its first time), nothing counted unless `overrides` says so. For the replay store's
 * contract suite and the suites of what reads it (the recordings API).
 */
export function snapshotBatch(
  projectId: number,
  sessionId: string,
  start: number,
  overrides: Partial<SnapshotBatch> & { at?: number; seconds?: number } = {},
): SnapshotBatch {
  const { at = 0, seconds = 1, ...rest } = overrides;
  const windowId = rest.window_id ?? 'w1';
  return {
    team_id: projectId,
    session_id: sessionId,
    window_id: windowId,
    batch_uuid: randomUUID(),
    distinct_id: 'user-1',
    first_timestamp: start + at * SECOND,
    last_timestamp: start + (at + seconds) * SECOND,
    data: `${JSON.stringify([windowId, { type: 3, data: { source: 1 }, timestamp: start + at * SECOND }])}\n`,
    snapshot_source: 'web',
    snapshot_library: 'web',
    click_count: 0,
    keypress_count: 0,
    mouse_activity_count: 0,
    active_milliseconds: 0,
    console_log_count: 0,
    console_warn_count: 0,
    console_error_count: 0,
    event_count: 1,
    first_url: null,
    urls: [],
    ...rest,
  };
}
