/**
 * LLM analytics (`/i/v0/ai/batch/`): the `/batch/` request shapes and encodings, with PostHog's AI lane limit of
 * 8 MiB per event measured on the event as the client serialized it; one larger event refuses the whole request.
 */
import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { openHarness, type CaptureHarness } from './support/harness';

const MIB = 1024 * 1024;

/** A `$ai_generation` whose JSON is exactly `bytes` long, its `$ai_input` padded to get there. */
function generationOfSize(bytes: number, distinctId: string): Record<string, unknown> {
  const event = { event: '$ai_generation', distinct_id: distinctId, properties: { $ai_model: 'gpt-4o-mini', $ai_trace_id: 't-1', $ai_input: '' } };
  const padding = bytes - Buffer.byteLength(JSON.stringify(event));
  event.properties.$ai_input = 'x'.repeat(padding);
  expect(Buffer.byteLength(JSON.stringify(event))).toBe(bytes);
  return event;
}

describe('/i/v0/ai/batch/', () => {
  let h: CaptureHarness;

  beforeAll(async () => {
    h = await openHarness();
  });

  afterAll(() => h.close());

  it.each(['/i/v0/ai/batch/', '/i/v0/ai/batch'])('POST %s takes a gzip batch like /batch/ and the events land on the events topic', async (path) => {
    const body = {
      api_key: h.token,
      sent_at: new Date().toISOString(),
      batch: [
        { event: '$ai_trace', distinct_id: `ai-${path}`, properties: { $ai_trace_id: 'trace-a', $ai_span_name: 'chat' } },
        {
          event: '$ai_generation',
          distinct_id: `ai-${path}`,
          properties: { $ai_trace_id: 'trace-a', $ai_model: 'gpt-4o-mini', $ai_provider: 'openai', $ai_input_tokens: 12, $ai_output_tokens: 30 },
        },
      ],
    };
    const response = await request(h.app)
      .post(path)
      // posthog-node's own gzip JSON requests are in sdks.test.ts; supertest would serialize a Buffer sent as JSON.
      .set('Content-Type', 'text/plain')
      .set('Content-Encoding', 'gzip')
      .send(gzipSync(JSON.stringify(body)));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 1 });
    const events = (await h.read(h.topics.events, 0, { quietMs: 300 })).filter((c) => c.event.distinct_id === `ai-${path}`);
    expect(events.map((c) => c.event.event).sort()).toEqual(['$ai_generation', '$ai_trace']);
    expect(events.find((c) => c.event.event === '$ai_generation')!.event.properties).toMatchObject({ $ai_model: 'gpt-4o-mini', $ai_input_tokens: 12 });
  });

  it('accepts an event of exactly 8 MiB and stores its $ai_input whole', async () => {
    const event = generationOfSize(8 * MIB, 'ai-8mib');
    const response = await request(h.app)
      .post('/i/v0/ai/batch/')
      .send({ api_key: h.token, batch: [event] });
    expect(response.status).toBe(200);
    const stored = (await h.read(h.topics.events, 0, { quietMs: 300 })).find((c) => c.event.distinct_id === 'ai-8mib');
    expect((stored!.event.properties.$ai_input as string).length).toBe((event.properties as { $ai_input: string }).$ai_input.length);
  });

  it('refuses the whole request with 413 when one event is 8 MiB + 1 byte, and nothing of it reaches the bus', async () => {
    const before = (await h.read(h.topics.events, 0, { quietMs: 300 })).length;
    const response = await request(h.app)
      .post('/i/v0/ai/batch/')
      .send({ api_key: h.token, batch: [{ event: '$ai_span', distinct_id: 'ai-small' }, generationOfSize(8 * MIB + 1, 'ai-over')] });
    expect(response.status).toBe(413);
    expect(response.body).toMatchObject({ type: 'validation_error', code: 'payload_too_large', attr: 'batch__1' });
    expect(await h.read(h.topics.events, 0, { quietMs: 300 })).toHaveLength(before);
  });

  it('keeps /batch/ at its own limit: the same 8 MiB event is refused there', async () => {
    const response = await request(h.app)
      .post('/batch/')
      .send({ api_key: h.token, batch: [generationOfSize(8 * MIB, 'ai-on-batch')] });
    expect(response.status).toBe(413);
  });

  it('validates like /batch/: no token is 401, a nameless event 400', async () => {
    expect(
      (
        await request(h.app)
          .post('/i/v0/ai/batch/')
          .send({ batch: [{ event: '$ai_span', distinct_id: 'd' }] })
      ).status,
    ).toBe(401);
    const nameless = await request(h.app)
      .post('/i/v0/ai/batch/')
      .send({ api_key: h.token, batch: [{ distinct_id: 'd' }] });
    expect(nameless.status).toBe(400);
    expect(nameless.body.code).toBe('missing_event_name');
  });
});
