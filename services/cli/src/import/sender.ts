import { setTimeout as sleep } from 'node:timers/promises';
import { ApiFailure, Unreachable, userErrorOf, type Api } from '../api';

/** One event ready to send: its record number, the event's JSON and the record as read (for the rejected file). */
export interface Outgoing {
  index: number;
  json: string;
  raw: string;
}

export interface Rejection {
  index: number;
  raw: string;
  field?: string;
  reason: string;
}

/** Statuses after which the same request may succeed: rate limit, bus not acknowledging in time, a proxy's gateway errors. */
const RETRIED_STATUSES = new Set([429, 502, 503, 504]);

export interface SenderOptions {
  /** How long retries of one request may go on before the import stops (the state file keeps its place). */
  retryForMs: number;
  /** Longest wait for one answer: capture answers within its produce timeout (5 s by default) when it is healthy. */
  requestTimeoutMs: number;
  onRetry?: (reason: string, waitMs: number) => void;
}

/**
 * Sends events to capture's `/batch/` as a historical migration (`historical_migration: true`): capture validates
 * and normalizes them as any SDK's, puts them on the historical topic (so live traffic never waits behind an
 * import) and answers 200 only once the bus acknowledged every one. One bad event makes capture refuse the whole
 * request and name it in `attr` (`batch__3__event`); that event is rejected and the rest sent again.
 */
export class BatchSender {
  constructor(
    private readonly api: Api,
    private readonly token: string,
    private readonly options: SenderOptions,
  ) {}

  /** Resolves once every event was acknowledged or rejected; the rejected ones, in order. */
  async send(events: readonly Outgoing[]): Promise<Rejection[]> {
    const rejections: Rejection[] = [];
    const queue: Outgoing[][] = [[...events]];
    while (queue.length > 0) {
      const batch = queue.shift()!;
      if (batch.length === 0) continue;
      const failure = await this.post(batch);
      if (!failure) continue;
      const named = /^batch__(\d+)(?:__(.+))?$/.exec(failure.attr ?? '');
      const at = named ? Number(named[1]) : -1;
      if (at >= 0 && at < batch.length) {
        const bad = batch[at]!;
        rejections.push({
          index: bad.index,
          raw: bad.raw,
          field: named?.[2]?.replace(/__/g, '.'),
          reason: `capture: ${failure.code ?? failure.status} ${failure.detail}`,
        });
        queue.unshift(batch.slice(0, at), batch.slice(at + 1));
      } else if (batch.length === 1) {
        rejections.push({ index: batch[0]!.index, raw: batch[0]!.raw, reason: `capture: ${failure.code ?? failure.status} ${failure.detail}` });
      } else {
        // Refused without naming an event (a size limit of the whole request): each half on its own.
        const half = Math.ceil(batch.length / 2);
        queue.unshift(batch.slice(0, half), batch.slice(half));
      }
    }
    return rejections.sort((a, b) => a.index - b.index);
  }

  /** One request until it is answered for good: undefined when acknowledged, the failure when capture refused an event. */
  private async post(batch: readonly Outgoing[]): Promise<ApiFailure | undefined> {
    const body = `{"api_key":${JSON.stringify(this.token)},"historical_migration":true,"batch":[${batch.map((event) => event.json).join(',')}]}`;
    const deadline = Date.now() + this.options.retryForMs;
    for (let attempt = 0; ; attempt++) {
      let retry: string;
      let waitMs = Math.min(8000, 250 * 2 ** attempt);
      try {
        await this.api.ok('batch/', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          signal: AbortSignal.timeout(this.options.requestTimeoutMs),
        });
        return undefined;
      } catch (error) {
        if (error instanceof ApiFailure && (error.status === 400 || error.status === 413)) return error;
        if (error instanceof ApiFailure && error.status === 401) throw userErrorOf('POST /batch/', error);
        if (error instanceof ApiFailure && RETRIED_STATUSES.has(error.status)) {
          retry = error.message;
          if (error.retryAfterSeconds) waitMs = error.retryAfterSeconds * 1000;
        } else if (error instanceof Unreachable) {
          retry = error.message;
        } else if (error instanceof ApiFailure) {
          throw userErrorOf('POST /batch/', error);
        } else {
          throw error;
        }
      }
      if (Date.now() + waitMs > deadline) throw new Unreachable(this.api.base.origin, `gave up after ${attempt + 1} attempts: ${retry}`);
      this.options.onRetry?.(retry, waitMs);
      await sleep(waitMs);
    }
  }
}
