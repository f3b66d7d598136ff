/**
 * Per-project token bucket, off unless configured. A request takes as many tokens as it has events; it is
 * refused only while the bucket holds fewer than that (capped at the bucket size, so a batch larger than the
 * burst is not refused forever: it runs the bucket into debt, which the rate then pays back).
 */
export interface RateLimit {
  eventsPerSecond: number;
  burst: number;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export class ProjectRateLimiter {
  private readonly buckets = new Map<number, Bucket>();

  constructor(private readonly limit: RateLimit) {}

  /** Takes `events` tokens from the project's bucket; false (and nothing taken) when it holds too few. */
  take(projectId: number, events: number, now: number): boolean {
    const { eventsPerSecond, burst } = this.limit;
    let bucket = this.buckets.get(projectId);
    if (!bucket) {
      bucket = { tokens: burst, updatedAt: now };
      this.buckets.set(projectId, bucket);
    }
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.updatedAt) / 1000) * eventsPerSecond);
    bucket.updatedAt = now;
    if (bucket.tokens < Math.min(events, burst)) return false;
    bucket.tokens -= events;
    return true;
  }
}
