import { createLogger } from '@plover/core';
import { createMetricsRegistry } from '@plover/http';
import type { Sql } from '@plover/postgres';
import { routeTable, type RouteTable } from '../../src/routes';
import { noClickHouse } from './app';

/** The route table as the service builds it, over stores that are never called (for what the table declares). */
export function declaredTable(): RouteTable {
  return routeTable({
    logger: createLogger({ service: 'test', level: 'silent' }),
    metrics: createMetricsRegistry('test'),
    sql: {} as Sql,
    clickhouse: noClickHouse,
    trustProxy: false,
  });
}
