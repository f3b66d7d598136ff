import { Router, type Request, type RequestHandler, type Response } from 'express';
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { AnalysisGate } from './analysis-gate';
import { requireScope } from './auth';
import { bodyOf, type Body } from './body';
import { errors } from '../shared/errors';
import { validateBody, valueValidator, type JsonSchema } from '../shared/schema';
import {
  csvResponse,
  DEFAULT_LIMIT,
  envelope,
  formatOf,
  pageOf,
  queryValue,
  sendCsv,
  streamCsv,
  streamJsonl,
  jsonlOf,
  rowsOf,
  rowsOfLines,
  type ExportBatch,
  type RowSource,
  type JsonlSource,
  type Format,
  type Page,
} from './render';

/**
 * The management API as data: every route is one {@link Route} in a feature's table (`src/<feature>/routes.ts`),
 * and everything that used to be wired by hand per route is derived here from those declarations: the Express
 * handlers (scope, then page, query and body validated before the handler runs), the 405 answers of known paths,
 * the pagination envelope, `format=csv`, and the OpenAPI operations (openapi.ts). docs/management.md#route-table.
 */
export type Method = 'get' | 'post' | 'patch' | 'put' | 'delete';

/**
 * A route's query parameters as the schema of the query object (`Type.Object` of {@link Q} parameters). A parameter
 * whose schema has `type: "boolean"` is read from `true`/`false`/`1`/`0` (any case), one with `type: "integer"` from
 * its digits, before validation; an empty value is an absent one; a repeated parameter is its last value.
 */
export type QuerySchema = TObject;

/**
 * How a paginated listing answers (`limit`/`offset` always parsed as http/render.ts's `pageOf`: 400 on a bad
 * value, never clamped): `envelope` is DRF's `{count, next, previous, results}`, `has_next` the recordings
 * listing's `{results, has_next, …fields}`.
 */
export type Pagination = 'envelope' | 'has_next';

/** What a paginated route's handler answers with: one page of rows and whether more follow. */
export interface Paged<T = unknown> {
  results: T[];
  hasMore: boolean;
  /** The listing's total, when the envelope carries one. */
  count?: number;
  /** Further fields of a `has_next` page (`version`). */
  fields?: Record<string, unknown>;
}

/**
 * `format=csv` of a route. `body` (the default): the JSON answer's rows, i.e. a page's `results`, a list's items,
 * an object as one row. `export`: the handler answers `format=csv` itself with a {@link CsvExport} (a streamed
 * listing or a text of its own). Routes without a CSV shape answer `format=csv` with 404, as DRF does for a
 * renderer a view does not offer.
 */
export interface CsvShape {
  /** The download's name, without `.csv`. */
  file: string;
  rows?: 'body' | 'export';
}

export interface RouteInput<B = Body, Q = Readonly<Record<string, string | number | boolean | undefined>>> {
  /** The validated body (`{}` on a route that declares none). */
  body: B;
  /** The declared query parameters, read and validated (see {@link QuerySchema}); absent ones are missing. */
  query: Q;
  /** The requested page on a paginated route; the first default page elsewhere. */
  page: Page;
  format: Format;
}

export type StaticOr<S, Else> = S extends TSchema ? Static<S> : Else;

/** What a handler answers on success: a page of items on a paginated route, the response schema's type elsewhere. */
export type Output<R, P> = P extends Pagination ? Paged<StaticOr<R, unknown>> : StaticOr<R, void>;

/** A handler's answer: its route's output, or one of the other answers (another status, a CSV of its own, a stream). */
export type Answer<T> = T | Reply | CsvExport | Written;

/**
 * One route, declared as data. Its schemas are the one description of its shapes: `body` and `query` validate the
 * request before the handler runs and type its input, `response.schema` types what the handler must return, and
 * all three are published in the OpenAPI document (openapi.ts) and checked by the conformance test.
 */
export interface RouteDeclaration<
  B extends TSchema | undefined,
  Q extends TObject | undefined,
  R extends TSchema | undefined,
  P extends Pagination | undefined,
> {
  /** Express path relative to where the table is mounted (`/persons/:id`); trailing slashes are optional. */
  path: string;
  /** The scope a key needs (checked before anything else the route does); null only on public routes. */
  scope: string | null;
  summary: string;
  body?: B;
  query?: Q;
  paginated?: P;
  csv?: CsvShape;
  /**
   * `format=jsonl`: the listing streamed whole as JSON lines (`csv.file`.jsonl), uncapped. Only on a route whose
   * handler answers both streamed formats with a {@link ListingExport} (`csvStream`); elsewhere `format=jsonl` is a 404.
   */
  jsonl?: true;
  /** The status of success and the schema of its body (a paginated route: of one result). */
  response: { status: number; schema?: R };
  /**
   * Answers with the body to send (undefined: none) with `response.status`; a {@link Reply} for another status;
   * a {@link Paged} on a paginated route; a {@link CsvExport} for `format=csv` on a route whose CSV is `export`; a
   * {@link Written} for a body of another type.
   */
  handler(
    req: Request,
    input: NoInfer<RouteInput<StaticOr<B, Body>, StaticOr<Q, Record<string, never>>>>,
  ): NoInfer<Answer<Output<R, P>> | Promise<Answer<Output<R, P>>>>;
}

export interface TypedRoute<
  B extends TSchema | undefined,
  Q extends TObject | undefined,
  R extends TSchema | undefined,
  P extends Pagination | undefined,
> extends RouteDeclaration<B, Q, R, P> {
  method: Method;
}

/** A route of the table, its types erased (what the table, the router and the OpenAPI document read). */
export type Route = TypedRoute<TSchema | undefined, TObject | undefined, TSchema | undefined, Pagination | undefined>;

/** Declares a route: its handler's input and output are typed by the route's own schemas. */
export function route<
  B extends TSchema | undefined = undefined,
  Q extends TObject | undefined = undefined,
  R extends TSchema | undefined = undefined,
  P extends Pagination | undefined = undefined,
>(declaration: TypedRoute<B, Q, R, P>): Route {
  return declaration;
}

/** One page from rows read one past it (`LIMIT limit + 1`): the extra row only says that more follow. */
export function pageFrom<T, R>(rows: readonly T[], page: Page, render: (row: T) => R, count?: number): Paged<R> {
  return { results: rows.slice(0, page.limit).map(render), hasMore: rows.length > page.limit, ...(count === undefined ? {} : { count }) };
}

/** A handler's answer with a status other than its route's. */
export class Reply {
  constructor(
    readonly status: number,
    readonly body?: unknown,
  ) {}
}

/** A handler's own `format=csv` answer, written once the route is known. */
export class CsvExport {
  constructor(readonly write: (req: Request, res: Response, file: string) => Promise<void>) {}
}

/** A handler's answer in a body that is not JSON (a JSONL stream), written by the handler's own function. */
export class Written {
  constructor(readonly write: (res: Response) => Promise<void>) {}
}

/** Every matching row of a listing: as CSV from `rows`, or as JSON lines from `lines` on a route that declares `jsonl`. */
export class ListingExport extends CsvExport {
  constructor(
    rows: RowSource,
    readonly lines: JsonlSource,
  ) {
    super((req, res, file) => streamCsv(req, res, file, rows, AnalysisGate.csvMaxColumns()));
  }
}

/** A listing read in keyset batches (http/render.ts's streamCsv and streamJsonl), for `format=csv` and `format=jsonl`. */
export const csvStream = <C>(batch: ExportBatch<C>): ListingExport => new ListingExport(rowsOf(batch), jsonlOf(batch));

/** A listing whose store writes its JSON lines itself: CSV rows are those lines parsed. */
export const linesStream = (lines: JsonlSource): ListingExport => new ListingExport(rowsOfLines(lines), lines);

/** A CSV text of the handler's own, under its own file name. */
export const csvText = (file: string, text: string): CsvExport =>
  new CsvExport((_req, res) => {
    csvResponse(res, 200, file).send(text);
    return Promise.resolve();
  });

/** PATCH and PUT of one object: wherever PUT is served it is the same partial update as PATCH. */
export function updates<
  B extends TSchema | undefined = undefined,
  Q extends TObject | undefined = undefined,
  R extends TSchema | undefined = undefined,
  P extends Pagination | undefined = undefined,
>(declaration: RouteDeclaration<B, Q, R, P>): Route[] {
  return (['patch', 'put'] as const).map((method) => route({ ...declaration, method }));
}

/** The schema of an optional string, boolean or integer query parameter. */
export const Q = {
  string: Type.Optional(Type.String()),
  boolean: Type.Optional(Type.Boolean()),
  integer: Type.Optional(Type.Integer()),
};

const FIRST_PAGE: Page = { limit: DEFAULT_LIMIT, offset: 0 };

function readParam(schema: JsonSchema, text: string): string | number | boolean {
  if (schema.type === 'boolean') {
    const lower = text.toLowerCase();
    if (lower === 'true' || lower === '1') return true;
    if (lower === 'false' || lower === '0') return false;
  }
  if (schema.type === 'integer' && /^-?[0-9]{1,15}$/.test(text)) return Number(text);
  return text;
}

function queryValues(req: Request, query: QuerySchema): Record<string, string | number | boolean> {
  const values: Record<string, string | number | boolean> = {};
  for (const [name, schema] of Object.entries(query.properties as Record<string, JsonSchema>)) {
    const text = queryValue(req, name);
    if (text !== undefined && text !== '') values[name] = readParam(schema, text);
  }
  return values;
}

function pageBody(pagination: Pagination, req: Request, page: Page, paged: Paged): Record<string, unknown> {
  if (pagination === 'has_next') return { results: paged.results, has_next: paged.hasMore, ...paged.fields };
  const { count, ...rest } = envelope(req, page, paged.results, paged.count ?? 0, paged.hasMore);
  return paged.count === undefined ? rest : { count, ...rest };
}

async function answer(route: Route, req: Request, res: Response, input: RouteInput, result: unknown): Promise<void> {
  // A streamed answer waits for one of the process's export turns (http/analysis-gate.ts).
  if (result instanceof Written || result instanceof CsvExport) await AnalysisGate.exportTurn();
  if (result instanceof Written) {
    await result.write(res);
    return;
  }
  if (result instanceof ListingExport && input.format === 'jsonl') {
    await streamJsonl(req, res, route.csv!.file, result.lines);
    return;
  }
  if (result instanceof CsvExport) {
    await result.write(req, res, route.csv!.file);
    return;
  }
  const status = result instanceof Reply ? result.status : route.response.status;
  let body = result instanceof Reply ? result.body : result;
  if (body === undefined) {
    res.status(status).end();
    return;
  }
  if (route.paginated) body = pageBody(route.paginated, req, input.page, body as Paged);
  if (input.format === 'json') {
    res.status(status).json(body);
    return;
  }
  const rows = route.paginated ? (body as { results: unknown[] }).results : Array.isArray(body) ? body : [body];
  sendCsv(res, status, rows, route.csv!.file);
}

function handle(route: Route): RequestHandler {
  const checkQuery = route.query && valueValidator(route.query);
  return async (req, res) => {
    if (route.scope !== null) requireScope(req, route.scope);
    const format = formatOf(req);
    if (format === 'csv' && !route.csv) throw errors.notFound('Format "csv" is not supported here; use json.');
    if (format === 'jsonl' && !route.jsonl) throw errors.notFound('Format "jsonl" is not supported here; use json.');
    const page = route.paginated ? pageOf(req) : FIRST_PAGE;
    const query = route.query ? queryValues(req, route.query) : {};
    checkQuery?.(query);
    let body: Body = {};
    if (route.body) {
      body = bodyOf(req);
      validateBody(route.body, body);
    }
    const input: RouteInput = { body, query, page, format };
    await answer(route, req, res, input, await route.handler(req, input));
  };
}

/** Path segments in the order Express must try them: a literal segment before a parameter at the same place. */
function specificity(path: string): string[] {
  return path.split('/').map((segment) => (segment.startsWith(':') ? '\uffff' : segment));
}

function bySpecificity(a: string, b: string): number {
  const [x, y] = [specificity(a), specificity(b)];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  }
  return x.length - y.length;
}

/** The table's paths, each with its routes, most specific path first. */
export function pathsOf(routes: readonly Route[]): Array<[path: string, routes: Route[]]> {
  const paths = new Map<string, Route[]>();
  for (const route of routes) paths.set(route.path, [...(paths.get(route.path) ?? []), route]);
  return [...paths].sort(([a], [b]) => bySpecificity(a, b));
}

/**
 * An Express router serving `routes`: each path's methods, then 405 `method_not_allowed` for any other method on
 * that path (before a less specific path could read it, e.g. `bulk_delete` as a person id).
 */
export function routerOf(routes: readonly Route[]): Router {
  const router = Router({ mergeParams: true });
  for (const [path, served] of pathsOf(routes)) {
    const methods = served.map((route) => route.method);
    if (new Set(methods).size !== methods.length) throw new Error(`a method of ${path} is declared twice`);
    for (const route of served) router[route.method](path, handle(route));
    router.all(path, (req) => {
      throw errors.methodNotAllowed(req.method);
    });
  }
  return router;
}
