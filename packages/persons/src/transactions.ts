import { StorageError } from '@plover/core';
import type { Sql, SqlExecutor } from '@plover/postgres';

/**
 * A concurrent writer changed what this transaction relied on: a person or distinct id it meant to create
 * appeared, a row it looked up vanished. The transaction is rolled back and replayed from its reads;
 * retriable, so a caller that still sees it after the replays (a pathological hot spot) backs off.
 */
export class LostRaceError extends StorageError {
  constructor(what: string) {
    super(`persons: lost a race with a concurrent writer (${what})`, true, undefined);
    this.name = 'LostRaceError';
  }
}

/**
 * A person change staged in a PersonSnapshot could not be stored as decided: the person changed in Postgres since
 * the batch read it (a management PATCH, another consumer, a merge or a deletion). The events that relied on
 * the staged change must be processed again; retriable, so a caller that does not do so has the whole batch
 * redelivered.
 */
export class PersonWriteConflict extends StorageError {
  constructor(what: string) {
    super(`persons: a staged person change lost to a concurrent writer (${what})`, true, undefined);
    this.name = 'PersonWriteConflict';
  }
}

/**
 * PostHog retries a merge transaction up to 5 times on races (`person-merge-service.ts`). Plover allows 10: a burst of
 * crossing merges on the same persons can deadlock more than 5 times in a row on a loaded machine, and a replay
 * costs only the transaction itself.
 */
const MAX_ATTEMPTS = 10;
/** The longest pause between two replays (the random pause doubles per attempt up to this). */
const MAX_REPLAY_DELAY_MS = 500;

// Deadlocks (two merges locking the same persons in opposite order) and serialization failures: the
// server aborted one transaction, which can simply run again.
const REPLAYABLE_SQLSTATES = new Set(['40P01', '40001']);

function isReplayable(error: unknown): boolean {
  return error instanceof LostRaceError || (error instanceof StorageError && error.code !== undefined && REPLAYABLE_SQLSTATES.has(error.code));
}

/**
 * Before a replay: a random pause growing with the attempt. Replaying at once lets the writers that just
 * collided collide again in the same order; jitter spreads them out so one of them gets through.
 */
function replayDelay(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(10 * 2 ** attempt, MAX_REPLAY_DELAY_MS)));
}

/** Runs `fn` in a transaction, replaying it when it lost a race; other failures are rethrown at once. */
export async function transactionWithReplays<T>(sql: Sql, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await sql.transaction(fn);
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !isReplayable(error)) throw error;
      await replayDelay(attempt);
    }
  }
}
