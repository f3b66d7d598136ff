import { ApiError } from '@plover/core';

/**
 * How many bytes of decompressed request payload the process holds at once, across every SDK route. The
 * per-request limit alone lets N concurrent bombs, each just under it, cost N times that limit; here a
 * request's lease grows chunk by chunk as output appears, and a chunk that would pass the budget waits (first
 * come, first served) for other requests to release theirs. One that waits longer than `maxWaitMs` fails with
 * 503 and a Retry-After, which the SDKs retry.
 *
 * What is counted is decompressed output (gzip's bytes, the lz64 decoder's UTF-16 buffer), not what follows
 * from it: the JSON text and the parsed events of a held payload cost a small multiple more.
 */
export class DecompressionBudget {
  private held = 0;
  private peak = 0;
  private refused = 0;
  private readonly queue: Waiter[] = [];

  constructor(
    readonly limitBytes: number,
    readonly maxWaitMs: number,
  ) {}

  /** A lease for one request; release it once the request no longer holds its payload. */
  lease(): DecompressionLease {
    return new DecompressionLease(this);
  }

  stats(): DecompressionBudgetStats {
    return { heldBytes: this.held, peakBytes: this.peak, waiting: this.queue.length, refused: this.refused };
  }

  /** Granted at once only when nobody queues ahead and it fits. */
  private tryTake(bytes: number): boolean {
    if (this.queue.length > 0 || this.held + bytes > this.limitBytes) return false;
    this.grant(bytes);
    return true;
  }

  take(bytes: number): Promise<void> {
    if (this.tryTake(bytes)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        bytes,
        resolve,
        timer: setTimeout(() => {
          this.queue.splice(this.queue.indexOf(waiter), 1);
          this.refused++;
          reject(ApiError.unavailable('Too many large payloads are being decompressed at once; retry shortly.', RETRY_AFTER_SECONDS));
          // The head that gave up may have been what blocked smaller requests behind it.
          this.wake();
        }, this.maxWaitMs),
      };
      this.queue.push(waiter);
    });
  }

  give(bytes: number): void {
    this.held -= bytes;
    this.wake();
  }

  private wake(): void {
    while (this.queue.length > 0 && this.held + this.queue[0]!.bytes <= this.limitBytes) {
      const waiter = this.queue.shift()!;
      clearTimeout(waiter.timer);
      this.grant(waiter.bytes);
      waiter.resolve();
    }
  }

  private grant(bytes: number): void {
    this.held += bytes;
    if (this.held > this.peak) this.peak = this.held;
  }
}

export interface DecompressionBudgetStats {
  heldBytes: number;
  /** The most ever held at once. */
  peakBytes: number;
  waiting: number;
  /** Requests that gave up waiting (answered 503). */
  refused: number;
}

interface Waiter {
  bytes: number;
  resolve: () => void;
  timer: NodeJS.Timeout;
}

const RETRY_AFTER_SECONDS = 1;

/** One request's share of a budget. */
export class DecompressionLease {
  private bytes = 0;

  constructor(private readonly budget: DecompressionBudget) {}

  get heldBytes(): number {
    return this.bytes;
  }

  /** Resolves once `bytes` more are granted; rejects with a 503 when that takes too long. */
  async reserve(bytes: number): Promise<void> {
    await this.budget.take(bytes);
    this.bytes += bytes;
  }

  free(bytes: number): void {
    this.bytes -= bytes;
    this.budget.give(bytes);
  }

  release(): void {
    this.free(this.bytes);
  }
}

const MIB = 1024 * 1024;

/**
 * The process's budget, shared by capture and decide (one process in embedded mode). 256 MiB holds the largest
 * payload either accepts (capture: 100 MiB decompressed) twice over.
 */
export const decompressionBudget = new DecompressionBudget(256 * MIB, 1_000);
