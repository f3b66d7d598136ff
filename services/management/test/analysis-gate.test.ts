/**
 * The per-project analysis gate: a request that finds its project's slots taken waits its turn (a screen's burst
 * of panels all answer), and only a queue past its bound is refused with 429 and Retry-After.
 */
import express from 'express';
import request from 'supertest';
import { silentLogger } from '@plover/core';
import { errorRenderer } from '@plover/http';
import { AnalysisGate } from '../src/http/analysis-gate';

/** An app whose one route takes an analysis slot, then holds it until `release()`. */
function gatedApp(perProject: number) {
  const gate = new AnalysisGate(perProject, 1, 1000);
  const held: Array<() => void> = [];
  let entered = 0;
  const app = express();
  app.use((req, _res, next) => {
    req.project = { id: Number(req.query.project ?? 1), uuid: '', organizationId: '', level: 'owner', timezone: 'UTC' };
    next();
  });
  app.use(gate.middleware);
  app.get('/read', async (_req, res, next) => {
    try {
      await AnalysisGate.enter();
      entered++;
      await new Promise<void>((resolve) => held.push(resolve));
      res.json({ ok: true });
    } catch (error) {
      next(error);
    }
  });
  app.use(errorRenderer(silentLogger()));
  const server = app.listen(0);
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    entered: () => entered,
    releaseAll: () => held.splice(0).forEach((resolve) => resolve()),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

describe('analysis gate', () => {
  it('lets a request wait for a slot of its project instead of refusing it, and other projects pass', async () => {
    const app = gatedApp(1);
    try {
      const first = request(app.url)
        .get('/read')
        .then((res) => res);
      await until(() => app.entered() === 1);
      const second = request(app.url)
        .get('/read')
        .then((res) => res);
      const elsewhere = request(app.url)
        .get('/read?project=2')
        .then((res) => res);
      await until(() => app.entered() === 2);
      app.releaseAll();
      await until(() => app.entered() === 3);
      app.releaseAll();
      expect((await first).status).toBe(200);
      expect((await second).status).toBe(200);
      expect((await elsewhere).status).toBe(200);
    } finally {
      app.releaseAll();
      await app.close();
    }
  });

  it('refuses with 429 and Retry-After once 32 requests of the project already wait', async () => {
    const app = gatedApp(1);
    try {
      const running = request(app.url)
        .get('/read')
        .then((res) => res);
      await until(() => app.entered() === 1);
      const waiting = Array.from({ length: 32 }, () =>
        request(app.url)
          .get('/read')
          .then((res) => res),
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      const refused = await request(app.url).get('/read');
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toBe('2');
      expect(refused.body).toMatchObject({ type: 'throttled', code: 'throttled' });
      for (let served = 1; served <= 33; served++) {
        await until(() => app.entered() === served);
        app.releaseAll();
      }
      expect((await running).status).toBe(200);
      expect((await Promise.all(waiting)).map((res) => res.status)).toEqual(Array(32).fill(200));
    } finally {
      app.releaseAll();
      await app.close();
    }
  });
});
