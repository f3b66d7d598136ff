/**
 * Capture over HTTP against the embedded bus (LocalLogBus) and PGlite: what is accepted lands on the bus
 * normalized, keyed and routed; what is rejected leaves the bus as it was.
 */
import { gzipSync } from 'node:zlib';
import { compressToBase64 } from 'lz-string';
import request from 'supertest';
import type { EventBus } from '@plover/bus';
import { StorageError } from '@plover/core';
import { MAX_EVENTS_PER_REQUEST } from '../src/request';
import { NOW, openHarness, useListeningHarness, type CaptureHarness } from './support/harness';

const UUID = '0190b0f2-0e5f-7a2c-9d4e-6f1a2b3c4d5e';

describe('capture on the embedded bus', () => {
  let h: CaptureHarness;

  beforeAll(async () => {
    h = await openHarness();
  });

  afterAll(() => h.close());

  const post = (path: string, body: unknown) =>
    request(h.app)
      .post(path)
      .send(body as object);

  describe('every ingest route', () => {
    it.each(['/i/v0/e/', '/i/v0/e', '/e/', '/e', '/batch/', '/batch', '/capture/', '/capture', '/track/', '/track', '/engage/', '/engage'])(
      'POST %s answers 200 {"status": 1}',
      async (path) => {
        const response = await post(path, { event: 'e', distinct_id: 'd', api_key: h.token });
        expect(response.status).toBe(200);
        expect(response.body).toEqual({ status: 1 });
      },
    );

    it('GET with ?data= is accepted (legacy image requests)', async () => {
      const data = Buffer.from(JSON.stringify({ event: 'get', distinct_id: 'd', token: h.token })).toString('base64');
      const response = await request(h.app).get(`/e/?data=${encodeURIComponent(data)}&ip=1`);
      expect(response.status).toBe(200);
    });

    it('answers a preflight with the success body and mirrored CORS headers', async () => {
      const response = await request(h.app)
        .options('/e/')
        .set('Origin', 'https://shop.example')
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'content-type, x-custom');
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ status: 1 });
      expect(response.headers['access-control-allow-origin']).toBe('https://shop.example');
      expect(response.headers['access-control-allow-credentials']).toBe('true');
      expect(response.headers['access-control-allow-headers']).toBe('content-type, x-custom');
      expect(response.headers['access-control-allow-methods']).toBe('GET, POST, OPTIONS');
    });

    it('sends CORS headers on errors too, so browsers can read them', async () => {
      const response = await request(h.app).post('/e/').set('Origin', 'https://shop.example').send({ event: 'e', distinct_id: 'd' });
      expect(response.status).toBe(401);
      expect(response.headers['access-control-allow-origin']).toBe('https://shop.example');
    });

    it('keeps CORS off other routes', async () => {
      const response = await request(h.app).get('/_health').set('Origin', 'https://shop.example');
      expect(response.headers['access-control-allow-origin']).toBeUndefined();
    });
  });

  describe('what reaches the bus', () => {
    it('is the normalized event, keyed team_id:distinct_id, on the events topic', async () => {
      const before = await h.read(h.topics.events, 0, { quietMs: 200 });
      const response = await post('/batch/', {
        api_key: h.token,
        sent_at: new Date(NOW - 60_000).toISOString(), // the client's clock is a minute late
        batch: [
          {
            event: '$identify',
            distinct_id: 'user-1',
            uuid: UUID.toUpperCase(),
            timestamp: new Date(NOW - 70_000).toISOString(),
            properties: { $feature_flag_called: true, '$feature/beta-flag': 'variant-b', '$feature/off': false, $set: { a: 1, b: 1 } },
            $set: { b: 2 },
            $set_once: { first: 'x' },
            library: 'dropped',
          },
        ],
      });
      expect(response.status).toBe(200);
      const all = await h.read(h.topics.events, before.length + 1);
      const captured = all.find((c) => c.message.uuid === UUID);
      expect(captured).toBeDefined();
      expect(captured!.key).toBe(`${h.projectId}:user-1`);
      expect(captured!.message).toEqual({
        uuid: UUID,
        team_id: h.projectId,
        distinct_id: 'user-1',
        ip: expect.stringMatching(/^(127\.0\.0\.1|::1)$/),
        now: new Date(NOW).toISOString(),
        sent_at: new Date(NOW - 60_000).toISOString(),
        // The event, nested (the parser returns it so for both forms; the normalize tests check the bytes).
        data: captured!.event,
        historical: false,
      });
      expect(captured!.event).toEqual({
        uuid: UUID,
        event: '$identify',
        distinct_id: 'user-1',
        // 10 s before sending by the client's clock is 10 s before now by ours.
        timestamp: new Date(NOW - 10_000).toISOString(),
        properties: {
          $feature_flag_called: true,
          '$feature/beta-flag': 'variant-b',
          '$feature/off': false,
          $set: { a: 1, b: 2 },
          $set_once: { first: 'x' },
          $ip: captured!.message.ip,
        },
      });
    });

    it('routes historical_migration: true to the historical topic, keeping the flag', async () => {
      const response = await post('/batch/', {
        api_key: h.token,
        historical_migration: true,
        batch: [{ event: 'old', distinct_id: 'imp', timestamp: '2020-01-01T00:00:00Z' }],
      });
      expect(response.status).toBe(200);
      const [captured] = await h.read(h.topics.historical, 1);
      expect(captured!.message.historical).toBe(true);
      expect(captured!.event.timestamp).toBe('2020-01-01T00:00:00.000Z');
    });

    it('keeps historical_migration: false (posthog-python always sends it) on the live topic', async () => {
      const before = await h.read(h.topics.historical, 0, { quietMs: 300 });
      expect(await post('/batch/', { api_key: h.token, historical_migration: false, batch: [{ event: 'live', distinct_id: 'p' }] })).toMatchObject({
        status: 200,
      });
      expect(await h.read(h.topics.historical, before.length, { quietMs: 300 })).toHaveLength(before.length);
    });

    it('turns an /engage body without an event name into $identify', async () => {
      const before = await h.read(h.topics.events, 0, { quietMs: 200 });
      expect(await post('/engage/', { $token: h.token, $distinct_id: 'mix-1', $set: { plan: 'pro' } })).toMatchObject({ status: 200 });
      const all = await h.read(h.topics.events, before.length + 1);
      const engaged = all.find((c) => c.event.distinct_id === 'mix-1');
      expect(engaged!.event.event).toBe('$identify');
      expect(engaged!.event.properties.$set).toEqual({ plan: 'pro' });
    });

    it('drops $performance_event and keeps the rest', async () => {
      const before = await h.read(h.topics.events, 0, { quietMs: 200 });
      const response = await post('/e/', [
        { event: '$performance_event', properties: { distinct_id: 'perf', token: h.token } },
        { event: 'kept', properties: { distinct_id: 'perf', token: h.token } },
      ]);
      expect(response.status).toBe(200);
      const after = await h.read(h.topics.events, before.length + 1);
      expect(after.filter((c) => c.event.distinct_id === 'perf').map((c) => c.event.event)).toEqual(['kept']);
    });
  });

  describe('rejected requests', () => {
    async function expectRejected(send: () => request.Test, status: number, body: Record<string, unknown>): Promise<void> {
      const before = await h.read(h.topics.events, 0, { quietMs: 200 });
      const response = await send();
      expect(response.status).toBe(status);
      expect(response.body).toMatchObject(body);
      expect(Object.keys(response.body as object).sort()).toEqual(['attr', 'code', 'detail', 'type']);
      // Nothing of it was enqueued: the topic holds exactly what it held before.
      expect(await h.read(h.topics.events, before.length, { quietMs: 300 })).toHaveLength(before.length);
    }

    it('one invalid event rejects the whole batch, naming its index and field', () =>
      expectRejected(
        () =>
          post('/batch/', {
            api_key: h.token,
            batch: [
              { event: 'ok', distinct_id: 'a' },
              { event: 'ok', distinct_id: 'b' },
              { event: 'ok', distinct_id: 'c' },
              { event: 'bad', distinct_id: 'd', uuid: 'not-a-uuid' },
            ],
          }),
        400,
        { type: 'validation_error', code: 'invalid_event', attr: 'batch__3__uuid' },
      ));

    it('an event without distinct_id rejects the request', () =>
      expectRejected(() => post('/batch/', { api_key: h.token, batch: [{ event: 'ok', distinct_id: 'a' }, { event: 'x' }] }), 400, {
        code: 'missing_distinct_id',
        attr: 'batch__1__distinct_id',
      }));

    it('an event without a name is refused outside /engage', () =>
      expectRejected(() => post('/capture/', { distinct_id: 'a', api_key: h.token }), 400, { code: 'missing_event_name', attr: 'event' }));

    it('an empty event name is refused', () =>
      expectRejected(() => post('/e/', [{ event: '', distinct_id: 'a', token: h.token }]), 400, { code: 'missing_event_name', attr: '0__event' }));

    it('an event over 1 MB is refused with 413 naming it', () =>
      expectRejected(
        () =>
          post('/batch/', {
            api_key: h.token,
            batch: [
              { event: 'ok', distinct_id: 'a' },
              { event: 'big', distinct_id: 'a', properties: { blob: 'x'.repeat(1_000_001) } },
            ],
          }),
        413,
        { code: 'payload_too_large', attr: 'batch__1' },
      ));

    it.each([
      [
        'properties',
        (deep: string) => `{"api_key":"TOKEN","batch":[{"event":"ok","distinct_id":"a"},{"event":"e","distinct_id":"a","properties":{"a":${deep}}}]}`,
        'batch__1__properties',
      ],
      ['a distinct id', (deep: string) => `[{"event":"e","token":"TOKEN","distinct_id":${deep}}]`, '0__distinct_id'],
    ])('%s nested 200,000 levels deep → 400 request_parsing_error, not a stack overflow', (_name, body, attr) =>
      expectRejected(
        () =>
          request(h.app)
            .post('/e/')
            .set('Content-Type', 'application/json')
            .send(body(`${'['.repeat(200_000)}${']'.repeat(200_000)}`).replace('TOKEN', h.token)),
        400,
        { type: 'validation_error', code: 'request_parsing_error', attr },
      ),
    );

    it.each([
      ['an empty batch', { api_key: 'x', batch: [] }, 'empty_batch'],
      ['an empty array', [], 'empty_batch'],
      ['only $performance_event', [{ event: '$performance_event', distinct_id: 'a', token: 'x' }], 'empty_payload_filtered'],
      ['a JSON string', '"hello"', 'request_parsing_error'],
    ])('%s → 400', (_name, body, code) =>
      expectRejected(
        () =>
          request(h.app)
            .post('/e/')
            .set('Content-Type', 'application/json')
            .send(typeof body === 'string' ? body : JSON.stringify(body)),
        400,
        { code },
      ),
    );
  });

  describe('tokens', () => {
    it.each([
      ['no token anywhere', 401, 'ingest_key_required', { event: 'e', distinct_id: 'd' }],
      ['an unknown token', 401, 'ingest_key_unknown', { event: 'e', distinct_id: 'd', api_key: 'phc_unknown' }],
      ['a personal API key', 401, 'ingest_key_unknown', { event: 'e', distinct_id: 'd', api_key: 'phx_secret' }],
      ['an empty token', 401, 'ingest_key_unknown', { event: 'e', distinct_id: 'd', api_key: '  ' }],
      ['a token over 64 characters', 401, 'ingest_key_unknown', { event: 'e', distinct_id: 'd', api_key: 'x'.repeat(65) }],
      ['a non-ASCII token', 401, 'ingest_key_unknown', { event: 'e', distinct_id: 'd', api_key: 'phc_ü' }],
    ])('%s → %i %s', async (_name, status, code, body) => {
      const response = await post('/i/v0/e/', body);
      expect(response.status).toBe(status);
      expect(response.body).toMatchObject({ code });
    });

    it('hints at the project key when a personal key is sent', async () => {
      const response = await post('/i/v0/e/', { event: 'e', distinct_id: 'd', api_key: 'phx_secret' });
      expect(response.body.detail).toContain('project API key (phc_…)');
    });

    it('mixed tokens in one request → 400 unroutable_events', async () => {
      const response = await post('/e/', [
        { event: 'e', distinct_id: 'd', token: h.token },
        { event: 'e', distinct_id: 'd', properties: { token: 'phc_other' } },
      ]);
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ code: 'unroutable_events' });
    });

    it.each([
      ['the batch api_key, over the events’ own', { api_key: '<token>', batch: [{ event: 'e', distinct_id: 'd', token: 'phc_ignored' }] }],
      ['the batch token field', { token: '<token>', batch: [{ event: 'e', distinct_id: 'd' }] }],
      ['an event token', { event: 'e', distinct_id: 'd', token: '<token>' }],
      ['an event $token', { event: 'e', distinct_id: 'd', $token: '<token>' }],
      ['an event api_key', { event: 'e', distinct_id: 'd', api_key: '<token>' }],
      ['properties.token', { event: 'e', distinct_id: 'd', properties: { token: '<token>' } }],
      ['a token with a stray newline', { event: 'e', distinct_id: 'd', api_key: '<token>\n' }],
      [
        'one token agreed on by several events',
        [
          { event: 'e', distinct_id: 'd', token: '<token>' },
          { event: 'e', distinct_id: 'd' },
        ],
      ],
    ])('takes %s', async (_name, body) => {
      const response = await post('/batch/', JSON.parse(JSON.stringify(body).replaceAll('<token>', h.token)));
      expect(response.status).toBe(200);
    });

    it('learns a project created after start, without a restart', async () => {
      const token = 'phc_created_after_start';
      expect((await post('/e/', { event: 'e', distinct_id: 'd', token })).status).toBe(401);
      await h.sql.query(
        'test.createProject',
        `INSERT INTO projects (organization_id, name, api_token) SELECT organization_id, 'Second', $1 FROM projects LIMIT 1`,
        [token],
      );
      // The unknown answer is cached for a few seconds so that a misconfigured client cannot flood Postgres.
      const deadline = Date.now() + 10_000;
      let status = 401;
      while (status !== 200 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        status = (await post('/e/', { event: 'e', distinct_id: 'd', token })).status;
      }
      expect(status).toBe(200);
    });
  });

  describe('client address', () => {
    it('ignores X-Forwarded-For unless a trusted proxy is configured', async () => {
      const before = await h.read(h.topics.events, 0, { quietMs: 200 });
      await post('/e/', { event: 'ip', distinct_id: 'ip-untrusted', token: h.token }).set('X-Forwarded-For', '203.0.113.9');
      const after = await h.read(h.topics.events, before.length + 1);
      expect(after.find((c) => c.event.distinct_id === 'ip-untrusted')!.message.ip).not.toBe('203.0.113.9');
    });

    it('takes X-Forwarded-For behind a trusted proxy, unless the client set $ip', async () => {
      const proxied = await openHarness({ trustProxy: true });
      try {
        await request(proxied.app).post('/e/').set('X-Forwarded-For', '203.0.113.9, 10.0.0.1').send({ event: 'ip', distinct_id: 'a', token: proxied.token });
        await request(proxied.app)
          .post('/e/')
          .set('X-Forwarded-For', '203.0.113.9')
          .send({ event: 'ip', distinct_id: 'b', token: proxied.token, properties: { $ip: '198.51.100.1' } });
        const captured = await proxied.read(proxied.topics.events, 2);
        const byId = Object.fromEntries(captured.map((c) => [c.event.distinct_id, c]));
        expect(byId.a!.message.ip).toBe('203.0.113.9');
        expect(byId.a!.event.properties.$ip).toBe('203.0.113.9');
        expect(byId.b!.event.properties.$ip).toBe('198.51.100.1');
      } finally {
        await proxied.close();
      }
    });
  });

  describe('encodings end to end', () => {
    it('gzip by magic bytes, lz64 form, base64 form and plain JSON all land the same event', async () => {
      const before = await h.read(h.topics.events, 0, { quietMs: 200 });
      const event = (id: string) => JSON.stringify([{ event: 'enc', properties: { distinct_id: id, token: h.token } }]);
      await request(h.app)
        .post('/e/')
        .set('Content-Type', 'text/plain')
        .send(gzipSync(event('gzip')))
        .expect(200);
      await request(h.app)
        .post('/e/?compression=lz64')
        .type('form')
        .send(`data=${encodeURIComponent(compressToBase64(event('lz64')))}`)
        .expect(200);
      await request(h.app)
        .post('/e/')
        .type('form')
        .send(`data=${encodeURIComponent(Buffer.from(event('base64')).toString('base64'))}&compression=base64`)
        .expect(200);
      await request(h.app).post('/i/v0/e/').set('Content-Type', 'application/json').send(event('json')).expect(200);
      const ids = (await h.read(h.topics.events, before.length + 4)).filter((c) => c.event.event === 'enc').map((c) => c.event.distinct_id);
      expect(ids.sort()).toEqual(['base64', 'gzip', 'json', 'lz64']);
    });
  });
});

describe('capture limits', () => {
  let h: CaptureHarness;

  beforeAll(async () => {
    h = await openHarness({
      capture: { limits: { bodyBytes: 64 * 1024, decompressedBytes: 256 * 1024, eventBytes: 1_000_000, aiEventBytes: 8 * 1024 * 1024 } },
    });
  });

  afterAll(() => h.close());

  it('refuses a body over the limit with 413 and reads no further', async () => {
    const response = await request(h.app)
      .post('/batch/')
      .set('Content-Type', 'application/json')
      .send(`{"api_key":"${h.token}","batch":[],"pad":"${'x'.repeat(70 * 1024)}"}`);
    expect(response.status).toBe(413);
    expect(response.body).toMatchObject({ code: 'payload_too_large' });
  });

  it('refuses more events than a request may carry with 413, before validating any, and keeps none', async () => {
    // Not even events: the count is checked first.
    const tooMany = Array.from({ length: MAX_EVENTS_PER_REQUEST + 1 }, () => 0);
    const batch = await request(h.app).post('/batch/').send({ api_key: h.token, batch: tooMany });
    expect(batch.status).toBe(413);
    expect(batch.body).toEqual({
      type: 'validation_error',
      code: 'payload_too_large',
      detail: `The request holds ${MAX_EVENTS_PER_REQUEST + 1} events, above the limit of ${MAX_EVENTS_PER_REQUEST} per request: send them in smaller batches.`,
      attr: 'batch',
    });
    const array = await request(h.app).post('/e/').send(tooMany);
    expect(array.status).toBe(413);
    expect(array.body).toMatchObject({ code: 'payload_too_large', attr: null });
    const atTheLimit = await request(h.app)
      .post('/batch/')
      .send({ api_key: h.token, batch: tooMany.slice(1) });
    expect(atTheLimit.body).toMatchObject({ code: 'invalid_event' });
    expect(await h.read(h.topics.events, 0)).toEqual([]);
  });

  it('stops inflating a gzip bomb at the decompressed limit (413)', async () => {
    const bomb = gzipSync(Buffer.alloc(10 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(64 * 1024);
    const response = await request(h.app).post('/batch/').set('Content-Encoding', 'gzip').send(bomb);
    expect(response.status).toBe(413);
  });
});

describe('capture with the real 20 MiB body limit', () => {
  const { harness, post } = useListeningHarness();

  it.each(['/e/', '/i/v0/e/', '/batch/', '/capture/', '/track/', '/engage/'])('%s: a 21 MiB body → 413, a 4 MiB batch → 200', async (path) => {
    const refused = await post(path, Buffer.alloc(21 * 1024 * 1024, 0x20));
    expect(refused.status).toBe(413);
    expect(await refused.json()).toMatchObject({ code: 'payload_too_large' });
    const batch = Array.from({ length: 8 }, (_, i) => ({ event: 'e', distinct_id: `d${i}`, properties: { blob: 'y'.repeat(512 * 1024) } }));
    expect((await post(path, JSON.stringify({ api_key: harness().token, batch }))).status).toBe(200);
  });
});

describe('capture when the bus fails', () => {
  /** A bus whose produce does whatever `produce` says, to play a broker that fails or hangs. */
  function faultyBus(produce: EventBus['produce']): EventBus {
    return {
      produce,
      consume: () => Promise.reject(new Error('not used')),
      ensureTopics: () => Promise.resolve(),
      ping: () => Promise.resolve(),
      close: () => Promise.resolve(),
    };
  }

  it('answers 503 when the bus rejects (never 200 for events that are not durable)', async () => {
    const h = await openHarness({ bus: faultyBus(() => Promise.reject(new StorageError('broker down', true, 'BROKER_NOT_AVAILABLE'))) });
    try {
      const response = await request(h.app)
        .post('/batch/')
        .send({ api_key: h.token, batch: [{ event: 'e', distinct_id: 'd' }] });
      expect(response.status).toBe(503);
      expect(response.body).toEqual({ type: 'server_error', code: 'service_unavailable', detail: 'Transient error, please retry.', attr: null });
    } finally {
      await h.close();
    }
  });

  it('answers 503 when the bus does not acknowledge within the produce timeout', async () => {
    const h = await openHarness({ bus: faultyBus(() => new Promise(() => undefined)), capture: { produceTimeoutMs: 200 } });
    try {
      const started = Date.now();
      const response = await request(h.app).post('/e/').send({ event: 'e', distinct_id: 'd', token: h.token });
      expect(response.status).toBe(503);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      await h.close();
    }
  });

  it('answers 503 when the embedded bus is closed', async () => {
    const h = await openHarness();
    await h.bus.close();
    try {
      expect((await request(h.app).post('/e/').send({ event: 'e', distinct_id: 'd', token: h.token })).status).toBe(503);
    } finally {
      await h.close();
    }
  });
});

describe('per-project rate limit', () => {
  it('is off by default and answers 429 once a project exceeds its bucket', async () => {
    const h = await openHarness({ capture: { rateLimit: { perSecond: 1, burst: 5 } } });
    try {
      const batch = (n: number) => ({ api_key: h.token, batch: Array.from({ length: n }, () => ({ event: 'e', distinct_id: 'd' })) });
      expect((await request(h.app).post('/batch/').send(batch(5))).status).toBe(200);
      const limited = await request(h.app).post('/batch/').send(batch(1));
      expect(limited.status).toBe(429);
      expect(limited.body).toMatchObject({ type: 'throttled', code: 'rate_limited' });
    } finally {
      await h.close();
    }
  });
});
