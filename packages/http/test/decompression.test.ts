import { gzipSync } from 'node:zlib';
import { ApiError } from '@plover/core';
import { decodePayload, DecompressionBudget, type DecompressionLease, type EncodedRequest, type PayloadErrors } from '@plover/http';
import { lz64Bomb } from './support/lz64-bomb';

const MIB = 1024 * 1024;

const errors: PayloadErrors = {
  emptyPayload: () => ApiError.validation('empty', null, 'empty_payload'),
  decoding: (detail) => ApiError.validation(detail, null, 'decoding'),
  tooLarge: (detail) => new ApiError(413, 'validation_error', 'payload_too_large', detail),
};

function request(body: Buffer, contentType?: string, contentEncoding?: string): EncodedRequest {
  return { query: new URLSearchParams(), contentType, contentEncoding, body, legacyEndpoint: false };
}

const lz64Form = (data: string) => request(Buffer.from(`compression=lz64&data=${encodeURIComponent(data)}`), 'application/x-www-form-urlencoded');

async function outcome(promise: Promise<unknown>): Promise<number | string> {
  try {
    await promise;
    return 200;
  } catch (error) {
    if (error instanceof ApiError) return error.status;
    throw error;
  }
}

describe('the decompression budget', () => {
  it('grants what fits, queues the rest first come first served, and wakes the queue on release', async () => {
    const budget = new DecompressionBudget(100, 1_000);
    const first = budget.lease();
    const second = budget.lease();
    const third = budget.lease();
    await first.reserve(80);
    const granted: string[] = [];
    const secondGranted = second.reserve(50).then(() => granted.push('second'));
    const thirdGranted = third.reserve(10).then(() => granted.push('third'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(granted).toEqual([]);
    expect(budget.stats()).toMatchObject({ heldBytes: 80, waiting: 2 });
    first.release();
    await Promise.all([secondGranted, thirdGranted]);
    expect(granted).toEqual(['second', 'third']);
    expect(budget.stats()).toEqual({ heldBytes: 60, peakBytes: 80, waiting: 0, refused: 0 });
  });

  it('answers 503 with a Retry-After to a request that waits too long, and lets the next one in', async () => {
    const budget = new DecompressionBudget(100, 20);
    const holder = budget.lease();
    await holder.reserve(90);
    const big = budget.lease();
    const rejected = big.reserve(50).catch((error: unknown) => error);
    const small = budget.lease();
    const smallGranted = small.reserve(5);
    const error = (await rejected) as ApiError;
    expect([error.status, error.code, error.retryAfterSeconds]).toEqual([503, 'service_unavailable', 1]);
    await smallGranted;
    expect(budget.stats()).toMatchObject({ heldBytes: 95, refused: 1, waiting: 0 });
  });
});

describe('decoding within a budget', () => {
  let budget: DecompressionBudget;
  let lease: DecompressionLease;
  beforeEach(() => {
    budget = new DecompressionBudget(256 * MIB, 1_000);
    lease = budget.lease();
  });

  it('stops an lz64 bomb at the limit, holding at most its UTF-16 buffer and the one that buffer grew from', async () => {
    // 88 KB that lz-string expands to 600 million characters: it dies with "Invalid string length".
    const started = performance.now();
    expect(await outcome(decodePayload(lz64Form(lz64Bomb(34_640)), 16 * MIB, errors, lease))).toBe(413);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(budget.stats().peakBytes).toBeLessThanOrEqual(2 * 2 * (16 * MIB + 1));
    expect(budget.stats().heldBytes).toBe(0);
  });

  it('lets the event loop run while a large lz64 payload decodes', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    try {
      const text = await decodePayload(lz64Form(lz64Bomb(8_000)), 100 * MIB, errors, lease);
      expect(text.length).toBe(32_012_001);
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(0);
  });

  it('holds a decoded payload on the lease until it is released', async () => {
    const json = JSON.stringify({ event: 'e', pad: 'x'.repeat(100_000) });
    expect(await decodePayload(request(gzipSync(json)), MIB, errors, lease)).toBe(json);
    expect(lease.heldBytes).toBe(json.length);
    lease.release();
    expect(budget.stats().heldBytes).toBe(0);
  });

  it('keeps twelve concurrent gzip bombs within the budget: each stops at the limit or gets 503', async () => {
    const small = new DecompressionBudget(10 * MIB, 200);
    const bomb = gzipSync(Buffer.alloc(8 * MIB, 'a'));
    const leases = Array.from({ length: 12 }, () => small.lease());
    const statuses = await Promise.all(
      leases.map(async (each) => {
        try {
          return await outcome(decodePayload(request(bomb), 4 * MIB, errors, each));
        } finally {
          each.release();
        }
      }),
    );
    expect(statuses.every((status) => status === 413 || status === 503)).toBe(true);
    expect(statuses).toContain(413);
    expect(small.stats().peakBytes).toBeGreaterThanOrEqual(4 * MIB - 64 * 1024);
    expect(small.stats().peakBytes).toBeLessThanOrEqual(10 * MIB);
    expect(small.stats().heldBytes).toBe(0);
  });

  it.each([
    ['by its magic bytes', undefined],
    ['with Content-Encoding: gzip', 'gzip'],
  ])('answers truncated gzip (%s) as undecodable, not as a server error', async (_name, encoding) => {
    const truncated = gzipSync(JSON.stringify({ event: 'e', pad: 'y'.repeat(10_000) })).subarray(0, 40);
    await expect(decodePayload(request(truncated, 'application/json', encoding), MIB, errors, lease)).rejects.toMatchObject({ status: 400, code: 'decoding' });
    expect(lease.heldBytes).toBe(0);
  });
});
