import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router, type Request, type Response } from 'express';
import { ApiError, type Logger } from '@plover/core';
import { permissiveCors, setPermissiveCorsHeaders } from './cors';
import { sendError } from './errors';
import { routePath, type FastRoute } from './fast';

/**
 * The SDK-facing routes (capture, flags, remote config, posthog-js's scripts) as data, like the management API's
 * route table: each {@link SdkRoute} is a method set, a path, the schemas of what it reads and answers, and a
 * handler. {@link sdkRouters} turns a table into what serves it and {@link sdkOpenApiDocument} into the OpenAPI
 * document at `/api/schema/sdk/` (docs/architecture.md#sdk-route-tables).
 */
export type SdkMethod = 'get' | 'head' | 'post' | 'options';

type JsonSchema = Record<string, unknown>;

interface SdkRouteShape {
  methods: readonly SdkMethod[];
  /**
   * Express path syntax (`/array/:token/config`), in the SDKs' spelling; a trailing slash is optional and case is
   * ignored when served. Further paths in `aliases` are served and documented alike.
   */
  path: string;
  aliases?: readonly string[];
  summary: string;
  /** The query parameters the route reads. */
  query?: Record<string, JsonSchema>;
  /**
   * The request document once decoded (JSON, a form's `data=`, base64, gzip or lz64 as the SDKs send it): the
   * handler decodes the body and validates it against this schema.
   */
  body?: JsonSchema;
  /** The status and media type of success, and the schema of its body when it is JSON. */
  response: { status: number; type: string; schema?: JsonSchema };
}

/**
 * A route answered from node:http's request event ahead of Express (the hot SDK paths: no path parameters).
 * Permissive CORS is set before the handler runs; a thrown or rejected error is rendered by `sendError`.
 */
export interface FastSdkRoute extends SdkRouteShape {
  fast: (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;
}

/** A route served by Express (path parameters, `res.send`'s conditional GET), with permissive CORS. */
export interface ExpressSdkRoute extends SdkRouteShape {
  express: (req: Request, res: Response) => Promise<void> | void;
}

export type SdkRoute = FastSdkRoute | ExpressSdkRoute;

export interface SdkRouterOptions {
  logger: Logger;
  /**
   * What a fast path answers to a method it does not declare: `not_found` falls through to Express (and its JSON
   * 404), `method_not_allowed` is a 405.
   */
  otherMethods: 'not_found' | 'method_not_allowed';
  /** Called with the route's path for every request to a fast path, whatever its method (request counters). */
  onRequest?: (path: string) => void;
  /** Called with every error a fast route answers (before it is rendered). */
  onError?: (error: unknown) => void;
}

export interface SdkRouters {
  /** The fast routes of the table; false for any other request. */
  fast: FastRoute;
  /** The Express routes of the table. */
  router: Router;
}

const isFast = (route: SdkRoute): route is FastSdkRoute => 'fast' in route;
const pathsOf = (route: SdkRoute): string[] => [route.path, ...(route.aliases ?? [])];

/** What serves a table: its fast routes keyed by {@link routePath}, and an Express router for the rest. */
export function sdkRouters(routes: readonly SdkRoute[], options: SdkRouterOptions): SdkRouters {
  const fastPaths = new Map<string, { path: string; methods: Map<string, FastSdkRoute['fast']> }>();
  const router = Router();
  for (const route of routes) {
    if (isFast(route)) {
      for (const path of pathsOf(route)) {
        const key = routePath(path);
        if (key.includes(':')) throw new Error(`A fast route has no path parameters: ${path}`);
        const entry = fastPaths.get(key) ?? { path: route.path, methods: new Map() };
        for (const method of route.methods) entry.methods.set(method.toUpperCase(), route.fast);
        fastPaths.set(key, entry);
      }
    } else {
      const paths = pathsOf(route);
      router.use(paths, permissiveCors());
      for (const method of route.methods) router[method](paths, route.express);
    }
  }

  const fail = (req: IncomingMessage, res: ServerResponse, error: unknown): void => {
    options.onError?.(error);
    sendError(req, res, error, options.logger);
  };
  const fast: FastRoute = (req, res) => {
    const entry = fastPaths.get(routePath(req.url));
    if (entry === undefined) return false;
    options.onRequest?.(entry.path);
    setPermissiveCorsHeaders(req, res);
    const handle = entry.methods.get(req.method ?? '');
    if (handle === undefined) {
      if (options.otherMethods === 'not_found') return false;
      fail(req, res, new ApiError(405, 'validation_error', 'method_not_allowed', `Method "${req.method}" not allowed.`));
      return true;
    }
    try {
      handle(req, res)?.catch((error: unknown) => fail(req, res, error));
    } catch (error) {
      fail(req, res, error);
    }
    return true;
  };
  return { fast, router };
}

const ERROR_RESPONSE = {
  description: 'Error',
  content: {
    'application/json': {
      schema: {
        type: 'object',
        required: ['type', 'code', 'detail', 'attr'],
        properties: { type: { type: 'string' }, code: { type: 'string' }, detail: { type: 'string' }, attr: { type: ['string', 'null'] } },
      },
    },
  },
};

/** `/array/:token/config` → `/array/{token}/config`. */
export function openApiSdkPath(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, '{$1}');
}

function operationOf(route: SdkRoute, path: string): Record<string, unknown> {
  const parameters = [
    ...[...path.matchAll(/\{([A-Za-z_]+)\}/g)].map((match) => ({ name: match[1], in: 'path', required: true, schema: { type: 'string' } })),
    ...Object.entries(route.query ?? {}).map(([name, schema]) => ({ name, in: 'query', required: false, schema })),
  ];
  const { status, type, schema } = route.response;
  return {
    summary: route.summary,
    parameters,
    ...(route.body ? { requestBody: { required: false, content: { 'application/json': { schema: route.body } } } } : {}),
    responses: { [String(status)]: { description: 'Success', content: { [type]: { schema: schema ?? { type: 'string' } } } }, default: ERROR_RESPONSE },
  };
}

/** The OpenAPI 3.1 document of SDK route tables: every path and alias of every route, with each of its methods. */
export function sdkOpenApiDocument(routes: readonly SdkRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    for (const path of pathsOf(route).map(openApiSdkPath)) {
      for (const method of route.methods) (paths[path] ??= {})[method] = operationOf(route, path);
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Plover SDK API',
      version: '0.1.0',
      description:
        'The routes the PostHog SDKs call: capture, feature flags, remote config and posthog-js scripts. Authenticated by the project API key in the request unless a route says otherwise.',
    },
    paths,
  };
}

/** `/api/schema/sdk/`: the document of the tables, built once. */
export function sdkSchemaRouter(routes: readonly SdkRoute[]): Router {
  const document = JSON.stringify(sdkOpenApiDocument(routes));
  const router = Router();
  router.get('/api/schema/sdk', (_req, res) => {
    res.type('application/vnd.oai.openapi+json').send(document);
  });
  return router;
}
