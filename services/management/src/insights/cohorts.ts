import type { Sql } from '@plover/postgres';
import { errors } from '../http/errors';
import { propertiesCondition, SqlBuilder } from '../routes/person-filters';

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
 * Who is in a cohort now, from Postgres (InsightContext.cohortMembers): a static cohort lists its members in
 * `cohort_people`; a dynamic one is every person of the project whose current properties match its
 * `filters.properties` group (person filters compiled by person-filters.ts, cohort filters resolved
 * recursively, `negation` and `not_in` as decide applies them; a dynamic cohort without properties is empty,
 * also as in decide). An unknown or deleted cohort, a cycle or a filter type other than person/cohort → 400
 * naming `properties`. Memberships are memoized per resolver, so make one per request.
 */
export function cohortResolver(sql: Sql, projectId: number): (cohortId: number) => Promise<readonly string[]> {
  const members = new Map<number, Promise<readonly string[]>>();

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

  /** The condition on `p` (persons) for membership in cohort `id`; `path` holds the cohorts being resolved. */
  async function cohortCondition(id: number, params: SqlBuilder, path: ReadonlySet<number>): Promise<string> {
    if (path.has(id)) throw invalid(`Cohort ${id} refers to itself through its filters.`);
    const cohort = await load(id);
    if (cohort.is_static) return `(p.id IN (SELECT cp.person_id FROM cohort_people cp WHERE cp.cohort_id = ${params.bind(id)}))`;
    const root = cohort.filters?.properties;
    if (root === undefined || root === null) return 'false';
    return nodeCondition(root, params, new Set([...path, id]));
  }

  /** An AND/OR group (empty AND matches, empty OR does not) or one leaf filter. */
  async function nodeCondition(node: unknown, params: SqlBuilder, path: ReadonlySet<number>): Promise<string> {
    if (!isObject(node)) throw invalid('Expected a property filter or group.');
    if (Array.isArray(node.values)) {
      const parts: string[] = [];
      for (const value of node.values as unknown[]) parts.push(await nodeCondition(value, params, path));
      const or = node.type === 'OR';
      if (parts.length === 0) return or ? 'false' : 'true';
      return `(${parts.join(or ? ' OR ' : ' AND ')})`;
    }
    let condition: string;
    const type = node.type ?? 'person';
    if (type === 'cohort') {
      condition = await cohortCondition(cohortIdOf(node), params, path);
      if (node.operator === 'not_in') condition = `(NOT ${condition})`;
    } else if (type === 'person') {
      // A comparison with a missing property is null; as a leaf it does not match (and its negation does).
      condition = `COALESCE(${propertiesCondition(JSON.stringify([node]), params) ?? 'true'}, false)`;
    } else {
      throw invalid(`Cohort filters of type ${JSON.stringify(type)} are not supported.`);
    }
    return node.negation === true ? `(NOT ${condition})` : condition;
  }

  async function resolve(cohortId: number): Promise<readonly string[]> {
    const params = new SqlBuilder([projectId]);
    const condition = await cohortCondition(cohortId, params, new Set());
    const rows = await sql.query<{ uuid: string }>(
      'management.insightCohortMembers',
      `SELECT p.uuid::text AS uuid FROM persons p WHERE p.project_id = $1 AND ${condition} ORDER BY p.id`,
      params.params,
    );
    return rows.rows.map((row) => row.uuid);
  }

  return (cohortId) => {
    let found = members.get(cohortId);
    if (!found) {
      found = resolve(cohortId);
      members.set(cohortId, found);
    }
    return found;
  };
}
