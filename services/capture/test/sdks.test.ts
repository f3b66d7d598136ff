/**
 * The real SDKs, installed from npm (pinned devDependencies under aliases), pointed at capture over a socket:
 * every request they make is answered 200 and every event they send is on the bus.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import express, { type Express } from 'express';
import { PostHog as PostHogNode4 } from 'posthog-node-4';
import { PostHog as PostHogNode5 } from 'posthog-node-5';
import { listen, type RunningServer, type ServiceApp } from '@plover/http';
import { DEFAULT_CAPTURE_SETTINGS } from '@plover/capture/app';
import { openHarness, type CaptureHarness } from './support/harness';

interface SeenRequest {
  method: string;
  url: string;
  status: number;
  contentEncoding: string | undefined;
  contentType: string | undefined;
}

const CAPTURE_ROUTES = /^\/(e|i\/v0\/e|i\/v0\/ai\/batch|i\/v1\/analytics\/events|batch|capture|track|engage)(\/|\?|$)/;

/**
 * posthog-js asks for its remote config and flags before and while it captures. Those routes belong to
 * decide (another service); this stand-in answers what makes posthog-js use gzip, as PostHog Cloud does.
 */
function withConfigStandIn(capture: ServiceApp, seen: SeenRequest[]): Express {
  const app = express();
  app.use((req, res, next) => {
    if (CAPTURE_ROUTES.test(req.url) && req.method !== 'OPTIONS') {
      res.on('finish', () =>
        seen.push({
          method: req.method,
          url: req.url,
          status: res.statusCode,
          contentEncoding: req.headers['content-encoding'],
          contentType: req.headers['content-type'],
        }),
      );
    }
    next();
  });
  const config = { supportedCompression: ['gzip-js'], featureFlags: {}, featureFlagPayloads: {}, flags: {}, errorsWhileComputingFlags: false };
  app.all(['/array/:token/config', '/decide', '/flags'], (req, res) => {
    res.set({
      'Access-Control-Allow-Origin': req.headers.origin ?? '*',
      'Access-Control-Allow-Credentials': 'true',
      'Access-Control-Allow-Headers': req.headers['access-control-request-headers'] ?? '*',
    });
    res.json(config);
  });
  app.use(capture);
  return app;
}

describe('real PostHog SDKs against capture', () => {
  let h: CaptureHarness;
  let server: RunningServer;
  let host: string;
  const seen: SeenRequest[] = [];

  beforeAll(async () => {
    // Real time: the SDKs stamp events with it and compute offsets from it.
    h = await openHarness({ capture: { now: Date.now } });
    server = await listen(withConfigStandIn(h.app, seen), { port: 0, host: '127.0.0.1' });
    host = `http://127.0.0.1:${server.port}`;
  });

  afterAll(async () => {
    await server.close();
    await h.close();
  });

  beforeEach(() => {
    seen.length = 0;
  });

  /** Everything the SDK sent, read back: `count` messages of `distinctIds` appeared on `topic`. */
  async function onBus(topic: string, distinctIds: string[], count: number) {
    const all = await h.read(topic, 0, { quietMs: 500 });
    const ours = all.filter((c) => distinctIds.includes(c.event.distinct_id));
    if (ours.length < count) {
      const more = await h.read(topic, all.length + (count - ours.length));
      return more.filter((c) => distinctIds.includes(c.event.distinct_id));
    }
    return ours;
  }

  function expectEveryRequestOk(minimum: number): void {
    expect(seen.length).toBeGreaterThanOrEqual(minimum);
    expect(seen.filter((r) => r.status !== 200)).toEqual([]);
  }

  it.each([
    ['posthog-node 4.10.2', (key: string, options: Record<string, unknown>) => new PostHogNode4(key, options), undefined],
    ['posthog-node 5.70.0 (gzip /batch/)', (key: string, options: Record<string, unknown>) => new PostHogNode5(key, options), 'gzip'],
  ])('%s: every event of several flushes is on the bus', async (_name, create, encoding) => {
    const id = `node-${encoding ?? 'plain'}`;
    const client = create(h.token, { host, flushAt: 10, flushInterval: 0 });
    for (let i = 0; i < 25; i++) {
      client.capture({ distinctId: id, event: 'node-event', properties: { index: i, '$feature/beta': 'on' } });
      if (i % 10 === 9) await client.flush();
    }
    client.identify({ distinctId: id, properties: { email: 'node@example.com' } });
    client.alias({ distinctId: id, alias: `${id}-alias` });
    await client.shutdown();

    expectEveryRequestOk(3);
    expect(seen.every((r) => r.url.startsWith('/batch/') && r.contentEncoding === encoding)).toBe(true);
    const events = await onBus(h.topics.events, [id], 27);
    expect(events).toHaveLength(27);
    expect(
      events
        .filter((c) => c.event.event === 'node-event')
        .map((c) => c.event.properties.index)
        .sort((a, b) => Number(a) - Number(b)),
    ).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(events.find((c) => c.event.event === '$identify')!.event.properties.$set).toEqual({ email: 'node@example.com' });
    expect(events.find((c) => c.event.event === '$create_alias')!.event.properties.alias).toBe(`${id}-alias`);
    expect(events.every((c) => c.event.properties['$feature/beta'] === 'on' || c.event.event !== 'node-event')).toBe(true);
  });

  it('posthog-node 5.70.0 captureAi sends $ai_* events gzipped to /i/v0/ai/batch/ and every one is on the bus', async () => {
    const client = new PostHogNode5(h.token, { host, flushAt: 20, flushInterval: 0 });
    const trace = { $ai_trace_id: 'trace-node', $ai_span_name: 'answer question' };
    client.captureAi({ distinctId: 'llm-user', event: '$ai_trace', properties: trace });
    client.captureAi({ distinctId: 'llm-user', event: '$ai_span', properties: { ...trace, $ai_span_id: 'span-1', $ai_parent_id: 'trace-node' } });
    client.captureAi({
      distinctId: 'llm-user',
      event: '$ai_generation',
      properties: {
        $ai_trace_id: 'trace-node',
        $ai_parent_id: 'span-1',
        $ai_model: 'gpt-4o-mini',
        $ai_provider: 'openai',
        $ai_input: [{ role: 'user', content: 'What is a plover?' }],
        $ai_output_choices: [{ role: 'assistant', content: 'A wading bird.' }],
        $ai_input_tokens: 9,
        $ai_output_tokens: 5,
        $ai_latency: 0.42,
        $ai_total_cost_usd: 0.000021,
      },
    });
    client.capture({ distinctId: 'llm-user', event: 'plain-event' });
    await client.shutdown();

    expectEveryRequestOk(2);
    expect(seen.filter((r) => r.url.startsWith('/i/v0/ai/batch/')).every((r) => r.contentEncoding === 'gzip')).toBe(true);
    expect(seen.map((r) => r.url.replace(/\?.*/, '')).sort()).toEqual(['/batch/', '/i/v0/ai/batch/']);
    const events = await onBus(h.topics.events, ['llm-user'], 4);
    expect(events.map((c) => c.event.event).sort()).toEqual(['$ai_generation', '$ai_span', '$ai_trace', 'plain-event']);
    expect(events.find((c) => c.event.event === '$ai_generation')!.event.properties).toMatchObject({
      $ai_model: 'gpt-4o-mini',
      $ai_input_tokens: 9,
      $ai_input: [{ role: 'user', content: 'What is a plover?' }],
      $lib: 'posthog-node',
    });
  });

  it('posthog-node halves an AI batch answered 413 and drops a lone event answered 413; the rest lands', async () => {
    // Smaller limits than PostHog's so that a test batch reaches them: 256 KiB per request, 150 KiB per AI event.
    const limits = { ...DEFAULT_CAPTURE_SETTINGS.limits, bodyBytes: 256 * 1024, aiEventBytes: 150 * 1024 };
    const small = await openHarness({ capture: { now: Date.now, limits } });
    const smallSeen: SeenRequest[] = [];
    const smallServer = await listen(withConfigStandIn(small.app, smallSeen), { port: 0, host: '127.0.0.1' });
    try {
      const client = new PostHogNode5(small.token, { host: `http://127.0.0.1:${smallServer.port}`, flushAt: 100, flushInterval: 0 });
      const errors: string[] = [];
      client.on('error', (error: unknown) => errors.push(String(error)));
      // Random hex compresses to about half: six 100 KiB inputs make one gzip body above 256 KiB.
      client.captureAi({ distinctId: 'big', event: '$ai_generation', properties: { $ai_input: randomBytes(80 * 1024).toString('hex') } });
      for (let i = 0; i < 6; i++) {
        client.captureAi({ distinctId: 'halved', event: '$ai_generation', properties: { index: i, $ai_input: randomBytes(50 * 1024).toString('hex') } });
      }
      await client.shutdown();

      const statuses = smallSeen.map((r) => r.status);
      expect(statuses[0]).toBe(413);
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
      const events = await small.read(small.topics.events, 6);
      expect(events.map((c) => c.event.distinct_id)).not.toContain('big');
      expect(events.map((c) => c.event.properties.index).sort()).toEqual([0, 1, 2, 3, 4, 5]);
      expect(errors.filter((e) => e.includes('rejected with 413'))).toHaveLength(1);
    } finally {
      await smallServer.close();
      await small.close();
    }
  });

  it('posthog-node 5.70.0 with POSTHOG_CAPTURE_MODE=v1 sends to /i/v1/analytics/events and every event is on the bus', async () => {
    process.env.POSTHOG_CAPTURE_MODE = 'v1';
    let client: InstanceType<typeof PostHogNode5>;
    try {
      client = new PostHogNode5(h.token, { host, flushAt: 10, flushInterval: 0 });
    } finally {
      delete process.env.POSTHOG_CAPTURE_MODE;
    }
    const errors: string[] = [];
    client.on('error', (error: unknown) => errors.push(String(error)));
    for (let i = 0; i < 12; i++) client.capture({ distinctId: 'v1-node', event: 'v1-node-event', properties: { index: i, $session_id: 'session-v1' } });
    client.identify({ distinctId: 'v1-node', properties: { email: 'v1@example.com' } });
    await client.shutdown();

    expect(errors).toEqual([]);
    expectEveryRequestOk(1);
    expect(seen.every((r) => r.url === '/i/v1/analytics/events' && r.contentEncoding === 'gzip')).toBe(true);
    const events = await onBus(h.topics.events, ['v1-node'], 13);
    expect(events).toHaveLength(13);
    expect(
      events
        .filter((c) => c.event.event === 'v1-node-event')
        .map((c) => c.event.properties.index)
        .sort((a, b) => Number(a) - Number(b)),
    ).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(events.every((c) => c.event.properties.$lib === 'posthog-node')).toBe(true);
    expect(events.find((c) => c.event.event === 'v1-node-event')!.event.properties.$session_id).toBe('session-v1');
    expect(events.find((c) => c.event.event === '$identify')!.event.properties.$set).toEqual({ email: 'v1@example.com' });
  });

  it('posthog-node with historicalMigration: true lands on the historical topic', async () => {
    const client = new PostHogNode5(h.token, { host, historicalMigration: true, flushAt: 5, flushInterval: 0 });
    for (let i = 0; i < 5; i++) client.capture({ distinctId: 'importer', event: 'imported', timestamp: new Date('2024-03-01T00:00:00Z') });
    await client.shutdown();
    expectEveryRequestOk(1);
    const events = await onBus(h.topics.historical, ['importer'], 5);
    expect(events).toHaveLength(5);
    expect(events.every((c) => c.message.historical && c.event.timestamp.startsWith('2024-03-01'))).toBe(true);
  });

  it("posthog-node 4.10.2 with captureMode: 'form' sends lz64 forms to /e/", async () => {
    const client = new PostHogNode4(h.token, { host, captureMode: 'form', flushAt: 3, flushInterval: 0 });
    for (let i = 0; i < 3; i++) client.capture({ distinctId: 'form-user', event: 'form-event' });
    await client.shutdown();
    expectEveryRequestOk(1);
    expect(seen[0]).toMatchObject({ method: 'POST', contentType: 'application/x-www-form-urlencoded' });
    expect(seen[0]!.url).toMatch(/^\/e\//);
    expect(await onBus(h.topics.events, ['form-user'], 3)).toHaveLength(3);
  });

  it.each([
    ['posthog-js 1.449.2 (newest: gzip by magic bytes, batch body)', 'posthog-js', false],
    ['posthog-js 1.232.3 (?compression=gzip-js, array body)', 'posthog-js-1-232', true],
  ])('%s, driven in happy-dom', async (_name, packageName, hinted) => {
    const userId = `js-user-${packageName}`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--conditions=plover-source', '--import', 'tsx', path.join(__dirname, 'support/posthog-js-driver.ts'), packageName, host, h.token, userId],
      { cwd: path.resolve(__dirname, '..'), timeout: 60_000 },
    );
    const { requests } = JSON.parse(stdout) as { requests: { url: string; status: number; gzip: boolean }[] };
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.every((r) => r.status === 200 && r.gzip && r.url.startsWith('/e/'))).toBe(true);
    expect(requests.every((r) => r.url.includes('compression=gzip-js') === hinted)).toBe(true);
    expectEveryRequestOk(requests.length);

    const identified = await onBus(h.topics.events, [userId], 2);
    expect(identified.map((c) => c.event.event).sort()).toEqual(['$identify', 'after-identify']);
    const identify = identified.find((c) => c.event.event === '$identify')!;
    expect(identify.event.properties.$set).toMatchObject({ email: 'js@example.com' });
    // Before identify, posthog-js captured under its anonymous id, which $identify carries for the merge.
    const anonId = identify.event.properties.$anon_distinct_id as string;
    const anonymous = await onBus(h.topics.events, [anonId], 5);
    expect(anonymous.map((c) => c.event.properties.index).sort()).toEqual([0, 1, 2, 3, 4]);
    expect(anonymous.every((c) => c.event.properties['$feature/beta'] === 'variant-b' && c.event.properties.$lib === 'web')).toBe(true);
  });
});
