import type { ClickHouse } from '@plover/clickhouse';
import type { Logger } from '@plover/core';
import type { MetricsRegistry } from '@plover/http';
import type { Sql } from '@plover/postgres';
import type { AuthFailureThrottle } from './http/auth';

/** What the management service is built from: its stores, logger and metrics. */
export interface ManagementDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  sql: Sql;
  clickhouse: ClickHouse;
  trustProxy: boolean;
  /** Failed authentications per client address before 429 (tests pass their own). */
  authThrottle?: AuthFailureThrottle;
}
