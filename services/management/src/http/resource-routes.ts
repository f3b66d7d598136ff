import type { Request } from 'express';
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import { errors } from '../shared/errors';
import type { Body } from './body';
import { type Paged, type Route, type RouteInput, type StaticOr } from './route-table';

/**
 * The list, create, retrieve, update and refused DELETE of one kind of flag definition (flags, cohorts, early
 * access features, surveys): PostHog's shapes — PUT is PATCH, soft delete by PATCH `deleted`, DELETE → 405.
 */
export interface Resource<W extends TObject, S extends TSchema, Q extends TObject | undefined = undefined, U extends TSchema = S> {
  base: string;
  object: string;
  /** One object's answer (create, retrieve, a listing's item). */
  schema: S;
  /** The body of a create or an update. */
  body: W;
  /** An update's answer, when it is not always {@link schema}. */
  updated?: U;
  names: [one: string, many: string];
  file: [one: string, many: string];
  query?: Q;
  list(this: void, req: Request, input: NoInfer<RouteInput<Body, StaticOr<Q, Record<string, never>>>>): Promise<NoInfer<Paged<Static<S>>>>;
  create(this: void, req: Request, input: NoInfer<RouteInput<Static<W>>>): Promise<NoInfer<Static<S>>>;
  retrieve(this: void, req: Request): Promise<NoInfer<Static<S>>>;
  update(this: void, req: Request, input: NoInfer<RouteInput<Static<W>>>): Promise<NoInfer<Static<U>>>;
}

export function resourceRoutes<W extends TObject, S extends TSchema, Q extends TObject | undefined = undefined, U extends TSchema = S>(
  typed: Resource<W, S, Q, U>,
): Route[] {
  // The declaration above types each handler by the resource's schemas; the table holds routes with types erased.
  const r = typed as unknown as Resource<TObject, TSchema, TObject | undefined, TSchema>;
  const item = `${r.base}/:id`;
  const [one, many] = r.names;
  const routes: Route[] = [
    {
      method: 'get',
      path: r.base,
      scope: `${r.object}:read`,
      summary: `List ${many}, newest first`,
      paginated: 'envelope',
      ...(r.query ? { query: r.query } : {}),
      csv: { file: r.file[1] },
      response: { status: 200, schema: r.schema },
      handler: r.list,
    },
    {
      method: 'post',
      path: r.base,
      scope: `${r.object}:write`,
      summary: `Create ${one}`,
      body: r.body,
      csv: { file: r.file[0] },
      response: { status: 201, schema: r.schema },
      handler: r.create,
    },
    {
      method: 'get',
      path: item,
      scope: `${r.object}:read`,
      summary: `Retrieve ${one}`,
      csv: { file: r.file[0] },
      response: { status: 200, schema: r.schema },
      handler: r.retrieve,
    },
    // PUT is the same partial update as PATCH (http/route-table.ts's `updates`).
    ...(['patch', 'put'] as const).map((method): Route => ({
      method,
      path: item,
      scope: `${r.object}:write`,
      summary: `Update ${one}; \`deleted: true\` soft-deletes`,
      body: r.body,
      csv: { file: r.file[0] },
      response: { status: 200, schema: r.updated ?? r.schema },
      handler: r.update,
    })),
    {
      method: 'delete',
      path: item,
      scope: `${r.object}:write`,
      summary: 'Hard delete is not allowed: 405 (PATCH `deleted: true` instead)',
      response: { status: 405 },
      handler(req) {
        throw errors.methodNotAllowed(req.method);
      },
    },
  ];
  return routes;
}

/** One page of a listing whose total is counted. */
export const pageOf = <T>(rows: T[], count: number, offset: number, limit: number): Paged<T> => ({ results: rows, count, hasMore: offset + limit < count });

/** The path's integer `:id`; anything else names nothing (404). */
export function idParam(req: Request): number {
  const raw = String(req.params.id ?? '');
  if (!/^\d+$/.test(raw) || Number(raw) > 2_147_483_647) throw errors.notFound();
  return Number(raw);
}

/** The row, or 404. */
export const found = <T>(row: T | undefined): T => {
  if (row === undefined) throw errors.notFound();
  return row;
};

/** A name a create requires (the schema, shared with updates, leaves it optional). */
export function requiredName(value: string | undefined): string {
  if (typeof value !== 'string' || value.trim() === '') throw errors.required('name');
  return value;
}
