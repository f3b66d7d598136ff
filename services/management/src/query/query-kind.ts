/** What a query kind is (query/kinds.ts lists them): its answer's schema and how it computes it. */
import type { ClickHouse } from '@plover/clickhouse';
import type { QueryLimits } from '@plover/config';
import type { InsightContext } from '@plover/insights';
import type { Sql } from '@plover/postgres';
import type { Static, TObject } from '@sinclair/typebox';
import type { CacheField } from './schemas';

export interface QueryContext {
  /** The analysis handle: every statement bounded by the analysis limits (`limitedClickHouse`). */
  clickhouse: ClickHouse;
  /** Those limits: an insight kind checks its points against them before it computes (shared/points.ts). */
  limits: QueryLimits;
  insight: InsightContext;
  /** The project's Postgres, for kinds that read definitions (an experiment). */
  sql: Sql;
  /** The ClickHouse statement's marker, for cancelling it (DELETE /query/:id/). */
  statementId: string;
  /** Runs another node (a wrapper's `source`) the way the route runs the top one, cache fields included. */
  runNode(node: unknown): Promise<Record<string, unknown>>;
}

export interface QueryKind<R extends TObject = TObject> {
  /**
   * The schema of the kind's answer (query/schemas.ts), the route's cache fields included unless `cache: false`;
   * `source` for a wrapper, which answers its source's response. The route's OpenAPI response is their union.
   */
  response: R | 'source';
  /** The response body for `node` (already checked to be an object whose `kind` is this one). */
  run(node: Record<string, unknown>, ctx: QueryContext): Promise<Omit<Static<R>, CacheField>>;
  /** What besides the node the result depends on (a resolved date range); absent: the node alone. */
  cacheScope?(node: Record<string, unknown>, ctx: QueryContext): Promise<unknown>;
  /** False for kinds never served from the cache (validation, wrappers that defer to their source). */
  cache?: boolean;
}
