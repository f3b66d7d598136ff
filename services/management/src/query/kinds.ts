/**
 * The query kinds `/query/` runs, by `kind`. Each kind validates its own node and computes its response body
 * (the envelope's cache fields are added by the route). To add a kind, add one entry to {@link queryKinds}:
 * `{ run(node, ctx) → body, cache? }` — `cache: false` for kinds that must never be served from the cache.
 */
import {
  insightRange,
  nodeRuleAttr,
  parseFunnelsQuery,
  parsePathsQuery,
  parseRetentionQuery,
  pathsRange,
  parseTrendsQuery,
  rangeKey,
  retentionRange,
  runFunnel,
  runPaths,
  runRetention,
  runTrends,
  type InsightContext,
} from '@plover/insights';
import { HogQLError, printHogQL, runHogQL, toApiError, type QueryLimits } from '@plover/hogql';
import type { ClickHouse } from '@plover/clickhouse';
import { errors } from '../shared/errors';

export interface QueryContext {
  clickhouse: ClickHouse;
  insight: InsightContext;
  limits: QueryLimits;
  /** The ClickHouse statement's marker, for cancelling it (DELETE /query/:id/). */
  statementId: string;
  /** Runs another node (a wrapper's `source`) the way the route runs the top one, cache fields included. */
  runNode(node: unknown): Promise<Record<string, unknown>>;
}

export interface QueryKind {
  /** The response body for `node` (already checked to be an object whose `kind` is this one). */
  run(node: Record<string, unknown>, ctx: QueryContext): Promise<Record<string, unknown>>;
  /** What besides the node the result depends on (a resolved date range); absent: the node alone. */
  cacheScope?(node: Record<string, unknown>, ctx: QueryContext): Promise<unknown>;
  /** False for kinds never served from the cache (validation, wrappers that defer to their source). */
  cache?: boolean;
}

function stringField(node: Record<string, unknown>, field: string): string {
  const value = node[field];
  if (typeof value !== 'string') throw errors.validation(`${field} must be a string`, field);
  return value;
}

function valuesOf(node: Record<string, unknown>): Record<string, unknown> | undefined {
  const { values } = node;
  if (values === undefined || values === null) return undefined;
  if (typeof values !== 'object' || Array.isArray(values)) throw errors.validation('values must be an object', 'values');
  return values as Record<string, unknown>;
}

const hogql: QueryKind = {
  async run(node, ctx) {
    const timings: { k: string; t: number }[] = [];
    const result = await runHogQL(ctx.clickhouse, stringField(node, 'query'), {
      teamId: ctx.insight.projectId,
      values: valuesOf(node),
      limits: ctx.limits,
      queryId: ctx.statementId,
      timings,
    });
    return { ...result, timings, modifiers: {}, error: null, explain: null, metadata: null, query: result.hogql };
  },
  // HogQL may say now(): its results are kept a minute at most, whatever the data version.
  cacheScope: () => Promise.resolve(Math.floor(Date.now() / 60_000)),
};

/** HogQLMetadata: whether a query is valid, with each error's position, without running it. */
const hogqlMetadata: QueryKind = {
  cache: false,
  async run(node, ctx) {
    const query = stringField(node, 'query');
    const language = node.language ?? 'hogQL';
    if (language !== 'hogQL') throw errors.validation('Only the hogQL language is supported', 'language');
    const errorsFound: { message: string; start: number | null; end: number | null; fix: null }[] = [];
    try {
      // Parsing and printing resolve every table, field and function; nothing reaches ClickHouse.
      await printHogQL(query, { teamId: ctx.insight.projectId, values: valuesOf(node) });
    } catch (error) {
      if (!(error instanceof HogQLError)) throw toApiError(error);
      errorsFound.push({ message: error.message, start: error.start ?? null, end: error.end ?? null, fix: null });
    }
    return {
      isValid: errorsFound.length === 0,
      query,
      errors: errorsFound,
      warnings: [],
      notices: [],
      isUsingIndices: 'undecisive',
      table_names: [],
      ch_table_names: [],
    };
  },
};

/** The body every insight kind answers with around its `results` (PostHog's insight query response). */
function insightResponse(results: unknown): Record<string, unknown> {
  return { results, hasMore: false, timings: [], hogql: null, modifiers: {}, error: null };
}

const trends: QueryKind = {
  async run(node, ctx) {
    const input = parseTrendsQuery(node, 'query');
    return insightResponse(await runTrends(ctx.clickhouse, input, ctx.insight));
  },
  async cacheScope(node, ctx) {
    const input = parseTrendsQuery(node, 'query');
    return rangeKey(await insightRange(ctx.clickhouse, input, input.interval, ctx.insight));
  },
};

/** The same funnel computation as `/insights/funnel/`, from a FunnelsQuery node. */
const funnels: QueryKind = {
  async run(node, ctx) {
    return insightResponse(await runFunnel(ctx.clickhouse, parseFunnelsQuery(node, 'query'), ctx.insight));
  },
  async cacheScope(node, ctx) {
    const input = parseFunnelsQuery(node, 'query');
    return rangeKey(await insightRange(ctx.clickhouse, input, input.vizType === 'trends' ? input.interval : 'day', ctx.insight));
  },
};

/** The same retention computation as `/insights/retention/`, from a RetentionQuery node. */
const retention: QueryKind = {
  async run(node, ctx) {
    return insightResponse(await runRetention(ctx.clickhouse, parseRetentionQuery(node, 'query'), ctx.insight));
  },
  cacheScope(node, ctx) {
    return Promise.resolve(rangeKey(retentionRange(parseRetentionQuery(node, 'query'), ctx.insight)));
  },
};

/** The same paths computation as `/insights/path/`, from a PathsQuery node. */
const paths: QueryKind = {
  async run(node, ctx) {
    return insightResponse(await runPaths(ctx.clickhouse, parsePathsQuery(node, 'query'), ctx.insight, nodeRuleAttr));
  },
  async cacheScope(node, ctx) {
    return rangeKey(await pathsRange(ctx.clickhouse, parsePathsQuery(node, 'query'), ctx.insight));
  },
};

/** A display wrapper: PostHog runs its `source` and answers the source's response unchanged. */
const wrapper: QueryKind = {
  cache: false,
  async run(node, ctx) {
    return ctx.runNode(node.source);
  },
};

export function queryKinds(): ReadonlyMap<string, QueryKind> {
  return new Map<string, QueryKind>([
    ['HogQLQuery', hogql],
    ['HogQLMetadata', hogqlMetadata],
    ['TrendsQuery', trends],
    ['FunnelsQuery', funnels],
    ['RetentionQuery', retention],
    ['PathsQuery', paths],
    ['InsightVizNode', wrapper],
    ['DataTableNode', wrapper],
    ['DataVisualizationNode', wrapper],
  ]);
}
