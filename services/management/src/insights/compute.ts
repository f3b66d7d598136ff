import { createHash } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import type { ClickHouse } from '@plover/clickhouse';
import {
  InsightResultCache,
  type CacheRequest,
  parseCorrelationRequest,
  parseInsightRequest,
  rangeKey,
  insightRange,
  runFunnelCorrelation,
  runLifecycle,
  runStickiness,
  runTrends,
  type InsightContext,
  type InsightKind,
  type InsightRequest,
  type InsightSeriesResult,
  type ResolvedRange,
} from '@plover/insights';
import type { Sql } from '@plover/postgres';
import { projectOf, requireScope } from '../http/auth';
import { errors } from '../http/errors';
import { csvCell, formatOf, send } from '../http/render';
import { validateBody } from '../schemas';
import { cohortResolver } from './cohorts';

/** `refresh` values (query or body) that compute afresh instead of answering from the cache. */
const REFRESH = new Set<unknown>([true, 'true', '1', 'blocking', 'force_blocking']);

function refreshRequested(req: Request): boolean {
  const body = req.body as Record<string, unknown>;
  return REFRESH.has(body.refresh) || REFRESH.has((req.query as Record<string, unknown>).refresh);
}

/**
 * The correlation `query` node (the body's over the query string's; JSON text decoded), checked against its
 * schema so that a malformed node is a 400 naming the field inside it.
 */
function checkCorrelationQuery(req: Request): void {
  const body = req.body as Record<string, unknown> | undefined;
  const raw = body?.query ?? (req.query as Record<string, unknown>).query;
  if (raw === undefined || raw === null || raw === '') return;
  let query: unknown = raw;
  if (typeof raw === 'string') {
    try {
      query = JSON.parse(raw);
    } catch {
      throw errors.validation('Malformed JSON.', 'query');
    }
  }
  validateBody('FunnelCorrelationRequest', { query });
}

/** What a computation needs about the project now: its timezone and, per request, its cohorts' members. */
export function insightContext(sql: Sql, req: Request): InsightContext {
  const project = projectOf(req);
  return { teamId: project.id, timezone: project.timezone, now: new Date(), cohortMembers: cohortResolver(sql, project.id) };
}

/** The ids of the cohorts a parsed input filters on (`{type: "cohort", value: id}` anywhere in it). */
function cohortIdsOf(value: unknown, ids = new Set<number>()): Set<number> {
  if (Array.isArray(value)) {
    for (const item of value) cohortIdsOf(item, ids);
  } else if (typeof value === 'object' && value !== null) {
    const node = value as Record<string, unknown>;
    if (node.type === 'cohort') ids.add(Number(node.value));
    for (const item of Object.values(node)) cohortIdsOf(item, ids);
  }
  return ids;
}

/**
 * The cache key of a computation. Cohort membership lives in Postgres, outside the ClickHouse data version, so
 * the members of every cohort the input uses (resolved once per request; the computation reuses them) are part
 * of the key as a digest.
 */
async function cacheRequest(kind: string, ctx: InsightContext, input: unknown, range: ResolvedRange): Promise<CacheRequest> {
  const cohorts: Record<string, string> = {};
  for (const id of cohortIdsOf(input)) {
    cohorts[id] = createHash('sha256')
      .update((await ctx.cohortMembers(id)).join(','))
      .digest('base64url');
  }
  return { kind, teamId: ctx.teamId, input: { input, cohorts }, range: rangeKey(range) };
}

/**
 * The legacy trend CSV (PostHog's `posthog/api/insight.py`): one row per series, `series` (custom name or label) then one column
 * per bucket label in order; RFC 4180 quoting, CRLF line ends.
 */
export function trendCsv(series: readonly InsightSeriesResult[]): string {
  const rows: (string | number)[][] = [['series', ...(series[0]?.labels ?? [])]];
  for (const item of series) rows.push([item.action.custom_name ?? item.label, ...item.data]);
  return rows.map((row) => `${row.map(csvCell).join(',')}\r\n`).join('');
}

const RUNS: Record<InsightKind, (clickhouse: ClickHouse, input: InsightRequest['input'], ctx: InsightContext) => Promise<InsightSeriesResult[]>> = {
  TRENDS: runTrends,
  STICKINESS: runStickiness,
  LIFECYCLE: runLifecycle,
};

/**
 * `GET|POST /insights/trend/` and `GET|POST /insights/funnel/correlation/` (scope insight:read): PostHog's legacy
 * computed insights. Parameters come from the query string and/or the JSON body; results are cached per project
 * (packages/insights/src/cache.ts) until the project's data, the resolved date range or the membership of a
 * cohort the request filters on changes, and `refresh`
 * (`true`, `blocking`, `force_blocking`) computes afresh. Trend (or, by `insight`/`shown_as`, stickiness or
 * lifecycle) answers `{result, timezone, is_cached, last_refresh, next: null, timings}` (CSV with `format=csv`),
 * correlation `{result: {events, skewed}, last_refresh, is_cached}`.
 */
export function computeRoutes(sql: Sql, clickhouse: ClickHouse, cache = new InsightResultCache()): Router {
  const router = Router({ mergeParams: true });

  const trend = async (req: Request, res: Response) => {
    requireScope(req, 'insight:read');
    const started = performance.now();
    const { insight, input } = parseInsightRequest(req.query, req.body);
    const ctx = insightContext(sql, req);
    const range = await insightRange(clickhouse, input, input.interval, ctx);
    const key = await cacheRequest(insight.toLowerCase(), ctx, input, range);
    const computed = await cache.run(clickhouse, key, refreshRequested(req), () => RUNS[insight](clickhouse, input, ctx));
    if (formatOf(req) === 'csv') {
      const days = range.buckets.map((bucket) => bucket.slice(0, 10));
      const span = days.length > 0 ? ` (${days[0]} ${days[days.length - 1]})` : '';
      res
        .status(200)
        .type('text/csv; charset=utf-8')
        .setHeader('Content-Disposition', `attachment; filename="trends${span}.csv"`)
        .send(trendCsv(computed.result));
      return;
    }
    res.status(200).json({
      result: computed.result,
      timezone: ctx.timezone,
      is_cached: computed.isCached,
      last_refresh: computed.lastRefresh.toISOString(),
      next: null,
      timings: [{ k: computed.isCached ? './cache' : './calculate', t: (performance.now() - started) / 1000 }],
    });
  };
  router.get('/insights/trend', trend);
  router.post('/insights/trend', trend);

  const correlation = async (req: Request, res: Response) => {
    requireScope(req, 'insight:read');
    checkCorrelationQuery(req);
    const input = parseCorrelationRequest(req.query, req.body);
    const ctx = insightContext(sql, req);
    const range = await insightRange(clickhouse, input, 'day', ctx);
    const key = await cacheRequest('funnel_correlation', ctx, input, range);
    const computed = await cache.run(clickhouse, key, refreshRequested(req), () => runFunnelCorrelation(clickhouse, input, ctx));
    send(req, res, 200, { result: computed.result, last_refresh: computed.lastRefresh.toISOString(), is_cached: computed.isCached }, 'funnel_correlation');
  };
  router.get('/insights/funnel/correlation', correlation);
  router.post('/insights/funnel/correlation', correlation);

  return router;
}
