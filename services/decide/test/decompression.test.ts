/**
 * Hostile compressed bodies on the flag routes: decide decodes them with capture's bounded decoders, under the
 * process's decompression budget: undecodable input is a 400 in decide's words (malformed_data), output past the
 * limit a 413 as on capture.
 */
import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { decompressionBudget } from '@plover/http';
import { lz64Bomb } from '../../../packages/http/test/support/lz64-bomb';
import { backends, buildApp, setup, type Database } from './support/harness';

describe('compressed flag requests a client should not send', () => {
  let db: Database;
  let token: string;
  let app: ReturnType<typeof buildApp>;

  beforeAll(async () => {
    db = await backends[0]!.open();
    token = (await setup(db.sql)).project.api_token;
    app = buildApp(db.sql);
  });

  afterAll(() => db.close());

  it.each(['/flags/?v=2', '/decide/?v=3'])('answers truncated gzip with Content-Encoding: gzip on %s with 400', async (path) => {
    const whole = gzipSync(JSON.stringify({ token, distinct_id: 'd', person_properties: { pad: 'z'.repeat(5_000) } }));
    const response = await request(app)
      .post(path)
      .set('Content-Type', 'text/plain')
      .set('Content-Encoding', 'gzip')
      .send(whole.subarray(0, whole.length / 2));
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ type: 'validation_error', code: 'malformed_data', detail: 'Malformed request data: invalid gzip data' });
  });

  it('stops an lz64 bomb (88 KB that lz-string expands to 600 million characters) at the limit', async () => {
    const started = performance.now();
    const response = await request(app)
      .post('/flags/?v=2&compression=lz64')
      .type('form')
      .send(`data=${encodeURIComponent(lz64Bomb(34_640))}`);
    expect(response.status).toBe(413);
    expect(response.body).toEqual({
      type: 'validation_error',
      code: 'payload_too_large',
      detail: `Decompressed payload exceeds the limit of ${20 * 1024 * 1024} bytes.`,
      attr: null,
    });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(decompressionBudget.stats().heldBytes).toBe(0);
  });
});
