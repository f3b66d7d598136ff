/**
 * The routes that serve the web console (apps/console): which paths answer with its page, the policy and cache
 * headers, and the files as a build leaves them. The console itself is driven in Chromium by
 * apps/console/test/browser.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import express from 'express';
import request from 'supertest';
import { readConsole, type ConsoleAssets, type ConsoleFile } from '../src/console/assets';
import { consoleRoutes } from '../src/console';

const file = (text: string, type: string): ConsoleFile => ({ contents: Buffer.from(text), gzip: zlib.gzipSync(text), type });

const ASSETS: ConsoleAssets = new Map([
  ['/index.html', file('<!doctype html><script type="module" src="/assets/index-abc.js"></script>', 'text/html; charset=utf-8')],
  ['/assets/index-abc.js', file('console.log("console")', 'text/javascript; charset=utf-8')],
]);

/** The console's routes in front of a stand-in for everything else, which answers 404 "other". */
function appWith(load: () => Promise<ConsoleAssets>) {
  return express()
    .use(consoleRoutes(load))
    .use((_req, res) => void res.status(404).json({ detail: 'other' }))
    .use(((_error, _req, res, _next) => void res.status(500).end()) as express.ErrorRequestHandler);
}

describe('the console routes', () => {
  const app = appWith(() => Promise.resolve(ASSETS));

  it('answers / and every /project/… client route with the page, never cached and under a policy without inline code', async () => {
    for (const url of ['/', '/project', '/project/1', '/project/@current/insights/abc123']) {
      const response = await request(app).get(url).expect(200);
      expect(response.type).toBe('text/html');
      expect(response.text).toContain('/assets/index-abc.js');
      expect(response.headers['cache-control']).toBe('no-cache');
      const policy = String(response.headers['content-security-policy']);
      expect(policy).toContain("default-src 'none'");
      expect(policy).toContain("script-src 'self';");
      expect(policy).toContain("style-src 'self';");
      expect(policy).toContain("connect-src 'self'");
      expect(policy).toContain("frame-ancestors 'none'");
      expect(policy).not.toContain('unsafe');
      expect(response.headers['referrer-policy']).toBe('no-referrer');
    }
  });

  it('leaves every other path to its own handler: the API, the replay player, health, metrics, SDK routes', async () => {
    for (const url of [
      '/api/projects/',
      '/api/nothing',
      '/replay/abc',
      '/_health',
      '/metrics',
      '/decide',
      '/batch',
      '/static/array.js',
      '/projects',
      '/index.html',
    ]) {
      const response = await request(app).get(url).expect(404);
      expect(response.body).toEqual({ detail: 'other' });
    }
    await request(app).post('/project/1').expect(404);
  });

  it('serves the hashed files for a year, gzipped for clients that accept it, and no file it does not have', async () => {
    const plain = await request(app).get('/assets/index-abc.js').set('Accept-Encoding', 'identity').expect(200);
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.text).toBe('console.log("console")');
    const gzipped = await request(app).get('/assets/index-abc.js').set('Accept-Encoding', 'gzip, br').expect(200);
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers.vary).toContain('Accept-Encoding');
    expect(gzipped.text).toBe('console.log("console")');
    expect((await request(app).get('/assets/index-xyz.js').expect(404)).body).toEqual({ detail: 'other' });
  });

  it('loads the files at the first request and again after a failed load', async () => {
    let calls = 0;
    const flaky = appWith(() => (++calls === 1 ? Promise.reject(new Error('build failed')) : Promise.resolve(ASSETS)));
    expect(calls).toBe(0);
    await request(flaky).get('/').expect(500);
    await request(flaky).get('/').expect(200);
    await request(flaky).get('/assets/index-abc.js').expect(200);
    expect(calls).toBe(2);
  });
});

describe('readConsole', () => {
  it('reads a build by URL path with its content types, and finds none where no index.html was built', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-console-'));
    try {
      expect(await readConsole(path.join(dir, 'missing'))).toBeUndefined();
      expect(await readConsole(dir)).toBeUndefined();
      fs.mkdirSync(path.join(dir, 'assets'));
      fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html>');
      fs.writeFileSync(path.join(dir, 'assets', 'index-1.css'), 'body{}');
      fs.writeFileSync(path.join(dir, 'source-hash'), 'abc\n');
      const assets = (await readConsole(dir))!;
      expect([...assets.keys()].sort()).toEqual(['/assets/index-1.css', '/index.html']);
      expect(assets.get('/assets/index-1.css')!.type).toBe('text/css; charset=utf-8');
      expect(zlib.gunzipSync(assets.get('/index.html')!.gzip).toString()).toBe('<!doctype html>');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
