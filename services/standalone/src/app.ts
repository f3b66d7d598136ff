import type { ProjectTokenCache } from '@plover/accounts';
import type { EventBus } from '@plover/bus';
import { captureRoutes, type CaptureSettings } from '@plover/capture/app';
import type { ClickHouse } from '@plover/clickhouse';
import type { DiskWatch, Logger } from '@plover/core';
import { decideRoutes, type DecideSettings, type DefinitionsCache } from '@plover/decide/app';
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
  /** One cache for capture and decide: a token either of them looked up or refreshed is known to both. */
  projectTokens: ProjectTokenCache;
  /** Decide's flag definitions, with their poll; the composition root closes it. */
  definitions: DefinitionsCache;
  /** The stores' disks: `/_ready` fails while one is below the watermark, naming it. */
  disk?: DiskWatch;
  /** Each service's settings override, as its own deps name it. */
  settings?: { capture?: Partial<CaptureSettings>; decide?: DecideSettings };
}

/** Every HTTP service on one port: the SDKs' capture and flag routes beside the management API. */
export function createApp(deps: StandaloneDeps): ServiceApp {
  const { settings, ...shared } = deps;
  const decide = decideRoutes({ ...shared, settings: settings?.decide });
  return createServiceApp({
    ...shared,
    checks: {
      postgres: () => deps.sql.ping(),
      clickhouse: () => deps.clickhouse.ping(),
      bus: () => deps.bus.ping(),
      disk: () => {
        const cause = deps.disk?.lowCause();
        return cause === undefined ? Promise.resolve() : Promise.reject(new Error(cause));
      },
    },
    fast: [captureRoutes({ ...shared, settings: settings?.capture }), decide.fast],
    mount(app) {
      app.use(decide.router);
      app.use(managementRoutes(shared));
    },
  });
}
