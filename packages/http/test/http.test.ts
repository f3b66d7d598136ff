import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Router } from 'express';
import request from 'supertest';
import { ApiError, silentLogger } from '@plover/core';
import { createMetricsRegistry, createServiceApp, readBody, routePath, sendError, sendJson, type FastRoute } from '@plover/http';

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
      router.get('/things/:id', (req, res) => {
        res.json({ id: req.params.id });
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

  it('answers a path parameter that is not percent-encoded UTF-8 with 400', async () => {
    const res = await request(appWith({})).get('/things/a%ED%A0%80');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ type: 'validation_error', code: 'parse_error', detail: 'The URL path is not valid percent-encoded UTF-8.', attr: null });
    expect((await request(appWith({})).get('/things/%C3%A9')).body).toEqual({ id: 'é' });
  });

  it('answers unknown routes with a JSON 404', async () => {
    const res = await request(appWith({})).get('/nope');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null });
  });
});

describe('fast routes', () => {
  const errors = {
    tooLarge: (detail: string) => new ApiError(413, 'validation_error', 'payload_too_large', detail),
    decoding: (detail: string) => ApiError.validation(detail),
  };
  const echo: FastRoute = (req, res) => {
    if (routePath(req.url) !== '/echo') return false;
    readBody(req, 16, errors).then(
      (body) =>
        body.toString() === 'boom' ? sendError(req, res, new Error('secret internals'), silentLogger()) : sendJson(res, 201, { body: body.toString() }),
      (error: unknown) => sendError(req, res, error, silentLogger()),
    );
    return true;
  };
  const app = createServiceApp({
    logger: silentLogger(),
    metrics: createMetricsRegistry('test'),
    checks: {},
    trustProxy: false,
    fast: [echo],
    mount(express) {
      const router = Router();
      router.post('/other', (_req, res) => {
        res.json({ from: 'express' });
      });
      express.use(router);
    },
  });

  it('answers its own paths (any case, trailing slash or not) before Express', async () => {
    for (const path of ['/echo', '/echo/', '/ECHO?x=1']) {
      const res = await request(app).post(path).send('hello');
      expect(res.status).toBe(201);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.body).toEqual({ body: 'hello' });
    }
  });

  it('passes other paths on to Express, its routes and its JSON 404', async () => {
    expect((await request(app).post('/other')).body).toEqual({ from: 'express' });
    expect((await request(app).get('/_health')).body).toEqual({ status: 'ok' });
    const missing = await request(app).get('/echo/more');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 'not_found' });
  });

  it('renders errors in the shared shape: client errors as they are, others as a generic 500', async () => {
    const tooLarge = await request(app).post('/echo').send('x'.repeat(17));
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body).toEqual({ type: 'validation_error', code: 'payload_too_large', detail: 'Request body exceeds the limit of 16 bytes.', attr: null });
    const boom = await request(app).post('/echo').send('boom');
    expect(boom.status).toBe(500);
    expect(boom.body).toEqual({ type: 'server_error', code: 'error', detail: 'A server error occurred.', attr: null });
  });
});

describe('reading a body', () => {
  const errors = {
    tooLarge: (detail: string) => new ApiError(413, 'validation_error', 'payload_too_large', detail),
    decoding: (detail: string) => ApiError.validation(detail),
  };

  /** A server whose every request's readBody outcome is recorded; `outcome` resolves with the next one. */
  async function recordingServer() {
    const outcomes: Array<(outcome: string) => void> = [];
    const server = http.createServer((req, res) => {
      readBody(req, 16, errors).then(
        (body) => {
          outcomes.shift()?.(`body ${body.toString()}`);
          sendJson(res, 200, {});
        },
        (error: unknown) => {
          outcomes.shift()?.(`error ${(error as ApiError).status} ${(error as Error).message}`);
          sendError(req, res, error, silentLogger());
        },
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return {
      port,
      outcome: () => new Promise<string>((resolve) => outcomes.push(resolve)),
      close: () => new Promise((resolve) => server.close(resolve)),
    };
  }

  it('joins the chunks of a chunked body, and refuses one that grows past the limit without a Content-Length', async () => {
    const server = await recordingServer();
    try {
      const send = (chunks: string[]) =>
        new Promise<number>((resolve, reject) => {
          const req = http.request({ port: server.port, method: 'POST', path: '/' }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
          for (const chunk of chunks) req.write(chunk);
          req.end();
        });
      let outcome = server.outcome();
      expect(await send(['hello ', 'world'])).toBe(200);
      expect(await outcome).toBe('body hello world');
      outcome = server.outcome();
      expect(await send(['0123456789', '0123456789'])).toBe(413);
      expect(await outcome).toBe('error 413 Request body exceeds the limit of 16 bytes.');
    } finally {
      await server.close();
    }
  });

  it('rejects (instead of waiting forever) when the client goes away mid-body', async () => {
    const server = await recordingServer();
    try {
      const outcome = server.outcome();
      const req = http.request({ port: server.port, method: 'POST', path: '/', headers: { 'content-length': '10' } });
      req.on('error', () => undefined);
      req.write('abc');
      await new Promise((resolve) => setTimeout(resolve, 50));
      req.destroy();
      expect(await outcome).toBe('error 400 the client closed the connection before the body was complete');
    } finally {
      await server.close();
    }
  });
});
