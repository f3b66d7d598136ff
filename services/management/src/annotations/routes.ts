import { Type, type Static } from '@sinclair/typebox';
import type { ManagementDeps } from '../http/deps';
import { callerOf } from '../http/access';
import { found, idParam } from '../http/resource-routes';
import { pageFrom, Q, route, updates, type Route } from '../http/route-table';
import type { Caller } from '../shared/access-store';
import { errors } from '../shared/errors';
import { AnnotationsStore, type AnnotationRow } from './annotations-store';
import { Annotation, AnnotationWrite, SCOPES } from './schemas';

const ANNOTATION = '/annotations/:id';

const iso = (date: Date | null) => date?.toISOString() ?? null;

function serializeAnnotation(row: AnnotationRow): Static<typeof Annotation> {
  return {
    ...row,
    date_marker: iso(row.date_marker),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** An ISO date-time query parameter, or a 400 naming it. */
function instant(value: string | undefined, attr: string): string | undefined {
  if (value === undefined) return undefined;
  if (Number.isNaN(Date.parse(value))) throw errors.validation('Enter a valid date/time.', attr, 'invalid');
  return new Date(value).toISOString();
}

/**
 * `/annotations/` under a project: markers on time-series charts (docs/actions.md#annotations) scoped to one insight, one
 * dashboard, the project or the whole organization — an organization's annotations show in each of its projects.
 * CRUD with soft delete (DELETE → 405); the list is newest marker first, filtered by `search`, `scope` and dates.
 */
export function annotationRoutes({ sql }: Pick<ManagementDeps, 'sql'>): Route[] {
  const store = new AnnotationsStore(sql);

  /** The insight and dashboard a write links must be the project's own. */
  async function checkLinks(caller: Caller, body: Static<typeof AnnotationWrite>): Promise<void> {
    if (body.dashboard_item != null && !(await store.owns(caller.projectId, 'insights', body.dashboard_item))) {
      throw errors.validation(`Invalid pk "${body.dashboard_item}" - object does not exist.`, 'dashboard_item', 'does_not_exist');
    }
    if (body.dashboard_id != null && !(await store.owns(caller.projectId, 'dashboards', body.dashboard_id))) {
      throw errors.validation(`Invalid pk "${body.dashboard_id}" - object does not exist.`, 'dashboard_id', 'does_not_exist');
    }
  }

  return [
    route({
      method: 'get',
      path: '/annotations',
      scope: 'annotation:read',
      summary: "List the project's annotations and its organization's, newest marker first",
      paginated: 'envelope',
      query: Type.Object({
        search: Q.string,
        scope: Type.Optional(Type.Union(SCOPES.map((scope) => Type.Literal(scope)))),
        date_from: Q.string,
        date_to: Q.string,
      }),
      csv: { file: 'annotations' },
      response: { status: 200, schema: Annotation },
      async handler(req, { page, query }) {
        const filters = {
          search: query.search,
          scope: query.scope,
          dateFrom: instant(query.date_from, 'date_from'),
          dateTo: instant(query.date_to, 'date_to'),
        };
        const { rows, count } = await store.list(callerOf(req), filters, page);
        return pageFrom(rows, page, serializeAnnotation, count);
      },
    }),
    route({
      method: 'post',
      path: '/annotations',
      scope: 'annotation:write',
      summary: 'Create an annotation',
      body: AnnotationWrite,
      csv: { file: 'annotation' },
      response: { status: 201, schema: Annotation },
      async handler(req, { body }) {
        const caller = callerOf(req);
        await checkLinks(caller, body);
        const id = await store.create(caller, body);
        return serializeAnnotation(found(await store.get(caller, id)));
      },
    }),
    route({
      method: 'get',
      path: ANNOTATION,
      scope: 'annotation:read',
      summary: 'Retrieve an annotation',
      csv: { file: 'annotation' },
      response: { status: 200, schema: Annotation },
      async handler(req) {
        return serializeAnnotation(found(await store.get(callerOf(req), idParam(req))));
      },
    }),
    ...updates({
      path: ANNOTATION,
      scope: 'annotation:write',
      summary: 'Update an annotation; `deleted: true` soft-deletes it',
      body: AnnotationWrite,
      csv: { file: 'annotation' },
      response: { status: 200, schema: Annotation },
      async handler(req, { body }) {
        const caller = callerOf(req);
        const row = found(await store.get(caller, idParam(req)));
        await checkLinks(caller, body);
        await store.update(row.id, body);
        return serializeAnnotation(found(await store.get(caller, row.id, true)));
      },
    }),
    route({
      method: 'delete',
      path: ANNOTATION,
      scope: 'annotation:write',
      summary: 'Hard delete is not allowed: 405 (PATCH `deleted: true` instead)',
      response: { status: 405 },
      handler(req) {
        throw errors.methodNotAllowed(req.method);
      },
    }),
  ];
}
