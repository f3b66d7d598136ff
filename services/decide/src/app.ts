import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router, type Request, type Response } from 'express';
import type { ProjectByToken, ProjectTokenCache } from '@plover/accounts';
import type { DecideConfig } from '@plover/config';
import { ApiError, type Logger } from '@plover/core';
import type { FlagEvaluation, Properties } from '@plover/flags';
import {
  createServiceApp,
  permissiveCors,
  queryString,
  readBody,
  routePath,
  sendError,
  sendJson,
  setPermissiveCorsHeaders,
  type FastRoute,
  type MetricsRegistry,
  type ServiceApp,
  type WorkersView,
} from '@plover/http';
import type { Sql } from '@plover/postgres';
import { decodeFlagsBody, malformed, tooLarge } from './decode';
import type { CachedDefinitions, DefinitionsCache } from './definitions';
import { evaluateRequest } from './evaluate';
import { clientIp, loadGeoIp, type GeoIpLookup } from './geoip';
import { decideLimits, type DecideLimits } from './limits';
import { decideMetrics } from './metrics';
import { authorizeDefinitionsRead } from './personal-key';
import { decideErrors, parseFlagsRequest } from './request';
import { publicEarlyAccessFeatures, publicSurveys } from './store';
import { capturePerformanceConfig, sessionRecordingConfig } from './session-recording';
import { staticScripts } from './static-scripts';
import { configFields, decideShaping, flagsShaping, renderBody, renderDefinitions, type Shaping } from './responses';

export { DefinitionsCache } from './definitions';

export interface DecideSettings {
  /** Person/group/cohort lookup timeout; flags needing it fail past this (default 200 ms). */
  lookupTimeoutMs?: number;
  /** Flag requests per project and calendar month; 0 (default) is unlimited. */
  flagQuotaMonthly?: number;
  /** Per-token rate limit (requests per second, burst); off when undefined. */
  rateLimit?: { perSecond: number; burst: number } | undefined;
  /** GeoIP lookup; none when undefined. */
  geoip?: GeoIpLookup | undefined;
  now?: () => Date;
}

export interface DecideDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  sql: Sql;
  trustProxy: boolean;
  /** Project tokens, shared with capture when both run in one process. */
  projectTokens: ProjectTokenCache;
  /** Flag definitions per project, with their poll; the composition root closes it. */
  definitions: DefinitionsCache;
  /** The `decide` config section (`decideSettings`), and in tests a fixed clock or other limits; defaults otherwise. */
  settings?: DecideSettings;
  /** The rate limit and quota counted elsewhere (a cluster's primary); counted in this process from `settings` otherwise. */
  limits?: DecideLimits;
  /** In a cluster worker: the primary's view of the workers (`/_health`, `/_ready`). */
  workers?: WorkersView | undefined;
}

const BODY_LIMIT = 20 * 1024 * 1024;
/** Project ids are Postgres `integer`s: a larger number is no project and must not reach a query. */
const MAX_PROJECT_ID = 2_147_483_647;

/** Decide's settings from its configuration section; loads the GeoIP database when enabled. */
export function decideSettings(config: DecideConfig): DecideSettings {
  return {
    lookupTimeoutMs: config.lookupTimeoutMs,
    flagQuotaMonthly: config.flagQuotaMonthly,
    rateLimit: config.rateLimit,
    geoip: config.geoip ? loadGeoIp() : undefined,
  };
}

function searchParams(req: IncomingMessage & { originalUrl?: string }): URLSearchParams {
  return new URLSearchParams(queryString(req.originalUrl ?? req.url));
}

const BODY_ERRORS = { tooLarge, decoding: malformed };
/** What an answer without definitions (quota limited, or none could be loaded) is written from. */
const NO_DEFINITIONS = renderDefinitions({ flags: [], hasActiveSurveys: false, replaySettings: undefined });

export interface DecideRoutes {
  /** `/decide` and `/flags`, what the SDKs call on every page load, served ahead of Express. */
  fast: FastRoute;
  /** Local evaluation, remote config, public early access features and surveys, posthog-js's scripts. */
  router: Router;
}

/** What an answer to one `/decide` or `/flags` request is written with. */
interface Reply {
  res: ServerResponse;
  shaping: Shaping;
  requestId: string;
  endpoint: 'decide' | 'flags';
}

/** The flag routes (`/decide`, `/flags`, local evaluation, remote config), with permissive CORS. */
export function decideRoutes(deps: DecideDeps): DecideRoutes {
  const settings = deps.settings ?? {};
  const { projectTokens: tokens, definitions: cache } = deps;
  const { rate, quota } = deps.limits ?? decideLimits(settings);
  const metrics = decideMetrics(deps.metrics);
  const lookupTimeoutMs = settings.lookupTimeoutMs ?? 200;

  async function project(token: string | undefined): Promise<ProjectByToken> {
    if (!token) throw decideErrors.noToken();
    let found: ProjectByToken | undefined;
    try {
      found = await tokens.get(token);
    } catch (error) {
      deps.logger.warn({ err: error }, 'project token lookup failed');
      throw ApiError.unavailable('The project could not be looked up; try again.');
    }
    if (!found) throw decideErrors.invalidToken();
    return found;
  }

  async function answer(req: IncomingMessage, res: ServerResponse, query: URLSearchParams, shaping: Shaping, endpoint: 'decide' | 'flags'): Promise<void> {
    const body = await decodeFlagsBody({
      query,
      contentType: req.headers['content-type'],
      contentEncoding: req.headers['content-encoding'],
      body: await readBody(req, BODY_LIMIT, BODY_ERRORS),
    });
    const requestId = randomUUID();
    if (body === undefined) {
      // Nothing to evaluate (a bare GET): the minimal answer of each endpoint.
      if (endpoint === 'decide') sendJson(res, 200, { ...configFields({ surveys: false, endpoint }), featureFlags: {}, requestId });
      else sendJson(res, 200, { flags: {}, errorsWhileComputingFlags: false, requestId, supportedCompression: ['gzip', 'gzip-js'] });
      return;
    }
    const request = parseFlagsRequest(body, query);
    if (rate && !(await rate.admit(request.token ?? `ip:${clientIp(req) ?? ''}`))) throw decideErrors.rateLimited();
    const { id: projectId } = await project(request.token);
    const distinctId = request.distinctId;
    if (distinctId === undefined || distinctId === '') throw decideErrors.noDistinctId();

    const reply: Reply = { res, shaping, requestId, endpoint };
    if (quota && !(await quota.admit(projectId))) return sendFlags(reply, new Map(), false, true);
    let definitions: CachedDefinitions;
    try {
      definitions = await cache.get(projectId);
    } catch (error) {
      deps.logger.warn({ err: error, projectId }, 'flag definitions could not be loaded');
      return sendFlags(reply, new Map(), true, false);
    }
    if (request.disableFlags) return sendFlags(reply, new Map(), false, false, definitions);

    let overrides: Properties = request.personProperties;
    if (!request.geoipDisable && settings.geoip) {
      const ip = clientIp(req);
      const geo = ip ? settings.geoip(ip) : undefined;
      if (geo) overrides = { ...geo, ...request.personProperties };
    }
    const result = await evaluateRequest(
      { sql: deps.sql, logger: deps.logger, lookupTimeoutMs, now: settings.now },
      projectId,
      definitions,
      { ...request, distinctId },
      overrides,
    );
    sendFlags(reply, result.flags, result.errorsWhileComputingFlags, false, definitions);
  }

  // Not a closure inside `answer`: under tsx (`npm start`) every closure named by `const` costs an
  // Object.defineProperty of its name (esbuild keepNames) each time it is created.
  function sendFlags(reply: Reply, flags: Map<string, FlagEvaluation>, errors: boolean, quotaLimited: boolean, definitions?: CachedDefinitions): void {
    const { res, shaping, requestId, endpoint } = reply;
    sendJson(
      res,
      200,
      renderBody(shaping, {
        flags,
        errorsWhileComputingFlags: errors,
        quotaLimited,
        requestId,
        rendered: definitions?.rendered ?? NO_DEFINITIONS,
        endpoint,
      }),
    );
  }

  async function localEvaluation(req: Request, res: Response): Promise<void> {
    const query = searchParams(req);
    const token = query.get('token') ?? undefined;
    const projectIdText = query.get('project_id') ?? '';
    let projectId: number;
    if (token) projectId = (await project(token)).id;
    else if (/^\d{1,10}$/.test(projectIdText) && Number(projectIdText) <= MAX_PROJECT_ID) projectId = Number(projectIdText);
    else throw ApiError.validation('Provide the project API key as ?token=.', 'token', 'required');
    await authorizeDefinitionsRead(deps.sql, req.headers.authorization, projectId);
    const definitions = await cache.get(projectId).catch((error: unknown) => {
      deps.logger.warn({ err: error, projectId }, 'flag definitions could not be loaded');
      throw ApiError.unavailable('Flag definitions are unavailable; try again.');
    });
    const { body, etag } = definitions.localEvaluation(query.has('send_cohorts'));
    res.setHeader('ETag', etag);
    res.setHeader('Cache-Control', 'no-cache');
    if (req.headers['if-none-match'] === etag) {
      res.status(304).end();
      return;
    }
    res.type('application/json').send(body);
  }

  async function remoteConfig(req: Request): Promise<{ token: string; config: Record<string, unknown> }> {
    const token = String(req.params.token ?? '');
    const found = await tokens.get(token).catch(() => {
      throw ApiError.unavailable('The project could not be looked up; try again.');
    });
    if (!found) throw ApiError.notFound();
    const definitions = await cache.get(found.id).catch(() => undefined);
    const { config: _config, toolbarParams: _toolbar, isAuthenticated: _auth, ...fields } = configFields({ surveys: definitions?.hasActiveSurveys ?? false });
    return {
      token,
      config: {
        token,
        ...fields,
        sessionRecording: sessionRecordingConfig(definitions?.replaySettings),
        capturePerformance: capturePerformanceConfig(definitions?.replaySettings),
        hasFeatureFlags: (definitions?.flags ?? []).some((flag) => flag.active),
      },
    };
  }

  /** `/decide`: OPTIONS gets the success body (PostHog); GET, POST and HEAD are evaluated. */
  function decide(req: IncomingMessage, res: ServerResponse): Promise<void> | void {
    if (req.method === 'OPTIONS') return sendJson(res, 200, { status: 1 });
    if (req.method !== 'GET' && req.method !== 'POST' && req.method !== 'HEAD') throw methodNotAllowed(req.method);
    const query = searchParams(req);
    return answer(req, res, query, decideShaping(query.get('v')), 'decide');
  }

  /** `/flags` (Rust): OPTIONS 204 with `Allow`, HEAD an empty 200, GET and POST evaluated. */
  function flags(req: IncomingMessage, res: ServerResponse): Promise<void> | void {
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { Allow: 'GET, POST, OPTIONS, HEAD' });
      res.end();
      return;
    }
    if (req.method === 'HEAD') {
      res.writeHead(200);
      res.end();
      return;
    }
    if (req.method !== 'GET' && req.method !== 'POST') throw methodNotAllowed(req.method);
    const query = searchParams(req);
    return answer(req, res, query, flagsShaping(query.get('v'), query.get('config')), 'flags');
  }

  const fastPaths = new Map([
    ['/decide', { handle: decide, requests: metrics.requests.labels('decide') }],
    ['/flags', { handle: flags, requests: metrics.requests.labels('flags') }],
  ]);
  const fast: FastRoute = (req, res) => {
    const route = fastPaths.get(routePath(req.url));
    if (route === undefined) return false;
    route.requests.inc();
    setPermissiveCorsHeaders(req, res);
    try {
      route.handle(req, res)?.catch((error: unknown) => sendError(req, res, error, deps.logger));
    } catch (error) {
      sendError(req, res, error, deps.logger);
    }
    return true;
  };

  const router = Router();
  router.use(['/flags', '/array', '/api/feature_flag', '/api/early_access_features', '/api/surveys'], permissiveCors());
  router.get(['/flags/definitions', '/flags/definitions/', '/api/feature_flag/local_evaluation', '/api/feature_flag/local_evaluation/'], localEvaluation);

  router.get('/array/:token/config', async (req, res) => {
    res.json((await remoteConfig(req)).config);
  });
  router.get('/array/:token/config.js', async (req, res) => {
    const { token, config } = await remoteConfig(req);
    const script =
      '(function() {\n  window._POSTHOG_REMOTE_CONFIG = window._POSTHOG_REMOTE_CONFIG || {};\n' +
      `  window._POSTHOG_REMOTE_CONFIG[${JSON.stringify(token)}] = {\n    config: ${JSON.stringify(config)},\n    siteApps: []\n  }\n})();`;
    res.type('application/javascript').send(script);
  });

  router.get(['/api/early_access_features', '/api/early_access_features/'], async (req, res) => {
    const { id } = await project(searchParams(req).get('token') ?? undefined);
    res.json({ earlyAccessFeatures: await publicEarlyAccessFeatures(deps.sql, id) });
  });
  router.get(['/api/surveys', '/api/surveys/'], async (req, res) => {
    const { id } = await project(searchParams(req).get('token') ?? undefined);
    res.json({ surveys: await publicSurveys(deps.sql, id) });
  });

  router.use(staticScripts());

  return { fast, router };
}

function methodNotAllowed(method: string | undefined): ApiError {
  return new ApiError(405, 'validation_error', 'method_not_allowed', `Method "${method}" not allowed.`);
}

export function createApp(deps: DecideDeps): ServiceApp {
  const routes = decideRoutes(deps);
  return createServiceApp({
    ...deps,
    checks: { postgres: () => deps.sql.ping() },
    fast: [routes.fast],
    mount: (app) => app.use(routes.router),
  });
}
