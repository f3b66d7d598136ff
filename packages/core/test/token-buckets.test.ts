import { TokenBuckets } from '@plover/core';

describe('TokenBuckets', () => {
  it('allows the burst at once, then refuses until the rate refills it', () => {
    const buckets = new TokenBuckets<string>(10, 3);
    expect([1, 2, 3, 4].map(() => buckets.take('a', 0))).toEqual([true, true, true, false]);
    expect(buckets.take('a', 50)).toBe(false);
    expect(buckets.take('a', 100)).toBe(true);
  });

  it('keeps one bucket per key', () => {
    const buckets = new TokenBuckets<number>(1, 1);
    expect(buckets.take(1, 0)).toBe(true);
    expect(buckets.take(1, 0)).toBe(false);
    expect(buckets.take(2, 0)).toBe(true);
  });

  it('takes a cost larger than the burst by running into debt that the rate pays back', () => {
    const buckets = new TokenBuckets<string>(100, 50);
    expect(buckets.take('p', 0, 80)).toBe(true);
    expect(buckets.take('p', 0, 1)).toBe(false);
    // 30 tokens of debt and 1 wanted: 310 ms at 100/s.
    expect(buckets.take('p', 300, 1)).toBe(false);
    expect(buckets.take('p', 320, 1)).toBe(true);
  });

  it('refuses without taking anything', () => {
    const buckets = new TokenBuckets<string>(1, 5);
    expect(buckets.take('k', 0, 5)).toBe(true);
    expect(buckets.take('k', 1000, 2)).toBe(false);
    expect(buckets.take('k', 1000, 1)).toBe(true);
  });
});
