/**
 * posthog-js's bundles under /static/, as a site with a self-hosted api_host loads them: the package's bytes,
 * as JavaScript, cacheable, with CORS; every other name is a JSON 404, however it is encoded.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import type { ServiceApp } from '@plover/http';
import { openMigratedPGlite, type MigratedDatabase } from '../../../packages/postgres/test/support/backends';
import { buildApp } from './support/harness';

const DIST = path.join(path.dirname(require.resolve('posthog-js/package.json')), 'dist');
const { version: VERSION } = JSON.parse(readFileSync(path.join(DIST, '..', 'package.json'), 'utf8')) as { version: string };

describe('/static/ scripts', () => {
  let database: MigratedDatabase;
  let app: ServiceApp;

  beforeAll(async () => {
    database = await openMigratedPGlite();
    app = buildApp(database.sql);
  });

  afterAll(() => database.close());

  it('is the posthog-js version the repository pins', () => {
    expect(VERSION).toBe('1.449.2');
  });

  it.each([
    'lazy-recorder.js',
    'recorder.js',
    'posthog-recorder.js',
    'surveys.js',
    'dead-clicks-autocapture.js',
    'web-vitals.js',
    'web-vitals-with-attribution.js',
    'exception-autocapture.js',
    'tracing-headers.js',
    'product-tours.js',
    'conversations.js',
    'logs.js',
    'array.js',
    'array.full.js',
  ])('serves %s as posthog-js ships it, as JavaScript, with CORS and a revalidated cache', async (name) => {
    const response = await request(app).get(`/static/${name}?v=1.418.10`).set('Origin', 'https://shop.example').responseType('blob');
    expect(response.status).toBe(200);
    expect(Buffer.compare(response.body as Buffer, readFileSync(path.join(DIST, name)))).toBe(0);
    expect(response.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(response.headers['cache-control']).toBe('public, max-age=3600');
    expect(response.headers.etag).toMatch(/^"[0-9a-f]{16}"$/);
    expect(response.headers['access-control-allow-origin']).toBe('https://shop.example');
  });

  it('answers If-None-Match with 304 and no body, and HEAD with the headers only', async () => {
    const first = await request(app).get('/static/lazy-recorder.js').expect(200);
    const etag = first.headers.etag as string;
    const revalidated = await request(app).get('/static/lazy-recorder.js').set('If-None-Match', etag);
    expect(revalidated.status).toBe(304);
    expect(revalidated.text).toBeFalsy();
    const head = await request(app).head('/static/lazy-recorder.js');
    expect(head.status).toBe(200);
    expect(head.headers.etag).toBe(etag);
  });

  it('serves /static/<version>/<name> (strict_script_versioning) for its own version only, as immutable', async () => {
    const versioned = await request(app).get(`/static/${VERSION}/lazy-recorder.js`).expect(200);
    expect(versioned.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const other = await request(app).get('/static/1.300.0/lazy-recorder.js');
    expect(other.status).toBe(404);
    expect(other.body).toMatchObject({ type: 'invalid_request', code: 'not_found' });
  });

  it.each([
    '/static/nope.js',
    '/static/toolbar.js',
    '/static/lazy-recorder.js.map',
    '/static/LAZY-RECORDER.JS',
    '/static/lazy-recorder.d.ts',
    '/static/integrity.json',
    '/static/package.json',
    '/static/lazy-recorder.js%00',
    '/static/../package.json',
    '/static/..%2Fpackage.json',
    '/static/..%2fpackage.json',
    '/static/%2e%2e%2fpackage.json',
    '/static/%2E%2E%2F%2E%2E%2Fpackage.json',
    '/static/..%5Cpackage.json',
    '/static/%252e%252e%252fpackage.json',
    `/static/${VERSION}/..%2Fpackage.json`,
    `/static/..%2F${VERSION}/lazy-recorder.js`,
    '/static/src/entrypoints/lazy-recorder.js',
    '/static/%2Fetc%2Fpasswd',
    '/static/',
  ])('%s → JSON 404, nothing read outside the bundle list', async (url) => {
    const response = await request(app).get(url);
    expect(response.status).toBe(404);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(response.body as object).sort()).toEqual(['attr', 'code', 'detail', 'type']);
    expect(response.text).not.toContain('"name": "posthog-js"');
  });
});
