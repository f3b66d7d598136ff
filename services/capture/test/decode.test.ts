import { gzipSync } from 'node:zlib';
import { compressToBase64 } from 'lz-string';
import { ApiError } from '@plover/core';
import { decodePayload, type EncodedRequest } from '../src/decode';
import { parseCaptureRequest } from '../src/request';

const EVENT = { event: 'e', distinct_id: 'd', token: 'phc_x' };
const JSON_TEXT = JSON.stringify(EVENT);
const b64 = (text: string | Buffer) => Buffer.from(text).toString('base64');
const LIMIT = 1024 * 1024;

/** A request as the tests write it: the query as a string. */
type TestRequest = Omit<Partial<EncodedRequest>, 'query'> & { query?: string };

function req(overrides: TestRequest): EncodedRequest {
  const { query, ...rest } = overrides;
  return { query: new URLSearchParams(query ?? ''), contentType: undefined, contentEncoding: undefined, body: Buffer.alloc(0), legacyEndpoint: false, ...rest };
}

const form = (fields: string) => ({ contentType: 'application/x-www-form-urlencoded', body: Buffer.from(fields) });

describe('decoding each encoding to the same JSON', () => {
  it.each<[string, TestRequest]>([
    ['plain JSON', { body: Buffer.from(JSON_TEXT), contentType: 'application/json' }],
    ['gzip with ?compression=gzip-js', { body: gzipSync(JSON_TEXT), query: 'compression=gzip-js' }],
    ['gzip by its magic bytes, no hint at all (posthog-js ≥ 1.398.2)', { body: gzipSync(JSON_TEXT), contentType: 'text/plain' }],
    ['gzip by Content-Encoding', { body: gzipSync(JSON_TEXT), contentEncoding: 'gzip' }],
    ['gzip hinted in the form', form(`compression=gzip&data=${encodeURIComponent(gzipSync(JSON_TEXT).toString('latin1'))}`)],
    ['lz64 in a form (posthog-node captureMode: form)', form(`data=${encodeURIComponent(compressToBase64(JSON_TEXT))}&compression=lz64`)],
    ['lz64 with ?compression=lz-string', { ...form(`data=${encodeURIComponent(compressToBase64(JSON_TEXT))}`), query: 'compression=LZ-STRING' }],
    ['base64 in a form, + not urlencoded (turned to spaces)', form(`data=${b64('{"event":"e","distinct_id":"d","token":"phc_x"}')}&compression=base64`)],
    ['a body that is base64 as a whole', { body: Buffer.from(b64(JSON_TEXT)) }],
    ['GET ?data=base64', { query: `data=${encodeURIComponent(b64(JSON_TEXT))}` }],
    ['GET ?data=JSON', { query: `data=${encodeURIComponent(JSON_TEXT)}` }],
    ['a form with ver= first', form(`ver=1.2.3&data=${encodeURIComponent(JSON_TEXT)}`)],
    ['a form with a charset parameter', { ...form(`data=${encodeURIComponent(JSON_TEXT)}`), contentType: 'application/x-www-form-urlencoded; charset=UTF-8' }],
    ['double base64 on a legacy route', { body: Buffer.from(b64(b64(JSON_TEXT))), legacyEndpoint: true }],
    ['base64 form on a legacy route without a hint', { ...form(`data=${encodeURIComponent(b64(JSON_TEXT))}`), legacyEndpoint: true }],
  ])('%s', async (_name, request) => {
    expect(JSON.parse(await decodePayload(req(request), LIMIT))).toEqual(EVENT);
  });

  it('skips the second base64 pass on /i/v0/e and /batch', async () => {
    const text = await decodePayload(req({ body: Buffer.from(b64(b64(JSON_TEXT))) }), LIMIT);
    expect(text).toBe(b64(JSON_TEXT));
  });
});

describe('malformed input', () => {
  async function failure(request: TestRequest, limit = LIMIT): Promise<ApiError> {
    try {
      parseCaptureRequest(await decodePayload(req(request), limit));
    } catch (error) {
      if (error instanceof ApiError) return error;
      throw error;
    }
    throw new Error('decoded without an error');
  }

  it.each<[string, TestRequest, number, string]>([
    ['no body and no data', {}, 400, 'empty_payload'],
    ['truncated gzip', { body: gzipSync(JSON_TEXT).subarray(0, 20) }, 400, 'request_decoding_error'],
    ['gzip hint on plain bytes', { body: Buffer.from(JSON_TEXT), query: 'compression=gzip' }, 400, 'request_decoding_error'],
    ['garbage lz64', form('data=%%%%&compression=lz64'), 400, 'request_decoding_error'],
    ['invalid UTF-8', { body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]) }, 400, 'request_decoding_error'],
    ['invalid UTF-8 inside gzip', { body: gzipSync(Buffer.from([0x5b, 0xc3, 0x28, 0x5d])) }, 400, 'request_decoding_error'],
    ['a form content type without a form', { contentType: 'application/x-www-form-urlencoded', body: Buffer.from(JSON_TEXT) }, 400, 'request_decoding_error'],
    ['a form without data', form('compression=gzip&ver=1'), 400, 'request_decoding_error'],
    ['invalid JSON', { body: Buffer.from('{"event": ') }, 400, 'request_parsing_error'],
    ['broken base64 that is not JSON either', { body: Buffer.from('abc=abc=') }, 400, 'request_parsing_error'],
    ['JSON that is no event', { body: Buffer.from('42') }, 400, 'request_parsing_error'],
    ['a batch whose batch is no array', { body: Buffer.from('{"api_key":"x","batch":{}}') }, 400, 'invalid_event'],
    ['properties that are no object', { body: Buffer.from('{"event":"e","properties":[1]}') }, 400, 'invalid_event'],
  ])('%s → %i %s', async (_name, request, status, code) => {
    const error = await failure(request);
    expect([error.status, error.code]).toEqual([status, code]);
  });

  it('stops a gzip bomb at the limit (413)', async () => {
    const error = await failure({ body: gzipSync(Buffer.alloc(LIMIT * 8, 0x20)) });
    expect([error.status, error.code]).toEqual([413, 'payload_too_large']);
  });

  it('stops an lz64 payload that inflates past the limit (413)', async () => {
    const error = await failure(form(`compression=lz64&data=${encodeURIComponent(compressToBase64(' '.repeat(LIMIT + 1)))}`));
    expect([error.status, error.code]).toEqual([413, 'payload_too_large']);
  });

  it('accepts a gzip payload of exactly the limit', async () => {
    const text = JSON.stringify({ ...EVENT, pad: 'x'.repeat(LIMIT - JSON_TEXT.length - 10) });
    expect(JSON.parse(await decodePayload(req({ body: gzipSync(text) }), LIMIT))).toMatchObject(EVENT);
  });
});

describe('request shapes', () => {
  it('a single event', () => {
    const request = parseCaptureRequest(JSON_TEXT);
    expect(request.events.map((e) => e.attrPrefix)).toEqual(['']);
    expect(request.historical).toBe(false);
  });

  it('an array of events (posthog-js)', () => {
    expect(parseCaptureRequest(JSON.stringify([EVENT, EVENT])).events.map((e) => e.attrPrefix)).toEqual(['0__', '1__']);
  });

  it('a batch object with its token, sent_at and historical flag', () => {
    const request = parseCaptureRequest(JSON.stringify({ api_key: 'phc_b', batch: [EVENT], sent_at: '2025-06-01T12:00:00Z', historical_migration: true }));
    expect(request).toMatchObject({ batchToken: 'phc_b', historical: true, sentAt: Date.parse('2025-06-01T12:00:00Z'), invalidSentAt: undefined });
    expect(request.events[0]!.attrPrefix).toBe('batch__0__');
  });

  it('keeps a batch sent_at that is not a time, for the warning, and does not use it', () => {
    const request = parseCaptureRequest(JSON.stringify({ api_key: 'phc_b', batch: [EVENT], sent_at: 'a while ago' }));
    expect(request).toMatchObject({ sentAt: undefined, invalidSentAt: 'a while ago' });
  });

  it('historical_migration only counts on the batch shape', () => {
    expect(parseCaptureRequest(JSON.stringify({ ...EVENT, historical_migration: true })).historical).toBe(false);
  });
});
