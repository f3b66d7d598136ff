/**
 * `/i/v0/ai/otel`: OTLP traces from the SDKs' OpenTelemetry exporters become LLM analytics events. @posthog/ai's
 * `PostHogTraceExporter` sends OTLP JSON; posthog-python's sends protobuf through opentelemetry-python's OTLP/HTTP
 * exporter, whose wire format opentelemetry-js's protobuf exporter writes byte for byte the same (the Python SDK does
 * not run here). Spans are made by the OpenTelemetry SDK itself, then handed to each exporter as it would hand them.
 */
import { gzipSync } from 'node:zlib';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { SpanStatusCode, context, trace } from '@opentelemetry/api';
import { PostHogTraceExporter } from '@posthog/ai/otel';
import { listen, type RunningServer } from '@plover/http';
import { openHarness, type CaptureHarness, type Captured } from './support/harness';

interface Exporter {
  export(spans: ReadableSpan[], done: (result: { code: number; error?: Error }) => void): void;
  shutdown(): Promise<void>;
}

/** A finished agent turn as an instrumented app makes it: a root span, a chat generation under it, an HTTP span. */
function makeSpans(distinctId: string, failed = false): ReadableSpan[] {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
  const tracer = provider.getTracer('@posthog/ai', '8.13.1');
  const root = tracer.startSpan('invoke_agent weather', { attributes: { 'gen_ai.agent.name': 'weather', 'posthog.distinct_id': distinctId } });
  const chat = tracer.startSpan(
    'chat gpt-4o-mini',
    {
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.response.model': 'gpt-4o-mini',
        'gen_ai.usage.input_tokens': 12,
        'gen_ai.usage.output_tokens': 30,
        'gen_ai.input.messages': JSON.stringify([{ role: 'user', content: 'Weather in Oslo?' }]),
        'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', content: 'Rain.' }]),
        'gen_ai.system_instructions': 'Be brief.',
        'posthog.distinct_id': distinctId,
      },
      startTime: [1_748_000_000, 0],
    },
    trace.setSpan(context.active(), root),
  );
  if (failed) {
    chat.recordException({ name: 'RateLimitError', message: 'Too many requests' });
    chat.setAttribute('http.response.status_code', 429);
    chat.setStatus({ code: SpanStatusCode.ERROR, message: 'rate limited' });
  }
  chat.end([1_748_000_001, 500_000_000]);
  tracer.startSpan('GET /health', { attributes: { 'http.request.method': 'GET' } }, trace.setSpan(context.active(), root)).end();
  root.end();
  return memory.getFinishedSpans();
}

function varint(n: number): Buffer {
  const bytes: number[] = [];
  for (; n >= 0x80; n >>>= 7) bytes.push((n & 0x7f) | 0x80);
  bytes.push(n);
  return Buffer.from(bytes);
}

function exportWith(exporter: Exporter, spans: ReadableSpan[]): Promise<{ code: number; error?: Error }> {
  return new Promise((resolve) => exporter.export(spans, resolve));
}

const ids = (spans: ReadableSpan[], name: string) => spans.find((s) => s.name === name)!.spanContext();

describe('/i/v0/ai/otel', () => {
  let h: CaptureHarness;
  let server: RunningServer;
  let host: string;

  beforeAll(async () => {
    h = await openHarness();
    server = await listen(h.app, { port: 0, host: '127.0.0.1' });
    host = `http://127.0.0.1:${server.port}`;
  });

  afterAll(async () => {
    await server.close();
    await h.close();
  });

  async function eventsOf(distinctId: string, count: number): Promise<Captured[]> {
    const all = await h.read(h.topics.events, 0, { quietMs: 300 });
    const mine = all.filter((c) => c.event.distinct_id === distinctId);
    expect(mine).toHaveLength(count);
    return mine;
  }

  it("@posthog/ai's PostHogTraceExporter (OTLP JSON): the root span is the $ai_trace, the chat span the $ai_generation, the HTTP span is not sent", async () => {
    const spans = makeSpans('otel-json-user');
    const exporter = new PostHogTraceExporter({ projectToken: h.token, host });
    expect(await exportWith(exporter, spans)).toEqual({ code: 0 });
    await exporter.shutdown();

    const events = await eventsOf('otel-json-user', 2);
    const byName = Object.fromEntries(events.map((c) => [c.event.event, c.event]));
    const root = ids(spans, 'invoke_agent weather');
    const chat = ids(spans, 'chat gpt-4o-mini');
    expect(byName.$ai_trace!.properties).toMatchObject({
      $ai_trace_id: root.traceId,
      $ai_span_id: root.spanId,
      $ai_span_name: 'invoke_agent weather',
      'gen_ai.agent.name': 'weather',
      $ai_ingestion_source: 'otel',
      $lib: 'posthog-otel',
      $lib_version: '8.13.1',
    });
    expect(byName.$ai_trace!.properties.$ai_parent_id).toBeUndefined();
    const generation = byName.$ai_generation!;
    expect(generation.properties).toMatchObject({
      $ai_trace_id: root.traceId,
      $ai_span_id: chat.spanId,
      $ai_parent_id: root.spanId,
      $ai_model: 'gpt-4o-mini',
      $ai_provider: 'openai',
      $ai_input_tokens: 12,
      $ai_output_tokens: 30,
      $ai_latency: 1.5,
      $ai_input: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Oslo?' },
      ],
      $ai_output_choices: [{ role: 'assistant', content: 'Rain.' }],
      $geoip_disable: true,
    });
    // The GenAI attributes that were mapped are gone, as PostHog removes them.
    for (const key of ['gen_ai.request.model', 'gen_ai.operation.name', 'gen_ai.input.messages', 'posthog.distinct_id']) {
      expect(generation.properties[key]).toBeUndefined();
    }
    // The span's start time is the event's time.
    expect(generation.timestamp).toBe('2025-05-23T11:33:20.000Z');
  });

  it("the OTLP protobuf exporter posthog-python uses (Bearer token, application/x-protobuf): the same events, and a failed span's error", async () => {
    const spans = makeSpans('otel-proto-user', true);
    const exporter = new ProtobufExporter({ url: `${host}/i/v0/ai/otel`, headers: { Authorization: `Bearer ${h.token}` } });
    // posthog-python filters to AI spans before exporting, as @posthog/ai does.
    expect(
      await exportWith(
        exporter,
        spans.filter((s) => !s.name.startsWith('GET')),
      ),
    ).toEqual({ code: 0 });
    await exporter.shutdown();

    const events = await eventsOf('otel-proto-user', 2);
    const generation = events.find((c) => c.event.event === '$ai_generation')!.event;
    expect(generation.properties).toMatchObject({
      $ai_model: 'gpt-4o-mini',
      $ai_input_tokens: 12,
      $ai_latency: 1.5,
      $ai_is_error: true,
      $ai_error: 'RateLimitError: Too many requests',
      $ai_http_status: 429,
    });
  });

  describe('limits and refusals', () => {
    const span = (i: number, attributes: { key: string; value: unknown }[] = [{ key: 'gen_ai.operation.name', value: { stringValue: 'chat' } }]) => ({
      traceId: '0102030405060708090a0b0c0d0e0f10',
      spanId: i.toString(16).padStart(16, '0'),
      name: `span ${i}`,
      startTimeUnixNano: '1750000000000000000',
      endTimeUnixNano: '1750000001000000000',
      attributes,
    });
    const body = (spans: unknown[], resource: { key: string; value: unknown }[] = [{ key: 'posthog.distinct_id', value: { stringValue: 'limits' } }]) =>
      JSON.stringify({ resourceSpans: [{ resource: { attributes: resource }, scopeSpans: [{ spans }] }] });
    /** Over HTTP with fetch: supertest would write a Buffer sent as JSON out as JSON. */
    const post = async (payload: string | Buffer, headers: Record<string, string> = {}) => {
      const response = await fetch(`${host}/i/v0/ai/otel`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${h.token}`, ...headers },
        body: payload,
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };

    it('answers 401 without a Bearer token, 415 for another content type, 400 for a body that is not an export request', async () => {
      expect((await post(body([span(1)]), { Authorization: '' })).status).toBe(401);
      expect((await post(body([span(1)]), { Authorization: 'Bearer phc_unknown' })).status).toBe(401);
      expect((await post(body([span(1)]), { 'Content-Type': 'text/plain' })).status).toBe(415);
      expect((await post('{"resourceSpans": {}}')).body).toMatchObject({ code: 'request_parsing_error' });
      expect((await post(Buffer.from([0x0a, 0xff, 0xff, 0x01]), { 'Content-Type': 'application/x-protobuf' })).status).toBe(400);
    });

    it('takes gzip; a request with no AI span is a success that stores nothing', async () => {
      const before = (await h.read(h.topics.events, 0, { quietMs: 300 })).length;
      const response = await post(gzipSync(body([span(1, [{ key: 'http.request.method', value: { stringValue: 'GET' } }])])), { 'Content-Encoding': 'gzip' });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({});
      expect(await h.read(h.topics.events, 0, { quietMs: 300 })).toHaveLength(before);
    });

    it('refuses more than 1000 spans and more than 100 AI spans with 400, and a body over 4 MiB with 413', async () => {
      const http = [{ key: 'http.request.method', value: { stringValue: 'GET' } }];
      expect((await post(body(Array.from({ length: 1001 }, (_, i) => span(i, http))))).status).toBe(400);
      const tooMany = await post(body(Array.from({ length: 101 }, (_, i) => span(i))));
      expect(tooMany.status).toBe(400);
      expect(tooMany.body.detail).toContain('Too many AI spans: 101');
      expect((await post(body([span(1, [{ key: 'gen_ai.x', value: { stringValue: 'x'.repeat(4 * 1024 * 1024) } }])]))).status).toBe(413);
    });

    it('refuses an attribute nested deeper than 64 levels (JSON) or than the decoder recurses (protobuf)', async () => {
      let value: unknown = { stringValue: 'leaf' };
      for (let i = 0; i < 65; i++) value = { arrayValue: { values: [value] } };
      const response = await post(
        body([
          span(1, [
            { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
            { key: 'deep', value },
          ]),
        ]),
      );
      expect(response.status).toBe(400);
      expect(response.body.detail).toContain('nests deeper than 64 levels');

      // The same in protobuf, 1000 levels: the decoder stops at its recursion limit.
      const field = (tag: number, payload: Buffer) => Buffer.concat([Buffer.from([(tag << 3) | 2]), varint(payload.length), payload]);
      let any = field(1, Buffer.from('leaf'));
      for (let i = 0; i < 1000; i++) any = field(5, field(1, any));
      const kv = Buffer.concat([field(1, Buffer.from('gen_ai.deep')), field(2, any)]);
      const protobuf = field(1, field(2, field(2, field(9, kv))));
      const refused = await post(protobuf, { 'Content-Type': 'application/x-protobuf' });
      expect(refused.status).toBe(400);
      expect(refused.body.detail).toContain('invalid protobuf');
    });

    it('leaves out a span whose event would pass 900,000 bytes and stores the rest of the export, which succeeds', async () => {
      const big = span(2, [
        { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
        { key: 'gen_ai.input.messages', value: { stringValue: 'x'.repeat(900_000) } },
      ]);
      const response = await post(body([span(1), big], [{ key: 'posthog.distinct_id', value: { stringValue: 'otel-shed' } }]));
      expect(response.status).toBe(200);
      const [kept] = await eventsOf('otel-shed', 1);
      expect(kept!.event.properties.$ai_span_id).toBe('0000000000000001');
    });

    it('gives a retried export the same event uuids, and an anonymous span the distinct id derived from its trace', async () => {
      const payload = body([span(7)], []);
      expect((await post(payload)).status).toBe(200);
      expect((await post(payload)).status).toBe(200);
      const all = await h.read(h.topics.events, 0, { quietMs: 300 });
      const copies = all.filter((c) => c.event.properties.$ai_span_id === '0000000000000007');
      expect(copies).toHaveLength(2);
      expect(copies[0]!.event.uuid).toBe(copies[1]!.event.uuid);
      // PostHog's uuid v5 of `trace:<id>` in its namespace: the same anonymous person on either server.
      expect(copies[0]!.event.distinct_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    });
  });
});
