/**
 * OpenTelemetry logs and metrics (`/i/v1/logs`, `/i/v1/metrics`): checked, bounded while decompressing, and
 * acknowledged with OTLP's empty success body; log records, in OTLP JSON (posthog-js's, posthog-node's) or protobuf
 * (OpenTelemetry's own serializer), become one logs-topic message each; posthog-node's `captureLog` gets 200 for
 * every request.
 */
import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { ProtobufLogsSerializer } from '@opentelemetry/otlp-transformer';
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { PostHog as PostHogNode5 } from 'posthog-node-5';
import { parseLogRecordMessage, type LogRecordMessage } from '@plover/contracts';
import { listen, type RunningServer } from '@plover/http';
import { openHarness, type CaptureHarness } from './support/harness';

const MIB = 1024 * 1024;

describe('/i/v1/logs and /i/v1/metrics', () => {
  let h: CaptureHarness;

  beforeAll(async () => {
    h = await openHarness({ capture: { now: Date.now } });
  });

  afterAll(() => h.close());

  const logs = { resourceLogs: [{ resource: { attributes: [] }, scopeLogs: [{ logRecords: [{ body: { stringValue: 'hello' }, severityText: 'info' }] }] }] };

  /**
   * The logs topic's messages whose body passes `which`, parsed against the contract (the topic's partitions are
   * read in no set order, so every message so far is read and the test's own are picked out).
   */
  async function logMessages(which: (body: string) => boolean): Promise<Array<LogRecordMessage & { key: string }>> {
    const messages = await h.readRaw(h.logsTopic, produced);
    return messages.flatMap((message) => {
      const parsed = parseLogRecordMessage(message.value);
      if (!parsed.ok) throw new Error(JSON.stringify(parsed.violation));
      return which(parsed.value.body) ? [{ ...parsed.value, key: message.key }] : [];
    });
  }
  let produced = 0;
  /** Posts to /i/v1/logs and counts what it should have produced. */
  async function postLogs(body: Buffer | string, headers: Record<string, string>, records: number) {
    const req = request(h.app).post(`/i/v1/logs?token=${h.token}`);
    for (const [name, value] of Object.entries(headers)) req.set(name, value);
    const response = await req.send(body);
    if (response.status === 200) produced += records;
    return response;
  }

  it.each([
    ['/i/v1/logs', logs],
    ['/i/v1/metrics', { resourceMetrics: [] }],
  ])('%s answers 200 {} to an OTLP JSON export with ?token=, gzip by Content-Encoding or by its magic bytes', async (path, body) => {
    const plain = await request(h.app).post(`${path}?token=${h.token}`).set('Content-Type', 'application/json').send(JSON.stringify(body));
    expect(plain.status).toBe(200);
    expect(plain.body).toEqual({});
    const gzip = await request(h.app)
      .post(`${path}?token=${h.token}`)
      .set('Content-Type', 'text/plain')
      .send(gzipSync(JSON.stringify(body)));
    expect(gzip.status).toBe(200);
    if (path === '/i/v1/logs') produced += 2;
  });

  it("stores posthog-js's console record as one message: times, severity, body, session, person, service, attributes", async () => {
    const nanos = String(BigInt(Date.parse('2025-06-01T11:59:58.000Z')) * 1_000_000n + 123_456n);
    const kv = (key: string, value: unknown) => ({ key, value: typeof value === 'number' ? { intValue: String(value) } : { stringValue: value } });
    // The shape posthog-js 1.449's console capture posts (buildOtlpLogsPayload), gzip as text/plain without a hint.
    const body = {
      resourceLogs: [
        {
          resource: { attributes: [kv('service.name', 'posthog-browser-logs'), kv('telemetry.sdk.name', 'web')] },
          scopeLogs: [
            {
              scope: { name: 'console', version: '1.449.2' },
              logRecords: [
                {
                  timeUnixNano: nanos,
                  observedTimeUnixNano: nanos,
                  severityNumber: 13,
                  severityText: 'WARN',
                  body: { stringValue: 'disk almost full' },
                  attributes: [kv('posthogDistinctId', 'user-7'), kv('sessionId', 'sess-1'), kv('url.full', 'https://example.com/'), kv('retries', 3)],
                  traceId: '0af7651916cd43dd8448eb211c80319c',
                  spanId: 'b7ad6b7169203331',
                },
                { body: { kvlistValue: { values: [kv('a', 1)] } }, severityNumber: 17 },
              ],
            },
          ],
        },
      ],
    };
    const before = Date.now();
    const response = await postLogs(gzipSync(JSON.stringify(body)), { 'Content-Type': 'text/plain' }, 2);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({});
    const [warn] = await logMessages((text) => text === 'disk almost full');
    const [error] = await logMessages((text) => text === '{"a":1}');
    expect(warn).toMatchObject({
      team_id: h.projectId,
      timestamp: '2025-06-01T11:59:58.000123Z',
      observed_timestamp: '2025-06-01T11:59:58.000123Z',
      severity_text: 'WARN',
      severity_number: 13,
      body: 'disk almost full',
      trace_id: '0af7651916cd43dd8448eb211c80319c',
      span_id: 'b7ad6b7169203331',
      service_name: 'posthog-browser-logs',
      session_id: 'sess-1',
      distinct_id: 'user-7',
      attributes: { posthogDistinctId: 'user-7', sessionId: 'sess-1', 'url.full': 'https://example.com/', retries: 3 },
      resource_attributes: { 'service.name': 'posthog-browser-logs', 'telemetry.sdk.name': 'web' },
      key: `${h.projectId}:sess-1`,
    });
    // No time: capture's receive time; no severity text: the level of its number; a structured body: JSON.
    expect(error).toMatchObject({ severity_text: 'ERROR', body: '{"a":1}', session_id: '' });
    expect(Date.parse(error!.timestamp)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(error!.timestamp)).toBeLessThanOrEqual(Date.now());
    expect(error!.key).toBe(`${h.projectId}:${error!.uuid}`);
  });

  it('the same export sent again gives its records the same uuids (a retry is stored once)', async () => {
    const body = JSON.stringify(logs).replace('hello', 'sent twice');
    expect((await postLogs(body, { 'Content-Type': 'application/json' }, 1)).status).toBe(200);
    expect((await postLogs(body, { 'Content-Type': 'application/json' }, 1)).status).toBe(200);
    const copies = await logMessages((text) => text === 'sent twice');
    expect(copies).toHaveLength(2);
    expect(copies[0]!.uuid).toBe(copies[1]!.uuid);
  });

  it("reads OpenTelemetry's protobuf log export (application/x-protobuf, gzip by Content-Encoding)", async () => {
    const exporter = new InMemoryLogRecordExporter();
    const provider = new LoggerProvider({ processors: [new SimpleLogRecordProcessor({ exporter })] });
    provider.getLogger('app').emit({
      severityNumber: 17,
      severityText: 'ERROR',
      body: 'payment declined',
      attributes: { 'posthog.distinct_id': 'buyer-1', amount: 12.5 },
      timestamp: Date.parse('2025-06-01T11:00:00.000Z'),
    });
    await provider.forceFlush();
    const bytes = ProtobufLogsSerializer.serializeRequest(exporter.getFinishedLogRecords())!;
    const response = await postLogs(gzipSync(bytes), { 'Content-Type': 'application/x-protobuf', 'Content-Encoding': 'gzip' }, 1);
    expect(response.status).toBe(200);
    const [record] = await logMessages((text) => text === 'payment declined');
    expect(record).toMatchObject({
      timestamp: '2025-06-01T11:00:00.000000Z',
      severity_text: 'ERROR',
      severity_number: 17,
      body: 'payment declined',
      distinct_id: 'buyer-1',
      attributes: { 'posthog.distinct_id': 'buyer-1', amount: 12.5 },
    });
    // The SDK's default resource names the service.
    expect(record!.service_name).toMatch(/^unknown_service/);
    await provider.shutdown();
  });

  it('refuses a log record whose message would pass the bus limit (413 naming it), and what is not a logs export (400)', async () => {
    const big = { resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'x'.repeat(1_000_001) } }] }] }] };
    const tooLarge = await postLogs(JSON.stringify(big), { 'Content-Type': 'application/json' }, 0);
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body.attr).toBe('resourceLogs__0__logRecords__0');
    const notLogs = await postLogs(
      JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ severityNumber: 99 }] }] }] }),
      { 'Content-Type': 'application/json' },
      0,
    );
    expect(notLogs.status).toBe(400);
    expect((await postLogs(Buffer.from([0x0a, 0xff, 0xff, 0x01]), { 'Content-Type': 'application/x-protobuf' }, 0)).status).toBe(400);
  });

  it.each([
    ['no token', '/i/v1/logs', 401, 'ingest_key_required'],
    ['an unknown token', '/i/v1/logs?token=phc_nobody', 401, 'ingest_key_unknown'],
  ])('refuses %s', async (_what, path, status, code) => {
    const response = await request(h.app).post(path).set('Content-Type', 'application/json').send(JSON.stringify(logs));
    expect(response.status).toBe(status);
    expect(response.body.code).toBe(code);
  });

  it('answers 400 to a body that is not an OTLP export of the signal', async () => {
    const response = await request(h.app).post(`/i/v1/metrics?token=${h.token}`).set('Content-Type', 'application/json').send(JSON.stringify(logs));
    expect(response.status).toBe(400);
    expect(response.body.attr).toBe('resourceMetrics');
  });

  it('refuses a gzip body whose output passes the decompressed limit while inflating it (413)', async () => {
    // 101 MiB of zeros is about 100 KiB of gzip.
    const bomb = gzipSync(Buffer.alloc(101 * MIB));
    expect(bomb.length).toBeLessThan(MIB);
    const response = await request(h.app).post(`/i/v1/logs?token=${h.token}`).set('Content-Type', 'text/plain').set('Content-Encoding', 'gzip').send(bomb);
    expect(response.status).toBe(413);
    expect(response.body.code).toBe('payload_too_large');
  });

  it("posthog-node 5.70.0's captureLog posts OTLP JSON to /i/v1/logs and every request is answered 200", async () => {
    const statuses: number[] = [];
    const server: RunningServer = await listen(
      (req, res) => {
        res.on('finish', () => {
          if (req.url?.startsWith('/i/v1/logs')) statuses.push(res.statusCode);
        });
        h.app(req, res);
      },
      { port: 0, host: '127.0.0.1' },
    );
    try {
      const client = new PostHogNode5(h.token, { host: `http://127.0.0.1:${server.port}`, flushAt: 1, flushInterval: 0 });
      const errors: string[] = [];
      client.on('error', (error: unknown) => errors.push(String(error)));
      client.captureLog({ body: 'payment failed', level: 'error', attributes: { code: 'E001' } });
      client.captureLog({ body: 'retrying', level: 'info' });
      await client.shutdown();
      expect(errors).toEqual([]);
      expect(statuses.length).toBeGreaterThanOrEqual(1);
      expect(statuses.every((status) => status === 200)).toBe(true);
      produced += 2;
      const records = await logMessages((text) => text === 'payment failed' || text === 'retrying');
      expect(records.map((r) => [r.body, r.severity_text]).sort()).toEqual([
        ['payment failed', 'ERROR'],
        ['retrying', 'INFO'],
      ]);
    } finally {
      await server.close();
    }
  });
});
