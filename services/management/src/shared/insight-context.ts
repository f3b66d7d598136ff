import { WEB_GOALS, type ActionDefinition, type InsightContext } from '@plover/insights';
import { PersonReads, type PersonCondition } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { actionOf, goalActions } from './action-store';
import { errors } from './errors';

interface CohortRow {
  is_static: boolean;
  filters: { properties?: unknown } | null;
}

const invalid = (detail: string) => errors.validation(detail, 'properties', 'invalid_input');

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A cohort filter names its cohort in `value`; numeric strings are accepted (as decide does). */
function cohortIdOf(filter: Record<string, unknown>): number {
  const { value } = filter;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^[0-9]{1,9}$/.test(value)) return Number(value);
  throw invalid('A cohort filter needs a cohort id as its value.');
}

/**
 * Who is in a cohort now (InsightContext.cohortMembers): a static cohort lists its members in `cohort_people`; a
 * dynamic one is every person of the project whose current properties match its `filters.properties` group
 * (person filters, cohort filters resolved recursively, `negation` and `not_in` as decide applies them; a
 * dynamic cohort without properties is empty, also as in decide), matched by the persons read model. An
 * unknown or deleted cohort, a cycle or a filter type other than person/cohort → 400 naming `properties`.
 * Memberships are memoized per resolver, so make one per request.
 */
export function cohortResolver(sql: Sql, projectId: number): (cohortId: number) => Promise<readonly string[]> {
  const members = new Map<number, Promise<readonly string[]>>();
  const persons = new PersonReads(sql);

  async function load(id: number): Promise<CohortRow> {
    const row = (
      await sql.query<CohortRow>('management.insightCohort', 'SELECT is_static, filters FROM cohorts WHERE id = $1 AND project_id = $2 AND NOT deleted', [
        id,
        projectId,
      ])
    ).rows[0];
    if (!row) throw invalid(`Cohort ${id} does not exist.`);
    return row;
  }

  /** Membership in cohort `id`; `path` holds the cohorts being resolved. */
  async function cohortCondition(id: number, path: ReadonlySet<number>): Promise<PersonCondition> {
    if (path.has(id)) throw invalid(`Cohort ${id} refers to itself through its filters.`);
    const cohort = await load(id);
    if (cohort.is_static) return { staticCohort: id };
    const root = cohort.filters?.properties;
    if (root === undefined || root === null) return { any: [] };
    return nodeCondition(root, new Set([...path, id]));
  }

  /** An AND/OR group (empty AND matches, empty OR does not) or one leaf filter. */
  async function nodeCondition(node: unknown, path: ReadonlySet<number>): Promise<PersonCondition> {
    if (!isObject(node)) throw invalid('Expected a property filter or group.');
    if (Array.isArray(node.values)) {
      const parts: PersonCondition[] = [];
      for (const value of node.values as unknown[]) parts.push(await nodeCondition(value, path));
      return node.type === 'OR' ? { any: parts } : { all: parts };
    }
    let condition: PersonCondition;
    const type = node.type ?? 'person';
    if (type === 'cohort') {
      condition = await cohortCondition(cohortIdOf(node), path);
      if (node.operator === 'not_in') condition = { not: condition };
    } else if (type === 'person') {
      condition = { propertyFilter: node };
    } else {
      throw invalid(`Cohort filters of type ${JSON.stringify(type)} are not supported.`);
    }
    return node.negation === true ? { not: condition } : condition;
  }

  return (cohortId) => {
    let found = members.get(cohortId);
    if (!found) {
      found = cohortCondition(cohortId, new Set()).then((condition) => persons.matchingUuids(projectId, condition));
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
 * members and its actions (also those web analytics takes as goals).
 */
export function insightContext(sql: Sql, project: { id: number; timezone: string }): InsightContext {
  return {
    projectId: project.id,
    timezone: project.timezone,
    now: new Date(),
    cohortMembers: cohortResolver(sql, project.id),
    action: actionResolver(sql, project.id),
    goalActions: () => goalActions(sql, project.id, WEB_GOALS),
  };
}
