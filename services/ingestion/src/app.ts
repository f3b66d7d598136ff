import type { EventBus } from '@plover/bus';
import type { ClickHouse } from '@plover/clickhouse';
import type { Logger } from '@plover/core';
import { createServiceApp, type MetricsRegistry, type ServiceApp } from '@plover/http';
import type { Sql } from '@plover/postgres';

export interface IngestionDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  sql: Sql;
  clickhouse: ClickHouse;
  bus: EventBus;
}

/** The consumer has no public routes: only health, readiness and metrics for its orchestrator. */
export function createApp(deps: IngestionDeps): ServiceApp {
  return createServiceApp({
    ...deps,
    trustProxy: false,
    checks: { postgres: () => deps.sql.ping(), clickhouse: () => deps.clickhouse.ping(), bus: () => deps.bus.ping() },
    mount: () => undefined,
  });
}
