import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { bootstrap, ProjectTokenCache, type Credentials } from '@plover/accounts';
import { LocalLogBus } from '@plover/bus';
import type { ClickHouse } from '@plover/clickhouse';
import { silentLogger } from '@plover/core';
import { DefinitionsCache } from '@plover/decide/app';
import { createMetricsRegistry, type ServiceApp } from '@plover/http';
import { migrate } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';
import { SDK_ROUTES } from '../../../test/support/fuzz/requests';
import { createApp } from '../src/app';

interface Operation {
  summary: string;
  responses: Record<string, unknown>;
}
type Document = { openapi: string; paths: Record<string, Record<string, Operation>> };

const POSTHOG_JS_VERSION = (JSON.parse(readFileSync(require.resolve('posthog-js/package.json'), 'utf8')) as { version: string }).version;

/** A concrete URL of a documented path: its parameters filled with values the route serves. */
function concrete(template: string, token: string): string {
  return template.replace('{token}', token).replace('{version}', POSTHOG_JS_VERSION).replace('{name}', 'array.js');
}

/** The documented path a request path is served by (`/array/phc_x/config.js` → `/array/{token}/config.js`). */
function documentedPath(document: Document, requestPath: string): string | undefined {
  const pathname = requestPath.split('?')[0]!.toLowerCase();
  return Object.keys(document.paths).find((template) => {
    const pattern = new RegExp(
      `^${template
        .replace(/\./g, '\\.')
        .replace(/\{[a-z_]+\}/g, '[^/]+')
        .replace(/\/$/, '')}/?$`,
    );
    return pattern.test(pathname);
  });
}

describe('the SDK routes OpenAPI document (/api/schema/sdk/)', () => {
  let database: PGliteSql;
  let dataDir: string;
  let bus: LocalLogBus;
  let definitions: DefinitionsCache;
  let app: ServiceApp;
  let credentials: Credentials;
  let document: Document;

  beforeAll(async () => {
    database = await PGliteSql.open();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-sdk-openapi-'));
    bus = await LocalLogBus.open({ dataDir });
    const logger = silentLogger();
    definitions = new DefinitionsCache(database, { logger });
    await migrate(database);
    credentials = (await bootstrap(database, { adminEmail: 'admin@example.com', projectName: 'P', timezone: 'UTC' }))!;
    app = createApp({
      logger,
      metrics: createMetricsRegistry('test'),
      sql: database,
      clickhouse: {} as ClickHouse,
      bus,
      trustProxy: false,
      projectTokens: new ProjectTokenCache(database),
      definitions,
    });
    const response = await request(app).get('/api/schema/sdk/').expect(200);
    expect(response.headers['content-type']).toMatch(/^application\/vnd\.oai\.openapi\+json/);
    document = JSON.parse(response.text) as Document;
  }, 60_000);

  afterAll(async () => {
    definitions.close();
    await bus.close();
    await database.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('is OpenAPI 3.1 with a summary and a success answer for every operation but the refused support widget', () => {
    expect(document.openapi).toBe('3.1.0');
    const operations = Object.entries(document.paths).flatMap(([template, methods]) => Object.values(methods).map((operation) => ({ template, operation })));
    expect(operations.length).toBeGreaterThan(20);
    for (const { template, operation } of operations) {
      expect(operation.summary).toEqual(expect.any(String));
      const success = Object.keys(operation.responses).some((status) => /^2\d\d$/.test(status));
      expect({ template, success }).toEqual({ template, success: !template.startsWith('/api/conversations/') });
    }
  });

  it('lists every SDK route the hostile-input fuzz drives, and the ones posthog-js loads besides', () => {
    const random = () => 0.5;
    const fuzzed = SDK_ROUTES.map((route) => route.generate(random, { token: 'phc_x', personalKey: 'phx_x', projectId: 1 }));
    const called = [
      ...fuzzed.map((generated) => `${generated.method.toLowerCase()} ${generated.path}`),
      'post /s/',
      'get /static/array.js',
      `get /static/${POSTHOG_JS_VERSION}/recorder.js`,
      'get /array/phc_x/config.js',
      'options /flags/',
      'head /decide/',
    ];
    for (const call of called) {
      const [method, requestPath] = call.split(' ') as [string, string];
      const documented = documentedPath(document, requestPath);
      expect({ call, documented: documented !== undefined && method in document.paths[documented]! }).toEqual({ call, documented: true });
    }
  });

  it('serves every operation it lists (never the 404 of an unknown route, nor a 405)', async () => {
    const token = credentials.project.api_token;
    for (const [template, methods] of Object.entries(document.paths)) {
      for (const method of Object.keys(methods)) {
        const url = concrete(template, token);
        const call = request(app)[method as 'get' | 'post' | 'head' | 'options'](url);
        const response = method === 'post' ? await call.send({ token, api_key: token, event: 'e', distinct_id: 'u1' }) : await call;
        const generic404 = response.status === 404 && response.body?.detail === 'Not found.';
        const operation = `${method} ${url}`;
        expect({ operation, generic404, methodNotAllowed: response.status === 405 }).toEqual({ operation, generic404: false, methodNotAllowed: false });
      }
    }
  }, 60_000);

  it('answers every path the newest posthog-js, posthog-node and posthog-python call (read from their source), none with a 404', async () => {
    const token = credentials.project.api_token;
    const personal = { Authorization: `Bearer ${credentials.personal_api_key.value}` };
    const v1Headers = {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      'PostHog-Sdk-Info': 'posthog-node/5.70.0',
      'PostHog-Attempt': '1',
      'PostHog-Request-Id': '0190b0f2-0e5f-7a2c-9d4e-6f1a2b3c4d5e',
      'PostHog-Request-Timestamp': new Date().toISOString(),
      'User-Agent': 'posthog-node/5.70.0',
    };
    const event = { event: 'e', distinct_id: 'u1', properties: { token } };
    const batch = { api_key: token, batch: [event] };
    const otlpLogs = { resourceLogs: [] };
    const widget = { 'X-Conversations-Token': 'widget-token' };
    const flag = await request(app)
      .post(`/api/projects/${credentials.project.id}/feature_flags/`)
      .set(personal)
      .send({ key: 'site-config', is_remote_configuration: true, filters: { groups: [{ rollout_percentage: 100 }], payloads: { true: '{"theme":"dark"}' } } });
    expect(flag.status).toBe(201);
    // [who calls it, method, path, headers, body, the status Plover answers]
    const table: [string, 'get' | 'post', string, Record<string, string>, unknown, number][] = [
      ['node, python, js-lite', 'post', '/batch/', {}, batch, 200],
      ['node captureAi, python capture_ai', 'post', '/i/v0/ai/batch/', {}, batch, 200],
      [
        'python PostHogSpanProcessor, @posthog/ai PostHogTraceExporter',
        'post',
        '/i/v0/ai/otel',
        { Authorization: `Bearer ${token}` },
        { resourceSpans: [] },
        200,
      ],
      [
        'node, python (POSTHOG_CAPTURE_MODE=v1)',
        'post',
        '/i/v1/analytics/events',
        v1Headers,
        {
          created_at: new Date().toISOString(),
          batch: [{ event: 'e', uuid: '0190b0f2-0e5f-7a2c-9d4e-6f1a2b3c4d5f', distinct_id: 'u1', timestamp: new Date().toISOString(), options: {} }],
        },
        200,
      ],
      ['node, python, js', 'post', '/flags/?v=2', {}, { token, api_key: token, distinct_id: 'u1' }, 200],
      ['js (only_evaluate_survey_feature_flags)', 'post', '/flags/?v=2&only_evaluate_survey_feature_flags=true', {}, { token, distinct_id: 'u1' }, 200],
      ['node, python local evaluation', 'get', `/flags/definitions?token=${token}&send_cohorts`, personal, undefined, 200],
      ['older node, python local evaluation', 'get', `/api/feature_flag/local_evaluation?token=${token}&send_cohorts`, personal, undefined, 200],
      ['js, js-lite, node remote config', 'get', `/array/${token}/config`, {}, undefined, 200],
      ['js', 'get', `/array/${token}/config.js`, {}, undefined, 200],
      ['js lazy scripts', 'get', `/static/${POSTHOG_JS_VERSION}/recorder.js`, {}, undefined, 200],
      ['js analytics (default endpoint)', 'post', '/e/', {}, event, 200],
      ['js analytics (remote config endpoint)', 'post', '/i/v0/e/', {}, event, 200],
      ['js session replay', 'post', '/s/', {}, { event: '$snapshot', properties: { token, distinct_id: 'u1', $session_id: 's1', $snapshot_data: [] } }, 200],
      ['js console logs, node captureLog', 'post', `/i/v1/logs?token=${token}`, {}, otlpLogs, 200],
      ['js, node, python metrics', 'post', `/i/v1/metrics?token=${token}`, {}, { resourceMetrics: [] }, 200],
      ['js, node surveys', 'get', `/api/surveys/?token=${token}`, {}, undefined, 200],
      ['js early access features', 'get', `/api/early_access_features/?token=${token}`, {}, undefined, 200],
      ['js product tours', 'get', `/api/product_tours/?token=${token}`, {}, undefined, 200],
      ['js web experiments', 'get', `/api/web_experiments/?token=${token}`, {}, undefined, 200],
      ['node, python remote config payload', 'get', `/api/projects/@current/feature_flags/site-config/remote_config?token=${token}`, personal, undefined, 200],
      // posthog-js's support widget, only shown when a project's conversations are on: refused as PostHog refuses a
      // project whose conversations are off.
      ['js conversations widget', 'post', '/api/conversations/v1/widget/message', widget, { message: 'hi', widget_session_id: 'w', distinct_id: 'u1' }, 403],
      ['js conversations widget', 'get', '/api/conversations/v1/widget/tickets?widget_session_id=w', widget, undefined, 403],
      ['js conversations widget', 'get', '/api/conversations/v1/widget/messages/t1?widget_session_id=w', widget, undefined, 403],
      ['js conversations widget', 'post', '/api/conversations/v1/widget/messages/t1/read', widget, { widget_session_id: 'w' }, 403],
      ['js conversations widget', 'post', '/api/conversations/v1/widget/restore/request', widget, { email: 'a@b.c' }, 403],
    ];
    const answered = [];
    for (const [who, method, url, headers, body, status] of table) {
      const call = request(app)[method](url).set(headers);
      const response = body === undefined ? await call : await call.send(JSON.stringify(body)).set('Content-Type', 'application/json');
      answered.push({ who, url, status: response.status });
      expect({ who, url, status: response.status }).toEqual({ who, url, status });
    }
    expect(answered.filter((row) => row.status === 404)).toEqual([]);
    const products = await request(app).get(`/api/product_tours/?token=${token}`);
    expect([products.body, (await request(app).get(`/api/web_experiments/?token=${token}`)).body]).toEqual([{ product_tours: [] }, { experiments: [] }]);
    expect((await request(app).get('/api/product_tours/?token=phc_unknown')).status).toBe(401);
    const refused = await request(app).post('/api/conversations/v1/widget/message').set(widget).send({ message: 'hi' });
    expect(refused.body).toEqual({
      type: 'authentication_error',
      code: 'authentication_failed',
      detail: 'Invalid token or conversations not enabled',
      attr: null,
    });
  });

  it('does not list an unknown path, which answers the generic 404', async () => {
    expect(documentedPath(document, '/array/phc_x/other')).toBeUndefined();
    const response = await request(app).get('/array/phc_x/other');
    expect(response.status).toBe(404);
    expect(response.body).toMatchObject({ code: 'not_found', detail: 'Not found.' });
  });
});
