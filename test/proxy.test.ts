/**
 * Distributed mode on one host, as the SDKs need it (one `api_host` for capture, replay, flags, remote config and
 * posthog-js's scripts): capture, ingestion, decide and management each in a process of its own on real Postgres
 * and Kafka and ClickHouse's HTTP interface (chDB), with TRUST_PROXY=true, behind Debian's nginx running
 * deploy/nginx/plover.conf.template. Everything below talks to nginx alone: posthog-node's capture and flags
 * (remote and local evaluation), posthog-js in Chromium (its script, remote config, flags, events and a session
 * recording), and the management API that reads what arrived.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import type { Browser } from 'playwright-core';
import { PostHog as PostHogNode4 } from 'posthog-node-4';
import { PostHog as PostHogNode5 } from 'posthog-node-5';
import { parse } from 'yaml';
import type { Credentials } from '@plover/accounts';
import { CAPTURE_TOPICS, REPLAY_TOPIC } from '@plover/contracts';
import { deleteTopics } from '../packages/bus/test/support/kafka-factory';
import { startChdbHttpServer, type ChdbHttpServer } from '../packages/clickhouse/test/support/chdb-http-server';
import { createTestDatabase, type TestDatabase } from '../packages/postgres/test/support/database';
import { browserAvailable, launchBrowser } from './support/browser';
import { concretePath, servedPaths } from './support/kubernetes';
import { freePort, NGINX_TEMPLATE, renderTemplate, startNginx, type RunningNginx } from './support/nginx';
import { run, startService, type RunningService } from './support/processes';
import { availableTool, realService } from './support/services';
import { SITE_USER, sitePage, startSite, waitForRecording } from './support/site';

jest.setTimeout(120_000);

const postgres = realService('TEST_DATABASE_URL');
const kafka = realService('TEST_KAFKA_BROKERS');
const nginxInstalled = availableTool('nginx');
const describeWithNginx = nginxInstalled ? describe : describe.skip;
const describeProxied = postgres.url && kafka.url && nginxInstalled ? describe : describe.skip;
const itWithBrowser = browserAvailable() ? it : it.skip;

const SERVICES = ['capture', 'ingestion', 'decide', 'management'] as const;
type ServiceName = (typeof SERVICES)[number];

const FLAGS = [
  { key: 'beta', filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"color":"blue"}' } } },
  { key: 'pro', filters: { groups: [{ properties: [{ key: 'plan', type: 'person', value: ['pro'], operator: 'exact' }], rollout_percentage: 100 }] } },
];

interface StoredEvent {
  event: string;
  distinct_id: string;
  properties: Record<string, unknown>;
}

/** A POST of `body` to `url` with `headers`, from the local address `from`: what a client elsewhere would send. */
function postFrom(from: string, url: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', localAddress: from, headers: { 'Content-Type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe("docker-compose.yml's nginx", () => {
  it('mounts the template where the nginx image fills it in, with a value for every variable, in front of the services', () => {
    const compose = parse(fs.readFileSync(path.resolve(__dirname, '../docker-compose.yml'), 'utf8')) as {
      services: Record<string, { volumes?: string[]; environment?: Record<string, string>; ports?: string[] }>;
    };
    const { nginx, ...others } = compose.services;
    expect(nginx!.volumes).toEqual([`./${path.relative(path.resolve(__dirname, '..'), NGINX_TEMPLATE)}:/etc/nginx/templates/default.conf.template:ro`]);
    const conf = renderTemplate(fs.readFileSync(NGINX_TEMPLATE, 'utf8'), nginx!.environment!);
    expect(conf).toContain('server capture:8000;');
    expect(nginx!.ports).toEqual(['8000:8000']);
    // Nothing but nginx reaches the services that trust X-Forwarded-For.
    expect(['capture', 'decide', 'management'].map((name) => [others[name]!.ports, others[name]!.environment!.TRUST_PROXY])).toEqual([
      [undefined, 'true'],
      [undefined, 'true'],
      [undefined, 'true'],
    ]);
  });
});

/** What a stand-in service saw of one request. */
interface Seen {
  service: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  /** The nginx end of the connection it came on. */
  connection: number;
  bytes: string;
}

describeWithNginx('deploy/nginx/plover.conf.template in front of stand-ins for the services', () => {
  const standIns: http.Server[] = [];
  let proxy: RunningNginx;
  /** Called when a stand-in receives part of a body. */
  let received: (() => void) | undefined;

  /** A request through nginx and what the stand-in that got it saw. */
  async function through(urlPath: string, init: RequestInit = {}): Promise<Seen> {
    const response = await fetch(`${proxy.url}${urlPath}`, init);
    expect(response.status).toBe(200);
    return (await response.json()) as Seen;
  }

  beforeAll(async () => {
    const addresses = await Promise.all(
      ['capture', 'decide', 'management'].map(async (service) => {
        const server = http.createServer((req, res) => {
          const chunks: Buffer[] = [];
          req.on('data', (chunk: Buffer) => {
            chunks.push(chunk);
            received?.();
          });
          req.on('end', () => {
            const seen: Seen = {
              service,
              url: req.url!,
              headers: req.headers,
              connection: req.socket.remotePort!,
              bytes: Buffer.concat(chunks).toString('base64'),
            };
            res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(seen));
          });
        });
        standIns.push(server);
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        return `127.0.0.1:${(server.address() as AddressInfo).port}`;
      }),
    );
    proxy = await startNginx({ capture: addresses[0]!, decide: addresses[1]!, management: addresses[2]! });
  });

  afterAll(async () => {
    await proxy?.stop();
    await Promise.all(standIns.map((server) => new Promise((resolve) => server.close(resolve))));
  });

  it.each([...servedPaths('capture').map((p) => ['capture', p] as const), ...servedPaths('decide').map((p) => ['decide', p] as const)])(
    "sends %s's %s to it, with and without a trailing slash and with a query, the path as the client wrote it",
    async (service, routePath) => {
      const concrete = concretePath(routePath).replace(/\/$/, '');
      for (const urlPath of [concrete, `${concrete}/`, `${concrete}/?v=3&ip=1`]) {
        expect(await through(urlPath, { method: 'POST', body: '{}' })).toMatchObject({ service, url: urlPath });
      }
    },
  );

  it.each(['/', '/api/projects/1/persons/', '/api/feature_flags', '/replay/abc', '/assets/index.js', '/events', '/sessions', '/static-site', '/_health'])(
    'sends %s to management',
    async (urlPath) => {
      expect(await through(urlPath)).toMatchObject({ service: 'management', url: urlPath });
    },
  );

  it("replaces the client's X-Forwarded-For with the address nginx saw, and passes Host with its port and the scheme", async () => {
    const answer = await postFrom('127.0.0.2', `${proxy.url}/batch/`, '{}', { 'X-Forwarded-For': '203.0.113.9' });
    const seen = JSON.parse(answer.body) as Seen;
    expect(seen.headers).toMatchObject({ 'x-forwarded-for': '127.0.0.2', host: `127.0.0.1:${proxy.port}`, 'x-forwarded-proto': 'http' });
  });

  it("lets a header line longer than nginx's default buffer (8 KiB) through to the service, whose limit is 16 KiB", async () => {
    const cookie = `session=${'x'.repeat(12 * 1024)}`;
    expect((await through('/decide/', { headers: { Cookie: cookie } })).headers.cookie).toBe(cookie);
  });

  it('keeps upstream connections alive: sequential requests share one', async () => {
    const connections = new Set<number>();
    for (let i = 0; i < 10; i++) {
      const seen = await through('/flags/?v=2', { method: 'POST', body: '{}' });
      expect(seen.headers.connection).toBeUndefined();
      connections.add(seen.connection);
    }
    expect(connections.size).toBe(1);
  });

  it('streams a body to the service as it arrives, instead of holding it until it is whole', async () => {
    const arrived = new Promise<void>((resolve) => (received = resolve));
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(Buffer.from('first,'));
        // The rest is sent only once the service has the first part.
        const heldBack = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('nginx held the first part back')), 5_000).unref());
        await Promise.race([arrived, heldBack]);
        controller.enqueue(Buffer.from('second'));
        controller.close();
      },
    });
    const seen = await through('/s/', { method: 'POST', body, duplex: 'half' });
    expect(Buffer.from(seen.bytes, 'base64').toString()).toBe('first,second');
  });

  it('passes a gzip body sent in chunks through byte for byte, with its Content-Encoding', async () => {
    const body = gzipSync(JSON.stringify({ api_key: 'phc_x', batch: Array.from({ length: 2000 }, (_, i) => ({ event: `e${i}`, distinct_id: 'd' })) }));
    const chunks = Readable.from([body.subarray(0, 1000), body.subarray(1000)]);
    const seen = await through('/i/v0/e/', {
      method: 'POST',
      headers: { 'Content-Encoding': 'gzip' },
      body: Readable.toWeb(chunks) as ReadableStream,
      duplex: 'half',
    });
    expect(seen.headers['content-encoding']).toBe('gzip');
    expect(Buffer.from(seen.bytes, 'base64').equals(body)).toBe(true);
  });
});

describeProxied('distributed services behind nginx on one host', () => {
  let database: TestDatabase;
  let clickhouse: ChdbHttpServer;
  let dataDir: string;
  let topicPrefix = '';
  let credentials: Credentials;
  const services = {} as Record<ServiceName, RunningService>;
  let proxy: RunningNginx;
  let host: string;

  /** The project's management API through nginx, with the bootstrap's personal key. */
  const api = (route: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${host}/api/projects/${credentials.project.id}/${route}`, {
      ...init,
      headers: { Authorization: `Bearer ${credentials.personal_api_key.value}`, 'Content-Type': 'application/json' },
    });

  /** What the services and nginx logged, for a failure's message. */
  const logs = (): string => [...SERVICES.map((name) => `--- ${name}\n${services[name]?.output().slice(-3000)}`), `--- nginx\n${proxy?.errors()}`].join('\n');

  /**
   * The events of `distinctId` (named `event`, when given) in ClickHouse, read through the management API, once
   * there are at least `count`.
   */
  async function eventsOf(distinctId: string, count: number, event?: string): Promise<StoredEvent[]> {
    const deadline = Date.now() + 60_000;
    let results: StoredEvent[] = [];
    const query = new URLSearchParams({ distinct_id: distinctId, limit: '100', ...(event ? { event } : {}) });
    while (Date.now() < deadline) {
      const response = await api(`events/?${query.toString()}`);
      expect(response.status).toBe(200);
      results = ((await response.json()) as { results: StoredEvent[] }).results;
      if (results.length >= count) return results;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    throw new Error(`${results.length} of ${count} events of ${distinctId} arrived\n${logs()}`);
  }

  beforeAll(async () => {
    database = await createTestDatabase(postgres.url!);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-proxy-'));
    clickhouse = await startChdbHttpServer(dataDir);
    const runId = `${Date.now()}_${process.pid}`;
    topicPrefix = `proxy_${runId}.`;
    const env = {
      DATABASE_URL: database.url,
      CLICKHOUSE_URL: clickhouse.url,
      CLICKHOUSE_DATABASE: `plover_proxy_${runId}`,
      KAFKA_BROKERS: kafka.url!,
      // Topics and consumer groups of this run alone: other suites run services on the same broker.
      KAFKA_TOPIC_PREFIX: topicPrefix,
      PORT: '0',
      HOST: '127.0.0.1',
      TRUST_PROXY: 'true',
      DECIDE_GEOIP: 'false',
    };
    const migrated = await run('services/management/src/cli.ts', ['migrate'], env);
    expect(migrated.code).toBe(0);
    const bootstrapped = await run('services/management/src/cli.ts', ['bootstrap'], env);
    expect(bootstrapped.code).toBe(0);
    credentials = JSON.parse(bootstrapped.stdout) as Credentials;

    // nginx listens where the operator says clients reach Plover: SITE_URL, which management's links start with.
    const nginxPort = await freePort();
    host = `http://127.0.0.1:${nginxPort}`;
    const envOf = (name: ServiceName) => (name === 'management' ? { ...env, SITE_URL: host } : env);
    const started = await Promise.allSettled(SERVICES.map((name) => startService(name, envOf(name))));
    started.forEach((result, i) => {
      if (result.status === 'fulfilled') services[SERVICES[i]!] = result.value;
    });
    for (const result of started) if (result.status === 'rejected') throw result.reason;
    const at = (name: ServiceName) => `127.0.0.1:${services[name].port}`;
    proxy = await startNginx({ capture: at('capture'), decide: at('decide'), management: at('management') }, nginxPort);

    const optIn = await api('', { method: 'PATCH', body: JSON.stringify({ session_recording_opt_in: true }) });
    expect(optIn.status).toBe(200);
    for (const flag of FLAGS) expect((await api('feature_flags/', { method: 'POST', body: JSON.stringify(flag) })).status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await proxy?.stop();
    const codes = await Promise.all(SERVICES.map((name) => services[name]?.stop()));
    const topics = [...Object.values(CAPTURE_TOPICS), 'events_dlq', REPLAY_TOPIC, `${REPLAY_TOPIC}_dlq`];
    if (topicPrefix)
      await deleteTopics(
        kafka.url!,
        topics.map((topic) => topicPrefix + topic),
      );
    await clickhouse?.close();
    await database?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    // A service that did not stop cleanly on SIGTERM is a failure of its own.
    expect(codes.filter((code) => code !== undefined && code !== 0)).toEqual([]);
  });

  it("every capture route takes events on nginx's host, and ingestion stores them", async () => {
    const event = (path: string) => ({ event: 'routed', distinct_id: `route${path}`, properties: { path } });
    const paths = ['/e/', '/i/v0/e/?ip=1', '/batch', '/capture/', '/track?_=1700000000000', '/E/', '/i/v0/ai/batch/'];
    for (const route of paths) {
      const response = await fetch(`${host}${route}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ api_key: credentials.project.api_token, batch: [event(route)] }),
      });
      expect({ route, status: response.status, body: await response.json() }).toEqual({ route, status: 200, body: { status: 1 } });
    }
    const engage = await fetch(`${host}/engage/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ $token: credentials.project.api_token, $distinct_id: 'route/engage/', $set: { plan: 'pro' } }),
    });
    expect(engage.status).toBe(200);
    for (const route of paths) expect((await eventsOf(`route${route}`, 1)).map((stored) => stored.properties.path)).toEqual([route]);
    expect((await eventsOf('route/engage/', 1))[0]!.event).toBe('$identify');
  });

  it("decide's routes answer on nginx's host: flags, local evaluation, remote config, scripts, surveys", async () => {
    const token = credentials.project.api_token;
    const personal = { headers: { Authorization: `Bearer ${credentials.personal_api_key.value}` } };
    const json = async (route: string, init?: RequestInit) => {
      const response = await fetch(`${host}${route}`, init);
      expect({ route, status: response.status }).toEqual({ route, status: 200 });
      return (await response.json()) as Record<string, unknown>;
    };
    const evaluate = { method: 'POST', body: JSON.stringify({ token, distinct_id: 'flag-user' }) };
    expect((await json('/decide/?v=3', evaluate)).featureFlags).toMatchObject({ beta: true, pro: false });
    expect((await json('/flags/?v=2', evaluate)).flags).toMatchObject({ beta: { enabled: true } });
    for (const route of [`/api/feature_flag/local_evaluation?token=${token}`, `/flags/definitions?token=${token}`]) {
      const { flags } = (await json(route, personal)) as { flags: { key: string }[] };
      expect(flags.map((flag) => flag.key).sort()).toEqual(['beta', 'pro']);
    }
    expect((await json(`/array/${token}/config`)).sessionRecording).toMatchObject({ endpoint: '/s/' });
    expect(await json(`/api/surveys/?token=${token}`)).toEqual({ surveys: [] });
    expect(await json(`/api/early_access_features?token=${token}`)).toEqual({ earlyAccessFeatures: [] });
    expect(await json(`/api/product_tours/?token=${token}`)).toEqual({ product_tours: [] });
    expect(await json(`/api/web_experiments/?token=${token}`)).toEqual({ experiments: [] });

    const config = await fetch(`${host}/array/${token}/config.js`);
    expect(config.headers.get('content-type')).toMatch(/^application\/javascript/);
    expect(await config.text()).toContain(`window._POSTHOG_REMOTE_CONFIG[${JSON.stringify(token)}]`);
    const script = await fetch(`${host}/static/array.js`);
    expect({ status: script.status, type: script.headers.get('content-type') }).toEqual({ status: 200, type: 'application/javascript; charset=utf-8' });
    expect(await script.text()).toContain('posthog');
  });

  it("everything else is management's: the API and the web console", async () => {
    const project = await api('');
    expect({ status: project.status, body: await project.json() }).toMatchObject({ status: 200, body: { id: credentials.project.id } });
    const webConsole = await fetch(`${host}/`);
    expect({ status: webConsole.status, type: webConsole.headers.get('content-type') }).toEqual({ status: 200, type: 'text/html; charset=utf-8' });
    expect((await fetch(`${host}/api/projects/${credentials.project.id}/`)).status).toBe(401);
  });

  it("capture records nginx's X-Forwarded-For as $ip, never the one a client sent", async () => {
    const token = credentials.project.api_token;
    const body = (distinctId: string) => JSON.stringify({ api_key: token, batch: [{ event: 'from-afar', distinct_id: distinctId }] });
    // The client at 127.0.0.2 (another loopback address) claims to be 203.0.113.9; nginx replaces the claim.
    const proxied = await postFrom('127.0.0.2', `${host}/batch/`, body('ip-proxied'), { 'X-Forwarded-For': '203.0.113.9' });
    expect(proxied.status).toBe(200);
    // Straight to capture, which trusts the header (TRUST_PROXY=true): why nothing but nginx may reach it.
    const direct = await postFrom('127.0.0.2', `http://127.0.0.1:${services.capture.port}/batch/`, body('ip-direct'), { 'X-Forwarded-For': '203.0.113.9' });
    expect(direct.status).toBe(200);
    expect((await eventsOf('ip-proxied', 1))[0]!.properties.$ip).toBe('127.0.0.2');
    expect((await eventsOf('ip-direct', 1))[0]!.properties.$ip).toBe('203.0.113.9');
  });

  it("the management API's links start with SITE_URL, set to nginx's URL, and work when followed", async () => {
    const sent = await fetch(`${host}/batch/`, {
      method: 'POST',
      body: JSON.stringify({ api_key: credentials.project.api_token, batch: ['first', 'second'].map((event) => ({ event, distinct_id: 'paged' })) }),
    });
    expect(sent.status).toBe(200);
    await eventsOf('paged', 2);
    const page = await api('events/?distinct_id=paged&limit=1');
    expect(page.status).toBe(200);
    const { next } = (await page.json()) as { next: string | null };
    expect(next).toMatch(new RegExp(`^${host}/api/projects/${credentials.project.id}/events/\\?`));
    // The link works as given.
    const second = await fetch(next!, { headers: { Authorization: `Bearer ${credentials.personal_api_key.value}` } });
    expect(((await second.json()) as { results: StoredEvent[] }).results).toHaveLength(1);
  });

  it("a body above capture's limit is answered by capture's own 413, not nginx's", async () => {
    const body = Buffer.alloc(21 * 1024 * 1024, 0x20);
    const response = await fetch(`${host}/batch/`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    expect({ status: response.status, body: await response.json() }).toMatchObject({
      status: 413,
      body: { type: 'validation_error', code: 'payload_too_large' },
    });
    // The connection pool to capture is still good afterwards.
    const after = await fetch(`${host}/batch/`, {
      method: 'POST',
      body: JSON.stringify({ api_key: credentials.project.api_token, batch: [{ event: 'after-413', distinct_id: 'after-413' }] }),
    });
    expect(after.status).toBe(200);
  });

  it.each([
    [
      'posthog-node 4.10.2 (/batch/, /decide/?v=3, /api/feature_flag/local_evaluation)',
      (key: string, options: Record<string, unknown>) => new PostHogNode4(key, options),
    ],
    ['posthog-node 5.70.0 (gzip /batch/, /flags/?v=2, /flags/definitions)', (key: string, options: Record<string, unknown>) => new PostHogNode5(key, options)],
  ])('%s with host = nginx: events stored, flags remote and local', async (name, create) => {
    const id = `node-${name.slice(0, name.indexOf(' ('))}`;
    const token = credentials.project.api_token;
    const remote = create(token, { host, flushAt: 5, flushInterval: 0, fetchRetryCount: 0 });
    const local = create(token, { host, personalApiKey: credentials.personal_api_key.value, featureFlagsPollingInterval: 60_000, fetchRetryCount: 0 });
    try {
      for (let i = 0; i < 10; i++) remote.capture({ distinctId: id, event: 'node-event', properties: { index: i } });
      remote.identify({ distinctId: id, properties: { email: 'node@example.com' } });
      expect(await remote.isFeatureEnabled('beta', id)).toBe(true);
      expect(await remote.getFeatureFlagPayload('beta', id)).toEqual({ color: 'blue' });
      expect(await remote.getFeatureFlag('pro', id, { personProperties: { plan: 'pro' } })).toBe(true);
      await local.reloadFeatureFlags();
      expect(await local.getFeatureFlag('pro', id, { personProperties: { plan: 'pro' }, onlyEvaluateLocally: true })).toBe(true);
      expect(await local.getFeatureFlag('pro', id, { personProperties: { plan: 'free' }, onlyEvaluateLocally: true })).toBe(false);
      expect(await local.getFeatureFlagPayload('beta', id, undefined, { onlyEvaluateLocally: true })).toEqual({ color: 'blue' });
    } finally {
      await remote.shutdown();
      await local.shutdown();
    }
    const stored = await eventsOf(id, 11);
    expect(
      stored
        .filter((event) => event.event === 'node-event')
        .map((event) => event.properties.index as number)
        .sort((a, b) => a - b),
    ).toEqual(Array.from({ length: 10 }, (_, i) => i));
    expect(stored.find((event) => event.event === '$identify')?.properties.$set).toEqual({ email: 'node@example.com' });
  });

  itWithBrowser('posthog-js in Chromium, its script and every request on nginx: flags, events and a session recording', async () => {
    const browser: Browser = await launchBrowser();
    try {
      const site = await startSite(sitePage(`${host}/static/array.js`, host, credentials.project.api_token));
      const page = await browser.newPage();
      const answered: { path: string; status: number }[] = [];
      page.on('response', (response) => {
        const url = new URL(response.url());
        if (url.origin === host) answered.push({ path: url.pathname, status: response.status() });
      });
      await page.goto(site.url);
      await page.waitForFunction('window.posthog && window.posthog.sessionRecordingStarted && window.posthog.sessionRecordingStarted()', undefined, {
        timeout: 30_000,
      });
      await page.waitForFunction('window.posthog.isFeatureEnabled("beta") === true', undefined, { timeout: 30_000 });
      const sessionId = await page.evaluate<string>('window.posthog.get_session_id()');
      await page.evaluate('window.posthog.capture("js-event", { from: "chromium" })');
      for (let i = 0; i < 2; i++) await page.click('#press');
      await page.click('#name');
      await page.keyboard.type('hi', { delay: 50 });

      const recording = await waitForRecording(api, sessionId, { clicks: 3, keypresses: 2 }, logs);
      expect(recording).toMatchObject({ distinct_id: SITE_USER, start_url: site.url });
      const [captured] = await eventsOf(SITE_USER, 1, 'js-event');
      expect(captured!.properties).toMatchObject({ from: 'chromium', $ip: '127.0.0.1', $session_id: sessionId });

      const paths = answered.map((response) => response.path);
      expect(answered.filter((response) => response.status >= 400)).toEqual([]);
      // The snippet's script, remote config, flags, the recorder posthog-js loads lazily, events and the recording.
      expect(paths).toEqual(expect.arrayContaining(['/static/array.js', `/array/${credentials.project.api_token}/config.js`, '/flags/', '/e/', '/s/']));
      expect(paths.some((p) => /^\/static\/[0-9.]+\/lazy-recorder\.js$/.test(p))).toBe(true);
      await page.close();
      await site.close();
    } finally {
      await browser.close();
    }
  });
});
