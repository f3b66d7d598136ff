/**
 * Hostile compressed bodies over HTTP: bombs stop at the limit with capture's 413, concurrent ones stay within
 * the decompression budget, and broken gzip is the client's 400.
 */
import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { DecompressionBudget } from '@plover/http';
import { lz64Bomb } from '../../../packages/http/test/support/lz64-bomb';
import { openHarness, type CaptureHarness } from './support/harness';

const MIB = 1024 * 1024;

describe('compressed bodies a client should not send', () => {
  let h: CaptureHarness;
  const budget = new DecompressionBudget(40 * MIB, 300);

  beforeAll(async () => {
    h = await openHarness({
      capture: { limits: { bodyBytes: 20 * MIB, decompressedBytes: 8 * MIB, eventBytes: 1_000_000, aiEventBytes: 8 * MIB }, decompression: budget },
    });
  });

  afterAll(() => h.close());

  it('answers an lz64 bomb (88 KB that lz-string expands to 600 million characters) with 413 at the limit', async () => {
    const started = performance.now();
    const response = await request(h.app)
      .post('/i/v0/e/')
      .type('form')
      .send(`data=${encodeURIComponent(lz64Bomb(34_640))}&compression=lz64`);
    expect(response.status).toBe(413);
    expect(response.body).toEqual({
      type: 'validation_error',
      code: 'payload_too_large',
      detail: `Decompressed payload exceeds the limit of ${8 * MIB} bytes.`,
      attr: null,
    });
    expect(performance.now() - started).toBeLessThan(5_000);
    // The decoder's UTF-16 buffer and, while it grew, the one before: never the bomb's size.
    expect(budget.stats().peakBytes).toBeLessThanOrEqual(4 * (8 * MIB + 1));
    expect(budget.stats().heldBytes).toBe(0);
  });

  it('keeps twelve concurrent gzip bombs within the budget, each answered 413 or 503 with Retry-After', async () => {
    const bomb = gzipSync(Buffer.alloc(64 * MIB, ' '));
    const responses = await Promise.all(
      Array.from({ length: 12 }, () => request(h.app).post('/batch/').set('Content-Type', 'text/plain').set('Content-Encoding', 'gzip').send(bomb)),
    );
    for (const response of responses) {
      if (response.status === 503) expect([response.body.code, response.headers['retry-after']]).toEqual(['service_unavailable', '1']);
      else expect([response.status, response.body.code]).toEqual([413, 'payload_too_large']);
    }
    expect(budget.stats().peakBytes).toBeGreaterThanOrEqual(8 * MIB - 64 * 1024);
    expect(budget.stats().peakBytes).toBeLessThanOrEqual(40 * MIB);
    expect(budget.stats().heldBytes).toBe(0);

    const after = await request(h.app)
      .post('/batch/')
      .set('Content-Type', 'text/plain')
      .set('Content-Encoding', 'gzip')
      .send(gzipSync(JSON.stringify({ api_key: h.token, batch: [{ event: 'after the bombs', distinct_id: 'd' }] })));
    expect(after.status).toBe(200);
  });

  it.each(['/i/v0/e/', '/e/'])('answers truncated gzip with Content-Encoding: gzip on %s with 400', async (path) => {
    const whole = gzipSync(JSON.stringify({ api_key: h.token, batch: [{ event: 'e', distinct_id: 'd', properties: { pad: 'z'.repeat(5_000) } }] }));
    const response = await request(h.app)
      .post(path)
      .set('Content-Type', 'text/plain')
      .set('Content-Encoding', 'gzip')
      .send(whole.subarray(0, whole.length / 2));
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      type: 'validation_error',
      code: 'request_decoding_error',
      detail: 'Failed to decode request: invalid gzip data.',
      attr: null,
    });
  });
});
