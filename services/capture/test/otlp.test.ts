/**
 * OpenTelemetry logs and metrics (`/i/v1/logs`, `/i/v1/metrics`): checked, bounded while decompressing, and
 * acknowledged with OTLP's empty success body; posthog-node's `captureLog` gets 200 for every request.
 */
import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { PostHog as PostHogNode5 } from 'posthog-node-5';
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
    } finally {
      await server.close();
    }
  });
});
