/**
 * Session replay capture (`/s/`) over HTTP against the embedded bus and PGlite: each accepted `$snapshot` event
 * lands on the replay topic as one SnapshotMessage keyed project:session; a rejected request leaves the topic as
 * it was.
 */
import { gzipSync } from 'node:zlib';
import { compressToBase64 } from 'lz-string';
import request from 'supertest';
import type { EventBus } from '@plover/bus';
import { parseSnapshotMessage, type SnapshotMessage } from '@plover/contracts';
import { StorageError } from '@plover/core';
import { NOW, openHarness, useListeningHarness, type CaptureHarness } from './support/harness';

const SESSION = '0198c0dd-7a3e-7c1b-9a52-0b6f2d3f1e11';
const WINDOW = '0198c0dd-7a40-7e55-b1d8-6cfd2a9b7c20';
/** A Meta event and a FullSnapshot compressed by posthog-js (`cv: "2024-10"`, a latin1 gzip string): kept as sent. */
const RRWEB_EVENTS = [
  { type: 4, data: { href: 'https://a.example/', width: 1280, height: 800 }, timestamp: NOW - 5_000 },
  { type: 2, data: gzipSync('{"node":{}}').toString('latin1'), timestamp: NOW - 4_995, cv: '2024-10' },
];

let sequence = 0;
/** A session id no other test uses, so each test finds its own messages on the shared topic. */
const newSession = () => `${SESSION.slice(0, -4)}${String(++sequence).padStart(4, '0')}`;

/** One `$snapshot` event as posthog-js sends it (`properties` merged over the defaults). */
function snapshot(token: string, session: string, properties: Record<string, unknown> = {}, top: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    event: '$snapshot',
    properties: {
      $snapshot_bytes: 120,
      $snapshot_data: RRWEB_EVENTS,
      $session_id: session,
      $window_id: WINDOW,
      $lib: 'web',
      $lib_version: '1.449.2',
      $snapshot_host: 'a.example',
      token,
      distinct_id: 'user-1',
      ...properties,
    },
    offset: 812,
    ...top,
  };
}

describe('session replay capture on the embedded bus', () => {
  let h: CaptureHarness;

  beforeAll(async () => {
    h = await openHarness();
  });

  afterAll(() => h.close());

  async function messageCount(): Promise<number> {
    return (await h.readRaw(h.replayTopic, 0, { quietMs: 200 })).length;
  }

  /** The messages of `session` once the topic holds `total`, parsed by the consumer's own contract check. */
  async function messagesOf(session: string, total: number): Promise<Array<{ key: string; message: SnapshotMessage }>> {
    const raw = await h.readRaw(h.replayTopic, total);
    return raw.flatMap((entry) => {
      const parsed = parseSnapshotMessage(entry.value);
      if (!parsed.ok) throw new Error(`the replay topic holds a message that breaks the contract: ${JSON.stringify(parsed.violation)}`);
      return parsed.value.session_id === session ? [{ key: entry.key, message: parsed.value }] : [];
    });
  }

  describe('every encoding lands the same message', () => {
    const json = (body: unknown) => JSON.stringify(body);
    const base64 = (body: unknown) => Buffer.from(json(body)).toString('base64');
    it.each<[string, (body: unknown) => request.Test]>([
      [
        'a JSON array',
        (body) =>
          request(h.app)
            .post('/s/')
            .set('Content-Type', 'application/json')
            .send(json([body])),
      ],
      ['one JSON object, on /s without the slash', (body) => request(h.app).post('/s').set('Content-Type', 'application/json').send(json(body))],
      [
        'a batch object',
        (body) =>
          request(h.app)
            .post('/s/')
            .send({ api_key: h.token, batch: [body] }),
      ],
      [
        'gzip as text/plain with no hint (posthog-js 1.398.2 and later)',
        (body) =>
          request(h.app)
            .post('/s/')
            .set('Content-Type', 'text/plain')
            .send(gzipSync(json([body]))),
      ],
      [
        'gzip with ?compression=gzip-js',
        (body) =>
          request(h.app)
            .post('/s/?compression=gzip-js&ver=1.258.0')
            .set('Content-Type', 'text/plain')
            .send(gzipSync(json([body]))),
      ],
      [
        'a base64 form (the beacon fallback)',
        (body) =>
          request(h.app)
            .post('/s/?compression=base64')
            .type('form')
            .send(`data=${encodeURIComponent(base64([body]))}`),
      ],
      [
        'a base64 body',
        (body) =>
          request(h.app)
            .post('/s/?compression=base64')
            .set('Content-Type', 'text/plain')
            .send(base64([body])),
      ],
      [
        'an lz64 form',
        (body) =>
          request(h.app)
            .post('/s/?compression=lz64')
            .type('form')
            .send(`data=${encodeURIComponent(compressToBase64(json([body])))}`),
      ],
      ['GET with ?data=', (body) => request(h.app).get(`/s/?data=${encodeURIComponent(base64(body))}`)],
    ])('%s', async (_name, send) => {
      const session = newSession();
      const before = await messageCount();
      const response = await send(snapshot(h.token, session, {}, { uuid: '0198C0DE-0000-7000-8000-000000000001' }));
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ status: 1 });
      const [landed, ...more] = await messagesOf(session, before + 1);
      expect(more).toEqual([]);
      expect(landed!.key).toBe(`${h.projectId}:${session}`);
      expect(landed!.message).toEqual({
        uuid: '0198c0de-0000-7000-8000-000000000001',
        team_id: h.projectId,
        distinct_id: 'user-1',
        session_id: session,
        window_id: WINDOW,
        snapshot_source: null,
        snapshot_library: 'web',
        events: RRWEB_EVENTS,
        now: new Date(NOW).toISOString(),
        sent_at: null,
      });
    });
  });

  describe('what each message holds', () => {
    it('one message per event, each keyed by its own session, in one request', async () => {
      const [first, second] = [newSession(), newSession()];
      const before = await messageCount();
      const response = await request(h.app)
        .post('/s/')
        .send([snapshot(h.token, first), snapshot(h.token, second, { $window_id: undefined, $snapshot_source: 'mobile', $lib: 'posthog-ios' })]);
      expect(response.status).toBe(200);
      const [a] = await messagesOf(first, before + 2);
      const [b] = await messagesOf(second, before + 2);
      expect(a!.key).toBe(`${h.projectId}:${first}`);
      expect(b!.key).toBe(`${h.projectId}:${second}`);
      expect(b!.message).toMatchObject({ window_id: null, snapshot_source: 'mobile', snapshot_library: 'posthog-ios' });
      // Without a uuid from the client, capture derives one from the request (the same on a retry).
      expect(a!.message.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    });

    it.each<[string, string, Record<string, unknown>, string]>([
      ["the event's own sent_at (posthog-js 1.407.4 and later)", '/s/?_=1748779100000', { sent_at: '2025-06-01T11:59:59.500Z' }, '2025-06-01T11:59:59.500Z'],
      ['?_= (epoch ms) when the event has none', '/s/?_=1748779100000', {}, '2025-06-01T11:58:20.000Z'],
      ['?sent_at= (posthog-js 1.407.1–1.407.3)', '/s/?sent_at=1748779100000', {}, '2025-06-01T11:58:20.000Z'],
    ])('sent_at from %s', async (_name, path, top, expected) => {
      const session = newSession();
      const before = await messageCount();
      expect(
        (
          await request(h.app)
            .post(path)
            .send([snapshot(h.token, session, {}, top)])
        ).status,
      ).toBe(200);
      const [landed] = await messagesOf(session, before + 1);
      expect(landed!.message.sent_at).toBe(expected);
    });

    it("the batch's sent_at, and its token over the events'", async () => {
      const session = newSession();
      const before = await messageCount();
      const body = { api_key: h.token, sent_at: '2025-06-01T11:59:58Z', batch: [snapshot('', session, { token: undefined })] };
      expect((await request(h.app).post('/s/').send(body)).status).toBe(200);
      const [landed] = await messagesOf(session, before + 1);
      expect(landed!.message.sent_at).toBe('2025-06-01T11:59:58.000Z');
    });

    it('a $snapshot_data object (the recorder before 2023) is one event; an empty list yields no message', async () => {
      const [chunked, empty] = [newSession(), newSession()];
      const before = await messageCount();
      const chunk = { chunk_id: 'c1', chunk_index: 0, chunk_count: 1, data: 'eJw=' };
      const response = await request(h.app)
        .post('/s/')
        .send([snapshot(h.token, chunked, { $snapshot_data: chunk }), snapshot(h.token, empty, { $snapshot_data: [] })]);
      expect(response.status).toBe(200);
      expect((await messagesOf(chunked, before + 1)).map((m) => m.message.events)).toEqual([[chunk]]);
      expect(await messagesOf(empty, before + 1)).toEqual([]);
    });

    it('does not check the event name, as PostHog does not: what carries snapshot data is replay', async () => {
      const session = newSession();
      const before = await messageCount();
      expect(
        (
          await request(h.app)
            .post('/s/')
            .send([snapshot(h.token, session, {}, { event: '$snapshot_items' })])
        ).status,
      ).toBe(200);
      expect(await messagesOf(session, before + 1)).toHaveLength(1);
    });
  });

  describe('rejected requests produce nothing', () => {
    const long = 'a'.repeat(71);
    it.each<[string, number, () => unknown, Record<string, unknown>]>([
      [
        'no $session_id',
        400,
        () => [snapshot(h.token, 'x', { $session_id: undefined })],
        { code: 'missing_session_id', attr: '0__properties__$session_id', detail: 'Replay event submitted without session id.' },
      ],
      ['a null $session_id', 400, () => [snapshot(h.token, 'x', { $session_id: null })], { code: 'missing_session_id' }],
      [
        'a $session_id of 71 characters',
        400,
        () => [snapshot(h.token, long)],
        { code: 'invalid_session_id', attr: '0__properties__$session_id', detail: 'Replay event has invalid session id.' },
      ],
      ['a $session_id with a character outside [A-Za-z0-9-]', 400, () => [snapshot(h.token, 'abc_def')], { code: 'invalid_session_id' }],
      ['a $session_id with a slash', 400, () => [snapshot(h.token, '../etc')], { code: 'invalid_session_id' }],
      ['an empty $session_id', 400, () => [snapshot(h.token, '')], { code: 'invalid_session_id' }],
      ['a numeric $session_id', 400, () => [snapshot(h.token, 'x', { $session_id: 12 })], { code: 'invalid_session_id' }],
      [
        'no $snapshot_data',
        400,
        () => [snapshot(h.token, newSession(), { $snapshot_data: undefined })],
        { code: 'missing_snapshot_data', attr: '0__properties__$snapshot_data', detail: 'Replay event submitted without snapshot data.' },
      ],
      ['a string as $snapshot_data', 400, () => [snapshot(h.token, newSession(), { $snapshot_data: 'events' })], { code: 'missing_snapshot_data' }],
      [
        'a snapshot item that is not an object',
        400,
        () => [snapshot(h.token, newSession(), { $snapshot_data: [RRWEB_EVENTS[0], 7] })],
        { code: 'invalid_event', attr: '0__properties__$snapshot_data__1' },
      ],
      [
        'a valid $snapshot followed by a $pageview (no snapshot data)',
        400,
        () => [snapshot(h.token, newSession()), { event: '$pageview', properties: { distinct_id: 'user-1', token: h.token, $session_id: SESSION } }],
        { code: 'missing_snapshot_data', attr: '1__properties__$snapshot_data' },
      ],
      [
        'a valid event, then one without a distinct id',
        400,
        () => [snapshot(h.token, newSession()), snapshot(h.token, newSession(), { distinct_id: undefined })],
        { code: 'missing_distinct_id', attr: '1__distinct_id' },
      ],
      [
        'a $window_id that is not a string',
        400,
        () => [snapshot(h.token, newSession(), { $window_id: 5 })],
        { code: 'invalid_event', attr: '0__properties__$window_id' },
      ],
      [
        'snapshot data nested 200 levels deep',
        400,
        () => [snapshot(h.token, newSession(), { $snapshot_data: [{ type: 3, data: JSON.parse(`${'['.repeat(200)}${']'.repeat(200)}`) }] })],
        { code: 'request_parsing_error', attr: '0__properties__$snapshot_data' },
      ],
      ['an empty array', 400, () => [], { code: 'empty_batch' }],
      [
        'an event over 1,000,000 bytes as a message',
        413,
        () => [snapshot(h.token, newSession()), snapshot(h.token, newSession(), { $snapshot_data: [{ type: 3, data: 'x'.repeat(1_000_000) }] })],
        { code: 'payload_too_large', attr: '1' },
      ],
      ['no token', 401, () => [snapshot('', newSession(), { token: undefined })], { code: 'ingest_key_required' }],
      ['an unknown token', 401, () => [snapshot('phc_unknown', newSession())], { code: 'ingest_key_unknown' }],
    ])('%s → %i', async (_name, status, body, expected) => {
      const before = await messageCount();
      const response = await request(h.app).post('/s/').set('Content-Type', 'application/json').send(JSON.stringify(body()));
      expect(response.status).toBe(status);
      expect(response.body).toMatchObject(expected);
      expect(Object.keys(response.body as object).sort()).toEqual(['attr', 'code', 'detail', 'type']);
      expect(await h.readRaw(h.replayTopic, before, { quietMs: 300 })).toHaveLength(before);
    });
  });

  describe('CORS', () => {
    it.each(['/s/', '/s'])('answers a preflight on %s with the success body and mirrored headers', async (path) => {
      const response = await request(h.app)
        .options(path)
        .set('Origin', 'https://shop.example')
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'content-type');
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ status: 1 });
      expect(response.headers['access-control-allow-origin']).toBe('https://shop.example');
      expect(response.headers['access-control-allow-credentials']).toBe('true');
      expect(response.headers['access-control-allow-methods']).toBe('GET, POST, OPTIONS');
    });

    it('sends the CORS headers on errors too', async () => {
      const response = await request(h.app)
        .post('/s/')
        .set('Origin', 'https://shop.example')
        .send([snapshot(h.token, '')]);
      expect(response.status).toBe(400);
      expect(response.headers['access-control-allow-origin']).toBe('https://shop.example');
    });
  });
});

describe('session replay capture with the real 25 MiB body limit', () => {
  const { harness, post: send } = useListeningHarness();

  it('a 26 MiB body → 413; a 22 MiB request of 0.9 MiB snapshots → 200 on /s/, where /e/ refuses it', async () => {
    const refused = await send('/s/', Buffer.alloc(26 * 1024 * 1024, 0x20));
    expect(refused.status).toBe(413);
    expect(await refused.json()).toMatchObject({ code: 'payload_too_large' });
    const events = Array.from({ length: 24 }, (_, i) =>
      snapshot(harness().token, `${SESSION.slice(0, -2)}${String(i).padStart(2, '0')}`, { $snapshot_data: [{ type: 3, data: 'y'.repeat(920 * 1024) }] }),
    );
    const body = JSON.stringify(events);
    expect(body.length).toBeGreaterThan(21 * 1024 * 1024);
    expect((await send('/e/', body)).status).toBe(413);
    expect((await send('/s/', body)).status).toBe(200);
    expect(await harness().readRaw(harness().replayTopic, 24)).toHaveLength(24);
  });
});

describe('session replay capture when the bus fails', () => {
  it('answers 503, never 200, when the bus rejects', async () => {
    const bus: EventBus = {
      produce: () => Promise.reject(new StorageError('broker down', true, 'BROKER_NOT_AVAILABLE')),
      consume: () => Promise.reject(new Error('not used')),
      ensureTopics: () => Promise.resolve(),
      ping: () => Promise.resolve(),
      close: () => Promise.resolve(),
    };
    const h = await openHarness({ bus });
    try {
      const response = await request(h.app)
        .post('/s/')
        .send([snapshot(h.token, SESSION)]);
      expect(response.status).toBe(503);
      expect(response.body).toMatchObject({ code: 'service_unavailable' });
    } finally {
      await h.close();
    }
  });
});
