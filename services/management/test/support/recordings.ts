/**
 * Stored recordings for the management suites: one migrated chDB per suite, shared by its database backends
 * (each backend's projects numbered in a range of their own, so their rows never meet), and recorded messages
 * as the replay consumer stores them.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChdbClickHouse } from '@plover/chdb';
import { migrate, type ClickHouse, type SnapshotBatch } from '@plover/clickhouse';
import { createLogger } from '@plover/core';
import type { Sql } from '@plover/postgres';

/** A migrated chDB for the suite (opened before its tests, closed and removed after them). */
export function useChdb(): () => ClickHouse {
  let clickhouse: ClickHouse;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'plover-mgmt-ch-'));
    clickhouse = await ChdbClickHouse.open({ dataDir: dir });
    await migrate(clickhouse, { logger: createLogger({ service: 'test', level: 'silent' }) });
  });
  afterAll(async () => {
    await clickhouse.close();
    await rm(dir, { recursive: true, force: true });
  });
  return () => clickhouse;
}

/** Numbers the backend's next projects from its own range: backends sharing one ClickHouse keep their teams apart. */
export async function ownProjectIds(sql: Sql, backendIndex: number): Promise<void> {
  await sql.query('t.ids', `ALTER TABLE projects ALTER COLUMN id RESTART WITH ${(backendIndex + 1) * 100_000}`);
}

const SECOND = 1000;

/** One recorded message of a session: `at` seconds after `start`, lasting `seconds`, one line per second. */
export function recorded(
  teamId: number,
  sessionId: string,
  start: number,
  overrides: Partial<SnapshotBatch> & { at?: number; seconds?: number } = {},
): SnapshotBatch {
  const { at = 0, seconds = 1, ...rest } = overrides;
  const windowId = rest.window_id ?? `${sessionId}-window`;
  const first = start + at * SECOND;
  const lines = Array.from({ length: seconds + 1 }, (_, i) => JSON.stringify([windowId, { type: 3, data: { source: 1 }, timestamp: first + i * SECOND }]));
  return {
    team_id: teamId,
    session_id: sessionId,
    window_id: windowId,
    batch_uuid: randomUUID(),
    distinct_id: 'anonymous',
    first_timestamp: first,
    last_timestamp: first + seconds * SECOND,
    data: `${lines.join('\n')}\n`,
    snapshot_source: 'web',
    snapshot_library: 'web',
    click_count: 0,
    keypress_count: 0,
    mouse_activity_count: 0,
    active_milliseconds: 0,
    console_log_count: 0,
    console_warn_count: 0,
    console_error_count: 0,
    event_count: seconds + 1,
    first_url: null,
    urls: [],
    ...rest,
  };
}
