import { Router, type Express } from 'express';
import helmet from 'helmet';
import type { ClickHouse } from '@plover/clickhouse';
import type { Logger } from '@plover/core';
import { createServiceApp, type MetricsRegistry } from '@plover/http';
import type { Sql } from '@plover/postgres';

export interface ManagementDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  sql: Sql;
  clickhouse: ClickHouse;
  trustProxy: boolean;
}

/** The `/api` routes mount here; they are built by the management, insights and flags issues. */
export function managementRoutes(_deps: ManagementDeps): Router {
  const router = Router();
  router.use('/api', helmet());
  return router;
}

export function createApp(deps: ManagementDeps): Express {
  return createServiceApp({
    ...deps,
    checks: { postgres: () => deps.sql.ping(), clickhouse: () => deps.clickhouse.ping() },
    mount: (app) => app.use(managementRoutes(deps)),
  });
}
