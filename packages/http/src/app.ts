import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Express } from 'express';
import type { Registry } from 'prom-client';
import type { Logger } from '@plover/core';
import { errorRenderer, notFound } from './errors';
import type { FastRoute } from './fast';
import { operationalRoutes, type ReadinessChecks, type WorkersView } from './health';

export interface ServiceAppOptions {
  logger: Logger;
  metrics: Registry;
  checks: ReadinessChecks;
  /** Parts of the process that can break for good: `/_health` fails while one does (see operationalRoutes). */
  liveness?: ReadinessChecks;
  /** In a cluster worker: the primary's view of the workers, for `/_health` and `/_ready`. */
  workers?: WorkersView | undefined;
  trustProxy: boolean;
  /** Routes tried in order before Express sees the request (the SDK routes). */
  fast?: FastRoute[];
  /** Adds the service's own routes; runs after the operational routes and before the 404 fallback. */
  mount?(app: Express): void;
}

/** What a service serves: node:http's request listener (also what supertest and `listen` take). */
export type ServiceApp = (req: IncomingMessage, res: ServerResponse) => void;

/** The frame every HTTP service shares: fast routes, operational routes, the service's routes, JSON 404 and errors. */
export function createServiceApp(options: ServiceAppOptions): ServiceApp {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy);
  app.use(operationalRoutes({ checks: options.checks, liveness: options.liveness, metrics: options.metrics, workers: options.workers }));
  options.mount?.(app);
  app.use(notFound);
  app.use(errorRenderer(options.logger));
  const fast = options.fast ?? [];
  if (fast.length === 0) return app;
  return (req, res) => {
    for (const route of fast) if (route(req, res)) return;
    app(req, res);
  };
}
