import { createHash } from 'node:crypto';
import type { Request } from 'express';
import {
  actionsUsed,
  InsightResultCache,
  type CacheRequest,
  parseCorrelationRequest,
  parseFunnelRequest,
  parseRetentionRequest,
  parsePathsRequest,
  pathsRange,
  runPaths,
  retentionRange,
  runFunnel,
  runRetention,
  parseInsightRequest,
  rangeKey,
  insightRange,
  runFunnelCorrelation,
  runInsight,
  type InsightContext,
  type InsightSeriesResult,
  type ResolvedRange,
} from '@plover/insights';
import { analysisOf, type ManagementDeps } from '../http/deps';
import { projectOf } from '../http/auth';
import { errors } from '../shared/errors';
import { csvCell } from '../http/render';
import { Type } from '@sinclair/typebox';
import { csvText, Q, type Route, type RouteInput } from '../http/route-table';
import { valueValidator } from '../shared/schema';
import { insightContext } from '../shared/insight-context';
import { checkFunnelPoints, checkRetentionPoints, checkTrendPoints } from '../shared/points';
import { FunnelCorrelationRequest, funnelCorrelationNode, FunnelRequest, InsightResult, PathRequest, RetentionRequest } from './schemas';

/** `refresh` values (query or body) that compute afresh instead of answering from the cache. */
const REFRESH = new Set<unknown>([true, 'true', '1', 'blocking', 'force_blocking']);

function refreshRequested(req: Request): boolean {
  const body = req.body as Record<string, unknown>;
  return REFRESH.has(body.refresh) || REFRESH.has((req.query as Record<string, unknown>).refresh);
}

const checkCorrelationNode = valueValidator({ type: 'object', properties: { query: funnelCorrelationNode } });

/**
 * The correlation `query` node sent as JSON text (in the body, or in the query string when the body has none),
 * decoded and checked against its schema, so that a malformed node is a 400 naming the field inside it (a node
 * sent as an object has been checked with the body).
 */
function checkCorrelationText(req: Request): void {
  const body = req.body as Record<string, unknown>;
  const raw = body.query ?? (req.query as Record<string, unknown>).query;
  if (typeof raw !== 'string' || raw === '') return;
  let query: unknown;
  try {
    query = JSON.parse(raw);
  } catch {
    throw errors.validation('Malformed JSON.', 'query');
  }
  checkCorrelationNode({ query });
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
 * The cache key of a computation. Cohort membership and actions live in Postgres, outside the ClickHouse data
 * version, so the members of every cohort the input uses (as a digest) and the definition of every action it
 * counts (each resolved once per request; the computation reuses them) are part of the key.
 */
async function cacheRequest(kind: string, ctx: InsightContext, input: unknown, range: ResolvedRange): Promise<CacheRequest> {
  const cohorts: Record<string, string> = {};
  for (const id of cohortIdsOf(input)) {
    cohorts[id] = createHash('sha256')
      .update((await ctx.cohortMembers(id)).join(','))
      .digest('base64url');
  }
  return { kind, projectId: ctx.projectId, input: { input, cohorts, actions: await actionsUsed(input, ctx) }, range: rangeKey(range) };
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

/** PostHog's legacy computed-insight answer around a (maybe cached) result. */
function legacyBody(computed: { result: unknown; isCached: boolean; lastRefresh: Date }, timezone: string, started: number): Record<string, unknown> {
  return {
    result: computed.result,
    timezone,
    is_cached: computed.isCached,
    last_refresh: computed.lastRefresh.toISOString(),
    next: null,
    timings: [{ k: computed.isCached ? './cache' : './calculate', t: (performance.now() - started) / 1000 }],
  };
}

/**
 * `GET|POST /insights/trend/` and `GET|POST /insights/funnel/correlation/` (scope insight:read): PostHog's legacy
 * computed insights. Parameters come from the query string and/or the JSON body; results are cached per project
 * (packages/insights/src/cache.ts) until the project's data, the resolved date range or the membership of a
 * cohort the request filters on changes, and `refresh` (`true`, `blocking`, `force_blocking`) computes afresh.
 * Trend (or, by `insight`/`shown_as`, stickiness or lifecycle) answers
 * `{result, timezone, is_cached, last_refresh, next: null, timings}` (CSV with `format=csv`), correlation
 * `{result: {events, skewed}, last_refresh, is_cached}`.
 */
export function computeRoutes(deps: ManagementDeps, cache = new InsightResultCache()): Route[] {
  const { sql, clickhouse } = deps;
  const { limits } = analysisOf(deps);
  async function trend(req: Request, { format }: RouteInput): Promise<unknown> {
    const started = performance.now();
    const request = parseInsightRequest(req.query, req.body);
    const { insight, input } = request;
    const ctx = insightContext(sql, projectOf(req));
    const range = await insightRange(clickhouse, input, input.interval, ctx);
    checkTrendPoints(limits, insight, input, range);
    const key = await cacheRequest(insight.toLowerCase(), ctx, input, range);
    const computed = await cache.run(clickhouse, key, refreshRequested(req), () => runInsight(clickhouse, request, ctx));
    if (format === 'csv') {
      const days = range.buckets.map((bucket) => bucket.slice(0, 10));
      const span = days.length > 0 ? ` (${days[0]} ${days[days.length - 1]})` : '';
      return csvText(`trends${span}`, trendCsv(computed.result));
    }
    return legacyBody(computed, ctx.timezone, started);
  }

  async function correlation(req: Request): Promise<unknown> {
    checkCorrelationText(req);
    const input = parseCorrelationRequest(req.query, req.body);
    const ctx = insightContext(sql, projectOf(req));
    const range = await insightRange(clickhouse, input, 'day', ctx);
    const key = await cacheRequest('funnel_correlation', ctx, input, range);
    const computed = await cache.run(clickhouse, key, refreshRequested(req), () => runFunnelCorrelation(clickhouse, input, ctx));
    return { result: computed.result, last_refresh: computed.lastRefresh.toISOString(), is_cached: computed.isCached };
  }

  async function funnel(req: Request): Promise<unknown> {
    const started = performance.now();
    const input = parseFunnelRequest(req.query, req.body);
    const ctx = insightContext(sql, projectOf(req));
    const range = await insightRange(clickhouse, input, input.vizType === 'trends' ? input.interval : 'day', ctx);
    checkFunnelPoints(limits, input, range);
    const key = await cacheRequest('funnel', ctx, input, range);
    const computed = await cache.run(clickhouse, key, refreshRequested(req), () => runFunnel(clickhouse, input, ctx));
    return legacyBody(computed, ctx.timezone, started);
  }

  async function retention(req: Request): Promise<unknown> {
    const started = performance.now();
    const input = parseRetentionRequest(req.query, req.body);
    const ctx = insightContext(sql, projectOf(req));
    const range = retentionRange(input, ctx);
    checkRetentionPoints(limits, input, range);
    const key = await cacheRequest('retention', ctx, input, range);
    const computed = await cache.run(clickhouse, key, refreshRequested(req), () => runRetention(clickhouse, input, ctx));
    return legacyBody(computed, ctx.timezone, started);
  }

  async function paths(req: Request): Promise<unknown> {
    const started = performance.now();
    const input = parsePathsRequest(req.query, req.body);
    const ctx = insightContext(sql, projectOf(req));
    const range = await pathsRange(clickhouse, input, ctx);
    const key = await cacheRequest('path', ctx, input, range);
    const computed = await cache.run(clickhouse, key, refreshRequested(req), () => runPaths(clickhouse, input, ctx));
    return legacyBody(computed, ctx.timezone, started);
  }

  return (['get', 'post'] as const).flatMap((method): Route[] => [
    {
      method,
      path: '/insights/path',
      scope: 'insight:read',
      summary:
        'Legacy paths: edges between consecutive path items (`1_/home` → `2_/pricing`) with counts and mean conversion times, from legacy path fields or a PathsQuery `query`; start and end points, cleaning, groupings, funnel paths',
      query: Type.Object({ refresh: Q.string, query: Q.string }),
      ...(method === 'post' ? { body: PathRequest } : {}),
      response: { status: 200, schema: InsightResult },
      handler: paths,
    },
    {
      method,
      path: '/insights/retention',
      scope: 'insight:read',
      summary:
        'Legacy retention: cohort rows (`values` per period, zero-padded) from legacy retention fields or a RetentionQuery `query`; recurring or first-time, cumulative, breakdowns',
      query: Type.Object({ refresh: Q.string, query: Q.string }),
      ...(method === 'post' ? { body: RetentionRequest } : {}),
      response: { status: 200, schema: InsightResult },
      handler: retention,
    },
    {
      method,
      path: '/insights/funnel',
      scope: 'insight:read',
      summary:
        'Legacy funnel: steps, time to convert or conversion trends (legacy funnel fields, or a FunnelsQuery `query`); ordered, strict or unordered, with exclusions, breakdowns and group aggregation',
      query: Type.Object({ refresh: Q.string, query: Q.string }),
      ...(method === 'post' ? { body: FunnelRequest } : {}),
      response: { status: 200, schema: InsightResult },
      handler: funnel,
    },
    {
      method,
      path: '/insights/trend',
      scope: 'insight:read',
      summary:
        'Legacy trend: series per interval (legacy filter fields or a TrendsQuery `query`); `insight` STICKINESS or LIFECYCLE (or `shown_as` Stickiness / Lifecycle) for stickiness or lifecycle; no series → `result: []`',
      query: Type.Object({ refresh: Q.string, insight: Q.string, shown_as: Q.string }),
      csv: { file: 'trends', rows: 'export' },
      response: { status: 200, schema: InsightResult },
      handler: trend,
    },
    {
      method,
      path: '/insights/funnel/correlation',
      scope: 'insight:read',
      summary: 'Legacy funnel correlation: odds ratios of events or properties (legacy funnel fields, or a FunnelsQuery / FunnelCorrelationQuery `query`)',
      query: Type.Object({ refresh: Q.string, query: Q.string }),
      ...(method === 'post' ? { body: FunnelCorrelationRequest } : {}),
      csv: { file: 'funnel_correlation' },
      response: { status: 200, schema: InsightResult },
      handler: correlation,
    },
  ]);
}
