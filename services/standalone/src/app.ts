import { ProjectTokenCache } from '@plover/accounts';
import type { EventBus } from '@plover/bus';
import { captureRoutes } from '@plover/capture/app';
import type { ClickHouse } from '@plover/clickhouse';
import type { CaptureConfig } from '@plover/config';
import type { Logger } from '@plover/core';
import { decideRoutes, type DecideOptions } from '@plover/decide/app';
import { createServiceApp, type MetricsRegistry, type ServiceApp } from '@plover/http';
import { managementRoutes } from '@plover/management/app';
import type { Sql } from '@plover/postgres';

export interface StandaloneDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  sql: Sql;
  clickhouse: ClickHouse;
  bus: EventBus;
  trustProxy: boolean;
  capture?: CaptureConfig;
  decide?: DecideOptions;
}

/** Every HTTP service on one port: the SDKs' capture and flag routes beside the management API. */
export function createApp(deps: StandaloneDeps): ServiceApp {
  const decide = decideRoutes(deps);
  return createServiceApp({
    ...deps,
    checks: { postgres: () => deps.sql.ping(), clickhouse: () => deps.clickhouse.ping(), bus: () => deps.bus.ping() },
    fast: [captureRoutes({ ...deps, projectTokens: new ProjectTokenCache(deps.sql), settings: deps.capture }), decide.fast],
    mount(app) {
      app.use(decide.router);
      app.use(managementRoutes(deps));
    },
  });
}
