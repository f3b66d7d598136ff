import { mutationTarget, type ClickHouse } from '@plover/clickhouse';
import type { Logger } from '@plover/core';
import { PersonReads } from '@plover/persons';
import type { Sql, SqlExecutor } from '@plover/postgres';
import { DELETION_TYPE_PERSON } from '../shared/deletion-queue';

/** Any fixed number; every process running the job must use the same one. */
export const DELETION_JOB_LOCK = 7_140_221_006;

export interface DeletionJobResult {
  /** False when another process holds the job's lock (it is running there). */
  ran: boolean;
  /** Queued deletions found. */
  queued: number;
  /** Deletions whose events are verified gone and are now marked done. */
  verified: number;
}

interface Pending {
  id: number;
  project_id: number;
  key: string;
  requested_at: Date;
}

/**
 * Executes queued person event deletions (async_deletions, deletion_type 1): per project one ClickHouse mutation
 * removes the events of each person (its uuid and the uuids of persons merged into it, from person_overrides)
 * with timestamp ≤ the request time, then a count verifies none remain and only then are the rows marked done.
 * A crash anywhere leaves the unmarked rows queued; the next run repeats the (idempotent) mutation.
 *
 * Single runner across replicas: the whole run holds a transaction-scoped advisory lock, so a second process
 * finds it taken and returns `ran: false`. On PGlite (one connection) that transaction also holds the embedded
 * database for the run's duration: API requests wait for it (weekly, seconds).
 */
export async function runEventDeletions(deps: { sql: Sql; clickhouse: ClickHouse; logger: Logger }): Promise<DeletionJobResult> {
  return deps.sql.transaction(async (tx) => {
    const lock = await tx.query<{ locked: boolean }>('deletions.lock', 'SELECT pg_try_advisory_xact_lock($1) AS locked', [DELETION_JOB_LOCK]);
    if (!lock.rows[0]?.locked) return { ran: false, queued: 0, verified: 0 };
    const pending = (
      await tx.query<Pending>(
        'deletions.pending',
        `SELECT id, project_id, key, requested_at FROM async_deletions
          WHERE delete_verified_at IS NULL AND deletion_type = $1 ORDER BY id`,
        [DELETION_TYPE_PERSON],
      )
    ).rows;
    let verified = 0;
    const byProject = new Map<number, Pending[]>();
    for (const row of pending) byProject.set(row.project_id, [...(byProject.get(row.project_id) ?? []), row]);
    for (const [projectId, rows] of byProject) {
      try {
        verified += await deleteProjectEvents(tx, deps, projectId, rows);
      } catch (error) {
        // The rows stay queued; other projects still run.
        deps.logger.error({ err: error, projectId }, 'event deletion failed; will retry on the next run');
      }
    }
    deps.logger.info({ queued: pending.length, verified }, 'event deletion job finished');
    return { ran: true, queued: pending.length, verified };
  });
}

async function deleteProjectEvents(tx: SqlExecutor, deps: { clickhouse: ClickHouse; logger: Logger }, projectId: number, rows: Pending[]): Promise<number> {
  // Each person uuid, and those merged into it, with the cutoff of its request (µs since the epoch).
  const cutoffs = new Map<string, number>();
  for (const row of rows) cutoffs.set(row.key, row.requested_at.getTime() * 1000);
  const merged = await new PersonReads(tx).mergedInto(
    projectId,
    rows.map((row) => row.key),
  );
  for (const [survivor, mergedUuids] of merged) {
    const cutoff = cutoffs.get(survivor);
    for (const uuid of mergedUuids) if (cutoff !== undefined && !cutoffs.has(uuid)) cutoffs.set(uuid, cutoff);
  }
  const params = { projectId, persons: [...cutoffs.keys()], cutoffs: [...cutoffs.values()] };
  // (µs since the epoch stay below 2^53 until the year 2255, so they bind as plain numbers.)
  const condition = `team_id = {projectId:Int64} AND toString(person_id) IN {persons:Array(String)}
    AND toUnixTimestamp64Micro(timestamp) <= arrayElement({cutoffs:Array(Int64)}, indexOf({persons:Array(String)}, toString(person_id)))`;
  await deps.clickhouse.command(
    'deletions.deleteEvents',
    `ALTER TABLE ${mutationTarget(deps.clickhouse, 'events')} DELETE WHERE ${condition} SETTINGS mutations_sync = 2`,
    params,
  );
  const left = await deps.clickhouse.query<{ n: string }>('deletions.verify', `SELECT count() AS n FROM events WHERE ${condition}`, params);
  if (Number(left[0]?.n ?? 0) !== 0) {
    deps.logger.warn({ projectId, remaining: left[0]?.n }, 'events remain after deletion; left queued');
    return 0;
  }
  await tx.query('deletions.markDone', 'UPDATE async_deletions SET delete_verified_at = now() WHERE id = ANY($1::bigint[])', [rows.map((row) => row.id)]);
  return rows.length;
}
