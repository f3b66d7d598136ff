import type { AuthFailureThrottle, ProjectTokenCache } from '@plover/accounts';
import type { ClickHouse } from '@plover/clickhouse';
import type { Logger } from '@plover/core';
import type { MetricsRegistry } from '@plover/http';
import type { Sql } from '@plover/postgres';

/** What the management service is built from: its stores, logger and metrics. */
export interface ManagementDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  sql: Sql;
  clickhouse: ClickHouse;
  trustProxy: boolean;
  /** Failed personal-key authentications before 429; embedded mode shares one with decide, tests pass their own. */
  authThrottle?: AuthFailureThrottle;
  /**
   * The project token cache of capture and decide when they share this process (embedded mode): a rotated-away
   * token is dropped from it at once. Other processes notice at their cache's next refresh.
   */
  projectTokens?: ProjectTokenCache;
}
