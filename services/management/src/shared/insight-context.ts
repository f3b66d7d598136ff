import { WEB_GOALS, type ActionDefinition, type InsightContext } from '@plover/insights';
import { PersonReads } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { actionOf, goalActions } from './action-store';
import { CohortConditions } from './cohort-conditions';

/**
 * Who is in a cohort now (InsightContext.cohortMembers): its condition (CohortConditions: a static cohort's list,
 * a behavioral cohort's last calculated members, a property cohort's definition) matched by the persons read
 * model. Memberships are memoized per resolver, so make one per request.
 */
export function cohortResolver(sql: Sql, projectId: number): (cohortId: number) => Promise<readonly string[]> {
  const members = new Map<number, Promise<readonly string[]>>();
  const persons = new PersonReads(sql);
  const conditions = new CohortConditions(sql, projectId);
  return (cohortId) => {
    let found = members.get(cohortId);
    if (!found) {
      found = conditions.ofCohort(cohortId).then((condition) => persons.matchingUuids(projectId, condition));
      members.set(cohortId, found);
    }
    return found;
  };
}

/**
 * The project's live actions by id or name (InsightContext.action), each loaded from Postgres once per resolver (make one
 * per request, so that a query reads one version of each action); another project's action is not found.
 */
function actionResolver(sql: Sql, projectId: number): InsightContext['action'] {
  const loaded = new Map<string, Promise<ActionDefinition>>();
  return (ref, attr) => {
    const key = `${typeof ref} ${ref}`;
    let found = loaded.get(key);
    if (!found) {
      found = actionOf(sql, projectId, ref, attr);
      loaded.set(key, found);
    }
    return found;
  };
}

/**
 * What a computation or an events filter needs about the project now: its timezone and, per request, its cohorts'
 * members (and names) and its actions (also those web analytics takes as goals).
 */
export function insightContext(sql: Sql, project: { id: number; timezone: string }): InsightContext {
  return {
    projectId: project.id,
    timezone: project.timezone,
    now: new Date(),
    cohortMembers: cohortResolver(sql, project.id),
    cohortName: async (id) => (await new CohortConditions(sql, project.id).load(id)).name,
    action: actionResolver(sql, project.id),
    goalActions: () => goalActions(sql, project.id, WEB_GOALS),
  };
}
