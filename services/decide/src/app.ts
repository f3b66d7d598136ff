import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import { PersonalKeyAuth, type AuthFailureThrottle, type ProjectByToken, type ProjectTokenCache } from '@plover/accounts';
import type { DecideConfig } from '@plover/config';
import { ApiError, type Logger } from '@plover/core';
import type { FlagEvaluation, Properties } from '@plover/flags';
import {
  createServiceApp,
  queryString,
  readBody,
  sdkRouters,
  sdkSchemaRouter,
  sendJson,
  type MetricsRegistry,
  type SdkRoute,
  type SdkRouters,
  type ServiceApp,
  type WorkersView,
} from '@plover/http';
import type { Sql } from '@plover/postgres';
import { decodeFlagsBody, malformed, tooLarge } from './decode';
import { DECIDE_DEFAULTS, type CachedDefinitions, type DefinitionsCache } from './definitions';
import { evaluateRequest } from './evaluate';
import { clientIp, loadFlagGeoIp, type GeoIpLookup } from './geoip';
import { decideLimits, type DecideLimits } from './limits';
import { decideMetrics } from './metrics';
import { authorizeDefinitionsRead } from './personal-key';
import { decideErrors, flagsBodySchema, parseFlagsRequest } from './request';
import { publicEarlyAccessFeatures, publicSurveys } from './store';
import { capturePerformanceConfig, logsConfig, sessionRecordingConfig } from './session-recording';
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
  /** Failed personal-key authentications (local evaluation) before 429; embedded mode shares the management API's. */
  authThrottle?: AuthFailureThrottle;
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
    geoip: config.geoip ? loadFlagGeoIp() : undefined,
  };
}

function searchParams(req: IncomingMessage & { originalUrl?: string }): URLSearchParams {
  return new URLSearchParams(queryString(req.originalUrl ?? req.url));
}

const BODY_ERRORS = { tooLarge, decoding: malformed };
/** What an answer without definitions (quota limited, or none could be loaded) is written from. */
const NO_DEFINITIONS = renderDefinitions({ flags: [], hasActiveSurveys: false, replaySettings: undefined });

/**
 * Decide's route table: `/decide` and `/flags`, what the SDKs call on every page load, served ahead of Express;
 * local evaluation, remote config, public early access features and surveys, posthog-js's scripts by Express.
 */
export interface DecideRoutes extends SdkRouters {
  table: SdkRoute[];
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
  const lookupTimeoutMs = settings.lookupTimeoutMs ?? DECIDE_DEFAULTS.lookupTimeoutMs;
  const personalKeys = new PersonalKeyAuth(deps.sql, deps.authThrottle);

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
    if (result.regexUndecided > 0) metrics.regexUndecided.inc(result.regexUndecided);
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
    await authorizeDefinitionsRead(deps.sql, personalKeys, { authorization: req.headers.authorization, address: req.ip ?? 'unknown' }, projectId);
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
        logs: logsConfig(definitions?.replaySettings),
        hasFeatureFlags: (definitions?.flags ?? []).some((flag) => flag.active),
      },
    };
  }

  /** `/decide` (GET, POST and HEAD) and `/flags` (GET and POST): evaluated. */
  const evaluated = (endpoint: 'decide' | 'flags') => (req: IncomingMessage, res: ServerResponse) => {
    const query = searchParams(req);
    const shaping = endpoint === 'decide' ? decideShaping(query.get('v')) : flagsShaping(query.get('v'), query.get('config'));
    return answer(req, res, query, shaping, endpoint);
  };
  const flagsQuery = { token: TEXT, api_key: TEXT, data: TEXT, compression: TEXT, v: TEXT };

  /** A project's public list (by `?token=`), as `{[field]: [...]}`. */
  const publicList = (path: string, field: string, summary: string, read: (sql: Sql, projectId: number) => Promise<unknown[]>): SdkRoute => ({
    methods: ['get'],
    path,
    summary,
    query: { token: TEXT },
    response: { status: 200, type: 'application/json', schema: listOf(field) },
    express: async (req, res) => {
      const { id } = await project(searchParams(req).get('token') ?? undefined);
      res.json({ [field]: await read(deps.sql, id) });
    },
  });

  const table: SdkRoute[] = [
    {
      methods: ['get', 'post', 'head'],
      path: '/decide/',
      summary: "Flags and config for one person (the legacy endpoint; `v` picks the answer's shape).",
      query: flagsQuery,
      body: flagsBodySchema,
      response: { status: 200, type: 'application/json', schema: OBJECT },
      fast: evaluated('decide'),
    },
    {
      methods: ['options'],
      path: '/decide/',
      summary: 'A preflight, answered with the success body as PostHog does.',
      response: { status: 200, type: 'application/json', schema: OBJECT },
      fast: (_req, res) => sendJson(res, 200, { status: 1 }),
    },
    {
      methods: ['get', 'post'],
      path: '/flags/',
      summary: 'Flags (and with `config=true` the remote config) for one person.',
      query: { ...flagsQuery, config: TEXT },
      body: flagsBodySchema,
      response: { status: 200, type: 'application/json', schema: OBJECT },
      fast: evaluated('flags'),
    },
    {
      methods: ['head'],
      path: '/flags/',
      summary: 'An empty 200.',
      response: { status: 200, type: 'application/json' },
      fast: (_req, res) => {
        res.writeHead(200);
        res.end();
      },
    },
    {
      methods: ['options'],
      path: '/flags/',
      summary: 'A preflight: 204 with `Allow`.',
      response: { status: 204, type: 'application/json' },
      fast: (_req, res) => {
        res.writeHead(204, { Allow: 'GET, POST, OPTIONS, HEAD' });
        res.end();
      },
    },
    {
      methods: ['get'],
      path: '/api/feature_flag/local_evaluation/',
      aliases: ['/flags/definitions/'],
      summary: "A project's flag definitions for local evaluation (a personal API key with feature_flag:read, or the project's secret key); ETag/304.",
      query: { token: TEXT, project_id: TEXT, send_cohorts: TEXT },
      response: { status: 200, type: 'application/json', schema: OBJECT },
      express: localEvaluation,
    },
    {
      methods: ['get'],
      path: '/array/:token/config',
      summary: "The project's remote config as JSON.",
      response: { status: 200, type: 'application/json', schema: OBJECT },
      express: async (req, res) => {
        res.json((await remoteConfig(req)).config);
      },
    },
    {
      methods: ['get'],
      path: '/array/:token/config.js',
      summary: 'The remote config as a script setting `window._POSTHOG_REMOTE_CONFIG`.',
      response: { status: 200, type: 'application/javascript' },
      express: async (req, res) => {
        const { token, config } = await remoteConfig(req);
        const script =
          '(function() {\n  window._POSTHOG_REMOTE_CONFIG = window._POSTHOG_REMOTE_CONFIG || {};\n' +
          `  window._POSTHOG_REMOTE_CONFIG[${JSON.stringify(token)}] = {\n    config: ${JSON.stringify(config)},\n    siteApps: []\n  }\n})();`;
        res.type('application/javascript').send(script);
      },
    },
    publicList('/api/early_access_features/', 'earlyAccessFeatures', "The project's public early access features.", publicEarlyAccessFeatures),
    publicList('/api/surveys/', 'surveys', "The project's active surveys.", publicSurveys),
    // Plover keeps no product tours and no web experiments: a project's lists are empty, as PostHog answers a project
    // that has none (an unknown route would make posthog-js log an error on every page load).
    publicList('/api/product_tours/', 'product_tours', "The project's product tours (Plover has none: always empty).", noneKept),
    publicList('/api/web_experiments/', 'experiments', "The project's web experiments (Plover has none: always empty).", noneKept),
    {
      methods: ['get', 'post'],
      path: '/api/conversations/v1/widget/message',
      aliases: [
        '/api/conversations/v1/widget/messages/:ticket_id',
        '/api/conversations/v1/widget/messages/:ticket_id/read',
        '/api/conversations/v1/widget/tickets',
        '/api/conversations/v1/widget/restore',
        '/api/conversations/v1/widget/restore/request',
      ],
      summary: "posthog-js's support widget: refused as PostHog refuses a project whose conversations are off (Plover has none).",
      response: { status: 403, type: 'application/json', schema: OBJECT },
      express: () => {
        throw conversationsOff();
      },
    },
    ...staticScripts(),
  ];

  const requests = new Map(['/decide/', '/flags/'].map((path) => [path, metrics.requests.labels(path.slice(1, -1))]));
  return {
    ...sdkRouters(table, { logger: deps.logger, otherMethods: 'method_not_allowed', onRequest: (path) => requests.get(path)?.inc() }),
    table,
  };
}

const noneKept = (): Promise<unknown[]> => Promise.resolve([]);
/** PostHog's answer to the widget when no project has conversations on (its widget authentication's refusal). */
const conversationsOff = () => new ApiError(403, 'authentication_error', 'authentication_failed', 'Invalid token or conversations not enabled');

const TEXT = { type: 'string' };
const OBJECT = { type: 'object' };
const listOf = (field: string) => ({ type: 'object', required: [field], properties: { [field]: { type: 'array', items: OBJECT } } });

export function createApp(deps: DecideDeps): ServiceApp {
  const routes = decideRoutes(deps);
  return createServiceApp({
    ...deps,
    checks: { postgres: () => deps.sql.ping() },
    fast: [routes.fast],
    mount: (app) => app.use(routes.router, sdkSchemaRouter(routes.table)),
  });
}
