/**
 * The query kinds `/query/` runs, by `kind`. Each kind declares the schema of its answer, validates its own node
 * and computes its response body (the envelope's cache fields are added by the route). To add a kind, add one
 * entry to {@link queryKinds}: `{ response, run(node, ctx) → body, cacheScope?, cache? }` — `cache: false` for
 * kinds that must never be served from the cache.
 */
import {
  actionsUsed,
  insightRange,
  nodeRuleAttr,
  parseFunnelsQuery,
  parsePathsQuery,
  parseRetentionQuery,
  pathsRange,
  parseCorrelationRequest,
  parseInsightQuery,
  rangeKey,
  retentionRange,
  runFunnel,
  runPaths,
  runFunnelCorrelation,
  runInsight,
  runRetention,
  parseWebQuery,
  parseWebStatsQuery,
  parseWebExternalClicksQuery,
  resolveRange,
  runWebOverview,
  runWebStatsTable,
  runWebGoals,
  runWebExternalClicks,
} from '@plover/insights';
import { HogQLError, printHogQL, runHogQL, toApiError } from '@plover/hogql';
import type { Static, TObject } from '@sinclair/typebox';
import { checkFunnelPoints, checkRetentionPoints, checkTrendPoints } from '../shared/points';
import { errors } from '../shared/errors';
import { runActorsQuery } from './actors-query';
import { hogqlActions } from './hogql-actions';
import { hogqlFiltersAst, variableValues } from './hogql-filters';
import { runEventsQuery } from './events-query';
import { experimentExposureQuery, experimentQuery } from './experiment-queries';
import type { QueryContext, QueryKind } from './query-kind';
import {
  ActorsQueryResponse,
  EventsQueryResponse,
  FunnelCorrelationQueryResponse,
  FunnelsQueryResponse,
  HogQLMetadataResponse,
  HogQLQueryResponse,
  PathsQueryResponse,
  LifecycleQueryResponse,
  RetentionQueryResponse,
  StickinessQueryResponse,
  TrendsQueryResponse,
  WebOverviewQueryResponse,
  WebStatsTableQueryResponse,
  WebGoalsQueryResponse,
  WebExternalClicksTableQueryResponse,
  type CacheField,
} from './schemas';

export type { QueryContext, QueryKind } from './query-kind';

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

/** Results that depend on the current time (`now()`, `-24h`) are kept a minute at most, whatever the data version. */
const thisMinute = () => Promise.resolve(Math.floor(Date.now() / 60_000));

const hogql: QueryKind<typeof HogQLQueryResponse> = {
  response: HogQLQueryResponse,
  async run(node, ctx) {
    const timings: { k: string; t: number }[] = [];
    const result = await runHogQL(ctx.clickhouse, stringField(node, 'query'), {
      teamId: ctx.insight.projectId,
      values: { ...variableValues(node.variables), ...valuesOf(node) },
      expressions: { filters: await hogqlFiltersAst(node.filters, ctx.insight) },
      timezone: ctx.insight.timezone,
      actions: hogqlActions(ctx.insight),
      queryId: ctx.statementId,
      timings,
    });
    return { ...result, timings, modifiers: {}, error: null, explain: null, metadata: null, query: result.hogql };
  },
  // HogQL may say now().
  cacheScope: thisMinute,
};

/** EventsQuery: the events table of PostHog's "explore events" (events-query.ts). */
const events: QueryKind<typeof EventsQueryResponse> = {
  response: EventsQueryResponse,
  async run(node, ctx) {
    const timings: { k: string; t: number }[] = [];
    const result = await runEventsQuery(ctx.clickhouse, ctx.sql, node, ctx.insight, { queryId: ctx.statementId, timings });
    return { ...result, timings, modifiers: {}, error: null };
  },
  cacheScope: thisMinute,
};

/** ActorsQuery: the persons behind one number of an insight (actors-query.ts). */
const actors: QueryKind<typeof ActorsQueryResponse> = {
  response: ActorsQueryResponse,
  async run(node, ctx) {
    const started = performance.now();
    const result = await runActorsQuery(ctx.clickhouse, ctx.sql, node, ctx.insight);
    return { ...result, hogql: null, timings: [{ k: './calculate', t: (performance.now() - started) / 1000 }], modifiers: {}, error: null };
  },
  // Relative date ranges move with the clock.
  cacheScope: thisMinute,
};

/** HogQLMetadata: whether a query is valid, with each error's position, without running it. */
const hogqlMetadata: QueryKind<typeof HogQLMetadataResponse> = {
  response: HogQLMetadataResponse,
  cache: false,
  async run(node, ctx) {
    const query = stringField(node, 'query');
    const language = node.language ?? 'hogQL';
    if (language !== 'hogQL') throw errors.validation('Only the hogQL language is supported', 'language');
    const errorsFound: { message: string; start: number | null; end: number | null; fix: null }[] = [];
    try {
      // Parsing and printing resolve every table, field and function; nothing reaches ClickHouse.
      await printHogQL(query, {
        teamId: ctx.insight.projectId,
        values: { ...variableValues(node.variables), ...valuesOf(node) },
        expressions: { filters: await hogqlFiltersAst(node.filters, ctx.insight) },
        actions: hogqlActions(ctx.insight),
      });
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
function insightBody<T>(results: T) {
  return { results, hasMore: false, timings: [], hogql: null, modifiers: {}, error: null };
}

/**
 * A trend, stickiness or lifecycle node: the computation `/insights/trend/` runs for the same request (the node
 * parser checks its kind).
 */
function seriesInsight<R extends TObject>(response: R): QueryKind<R> {
  return {
    response,
    async run(node, ctx) {
      const request = parseInsightQuery(node, 'query');
      const range = await insightRange(ctx.clickhouse, request.input, request.input.interval, ctx.insight);
      checkTrendPoints(ctx.limits, request.insight, request.input, range);
      return insightBody(await runInsight(ctx.clickhouse, request, ctx.insight)) as Omit<Static<R>, CacheField>;
    },
    async cacheScope(node, ctx) {
      const { input } = parseInsightQuery(node, 'query');
      return { ...rangeKey(await insightRange(ctx.clickhouse, input, input.interval, ctx.insight)), actions: await actionsUsed(input, ctx.insight) };
    },
  };
}

/** The same funnel computation as `/insights/funnel/`, from a FunnelsQuery node. */
const funnels: QueryKind<typeof FunnelsQueryResponse> = {
  response: FunnelsQueryResponse,
  async run(node, ctx) {
    const input = parseFunnelsQuery(node, 'query');
    checkFunnelPoints(ctx.limits, input, await insightRange(ctx.clickhouse, input, input.vizType === 'trends' ? input.interval : 'day', ctx.insight));
    return insightBody(await runFunnel(ctx.clickhouse, input, ctx.insight));
  },
  async cacheScope(node, ctx) {
    const input = parseFunnelsQuery(node, 'query');
    const range = rangeKey(await insightRange(ctx.clickhouse, input, input.vizType === 'trends' ? input.interval : 'day', ctx.insight));
    return { ...range, actions: await actionsUsed(input, ctx.insight) };
  },
};

/** The same retention computation as `/insights/retention/`, from a RetentionQuery node. */
const retention: QueryKind<typeof RetentionQueryResponse> = {
  response: RetentionQueryResponse,
  async run(node, ctx) {
    const input = parseRetentionQuery(node, 'query');
    checkRetentionPoints(ctx.limits, input, retentionRange(input, ctx.insight));
    return insightBody(await runRetention(ctx.clickhouse, input, ctx.insight));
  },
  async cacheScope(node, ctx) {
    const input = parseRetentionQuery(node, 'query');
    return { ...rangeKey(retentionRange(input, ctx.insight)), actions: await actionsUsed(input, ctx.insight) };
  },
};

/** The same paths computation as `/insights/path/`, from a PathsQuery node. */
const paths: QueryKind<typeof PathsQueryResponse> = {
  response: PathsQueryResponse,
  async run(node, ctx) {
    return insightBody(await runPaths(ctx.clickhouse, parsePathsQuery(node, 'query'), ctx.insight, nodeRuleAttr));
  },
  async cacheScope(node, ctx) {
    return rangeKey(await pathsRange(ctx.clickhouse, parsePathsQuery(node, 'query'), ctx.insight));
  },
};

/** Funnel correlation (`/insights/funnel/correlation/`'s computation) from a FunnelCorrelationQuery around a FunnelsQuery. */
const funnelCorrelation: QueryKind<typeof FunnelCorrelationQueryResponse> = {
  response: FunnelCorrelationQueryResponse,
  async run(node, ctx) {
    const result = await runFunnelCorrelation(ctx.clickhouse, parseCorrelationRequest({}, { query: node }), ctx.insight);
    return { ...insightBody(result), columns: ['event', 'success_count', 'failure_count', 'odds_ratio', 'correlation_type'], limit: 100, offset: 0 };
  },
  async cacheScope(node, ctx) {
    return rangeKey(await insightRange(ctx.clickhouse, parseCorrelationRequest({}, { query: node }), 'day', ctx.insight));
  },
};

/** A web query's cache scope: the resolved days (a relative range moves with the clock). */
function webRange(node: Record<string, unknown>, ctx: QueryContext): Promise<unknown> {
  const input = parseWebQuery(node);
  return Promise.resolve(rangeKey(resolveRange(input.dateFrom, input.dateTo, 'day', ctx.insight)));
}

/** Web analytics' numbers: visitors, views, sessions, session duration, bounce rate (docs/web-analytics.md). */
const webOverview: QueryKind<typeof WebOverviewQueryResponse> = {
  response: WebOverviewQueryResponse,
  run: (node, ctx) => runWebOverview(ctx.clickhouse, parseWebQuery(node), ctx.insight),
  cacheScope: webRange,
};

/** Web analytics' tables: visitors and views (and bounce rate) per page, source, device, place… */
const webStatsTable: QueryKind<typeof WebStatsTableQueryResponse> = {
  response: WebStatsTableQueryResponse,
  run: (node, ctx) => runWebStatsTable(ctx.clickhouse, parseWebStatsQuery(node), ctx.insight),
  cacheScope: webRange,
};

/** Web analytics' goals: the project's first actions as conversions. The actions' definitions are part of the cache scope. */
const webGoals: QueryKind<typeof WebGoalsQueryResponse> = {
  response: WebGoalsQueryResponse,
  run: (node, ctx) => runWebGoals(ctx.clickhouse, parseWebQuery(node), ctx.insight),
  async cacheScope(node, ctx) {
    return { range: await webRange(node, ctx), actions: (await ctx.insight.goalActions?.()) ?? [] };
  },
};

/** Web analytics' outbound links: the links to other sites clicked, with their visitors and clicks. */
const webExternalClicks: QueryKind<typeof WebExternalClicksTableQueryResponse> = {
  response: WebExternalClicksTableQueryResponse,
  run: (node, ctx) => runWebExternalClicks(ctx.clickhouse, parseWebExternalClicksQuery(node), ctx.insight),
  cacheScope: webRange,
};

/** A display wrapper: PostHog runs its `source` and answers the source's response unchanged. */
const wrapper: QueryKind = {
  response: 'source',
  cache: false,
  async run(node, ctx) {
    return ctx.runNode(node.source);
  },
};

export function queryKinds(): ReadonlyMap<string, QueryKind> {
  return new Map<string, QueryKind>([
    ['HogQLQuery', hogql],
    ['HogQLMetadata', hogqlMetadata],
    ['EventsQuery', events],
    ['ActorsQuery', actors],
    ['TrendsQuery', seriesInsight(TrendsQueryResponse)],
    ['StickinessQuery', seriesInsight(StickinessQueryResponse)],
    ['LifecycleQuery', seriesInsight(LifecycleQueryResponse)],
    ['FunnelCorrelationQuery', funnelCorrelation],
    ['FunnelsQuery', funnels],
    ['RetentionQuery', retention],
    ['PathsQuery', paths],
    ['WebOverviewQuery', webOverview],
    ['WebStatsTableQuery', webStatsTable],
    ['WebGoalsQuery', webGoals],
    ['WebExternalClicksTableQuery', webExternalClicks],
    ['ExperimentExposureQuery', experimentExposureQuery],
    ['ExperimentQuery', experimentQuery],
    ['InsightVizNode', wrapper],
    ['DataTableNode', wrapper],
    ['DataVisualizationNode', wrapper],
  ]);
}
