import { Router } from 'express';
import request from 'supertest';
import { ApiError, silentLogger } from '@plover/core';
import { createMetricsRegistry, createServiceApp } from '@plover/http';

function appWith(checks: Record<string, () => Promise<void>>) {
  return createServiceApp({
    logger: silentLogger(),
    metrics: createMetricsRegistry('test'),
    checks,
    trustProxy: false,
    mount(app) {
      const router = Router();
      router.get('/forbidden', () => {
        throw ApiError.forbidden('API key missing required scope');
      });
      router.get('/boom', () => {
        throw new Error('secret internals');
      });
      app.use(router);
    },
  });
}

describe('service app frame', () => {
  it('answers /_health while dependencies are down', async () => {
    const res = await request(appWith({ db: () => Promise.reject(new Error('down')) })).get('/_health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('answers /_ready 200 when every check passes and 503 naming the failing one', async () => {
    const ok = await request(appWith({ db: () => Promise.resolve() })).get('/_ready');
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ status: 'ok', checks: { db: 'ok' } });
    const down = await request(appWith({ db: () => Promise.resolve(), bus: () => Promise.reject(new Error('connection refused')) })).get('/_ready');
    expect(down.status).toBe(503);
    expect(down.body).toEqual({ status: 'unavailable', checks: { db: 'ok', bus: 'connection refused' } });
  });

  it('serves Prometheus metrics', async () => {
    const res = await request(appWith({})).get('/metrics');
    expect(res.status).toBe(200);
    expect(res.text).toContain('process_cpu_user_seconds_total{service="test"}');
  });

  it('renders ApiError as {type, code, detail, attr}', async () => {
    const res = await request(appWith({})).get('/forbidden');
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ type: 'permission_denied', code: 'permission_denied', detail: 'API key missing required scope', attr: null });
  });

  it('hides unexpected errors behind a generic 500', async () => {
    const res = await request(appWith({})).get('/boom');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ type: 'server_error', code: 'error', detail: 'A server error occurred.', attr: null });
  });

  it('answers unknown routes with a JSON 404', async () => {
    const res = await request(appWith({})).get('/nope');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null });
  });
});
