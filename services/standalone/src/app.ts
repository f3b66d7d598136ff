import { AuthFailureThrottle, type ProjectTokenCache } from '@plover/accounts';
import type { EventBus } from '@plover/bus';
import { captureRoutes, type CaptureSettings } from '@plover/capture/app';
import type { ClickHouse } from '@plover/clickhouse';
import type { AnalysisConfig } from '@plover/config';
import type { DiskWatch, Logger } from '@plover/core';
import { decideRoutes, type DecideSettings, type DefinitionsCache } from '@plover/decide/app';
import { createServiceApp, sdkSchemaRouter, type MetricsRegistry, type ServiceApp } from '@plover/http';
import { managementRoutes } from '@plover/management/app';
import type { Sql } from '@plover/postgres';

export interface StandaloneDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  sql: Sql;
  clickhouse: ClickHouse;
  bus: EventBus;
  /** Bounds of the management API's analysis requests (its defaults when unset). */
  analysis?: AnalysisConfig;
  /** SITE_URL: the origin of the management API's absolute links (its default when unset). */
  siteUrl?: string;
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
  const { settings, ...rest } = deps;
  // One failure throttle for every personal-key check (the management API and decide's local evaluation).
  const shared = { ...rest, authThrottle: new AuthFailureThrottle() };
  const capture = captureRoutes({ ...shared, settings: settings?.capture });
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
    // The local log recovers from a full disk or a lack of descriptors by itself; its ping fails only when it
    // cannot go on without a restart (or while it closes).
    liveness: { bus: () => deps.bus.ping() },
    fast: [capture.fast, decide.fast],
    mount(app) {
      app.use(capture.router, decide.router, sdkSchemaRouter([...capture.table, ...decide.table]));
      app.use(managementRoutes(shared));
    },
  });
}
