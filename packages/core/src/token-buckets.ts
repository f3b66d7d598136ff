/**
 * Token buckets per key (a project, a token, an address), refilled continuously at `perSecond` up to `burst`.
 * A take costs `cost` tokens and is refused only while the bucket holds fewer than `min(cost, burst)`: a
 * request larger than the burst is not refused forever, it runs the bucket into debt that the rate pays back.
 */
export class TokenBuckets<K> {
  private readonly buckets = new Map<K, { tokens: number; at: number }>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    /** Past this many keys the map starts over, so a flood of distinct keys cannot grow memory without bound. */
    private readonly maxKeys = 100_000,
  ) {}

  /** Takes `cost` tokens from `key`'s bucket; false (and nothing taken) when it holds too few. */
  take(key: K, now: number, cost = 1): boolean {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.maxKeys) this.buckets.clear();
      bucket = { tokens: this.burst, at: now };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    if (bucket.tokens < Math.min(cost, this.burst)) return false;
    bucket.tokens -= cost;
    return true;
  }
}
