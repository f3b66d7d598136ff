import type { PersonCondition } from '@plover/persons';
import type { SqlExecutor } from '@plover/postgres';
import { errors } from './errors';

interface CohortRow {
  name: string;
  is_static: boolean;
  filters: { properties?: unknown } | null;
}

export const invalidCohort = (detail: string) => errors.validation(detail, 'properties', 'invalid_input');

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A cohort filter names its cohort in `value`; numeric strings are accepted (as decide does). */
function cohortIdOf(filter: Record<string, unknown>): number {
  const { value } = filter;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^[0-9]{1,9}$/.test(value)) return Number(value);
  throw invalidCohort('A cohort filter needs a cohort id as its value.');
}

/** Whether a cohort's filter tree holds a behavioral criterion (its own, not through the cohorts it names). */
export function hasBehavioral(node: unknown): boolean {
  if (!isObject(node)) return false;
  if (Array.isArray(node.values)) return node.values.some(hasBehavioral);
  return node.type === 'behavioral';
}

/** A behavioral criterion of the cohort being calculated → the persons meeting it; `attr` names it. */
export type BehavioralLeaf = (filter: Record<string, unknown>, attr: string) => Promise<PersonCondition>;

/**
 * A cohort's definition as a condition on persons (PersonReads): person filters, cohort filters (`negation`
 * and `not_in`), AND/OR groups (an empty AND matches everyone, an empty OR no one). A cohort filter names a
 * static cohort (its member list), a dynamic cohort with behavioral criteria (its members as last calculated,
 * docs/cohorts.md) or a dynamic one of properties only (its definition, resolved the same way). A behavioral
 * criterion is evaluated by `behavioral` — only the calculation of a cohort supplies it, for its own criteria;
 * without it, reaching one is a 400. An unknown or deleted cohort, or a cycle → 400 naming `properties`.
 */
export class CohortConditions {
  constructor(
    private readonly db: SqlExecutor,
    private readonly projectId: number,
    private readonly behavioral?: BehavioralLeaf,
  ) {}

  /** A live cohort of the project; 400 naming `properties` otherwise. */
  async load(id: number): Promise<CohortRow> {
    const row = (
      await this.db.query<CohortRow>(
        'management.insightCohort',
        'SELECT name, is_static, filters FROM cohorts WHERE id = $1 AND project_id = $2 AND NOT deleted',
        [id, this.projectId],
      )
    ).rows[0];
    if (!row) throw invalidCohort(`Cohort ${id} does not exist.`);
    return row;
  }

  /** Membership of cohort `id` as filters use it (see the class). */
  async ofCohort(id: number, path: ReadonlySet<number> = new Set()): Promise<PersonCondition> {
    if (path.has(id)) throw invalidCohort(`Cohort ${id} refers to itself through its filters.`);
    const cohort = await this.load(id);
    if (cohort.is_static) return { storedCohort: id };
    const root = cohort.filters?.properties;
    if (root === undefined || root === null) return { any: [] };
    if (hasBehavioral(root)) return { storedCohort: id };
    return this.ofNode(root, new Set([...path, id]), 'properties');
  }

  /** The definition of cohort `id` itself, its behavioral criteria included (what its calculation stores). */
  async definition(id: number, root: unknown): Promise<PersonCondition> {
    return this.ofNode(root, new Set([id]), 'filters__properties');
  }

  /** An AND/OR group or one leaf filter. */
  private async ofNode(node: unknown, path: ReadonlySet<number>, attr: string): Promise<PersonCondition> {
    if (!isObject(node)) throw invalidCohort('Expected a property filter or group.');
    if (Array.isArray(node.values)) {
      const parts: PersonCondition[] = [];
      for (const [index, value] of (node.values as unknown[]).entries()) parts.push(await this.ofNode(value, path, `${attr}__values__${index}`));
      return node.type === 'OR' ? { any: parts } : { all: parts };
    }
    let condition: PersonCondition;
    const type = node.type ?? 'person';
    if (type === 'cohort') {
      condition = await this.ofCohort(cohortIdOf(node), path);
      if (node.operator === 'not_in') condition = { not: condition };
    } else if (type === 'person') {
      condition = { propertyFilter: node };
    } else if (type === 'behavioral' && this.behavioral) {
      condition = await this.behavioral(node, attr);
    } else {
      throw invalidCohort(`Cohort filters of type ${JSON.stringify(type)} are not supported.`);
    }
    return node.negation === true ? { not: condition } : condition;
  }
}
