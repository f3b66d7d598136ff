import { Router } from 'express';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { withTimeout } from '@plover/core';

/** A dependency the process needs to do its work; `/_ready` fails while any check rejects. */
export type ReadinessChecks = Record<string, () => Promise<void>>;

const CHECK_TIMEOUT_MS = 2000;

async function runCheck(check: () => Promise<void>): Promise<string> {
  try {
    await withTimeout(check(), CHECK_TIMEOUT_MS, () => new Error('timed out'));
    return 'ok';
  } catch (error) {
    return error instanceof Error ? error.message : 'failed';
  }
}

export type { Registry as MetricsRegistry };

export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** `/_health` (the process is alive), `/_ready` (its dependencies answer) and `/metrics` (Prometheus). */
export function operationalRoutes(options: { checks: ReadinessChecks; metrics: Registry }): Router {
  const router = Router();
  router.get('/_health', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/_ready', async (_req, res) => {
    const names = Object.keys(options.checks);
    const results = await Promise.all(names.map((name) => runCheck(options.checks[name]!)));
    const checks = Object.fromEntries(names.map((name, i) => [name, results[i]]));
    const ready = results.every((result) => result === 'ok');
    res.status(ready ? 200 : 503).json({ status: ready ? 'ok' : 'unavailable', checks });
  });
  router.get('/metrics', async (_req, res) => {
    res.type(options.metrics.contentType).send(await options.metrics.metrics());
  });
  return router;
}
