import { AsyncLocalStorage } from 'node:async_hooks';
import type { RequestHandler } from 'express';
import { ApiError } from '@plover/core';
import { projectOf } from './auth';

/** Seconds a client refused for concurrency is told to wait (`Retry-After`). */
const RETRY_AFTER_SECONDS = 2;
/** Exports waiting for a turn beyond which another is refused with 429 instead of queued. */
const EXPORT_QUEUE_LENGTH = 20;

interface RequestSlot {
  gate: AnalysisGate;
  projectId: number;
  /** Whether this request holds one of its project's analysis slots (taken at its first ClickHouse read). */
  holds: boolean;
  /** Whether this request holds an export turn. */
  exporting: boolean;
  /** Set when the response closed: what the request takes afterwards it gives back at once. */
  closed: boolean;
}

const current = new AsyncLocalStorage<RequestSlot>();

/**
 * Analysis concurrency of the management API. A project request runs inside the gate's context (`middleware`);
 * its first ClickHouse read (`enter`, called by the limited ClickHouse of the route table) takes one of the
 * project's `perProject` slots or answers 429 with Retry-After in PostHog's throttled shape; a streamed export
 * (`exportTurn`) also waits for one of the process's `exports` turns, first come first served. Both are given
 * back when the response closes (sent, or the client went away). Routes that never read ClickHouse take nothing.
 */
export class AnalysisGate {
  private readonly running = new Map<number, number>();
  private exportsRunning = 0;
  private readonly exportQueue: (() => void)[] = [];

  constructor(
    private readonly perProject: number,
    private readonly exports: number,
    private readonly csvColumns: number,
  ) {}

  /** The column cap of the current request's CSV export (unbounded outside a gate's context). */
  static csvMaxColumns(): number {
    return current.getStore()?.gate.csvColumns ?? Number.POSITIVE_INFINITY;
  }

  readonly middleware: RequestHandler = (req, res, next) => {
    const slot: RequestSlot = { gate: this, projectId: projectOf(req).id, holds: false, exporting: false, closed: false };
    res.once('close', () => this.release(slot));
    current.run(slot, next);
  };

  private release(slot: RequestSlot): void {
    slot.closed = true;
    if (slot.holds) {
      const left = (this.running.get(slot.projectId) ?? 1) - 1;
      if (left > 0) this.running.set(slot.projectId, left);
      else this.running.delete(slot.projectId);
      slot.holds = false;
    }
    if (slot.exporting) {
      slot.exporting = false;
      const next = this.exportQueue.shift();
      if (next) next();
      else this.exportsRunning--;
    }
  }

  /** Takes the current request's analysis slot if it holds none yet; 429 when its project has none free. */
  static enter(): void {
    const slot = current.getStore();
    if (!slot || slot.holds) return;
    const { gate, projectId } = slot;
    const running = gate.running.get(projectId) ?? 0;
    if (running >= gate.perProject) {
      throw new ApiError(
        429,
        'throttled',
        'throttled',
        `This project already runs ${gate.perProject} analysis requests. Request was throttled. Expected available in ${RETRY_AFTER_SECONDS} seconds.`,
        null,
        RETRY_AFTER_SECONDS,
      );
    }
    gate.running.set(projectId, running + 1);
    slot.holds = true;
  }

  /** Resolves when the current request may stream its export; 429 when too many already wait. */
  static async exportTurn(): Promise<void> {
    const slot = current.getStore();
    if (!slot || slot.exporting) return;
    const { gate } = slot;
    if (gate.exportsRunning < gate.exports) {
      gate.exportsRunning++;
    } else {
      if (gate.exportQueue.length >= EXPORT_QUEUE_LENGTH) {
        throw new ApiError(
          429,
          'throttled',
          'throttled',
          `Too many exports are waiting. Request was throttled. Expected available in ${RETRY_AFTER_SECONDS} seconds.`,
          null,
          RETRY_AFTER_SECONDS,
        );
      }
      // The turn passes straight from the export that ends to this one (exportsRunning unchanged).
      await new Promise<void>((resolve) => gate.exportQueue.push(resolve));
    }
    slot.exporting = true;
    // The client went away while it waited: its turn goes on to the next export.
    if (slot.closed) gate.release(slot);
  }
}
