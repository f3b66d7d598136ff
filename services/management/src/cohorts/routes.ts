import type { Static } from '@sinclair/typebox';
import type { ManagementDeps } from '../http/deps';
import { callerOf } from '../http/access';
import { found, idParam, pageOf, resourceRoutes } from '../http/resource-routes';
import type { Route } from '../http/route-table';
import { validateCohortFilters } from '../shared/flag-filters';
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
  is_calculating: false,
  errors_calculating: 0,
  count: row.is_static ? Number(row.count) : null,
  created_by: row.created_by_id === null ? null : { id: row.created_by_id },
  created_at: row.created_at.toISOString(),
});

/** `/cohorts/` under a project: a dynamic cohort's filters are checked as decide evaluates them; a static one lists its members. */
export function cohortRoutes({ sql }: Pick<ManagementDeps, 'sql'>): Route[] {
  const cohorts = new CohortsStore(sql);
  return resourceRoutes({
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
      const row = await cohorts.write(caller.projectId, async (tx) => {
        await cohorts.checkCohortRefs(tx, caller.projectId, refs);
        const id = await cohorts.createCohort(tx, caller, { ...body, filters: isStatic ? {} : filters, isStatic });
        if (isStatic) await cohorts.addMembers(tx, caller.projectId, id, (body.distinct_ids ?? []).map(String));
        return found(await cohorts.cohort(caller.projectId, id, tx));
      });
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
        return found(await cohorts.cohort(projectId, id, tx));
      });
      return serializeCohort(row);
    },
  });
}
