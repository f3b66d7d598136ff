import { PersonReads } from '@plover/persons';
import { Type, type Static } from '@sinclair/typebox';
import type { Request } from 'express';
import { addCohortMembers } from '@plover/flag-store';
import type { ManagementDeps } from '../http/deps';
import { projectOf } from '../http/auth';
import { callerOf } from '../http/access';
import { found, idParam, pageOf, resourceRoutes } from '../http/resource-routes';
import { pageFrom, Q, route, type Route } from '../http/route-table';
import { calculateCohort } from '../shared/cohort-calculation';
import { validateCohortFilters } from '../shared/flag-filters';
import { errors } from '../shared/errors';
import { insightContext } from '../shared/insight-context';
import type { NodeRunner } from '../shared/node-runner';
import { Person, personBody } from '../shared/person-body';
import { CohortsStore, type CohortRow } from './cohorts-store';
import { Cohort, CohortWrite } from './schemas';

const serializeCohort = (row: CohortRow): Static<typeof Cohort> => ({
  id: row.id,
  name: row.name,
  description: row.description,
  filters: row.filters,
  groups: [],
  query: null,
  is_static: row.is_static,
  deleted: row.deleted,
  version: row.version,
  is_calculating: row.is_calculating,
  errors_calculating: row.errors_calculating,
  last_calculation: row.last_calculation?.toISOString() ?? null,
  // A dynamic cohort has a count once calculated.
  count: row.is_static || row.last_calculation !== null ? Number(row.count) : null,
  created_by: row.created_by_id === null ? null : { id: row.created_by_id },
  created_at: row.created_at.toISOString(),
});

/** Sources of an ActorsQuery that a static cohort may be made of without the ActorsQuery around them. */
const ACTOR_SOURCES = new Set(['InsightActorsQuery', 'FunnelsActorsQuery']);
const QUERY_PAGE = 10_000;
const MAX_QUERY_MEMBERS = 100_000;

/**
 * `/cohorts/` under a project: a dynamic cohort's filters are checked as decide evaluates them, and it is
 * calculated in the background once written (when the deps hold ClickHouse: not so in decide's tests, which
 * mount these routes alone); a static one lists its members. `/cohorts/:id/persons/` lists the stored members.
 */
export function cohortRoutes(deps: Pick<ManagementDeps, 'sql'> & Partial<Pick<ManagementDeps, 'clickhouse' | 'logger'>> & { run?: NodeRunner }): Route[] {
  const { sql, clickhouse, logger, run } = deps;
  const cohorts = new CohortsStore(sql);
  const reads = new PersonReads(sql);
  /** Starts a calculation of the cohort without waiting for it (as PostHog does after a write); errors land on the cohort. */
  const recalculate = (row: CohortRow) => {
    if (row.is_static || row.deleted || !clickhouse || !logger) return;
    calculateCohort({ sql, clickhouse, logger }, row.id, { force: true }).catch((error: unknown) =>
      logger.error({ err: error, cohortId: row.id }, 'cohort calculation could not run'),
    );
  };
  const members = route({
    method: 'get',
    path: '/cohorts/:id/persons',
    scope: 'cohort:read',
    summary: "A cohort's members (a dynamic cohort's as last calculated), newest first",
    paginated: 'envelope',
    query: Type.Object({ search: Q.string }),
    response: { status: 200, schema: Person },
    async handler(req, { page, query }) {
      const { projectId } = callerOf(req);
      const cohort = found(await cohorts.cohort(projectId, idParam(req)));
      const filter = { cohortId: cohort.id, search: query.search };
      return pageFrom(await reads.list(projectId, filter, { limit: page.limit + 1, offset: page.offset }), page, personBody);
    },
  });
  /**
   * The person ids an ActorsQuery (or an actors source, wrapped in one) lists, every page of it, at most
   * {@link MAX_QUERY_MEMBERS}: PostHog's "save as static cohort" of a persons list.
   */
  async function queryMembers(req: Request, query: Record<string, unknown>, isStatic: boolean): Promise<number[]> {
    if (!isStatic) throw errors.validation('A query makes a static cohort: set is_static.', 'query');
    if (!run) throw errors.validation('Cohorts from a query need the analysis store.', 'query');
    const node = ACTOR_SOURCES.has(String(query.kind)) ? { kind: 'ActorsQuery', source: query } : query;
    if (node.kind !== 'ActorsQuery') throw errors.validation('query must be an ActorsQuery or an actors source.', 'query__kind', 'invalid_choice');
    const project = projectOf(req);
    const insight = insightContext(sql, project);
    const ids: number[] = [];
    for (let offset = 0; ; offset += QUERY_PAGE) {
      const page = (await run({ ...node, select: ['id'], limit: QUERY_PAGE, offset }, insight, 'cached'))!;
      const uuids = (page.results as unknown[][]).map((row) => String(row[0]));
      ids.push(...[...(await reads.byUuids(project.id, uuids)).values()].map((person) => person.id));
      if (page.hasMore !== true) return ids;
      if (offset + QUERY_PAGE >= MAX_QUERY_MEMBERS) throw errors.validation(`The query lists more than ${MAX_QUERY_MEMBERS} persons.`, 'query');
    }
  }
  const resource = resourceRoutes({
    base: '/cohorts',
    object: 'cohort',
    schema: Cohort,
    body: CohortWrite,
    names: ['a cohort', 'cohorts'],
    file: ['cohort', 'cohorts'],
    async list(req, { page }) {
      const { rows, count } = await cohorts.listCohorts(callerOf(req).projectId, page);
      return pageOf(rows.map(serializeCohort), count, page.offset, page.limit);
    },
    async create(req, { body }) {
      const caller = callerOf(req);
      const isStatic = body.is_static === true;
      const filters = body.filters ?? { properties: { type: 'AND', values: [] } };
      const refs = isStatic ? { cohortIds: new Set<number>() } : validateCohortFilters(filters);
      // A static cohort of the persons a query lists (the persons behind a chart's point), read before the write.
      const fromQuery = body.query === undefined ? [] : await queryMembers(req, body.query, isStatic);
      const row = await cohorts.write(caller.projectId, async (tx) => {
        await cohorts.checkCohortRefs(tx, caller.projectId, refs);
        const id = await cohorts.createCohort(tx, caller, { ...body, filters: isStatic ? {} : filters, isStatic });
        if (isStatic) await cohorts.addMembers(tx, caller.projectId, id, (body.distinct_ids ?? []).map(String));
        if (fromQuery.length > 0) await addCohortMembers(tx, id, fromQuery);
        return found(await cohorts.cohort(caller.projectId, id, tx));
      });
      recalculate(row);
      return serializeCohort(row);
    },
    retrieve: async (req) => serializeCohort(found(await cohorts.cohort(callerOf(req).projectId, idParam(req)))),
    async update(req, { body }) {
      const { projectId } = callerOf(req);
      const id = idParam(req);
      const row = await cohorts.write(projectId, async (tx) => {
        const existing = found(await cohorts.cohort(projectId, id, tx));
        const filters = body.filters !== undefined && !existing.is_static ? body.filters : undefined;
        const refs = filters === undefined ? undefined : validateCohortFilters(filters);
        if (refs) await cohorts.checkCohortRefs(tx, projectId, refs, id);
        await cohorts.updateCohort(tx, projectId, id, { ...body, filters });
        if (refs?.behavioral) await cohorts.refuseBehavioralCohortsInFlags(tx, projectId);
        if (existing.is_static && body.distinct_ids !== undefined) await cohorts.addMembers(tx, projectId, id, body.distinct_ids.map(String));
        return { row: found(await cohorts.cohort(projectId, id, tx)), changed: filters !== undefined || (existing.deleted && body.deleted === false) };
      });
      if (row.changed) recalculate(row.row);
      return serializeCohort(row.row);
    },
  });
  return [...resource, members];
}
