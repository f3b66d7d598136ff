import express, { type Express } from 'express';
import type { Registry } from 'prom-client';
import type { Logger } from '@plover/core';
import { errorRenderer, notFound } from './errors';
import { operationalRoutes, type ReadinessChecks } from './health';

export interface ServiceAppOptions {
  logger: Logger;
  metrics: Registry;
  checks: ReadinessChecks;
  trustProxy: boolean;
  /** Adds the service's own routes; runs after the operational routes and before the 404 fallback. */
  mount(app: Express): void;
}

/** The frame every HTTP service shares: operational routes, the service's routes, JSON 404 and errors. */
export function createServiceApp(options: ServiceAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy);
  app.use(operationalRoutes({ checks: options.checks, metrics: options.metrics }));
  options.mount(app);
  app.use(notFound);
  app.use(errorRenderer(options.logger));
  return app;
}
