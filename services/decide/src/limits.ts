import { TokenBuckets } from '@plover/core';
import type { Admission } from '@plover/http';

/**
 * Monthly flag-request quota per project (docs/decide.md#quota-and-rate-limit; off when `monthlyLimit` is 0).
 * Counted in memory per calendar month (UTC): by the one process that serves, or by the primary of
 * `DECIDE_WORKERS` workers for all of them; each replica of the service counts its own.
 */
export class FlagQuota {
  private month = '';
  private readonly counts = new Map<number, number>();

  constructor(
    private readonly monthlyLimit: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Counts one request; true when the project is over its quota (the request then gets no flags). */
  limited(projectId: number): boolean {
    if (this.monthlyLimit <= 0) return false;
    const month = this.now().toISOString().slice(0, 7);
    if (month !== this.month) {
      this.month = month;
      this.counts.clear();
    }
    const count = (this.counts.get(projectId) ?? 0) + 1;
    this.counts.set(projectId, count);
    return count > this.monthlyLimit;
  }
}

/** Decide's limits; each is undefined while off. */
export interface DecideLimits {
  /** Per-token (or per-address) rate limit; refused requests are answered 429. */
  rate?: Admission<string> | undefined;
  /** Monthly quota per project; refused requests get no flags and `quotaLimited`. */
  quota?: Admission<number> | undefined;
}

/** The limits counted in this process, from the `decide` settings. */
export function decideLimits(settings: {
  rateLimit?: { perSecond: number; burst: number } | undefined;
  flagQuotaMonthly?: number | undefined;
  now?: (() => Date) | undefined;
}): DecideLimits {
  // Per-token bucket (Django `DecideRateThrottle`: capacity 500, 10/s; off by default).
  const buckets = settings.rateLimit ? new TokenBuckets<string>(settings.rateLimit.perSecond, settings.rateLimit.burst) : undefined;
  const quota = (settings.flagQuotaMonthly ?? 0) > 0 ? new FlagQuota(settings.flagQuotaMonthly!, settings.now) : undefined;
  return {
    rate: buckets && { admit: (key) => buckets.take(key, Date.now()) },
    quota: quota && { admit: (projectId) => !quota.limited(projectId) },
  };
}
