/**
 * CPU priorities of embedded mode's threads (Linux, where each thread has a nice value of its own). The SDKs'
 * requests are served by the main thread at the process's own priority; everything that stores events runs at
 * BACKGROUND_NICE, so that a contended core goes to a request first (at nice 10 a thread has a tenth of the
 * weight of one at 0) while storage still takes every cycle the requests leave idle:
 *
 * - the ingestion thread lowers itself;
 * - chDB does its work on threads of its own — merges above all, which on a steady trickle of inserts cost more CPU
 *   than the inserts — created when it needs them, at the priority of whichever thread created them. They are
 *   found by name (Node's own threads are all called `node`) and lowered now and again for those created since.
 *   That includes the threads of reads from the console: under contention they wait for capture and decide too.
 *
 * Elsewhere (no /proc, or no permission) everything runs at one priority, as before; that is logged once.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import path from 'node:path';
import type { Logger } from '@plover/core';

export const BACKGROUND_NICE = 10;

/** How often threads chDB created since the last look are lowered. */
const ENGINE_SCAN_MS = 1000;

/** Lowers the calling thread to BACKGROUND_NICE. */
export function lowerThisThread(logger: Logger): void {
  try {
    setPriority(Number(path.basename(readlinkSync('/proc/thread-self'))), BACKGROUND_NICE);
  } catch (error) {
    logger.info({ err: error }, "storage runs at the request path's priority (a thread's priority could not be lowered here)");
  }
}

/** Thread ids of this process that chDB created and that still run at the process's own priority. */
function engineThreadsToLower(): number[] {
  const lower: number[] = [];
  for (const entry of readdirSync('/proc/self/task')) {
    const tid = Number(entry);
    try {
      if (readFileSync(`/proc/self/task/${entry}/comm`, 'utf8').trimEnd() === 'node') continue;
      // A thread chDB gave a priority of its own (its memory worker runs at -20) keeps it.
      if (getPriority(tid) === 0) lower.push(tid);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return lower;
}

/** Keeps chDB's threads at BACKGROUND_NICE until the returned function is called. */
export function lowerEngineThreads(logger: Logger): () => void {
  const scan = (): boolean => {
    try {
      for (const tid of engineThreadsToLower()) {
        try {
          setPriority(tid, BACKGROUND_NICE);
        } catch (error) {
          // The thread ended since it was listed.
          if ((error as { info?: { code?: string } }).info?.code !== 'ESRCH') throw error;
        }
      }
      return true;
    } catch (error) {
      logger.info({ err: error }, "chDB's threads run at the request path's priority (their priority could not be lowered here)");
      return false;
    }
  };
  if (!scan()) return () => undefined;
  const timer = setInterval(() => {
    if (!scan()) clearInterval(timer);
  }, ENGINE_SCAN_MS);
  timer.unref();
  return () => clearInterval(timer);
}
