import type { AuthFailureThrottle, ProjectTokenCache } from '@plover/accounts';
import type { ClickHouse } from '@plover/clickhouse';
import { loadConfig, sections, type AnalysisConfig } from '@plover/config';
import type { Logger } from '@plover/core';
import type { MetricsRegistry } from '@plover/http';
import type { Sql } from '@plover/postgres';

/** What the management service is built from: its stores, logger and metrics. */
export interface ManagementDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  sql: Sql;
  /** Every read of the API's handlers goes through it bounded by `analysis` (app.ts). */
  clickhouse: ClickHouse;
  /** Bounds of analysis requests; the configuration's defaults when unset. */
  analysis?: AnalysisConfig;
  /** The origin of absolute links (`next`, `previous`): SITE_URL, never the request's Host header. The default's when unset. */
  siteUrl?: string;
  trustProxy: boolean;
  /** Failed personal-key authentications before 429; embedded mode shares one with decide, tests pass their own. */
  authThrottle?: AuthFailureThrottle;
  /**
   * The project token cache of capture and decide when they share this process (embedded mode): a rotated-away
   * token is dropped from it at once. Other processes notice at their cache's next refresh.
   */
  projectTokens?: ProjectTokenCache;
}

/** The bounds of analysis requests: the deps' own, else the configuration's defaults (distributed mode's). */
export function analysisOf(deps: ManagementDeps): AnalysisConfig {
  return deps.analysis ?? loadConfig({}, { analysis: sections.analysis(false) }).analysis;
}

/** SITE_URL: the deps' own, else the configuration's default. */
export function siteUrlOf(deps: ManagementDeps): string {
  return deps.siteUrl ?? loadConfig({}, { management: sections.management }).management.siteUrl;
}
