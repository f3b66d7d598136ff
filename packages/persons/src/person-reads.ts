import { ApiError, isUuid, StorageError } from '@plover/core';
import { containsPattern, SqlBuilder, type SqlExecutor } from '@plover/postgres';
import { storableText, type Properties } from './json';
import { filterCondition, propertiesCondition } from './person-filters';
import { findPersonByDistinctId, selectPerson, toRef } from './person-repository';

/** `count` is exact up to this many matches; beyond it the planner's estimate (unless asked for the exact count). */
export const EXACT_COUNT_CAP = 10_000;
/** Distinct ids a listed person carries at most, oldest first: a person with millions of them stays one small row. */
const LISTED_DISTINCT_IDS = 1000;

/** A person with its distinct ids, oldest first (the order PostHog's API lists them in). */
export interface Person {
  id: number;
  uuid: string;
  properties: Properties;
  isIdentified: boolean;
  createdAt: Date;
  version: number;
  distinctIds: string[];
}

/** The management listing's filters; an absent or empty one filters nothing. */
export interface PersonListFilter {
  /** Persons having this distinct id. */
  distinctId?: string;
  /** `properties.email` equal to this. */
  email?: string;
  /** Email containing it (case-insensitive), a distinct id equal to it, or the person's uuid; trimmed. */
  search?: string;
  /** Person property filters as JSON text: a list (AND) or a group. Bad input is a 400 naming `properties…`. */
  properties?: string;
  /** The stored members of this cohort (see PersonCondition's `storedCohort`). */
  cohortId?: number;
}

/** Where a listing stopped: `createdAt` as Postgres prints it, which keeps the microseconds a Date would drop. */
export interface PersonCursor {
  createdAt: string;
  id: number;
}

/** A listed person (at most 1000 distinct ids) and the cursor that continues the listing after it. */
export interface ListedPerson extends Person {
  cursor: PersonCursor;
}

/**
 * A page of the listing, newest first: after `offset` rows (oldest first with `oldestFirst`), or after the row
 * `after` (a keyset, fast at any depth).
 */
export type PersonPage = { limit: number; offset: number; oldestFirst?: boolean } | { limit: number; after: PersonCursor };

/**
 * A set of persons, as a cohort's definition resolves to (reading cohort definitions is the caller's part):
 * `all` of the conditions (none: everyone), `any` of them (none: no one), `not` one, the stored members of a
 * cohort (a static cohort's list, or a dynamic cohort's last completed calculation), the persons of some uuids,
 * or one person property filter (see PersonListFilter.properties; a comparison with a property the person lacks
 * does not match, so its `not` does).
 */
export type PersonCondition =
  | { all: readonly PersonCondition[] }
  | { any: readonly PersonCondition[] }
  | { not: PersonCondition }
  | { storedCohort: number }
  | { uuids: readonly string[] }
  | { propertyFilter: unknown };

/** SQL: the person ids stored as members of the cohort `cohortIdSql`, at the version readers see. */
export function cohortPeopleSql(cohortIdSql: string): string {
  return `SELECT stored.person_id FROM cohort_people stored JOIN cohorts owner ON owner.id = stored.cohort_id AND stored.version = owner.people_version
    WHERE stored.cohort_id = ${cohortIdSql}`;
}

const LISTED_COLUMNS = `p.id, p.uuid, p.properties, p.is_identified AS "isIdentified", p.created_at AS "createdAt", p.version,
  ARRAY(SELECT x.distinct_id FROM person_distinct_ids x WHERE x.person_id = p.id ORDER BY x.id LIMIT ${LISTED_DISTINCT_IDS}) AS "distinctIds"`;

/**
 * Postgres' regex dialect refuses some patterns JavaScript accepts (and so passed validation): the filter's
 * fault, a 400, not a server error.
 */
async function refusingInvalidRegex<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch (error) {
    if (error instanceof StorageError && error.code === '2201B') throw ApiError.validation('Invalid regular expression.', 'properties', 'invalid');
    throw error;
  }
}

/** The listing's condition on `p` (persons), project first: every index leads with it. */
function listCondition(projectId: number, filter: PersonListFilter): { where: string; params: SqlBuilder } {
  const params = new SqlBuilder([projectId]);
  const parts = ['p.project_id = $1'];
  if (filter.distinctId) {
    parts.push(`p.id IN (SELECT d.person_id FROM person_distinct_ids d WHERE d.project_id = $1 AND d.distinct_id = ${params.bind(filter.distinctId)})`);
  }
  if (filter.cohortId !== undefined) parts.push(`p.id IN (${cohortPeopleSql(params.bind(filter.cohortId))})`);
  if (filter.email) parts.push(`(p.properties ->> 'email') = ${params.bind(filter.email)}`);
  const search = filter.search?.trim();
  if (search) {
    // A union of id lookups rather than an OR on the row, so each branch uses its index (the email one the
    // trigram index where pg_trgm exists) and a selective term never scans the project's persons in date order.
    const alternatives = [
      `SELECT s.id FROM persons s WHERE s.project_id = $1 AND (s.properties ->> 'email') ILIKE ${params.bind(containsPattern(search))}`,
      `SELECT d.person_id FROM person_distinct_ids d WHERE d.project_id = $1 AND d.distinct_id = ${params.bind(search)}`,
    ];
    if (isUuid(search)) alternatives.push(`SELECT u.id FROM persons u WHERE u.project_id = $1 AND u.uuid = ${params.bind(search.toLowerCase())}::uuid`);
    parts.push(`p.id IN (${alternatives.join(' UNION ALL ')})`);
  }
  if (filter.properties) {
    const condition = propertiesCondition(filter.properties, params);
    if (condition) parts.push(condition);
  }
  return { where: parts.join(' AND '), params };
}

function personCondition(condition: PersonCondition, params: SqlBuilder): string {
  if ('all' in condition) return condition.all.length === 0 ? 'true' : `(${condition.all.map((c) => personCondition(c, params)).join(' AND ')})`;
  if ('any' in condition) return condition.any.length === 0 ? 'false' : `(${condition.any.map((c) => personCondition(c, params)).join(' OR ')})`;
  if ('not' in condition) return `(NOT ${personCondition(condition.not, params)})`;
  if ('storedCohort' in condition) return `(p.id IN (${cohortPeopleSql(params.bind(condition.storedCohort))}))`;
  if ('uuids' in condition) return `(p.uuid = ANY(${params.bind(condition.uuids)}::uuid[]))`;
  // A comparison with a missing property is null; coalesced to false so that its negation matches.
  return `COALESCE(${filterCondition(condition.propertyFilter, 'properties__0', params) ?? 'true'}, false)`;
}

/**
 * The read side of persons and their distinct ids for everyone but ingestion: the management API (listing,
 * counting, retrieval, recordings' persons, cohort members and static cohort additions, and the one write of a
 * dynamic cohort's calculation: its members selected by this model) and decide (properties
 * for flag evaluation, persons of continuity overrides), and the event deletion job (persons merged into another).
 * Writes go through PersonStore. Construct it over the
 * Sql or over a transaction. Every value is bound; query names are those logs and metrics have always used.
 */
export class PersonReads {
  constructor(private readonly db: SqlExecutor) {}

  /** One page of the project's persons matching `filter`, newest first (created_at, then id) unless the page says oldest first. */
  async list(projectId: number, filter: PersonListFilter, page: PersonPage): Promise<ListedPerson[]> {
    const { where, params } = listCondition(projectId, filter);
    const keyset = 'after' in page ? ` AND (p.created_at, p.id) < (${params.bind(page.after.createdAt)}::timestamptz, ${params.bind(page.after.id)})` : '';
    const limit = params.bind(page.limit);
    const offset = params.bind('after' in page ? 0 : page.offset);
    const order = 'oldestFirst' in page && page.oldestFirst === true ? 'ASC' : 'DESC';
    const result = await refusingInvalidRegex(
      this.db.query<Person & { createdAtKey: string }>(
        'management.listPersons',
        `SELECT ${LISTED_COLUMNS}, p.created_at::text AS "createdAtKey"
           FROM persons p WHERE ${where}${keyset}
          ORDER BY p.created_at ${order}, p.id ${order} LIMIT ${limit} OFFSET ${offset}`,
        params.params,
      ),
    );
    return result.rows.map(({ createdAtKey, ...person }) => ({ ...person, cursor: { createdAt: createdAtKey, id: person.id } }));
  }

  /**
   * How many persons match `filter`: exact up to EXACT_COUNT_CAP, beyond it the planner's estimate (never
   * below the cap), so that a count over millions of persons stays cheap; `exact` counts them all.
   */
  async count(projectId: number, filter: PersonListFilter, options: { exact: boolean }): Promise<number> {
    const { where, params } = listCondition(projectId, filter);
    return refusingInvalidRegex(this.countWhere(where, params.params, options.exact));
  }

  private async countWhere(where: string, params: unknown[], exact: boolean): Promise<number> {
    if (exact) {
      const all = await this.db.query<{ n: number }>('management.countPersons', `SELECT count(*)::int AS n FROM persons p WHERE ${where}`, params);
      return all.rows[0]?.n ?? 0;
    }
    const capped = await this.db.query<{ n: number }>(
      'management.countPersonsCapped',
      `SELECT count(*)::int AS n FROM (SELECT 1 FROM persons p WHERE ${where} LIMIT ${EXACT_COUNT_CAP + 1}) s`,
      params,
    );
    const n = capped.rows[0]?.n ?? 0;
    if (n <= EXACT_COUNT_CAP) return n;
    const plan = await this.db.query<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
      'management.estimatePersons',
      `EXPLAIN (FORMAT JSON) SELECT 1 FROM persons p WHERE ${where}`,
      params,
    );
    const estimate = plan.rows[0]?.['QUERY PLAN'][0]?.Plan['Plan Rows'] ?? n;
    return Math.max(Math.round(estimate), n);
  }

  /** A person by integer id, or by uuid when given a string (any other string matches nothing), with all its distinct ids. */
  async get(projectId: number, personIdOrUuid: number | string): Promise<Person | undefined> {
    const ref = toRef(personIdOrUuid);
    return ref ? selectPerson(this.db, projectId, ref) : undefined;
  }

  /** The person a distinct id belongs to, with all its distinct ids. */
  async getByDistinctId(projectId: number, distinctId: string): Promise<Person | undefined> {
    const person = await findPersonByDistinctId(this.db, projectId, storableText(distinctId));
    return person ? selectPerson(this.db, projectId, { id: person.id }) : undefined;
  }

  /** The persons of many distinct ids in one statement, keyed by the distinct id looked up; ids without a person are absent. */
  async byDistinctIds(projectId: number, distinctIds: readonly string[]): Promise<Map<string, Person>> {
    if (distinctIds.length === 0) return new Map();
    const result = await this.db.query<Person & { lookup: string }>(
      'management.recordingPersons',
      `SELECT d.distinct_id AS lookup, ${LISTED_COLUMNS}
         FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
        WHERE d.project_id = $1 AND d.distinct_id = ANY($2::text[])`,
      [projectId, distinctIds],
    );
    return new Map(result.rows.map(({ lookup, ...person }) => [lookup, person]));
  }

  /**
   * The persons of many uuids in one statement, keyed by uuid (lower-case text); uuids without a person (merged
   * away, personless events, not a uuid at all) are absent.
   */
  async byUuids(projectId: number, uuids: readonly string[]): Promise<Map<string, Person>> {
    const valid = [...new Set(uuids.filter(isUuid).map((uuid) => uuid.toLowerCase()))];
    if (valid.length === 0) return new Map();
    const result = await this.db.query<Person>(
      'management.actorPersons',
      `SELECT ${LISTED_COLUMNS} FROM persons p WHERE p.project_id = $1 AND p.uuid = ANY($2::uuid[])`,
      [projectId, valid],
    );
    return new Map(result.rows.map((person) => [String(person.uuid).toLowerCase(), person]));
  }

  /** The person id of each distinct id that has a person (static cohort additions, continuity overrides). */
  async personIdsByDistinctIds(projectId: number, distinctIds: readonly string[]): Promise<Map<string, number>> {
    if (distinctIds.length === 0) return new Map();
    const result = await this.db.query<{ distinct_id: string; person_id: number }>(
      'persons.idsByDistinctIds',
      'SELECT distinct_id, person_id FROM person_distinct_ids WHERE project_id = $1 AND distinct_id = ANY($2::text[])',
      [projectId, distinctIds],
    );
    return new Map(result.rows.map((row) => [row.distinct_id, row.person_id]));
  }

  /** What flag evaluation needs of a distinct id's person: its id (static cohorts) and properties. */
  async flagProperties(projectId: number, distinctId: string): Promise<{ id: number; properties: Properties } | undefined> {
    const result = await this.db.query<{ id: number; properties: Properties }>(
      'decide.findPerson',
      `SELECT p.id, p.properties FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
        WHERE d.project_id = $1 AND d.distinct_id = $2`,
      [projectId, distinctId],
    );
    return result.rows[0];
  }

  /**
   * The uuids of the persons merged into each of `personUuids` (and of the distinct ids used personless before
   * joining it), from the overrides: what events may still carry in place of the person's own uuid.
   */
  async mergedInto(projectId: number, personUuids: readonly string[]): Promise<Map<string, string[]>> {
    const merged = new Map<string, string[]>();
    if (personUuids.length === 0) return merged;
    const result = await this.db.query<{ old_person_uuid: string; override_person_uuid: string }>(
      'deletions.overrides',
      `SELECT old_person_uuid, override_person_uuid FROM person_overrides
        WHERE project_id = $1 AND override_person_uuid = ANY($2::uuid[]) ORDER BY old_person_uuid`,
      [projectId, personUuids],
    );
    for (const row of result.rows) merged.set(row.override_person_uuid, [...(merged.get(row.override_person_uuid) ?? []), row.old_person_uuid]);
    return merged;
  }

  /**
   * Stores the project's persons matching `condition` now as the members of `cohortId` at `version` (a dynamic
   * cohort's calculation, which publishes the version once this returns); how many.
   */
  async storeCohortVersion(projectId: number, condition: PersonCondition, cohortId: number, version: number): Promise<number> {
    const params = new SqlBuilder([projectId]);
    const where = personCondition(condition, params);
    const result = await refusingInvalidRegex(
      this.db.query(
        'cohorts.storeVersion',
        `INSERT INTO cohort_people (cohort_id, version, person_id)
         SELECT ${params.bind(cohortId)}, ${params.bind(version)}, p.id FROM persons p WHERE p.project_id = $1 AND ${where} ON CONFLICT DO NOTHING`,
        params.params,
      ),
    );
    return result.rowCount ?? 0;
  }

  /** The uuids of the project's persons matching `condition` now, in id order (a cohort's members). */
  async matchingUuids(projectId: number, condition: PersonCondition): Promise<string[]> {
    const params = new SqlBuilder([projectId]);
    const where = personCondition(condition, params);
    const result = await refusingInvalidRegex(
      this.db.query<{ uuid: string }>(
        'management.insightCohortMembers',
        `SELECT p.uuid::text AS uuid FROM persons p WHERE p.project_id = $1 AND ${where} ORDER BY p.id`,
        params.params,
      ),
    );
    return result.rows.map((row) => row.uuid);
  }
}
