import { AsyncLocalStorage } from 'node:async_hooks';
import type { RequestHandler } from 'express';
import { ApiError } from '@plover/core';
import { projectOf } from './auth';

/** Seconds a client refused for concurrency is told to wait (`Retry-After`). */
const RETRY_AFTER_SECONDS = 2;
/** Exports waiting for a turn beyond which another is refused with 429 instead of queued. */
const EXPORT_QUEUE_LENGTH = 20;
/** How long a request waits for one of its project's analysis slots before it is refused with 429. */
const SLOT_WAIT_MS = 10_000;
/** Requests of one project that may wait for a slot at once; another is refused with 429 straight away. */
const SLOT_QUEUE_LENGTH = 32;

interface RequestSlot {
  gate: AnalysisGate;
  projectId: number;
  /** Whether this request holds one of its project's analysis slots (taken at its first ClickHouse read). */
  holds: boolean;
  /** The slot being taken (its reads made meanwhile wait for the same one). */
  taking?: Promise<void>;
  /** Whether this request holds an export turn. */
  exporting: boolean;
  /** Set when the response closed: what the request takes afterwards it gives back at once. */
  closed: boolean;
}

const current = new AsyncLocalStorage<RequestSlot>();

/**
 * Analysis concurrency of the management API. A project request runs inside the gate's context (`middleware`);
 * its first ClickHouse read (`enter`, called by the limited ClickHouse of the route table) takes one of the
 * project's `perProject` slots, waiting for one in turn (a screen's burst of panels) at most SLOT_WAIT_MS behind at
 * most SLOT_QUEUE_LENGTH others, or answers 429 with Retry-After in PostHog's throttled shape; a streamed export
 * (`exportTurn`) also waits for one of the process's `exports` turns, first come first served. Both are given
 * back when the response closes (sent, or the client went away). Routes that never read ClickHouse take nothing.
 */
export class AnalysisGate {
  private readonly running = new Map<number, number>();
  private readonly waiting = new Map<number, Array<() => void>>();
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
      slot.holds = false;
      this.passSlot(slot.projectId);
    }
    if (slot.exporting) {
      slot.exporting = false;
      const next = this.exportQueue.shift();
      if (next) next();
      else this.exportsRunning--;
    }
  }

  /** A slot given back: straight to the project's next waiting request (the count unchanged), else freed. */
  private passSlot(projectId: number): void {
    const queue = this.waiting.get(projectId);
    const next = queue?.shift();
    if (queue?.length === 0) this.waiting.delete(projectId);
    if (next) return next();
    const left = (this.running.get(projectId) ?? 1) - 1;
    if (left > 0) this.running.set(projectId, left);
    else this.running.delete(projectId);
  }

  /** Takes the current request's analysis slot if it holds none yet (see the class); 429 when none comes free. */
  static enter(): Promise<void> | undefined {
    const slot = current.getStore();
    if (!slot || slot.holds) return undefined;
    slot.taking ??= slot.gate.take(slot);
    return slot.taking;
  }

  private async take(slot: RequestSlot): Promise<void> {
    const running = this.running.get(slot.projectId) ?? 0;
    if (running < this.perProject) {
      this.running.set(slot.projectId, running + 1);
    } else {
      const queue = this.waiting.get(slot.projectId) ?? [];
      if (queue.length >= SLOT_QUEUE_LENGTH) throw this.throttled();
      this.waiting.set(slot.projectId, queue);
      await new Promise<void>((resolve, reject) => {
        const handOver = () => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          queue.splice(queue.indexOf(handOver), 1);
          if (queue.length === 0) this.waiting.delete(slot.projectId);
          reject(this.throttled());
        }, SLOT_WAIT_MS);
        queue.push(handOver);
      });
    }
    slot.holds = true;
    // The client went away while it waited: its slot goes on at once.
    if (slot.closed) this.release(slot);
  }

  private throttled(): ApiError {
    return new ApiError(
      429,
      'throttled',
      'throttled',
      `This project already runs ${this.perProject} analysis requests. Request was throttled. Expected available in ${RETRY_AFTER_SECONDS} seconds.`,
      null,
      RETRY_AFTER_SECONDS,
    );
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
