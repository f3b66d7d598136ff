/**
 * Capture v1 (`/i/v1/analytics/events`) over HTTP: PostHog's request contract (Bearer token, the PostHog-* headers,
 * a typed batch), its per-event answer with partial failure, and the events on the bus as v0 capture writes them.
 */
import { randomUUID } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import request from 'supertest';
import { NOW, openHarness, type CaptureHarness } from './support/harness';

describe('capture v1: /i/v1/analytics/events', () => {
  let h: CaptureHarness;

  beforeAll(async () => {
    h = await openHarness();
  });

  afterAll(() => h.close());

  /** The headers posthog-node's v1 sender sends, the client's clock `skewMs` ahead of ours. */
  function headers(skewMs = 0): Record<string, string> {
    return {
      Authorization: `Bearer ${h.token}`,
      'Content-Type': 'application/json',
      'PostHog-Sdk-Info': 'posthog-node/5.70.0',
      'PostHog-Attempt': '1',
      'PostHog-Request-Id': randomUUID(),
      'PostHog-Request-Timestamp': new Date(NOW + skewMs).toISOString(),
      'User-Agent': 'posthog-node/5.70.0',
    };
  }

  function event(distinctId: string, extra: Record<string, unknown> = {}) {
    return {
      event: 'v1-event',
      uuid: randomUUID(),
      distinct_id: distinctId,
      timestamp: new Date(NOW - 1000).toISOString(),
      options: {},
      properties: {},
      ...extra,
    };
  }

  const post = (body: unknown, set: Record<string, string> = headers()) => request(h.app).post('/i/v1/analytics/events').set(set).send(JSON.stringify(body));

  async function stored(distinctId: string) {
    return (await h.read(h.topics.events, 0, { quietMs: 300 })).filter((c) => c.event.distinct_id === distinctId);
  }

  it('answers 200 with an ok per uuid and puts the events on the bus with options and session back as properties', async () => {
    const a = event('v1-user', { session_id: 's-1', window_id: 'w-1', options: { process_person_profile: false }, properties: { plan: 'pro' } });
    const b = event('v1-user', { event: 'second' });
    const response = await post({ created_at: new Date(NOW).toISOString(), batch: [a, b] });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ results: { [a.uuid]: { result: 'ok' }, [b.uuid]: { result: 'ok' } } });
    const events = await stored('v1-user');
    expect(events.map((c) => c.event.uuid).sort()).toEqual([a.uuid, b.uuid].sort());
    const first = events.find((c) => c.event.uuid === a.uuid)!;
    expect(first.event.properties).toMatchObject({
      plan: 'pro',
      $session_id: 's-1',
      $window_id: 'w-1',
      $process_person_profile: false,
      $lib: 'posthog-node',
      $lib_version: '5.70.0',
    });
    expect(first.event.timestamp).toBe(new Date(NOW - 1000).toISOString());
  });

  it("corrects the event time by the client's clock error from PostHog-Request-Timestamp, unless the event opts out", async () => {
    const corrected = event('v1-skew');
    const kept = event('v1-skew', { options: { disable_skew_correction: true } });
    const response = await post({ created_at: new Date(NOW).toISOString(), batch: [corrected, kept] }, headers(60_000));
    expect(response.status).toBe(200);
    const events = await stored('v1-skew');
    expect(events.find((c) => c.event.uuid === corrected.uuid)!.event.timestamp).toBe(new Date(NOW - 61_000).toISOString());
    expect(events.find((c) => c.event.uuid === kept.uuid)!.event.timestamp).toBe(new Date(NOW - 1000).toISOString());
  });

  it('partial failure: bad events are dropped with their reason, the rest of the batch is stored', async () => {
    const good = event('v1-partial');
    const illegal = event('anonymous');
    const nameless = event('v1-partial', { event: '' });
    const badTime = event('v1-partial', { timestamp: 'yesterday' });
    const arrayProps = event('v1-partial', { properties: [1] });
    const perf = event('v1-partial', { event: '$performance_event' });
    const response = await post({ created_at: new Date(NOW).toISOString(), batch: [good, illegal, nameless, badTime, arrayProps, perf] });
    expect(response.status).toBe(200);
    expect(response.body.results).toEqual({
      [good.uuid]: { result: 'ok' },
      [illegal.uuid]: { result: 'drop', details: 'invalid_distinct_id' },
      [nameless.uuid]: { result: 'drop', details: 'missing_event_name' },
      [badTime.uuid]: { result: 'drop', details: 'invalid_event_timestamp' },
      [arrayProps.uuid]: { result: 'drop', details: 'malformed_event_properties' },
      [perf.uuid]: { result: 'drop', details: 'dropped_performance_event' },
    });
    expect((await stored('v1-partial')).map((c) => c.event.uuid)).toEqual([good.uuid]);
  });

  it('historical_migration: true goes to the historical topic; a deflate body is read', async () => {
    const e = event('v1-import');
    const response = await request(h.app)
      .post('/i/v1/analytics/events')
      .set({ ...headers(), 'Content-Encoding': 'deflate', 'Content-Type': 'application/json' })
      .serialize((body: unknown) => deflateSync(JSON.stringify(body)) as unknown as string)
      .send({ created_at: new Date(NOW).toISOString(), historical_migration: true, batch: [e] });
    expect(response.status).toBe(200);
    const historical = await h.read(h.topics.historical, 1);
    expect(historical.map((c) => c.event.uuid)).toContain(e.uuid);
  });

  it.each([
    ['no Authorization header', { Authorization: undefined }, 400, 'missing_required_headers'],
    ['a Basic Authorization header', { Authorization: 'Basic abc' }, 400, 'invalid_header_value'],
    ['a personal API key', { Authorization: 'Bearer phx_secret' }, 401, 'ingest_key_unknown'],
    ['an unknown token', { Authorization: 'Bearer phc_unknown' }, 401, 'ingest_key_unknown'],
    ['text/plain', { 'Content-Type': 'text/plain' }, 415, 'unsupported_content_type'],
    ['a request id that is not a UUID', { 'PostHog-Request-Id': 'r-1' }, 400, 'invalid_header_value'],
    ['attempt 0', { 'PostHog-Attempt': '0' }, 400, 'invalid_header_value'],
    ['an unknown Content-Encoding', { 'Content-Encoding': 'lz4' }, 415, 'unsupported_encoding'],
  ])('refuses a request with %s and stores nothing', async (_what, change, status, code) => {
    const set = { ...headers(), ...change } as Record<string, string | undefined>;
    const sent = Object.fromEntries(Object.entries(set).filter((entry): entry is [string, string] => entry[1] !== undefined));
    const response = await post({ created_at: new Date(NOW).toISOString(), batch: [event('v1-refused')] }, sent);
    expect(response.status).toBe(status);
    expect(response.body.code).toBe(code);
    expect(await stored('v1-refused')).toEqual([]);
  });

  it.each([
    ['an empty batch', { created_at: new Date(NOW).toISOString(), batch: [] }, 'empty_batch'],
    ['an event missing its fields', { created_at: new Date(NOW).toISOString(), batch: [{}] }, 'request_parsing_error'],
    [
      'an event without options',
      { created_at: new Date(NOW).toISOString(), batch: [{ event: 'e', uuid: randomUUID(), distinct_id: 'd', timestamp: 'x' }] },
      'request_parsing_error',
    ],
    ['a bad uuid', { created_at: new Date(NOW).toISOString(), batch: [{ ...event('d'), uuid: 'nope' }] }, 'missing_event_uuid'],
  ])('answers 400 for %s', async (_what, body, code) => {
    const response = await post(body);
    expect(response.status).toBe(400);
    expect(response.body.code).toBe(code);
  });

  it('answers 400 invalid_batch for a created_at that is not RFC 3339, and duplicate_event_uuid for a repeated uuid', async () => {
    expect((await post({ created_at: '2025-06-01', batch: [event('d')] })).body.code).toBe('invalid_batch');
    const e = event('d');
    expect((await post({ created_at: new Date(NOW).toISOString(), batch: [e, e] })).body.code).toBe('duplicate_event_uuid');
  });
});
