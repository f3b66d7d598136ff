import { Type } from '@sinclair/typebox';
import type { InsightContext } from '@plover/insights';
import { Enum } from './schema';

/**
 * How a saved query is answered (PostHog's `refresh` execution modes, folded to three):
 * `peek` answers only from the cache, never computing (a result may be stale, or null when none was ever
 * computed); `cached` answers from the cache at the project's current data, computing on a miss; `force`
 * always computes.
 */
export type RunMode = 'peek' | 'cached' | 'force';

/**
 * Runs a query node of any kind `/query/` serves, through the process's one result cache, and answers its
 * response body with the cache fields (`is_cached`, `last_refresh`, …), or null in `peek` mode when nothing is
 * cached. Built by the query folder (query/routes.ts `nodeRunner`) and handed to the folders that show saved
 * queries' results (dashboards, insights) by src/routes.ts.
 */
export type NodeRunner = (
  node: unknown,
  insight: InsightContext,
  mode: RunMode,
  /** The ClickHouse statement's marker, for cancelling it; a fresh one by default. */
  statementId?: string,
) => Promise<Record<string, unknown> | null>;

/** A `refresh` parameter (query string or body) as a {@link RunMode}: absent and `force_cache` peek. */
export function runModeOf(refresh: unknown): RunMode {
  if (refresh === undefined || refresh === null || refresh === false || refresh === 'false' || refresh === '0' || refresh === 'force_cache') return 'peek';
  if (refresh === true || refresh === 'true' || refresh === '1' || refresh === 'force_blocking' || refresh === 'force_async') return 'force';
  return 'cached';
}

/** PostHog's `refresh` query parameter, as {@link runModeOf} reads it. */
export const RefreshParam = Type.Optional(
  Enum(['true', 'false', '1', '0', 'force_cache', 'blocking', 'async', 'lazy_async', 'async_except_on_cache_miss', 'force_blocking', 'force_async'], {
    description:
      'absent or `force_cache`: only the cached result, never computed; `blocking` and the async modes: cached, else computed now; `true`, `force_blocking`, `force_async`: computed now',
  }),
);
