import { Router, type Express } from 'express';
import type { Logger } from '@plover/core';
import { createServiceApp, type MetricsRegistry } from '@plover/http';
import type { Sql } from '@plover/postgres';

export interface DecideDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  sql: Sql;
  trustProxy: boolean;
}

/** The flag routes (`/decide`, `/flags`, local evaluation) mount here; they are built by the decide issue. */
export function decideRoutes(_deps: DecideDeps): Router {
  return Router();
}

export function createApp(deps: DecideDeps): Express {
  return createServiceApp({
    ...deps,
    checks: { postgres: () => deps.sql.ping() },
    mount: (app) => app.use(decideRoutes(deps)),
  });
}
