/**
 * `/query/` (scope query:read): PostHog's query API. `POST /query/` (or `/query/{Kind}/`) runs a query node of any
 * registered kind (kinds.ts) and answers its response with the cache fields; at most {@link MAX_RUNNING} queries
 * of a project run at once (then 429 with Retry-After). `GET /query/:id/` answers a query's status while it runs
 * (202) and once done (200, with its results) for {@link STATUS_TTL_MS}; `DELETE /query/:id/` cancels a running
 * query's ClickHouse statement. docs/query.md.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Request } from 'express';
import { Type } from '@sinclair/typebox';
import { cancelHogQL } from '@plover/hogql';
import { InsightResultCache, stableJson, type CacheRequest, type CachedResult, type InsightContext } from '@plover/insights';
import type { ClickHouse } from '@plover/clickhouse';
import type { Sql } from '@plover/postgres';
import type { QueryLimits } from '@plover/config';
import { ApiError } from '@plover/core';
import { analysisOf, type ManagementDeps } from '../http/deps';
import { projectOf } from '../http/auth';
import { errors } from '../shared/errors';
import { withDashboardFilters, withVariables } from '../shared/dashboard-filters';
import { Reply, type Route, type RouteInput } from '../http/route-table';
import { insightContext } from '../shared/insight-context';
import type { NodeRunner, RunMode } from '../shared/node-runner';
import { queryKinds, type QueryContext, type QueryKind } from './kinds';
import { QueryCancelled, QueryRequest, QueryStatus } from './schemas';

export const MAX_RUNNING = 3;
export const STATUS_TTL_MS = 20 * 60_000;
const MAX_STATUSES = 1000;
/** How long a client should wait before asking for a fresh computation of the same query. */
const CLIENT_REFRESH_MS = 60_000;
const CLIENT_QUERY_ID = /^[A-Za-z0-9_-]{1,128}$/;
/** `refresh` values that skip the cache; every other mode answers from it when it can, else computes (never `peek`). */
const FORCE = new Set<unknown>([true, 'force_blocking', 'force_async']);
/** `refresh` values that answer a cached result at once, whatever its age, and compute a miss in the background (202). */
const ASYNC = new Set<unknown>(['async', 'lazy_async', 'async_except_on_cache_miss']);

interface QueryStatus {
  id: string;
  projectId: number;
  statementId: string;
  complete: boolean;
  error: boolean;
  error_message: string | null;
  results: unknown;
  start_time: string;
  end_time: string | null;
  expiresAt: number;
}

function statusBody(status: QueryStatus): Record<string, unknown> {
  return {
    id: status.id,
    query_async: true,
    team_id: status.projectId,
    insight_id: null,
    dashboard_id: null,
    complete: status.complete,
    error: status.error,
    error_message: status.error_message,
    results: status.results,
    pickup_time: status.start_time,
    start_time: status.start_time,
    end_time: status.end_time,
    expiration_time: new Date(status.expiresAt).toISOString(),
    task_id: null,
    labels: null,
  };
}

/** The `:id` path parameter (a query's id, or the kind in `POST /query/{Kind}/`). */
function pathId(req: Request): string | undefined {
  const { id } = req.params;
  return typeof id === 'string' ? id : undefined;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function nodeOf(value: unknown, attr = 'query'): Record<string, unknown> & { kind: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || typeof (value as { kind?: unknown }).kind !== 'string') {
    throw errors.validation('A query node is an object with a string `kind`.', attr);
  }
  return value as Record<string, unknown> & { kind: string };
}

/** What a wrapper's source answers in `peek` mode when it has no cached result. */
class NotCached extends Error {}

export interface RunnerOptions {
  kinds?: ReadonlyMap<string, QueryKind>;
  cache?: InsightResultCache;
}

/**
 * The {@link NodeRunner} over `kinds` and `cache`: a node's kind validates and computes it, cached by the node
 * and the kind's cache scope (a resolved date range) at the project's data version.
 */
export function nodeRunner(
  { clickhouse, sql }: { clickhouse: ClickHouse; sql: Sql },
  limits: QueryLimits,
  { kinds = queryKinds(), cache = new InsightResultCache() }: RunnerOptions = {},
): NodeRunner {
  async function runNode(raw: unknown, ctx: Omit<QueryContext, 'runNode'>, mode: RunMode): Promise<Record<string, unknown> | null> {
    const node = nodeOf(raw);
    const kind = kinds.get(node.kind);
    if (!kind) throw errors.validation(`Unsupported query kind: ${node.kind}`, 'kind');
    const full: QueryContext = {
      ...ctx,
      async runNode(source) {
        const response = await runNode(source ?? null, ctx, mode);
        if (response === null) throw new NotCached();
        return response;
      },
    };
    const { timezone, projectId } = ctx.insight;
    if (kind.cache === false) {
      try {
        return await kind.run(node, full);
      } catch (error) {
        // A wrapper whose source has no cached result in `peek` mode.
        if (error instanceof NotCached) return null;
        throw error;
      }
    }
    let computed: CachedResult<Record<string, unknown>> | undefined;
    let request: CacheRequest = { kind: node.kind, projectId, input: node, range: null };
    if (mode === 'peek') {
      computed = cache.peek(request);
      if (!computed) return null;
    } else {
      request = { ...request, range: kind.cacheScope ? await kind.cacheScope(node, full) : null };
      computed = await cache.run(clickhouse, request, mode === 'force', () => kind.run(node, full));
    }
    const lastRefresh = computed.lastRefresh;
    return {
      ...computed.result,
      is_cached: computed.isCached,
      last_refresh: lastRefresh.toISOString(),
      next_allowed_client_refresh: new Date(lastRefresh.getTime() + CLIENT_REFRESH_MS).toISOString(),
      cache_key: createHash('sha256').update(stableJson(request)).digest('hex'),
      cache_target_age: null,
      timezone,
      query_status: null,
    };
  }
  return (node, insight, mode, statementId = randomUUID()) => runNode(node, { clickhouse, sql, limits, insight, statementId }, mode);
}

export function queryRoutes(deps: ManagementDeps, options: RunnerOptions = {}): Route[] {
  const { sql, clickhouse } = deps;
  const { kinds = queryKinds() } = options;
  const run = nodeRunner({ clickhouse, sql }, analysisOf(deps).limits, { ...options, kinds });
  const running = new Map<number, number>();
  const statuses = new Map<string, QueryStatus>();

  function remember(status: QueryStatus): void {
    const now = Date.now();
    for (const [key, old] of statuses) if (old.expiresAt < now || statuses.size >= MAX_STATUSES) statuses.delete(key);
    statuses.set(`${status.projectId}:${status.id}`, status);
  }

  /** Takes one of the project's running slots, or throws the 429 that says there is none. */
  function takeSlot(projectId: number): () => void {
    const active = running.get(projectId) ?? 0;
    if (active >= MAX_RUNNING) {
      throw new ApiError(
        429,
        'throttled',
        'throttled',
        `Too many queries running for this project (at most ${MAX_RUNNING} at once). Try again shortly.`,
        null,
        1,
      );
    }
    running.set(projectId, active + 1);
    return () => {
      const left = (running.get(projectId) ?? 1) - 1;
      if (left > 0) running.set(projectId, left);
      else running.delete(projectId);
    };
  }

  /** Runs `node` in `status`'s slot, recording its answer or error there. */
  async function execute(node: Record<string, unknown>, insight: InsightContext, mode: RunMode, status: QueryStatus, release: () => void) {
    try {
      const response = (await run(node, insight, mode, status.statementId))!;
      status.results = response;
      return response;
    } catch (error) {
      status.error = true;
      status.error_message = error instanceof ApiError ? error.detail : 'The query failed';
      throw error;
    } finally {
      status.complete = true;
      status.end_time = new Date().toISOString();
      release();
    }
  }

  async function create(req: Request, { body }: RouteInput): Promise<unknown> {
    let node = nodeOf(body.query);
    // A dashboard's filters and variables, applied to the query before it runs (and before it is cached).
    if (isObject(body.filters_override)) node = nodeOf(withDashboardFilters(node, body.filters_override));
    if (isObject(body.variables_override)) node = nodeOf(withVariables(node, body.variables_override));
    // `POST /query/{Kind}/`: the path names the kind (the same path is a query's id for GET and DELETE).
    const pathKind = pathId(req);
    if (pathKind !== undefined && pathKind !== node.kind) throw errors.validation(`Query kind mismatch: ${pathKind} != ${node.kind}`, 'kind');
    const project = projectOf(req);
    const clientId = body.client_query_id;
    if (clientId !== undefined && (typeof clientId !== 'string' || !CLIENT_QUERY_ID.test(clientId))) {
      throw errors.validation('client_query_id must be 1-128 letters, digits, _ or -', 'client_query_id');
    }
    const insight = insightContext(sql, project);
    const refresh: unknown = body.async === true && body.refresh === undefined ? 'async' : body.refresh;
    if (ASYNC.has(refresh)) {
      // Async modes answer a result already computed for this query at once (computing it afresh behind, if the
      // data changed and a slot is free); a cache miss is computed behind unless the mode blocks on a miss.
      const cached = await run(node, insight, 'peek');
      if (cached !== null) {
        if ((running.get(project.id) ?? 0) < MAX_RUNNING) {
          const release = takeSlot(project.id);
          run(node, insight, 'cached').then(release, release);
        }
        return cached;
      }
    }
    const release = takeSlot(project.id);
    const now = new Date();
    const status: QueryStatus = {
      id: clientId ?? randomUUID().replace(/-/g, ''),
      projectId: project.id,
      statementId: randomUUID(),
      complete: false,
      error: false,
      error_message: null,
      results: null,
      start_time: now.toISOString(),
      end_time: null,
      expiresAt: now.getTime() + STATUS_TTL_MS,
    };
    remember(status);
    const mode: RunMode = FORCE.has(refresh) ? 'force' : 'cached';
    const computing = execute(node, insight, mode, status, release);
    if ((refresh !== 'force_async' && !ASYNC.has(refresh)) || refresh === 'async_except_on_cache_miss') return computing;
    // The error stays in the status, for GET /query/:id/.
    computing.catch(() => undefined);
    return new Reply(202, { query_status: statusBody(status) });
  }

  function find(req: Request): QueryStatus {
    const id = pathId(req) ?? '';
    const status = statuses.get(`${projectOf(req).id}:${id}`);
    if (!status || status.expiresAt < Date.now()) throw errors.notFound(`Query ${id} not found.`);
    return status;
  }

  // What POST answers: the response of any kind it runs (a wrapper answers its source's).
  const responses = [...new Set([...kinds.values()].flatMap((kind) => (kind.response === 'source' ? [] : [kind.response])))];
  const bodyAndScope = { scope: 'query:read', body: QueryRequest, response: { status: 200, schema: Type.Union(responses) } };
  return [
    {
      method: 'post',
      path: '/query',
      summary: 'Run a query node (HogQLQuery, HogQLMetadata, TrendsQuery, wrappers) for the project',
      ...bodyAndScope,
      handler: create,
    },
    { method: 'post', path: '/query/:id', summary: 'Run a query node whose kind must be the one in the path', ...bodyAndScope, handler: create },
    {
      method: 'get',
      path: '/query/:id',
      scope: 'query:read',
      summary: "A query's status: 202 while it runs, 200 with its results once done",
      response: { status: 200, schema: QueryStatus },
      handler: (req) => {
        const status = find(req);
        return status.complete ? { query_status: statusBody(status) } : new Reply(202, { query_status: statusBody(status) });
      },
    },
    {
      method: 'delete',
      path: '/query/:id',
      scope: 'query:read',
      summary: "Cancel a running query's ClickHouse statement",
      response: { status: 200, schema: QueryCancelled },
      handler: async (req) => {
        const status = find(req);
        if (status.complete) return { message: 'Query already complete' };
        await cancelHogQL(clickhouse, status.statementId);
        return { message: 'Cancelled query on clickhouse' };
      },
    },
  ];
}
