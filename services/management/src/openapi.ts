import { Router } from 'express';
import { MAX_LIMIT } from './http/render';
import type { Route } from './http/route-table';
import { PROJECT_MOUNTS, type RouteTable } from './routes';
import { componentName, ErrorBody, type JsonSchema } from './shared/schema';

/**
 * OpenAPI 3.1 for the routes this service serves, derived from the route table (http/route-table.ts) and the
 * schemas the routes declare (each feature's schemas.ts): a schema named with `component()` is a component, and
 * `$ref`'d wherever it appears. Served without authentication at /api/schema/, as PostHog does.
 */
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** The components a document collects while it renders schemas. */
type Components = Map<string, JsonSchema>;

/** `schema` as the document shows it: named sub-schemas as `$ref`s (collected into `components`), symbols dropped. */
function rendered(schema: unknown, components: Components, top?: unknown): unknown {
  if (Array.isArray(schema)) return schema.map((item) => rendered(item, components));
  if (typeof schema !== 'object' || schema === null) return schema;
  const name = componentName(schema);
  if (name !== undefined && schema !== top) {
    if (!components.has(name)) {
      components.set(name, {});
      components.set(name, rendered(schema, components, schema) as JsonSchema);
    }
    return ref(name);
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, rendered(value, components)]));
}

const queryParam = (name: string, schema: JsonSchema, required = false) => ({ name, in: 'query', required, schema });
const pathParams = (path: string) => [...path.matchAll(/\{([a-z_]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
const errorResponse = { description: 'Error', content: { 'application/json': { schema: ref('Error') } } };

/** `/api/projects/:project_id` + `/persons/:id` → `/api/projects/{project_id}/persons/{id}/`. */
export function openApiPath(mount: string, path: string): string {
  // A path naming a file (`….json`) has no trailing slash.
  const slash = /\.[a-z]+$/.test(path) ? '' : '/';
  return `${mount}${path === '/' ? '' : path}${slash}`.replace(/:([A-Za-z_]+)/g, '{$1}');
}

function successBody(route: Route, components: Components): unknown {
  const schema = route.response.schema as JsonSchema | undefined;
  if (!schema && !route.paginated) return undefined;
  const item = schema ? rendered(schema, components) : { type: 'object' };
  if (route.paginated === 'has_next') return { type: 'object', properties: { results: { type: 'array', items: item }, has_next: { type: 'boolean' } } };
  if (route.paginated === 'envelope') {
    return {
      type: 'object',
      properties: {
        count: { type: 'integer' },
        next: { type: ['string', 'null'] },
        previous: { type: ['string', 'null'] },
        results: { type: 'array', items: item },
      },
    };
  }
  return item;
}

function operationOf(route: Route, path: string, components: Components): Record<string, unknown> {
  const query = route.query;
  const parameters = [
    ...pathParams(path),
    ...(route.paginated
      ? [queryParam('limit', { type: 'integer', minimum: 1, maximum: MAX_LIMIT }), queryParam('offset', { type: 'integer', minimum: 0 })]
      : []),
    ...(route.csv ? [queryParam('format', { enum: route.jsonl ? ['json', 'csv', 'jsonl'] : ['json', 'csv'] })] : []),
    ...Object.entries((query?.properties ?? {}) as Record<string, JsonSchema>).map(([name, schema]) =>
      queryParam(name, rendered(schema, components) as JsonSchema, query?.required?.includes(name)),
    ),
  ];
  const schema = successBody(route, components);
  const content = schema && {
    'application/json': { schema },
    ...(route.csv ? { 'text/csv': { schema: { type: 'string' } } } : {}),
    ...(route.jsonl ? { 'application/jsonl': { schema: { type: 'string' } } } : {}),
  };
  return {
    summary: route.summary,
    ...(route.scope ? { 'x-required-scope': route.scope } : { security: [] }),
    parameters,
    ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: rendered(route.body, components) } } } } : {}),
    responses: { [String(route.response.status)]: { description: 'Success', ...(content ? { content } : {}) }, default: errorResponse },
  };
}

/** The OpenAPI 3.1 document of a route table: every route under each of its mounts. */
export function openApiDocument(table: RouteTable): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const components: Components = new Map();
  rendered(ErrorBody, components);
  const mounted: Array<[mount: string, routes: Route[]]> = [
    ['/api', table.api],
    ...PROJECT_MOUNTS.map((mount): [string, Route[]] => [`/api${mount}`, table.project]),
    ['', table.shared],
  ];
  for (const [mount, routes] of mounted) {
    for (const route of routes) {
      const path = openApiPath(mount, route.path);
      (paths[path] ??= {})[route.method] = operationOf(route, path, components);
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Plover management API', version: '0.1.0' },
    components: {
      schemas: Object.fromEntries([...components].sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: { PersonalAPIKey: { type: 'http', scheme: 'bearer', description: '`phx_…` personal API key' } },
    },
    security: [{ PersonalAPIKey: [] }],
    paths,
  };
}

/** `/api/schema/`: the document of `table`, built once. */
export function schemaRoutes(table: RouteTable): Router {
  const router = Router();
  const document = JSON.stringify(openApiDocument(table));
  router.get('/schema', (_req, res) => {
    res.type('application/vnd.oai.openapi+json').send(document);
  });
  return router;
}
