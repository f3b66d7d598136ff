import { Router, type Express } from 'express';
import type { EventBus } from '@plover/bus';
import type { Logger } from '@plover/core';
import { createServiceApp, type MetricsRegistry } from '@plover/http';
import type { Sql } from '@plover/postgres';

export interface CaptureDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  sql: Sql;
  bus: EventBus;
  trustProxy: boolean;
}

/** The ingest routes (`/e`, `/batch`, `/i/v0/e`, …) mount here; they are built by the capture issue. */
export function captureRoutes(_deps: CaptureDeps): Router {
  return Router();
}

export function createApp(deps: CaptureDeps): Express {
  return createServiceApp({
    ...deps,
    checks: { postgres: () => deps.sql.ping(), bus: () => deps.bus.ping() },
    mount: (app) => app.use(captureRoutes(deps)),
  });
}
