import { Router } from 'express';
import { Registry, collectDefaultMetrics, type Aggregator } from 'prom-client';
import { withTimeout } from '@plover/core';

/** A dependency the process needs to do its work; `/_ready` fails while any check rejects. */
export type ReadinessChecks = Record<string, () => Promise<void>>;

/** What a cluster's primary says of its workers (`runService` with more than one worker). */
export interface WorkersStatus {
  configured: number;
  /** Workers serving the port now (one that crashed is missing until its replacement listens). */
  listening: number;
  /** Workers started again after one exited unexpectedly, since the service started. */
  restarts: number;
  /** The primary is draining the workers (SIGTERM). */
  stopping: boolean;
}

/** How a worker reaches its primary's view; undefined when the primary does not answer. */
export interface WorkersView {
  status(): Promise<WorkersStatus | undefined>;
}

const CHECK_TIMEOUT_MS = 2000;

async function runCheck(check: () => Promise<void>): Promise<string> {
  try {
    await withTimeout(check(), CHECK_TIMEOUT_MS, () => new Error('timed out'));
    return 'ok';
  } catch (error) {
    return error instanceof Error ? error.message : 'failed';
  }
}

/** Every check's outcome by name ('ok' or what failed), and whether all passed. */
async function runChecks(checks: ReadinessChecks): Promise<{ ok: boolean; outcome: Record<string, string> }> {
  const names = Object.keys(checks);
  const results = await Promise.all(names.map((name) => runCheck(checks[name]!)));
  return { ok: results.every((result) => result === 'ok'), outcome: Object.fromEntries(names.map((name, i) => [name, results[i]!])) };
}

export type { Registry as MetricsRegistry };

/**
 * Default metrics that a cluster's `/metrics` must not sum over its processes. The others are totals (memory,
 * CPU, handles) or say themselves how they combine (event loop lag: average, min, max; the Node version: first).
 */
const CLUSTER_AGGREGATORS: Record<string, Aggregator> = { process_max_fds: 'max', process_start_time_seconds: 'min' };

/** A registry with the default metrics and the `service` label; `registry` when given (a cluster worker's). */
export function createMetricsRegistry(service: string, registry: Registry = new Registry()): Registry {
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  for (const [name, aggregator] of Object.entries(CLUSTER_AGGREGATORS)) {
    const metric = registry.getSingleMetric(name);
    if (metric) Object.assign(metric, { aggregator });
  }
  return registry;
}

/** The registry's metric `name`, created the first time: routes built twice on one registry (tests, a second app) share it. */
export function singleMetric<T>(registry: Registry, name: string, create: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? create();
}

/**
 * `/_health` (the process is alive), `/_ready` (its dependencies answer) and `/metrics` (Prometheus). `liveness`
 * are parts of the process itself that can break for good (the embedded local log after an I/O error): while one
 * fails, `/_health` is 503 naming it, so that a supervisor restarts the process. With `workers` (a cluster worker),
 * `/_health` adds the primary's view of the workers and is 503 when the primary does not answer, and `/_ready` also
 * fails while the primary drains.
 */
export function operationalRoutes(options: {
  checks: ReadinessChecks;
  liveness?: ReadinessChecks | undefined;
  metrics: Registry;
  workers?: WorkersView | undefined;
}): Router {
  const router = Router();
  const { workers } = options;
  const checks: ReadinessChecks = workers
    ? {
        ...options.checks,
        workers: async () => {
          const status = await workers.status();
          if (!status) throw new Error('the primary did not answer');
          if (status.stopping) throw new Error('shutting down');
        },
      }
    : options.checks;
  router.get('/_health', async (_req, res) => {
    const liveness = await runChecks(options.liveness ?? {});
    if (!liveness.ok) {
      res.status(503).json({ status: 'unavailable', checks: liveness.outcome });
      return;
    }
    if (!workers) {
      res.json({ status: 'ok' });
      return;
    }
    const status = await workers.status();
    if (status) res.json({ status: 'ok', workers: status });
    else res.status(503).json({ status: 'unavailable', workers: null });
  });
  router.get('/_ready', async (_req, res) => {
    const { ok, outcome } = await runChecks(checks);
    res.status(ok ? 200 : 503).json({ status: ok ? 'ok' : 'unavailable', checks: outcome });
  });
  router.get('/metrics', async (_req, res) => {
    res.type(options.metrics.contentType).send(await options.metrics.metrics());
  });
  return router;
}
