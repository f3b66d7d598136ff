import { Router, type Request } from 'express';
import { isUuid, StorageError } from '@plover/core';
import { PersonStore, type Person } from '@plover/persons';
import type { Sql, SqlExecutor } from '@plover/postgres';
import { principalOf, projectOf, requireScope } from '../http/auth';
import { bodyOf, queryBoolean } from '../http/body';
import { errors } from '../http/errors';
import { envelope, formatOf, pageOf, queryValue, send, streamCsv } from '../http/render';
import { validateBody } from '../schemas';
import { propertiesCondition, SqlBuilder } from './person-filters';
import { containsPattern } from '../http/like';

/** PostHog's default display-name properties, in order (`get_person_name_helper`). */
const NAME_PROPERTIES = ['email', 'Email', '$email', 'name', 'Name', 'username', 'Username', 'UserName'];
const ANONYMOUS = /^([a-z0-9]+-){4}([a-z0-9]+)$/;
/** `count` is exact up to this many matches; beyond it the planner's estimate (exact with `include_total`). */
export const EXACT_COUNT_CAP = 10_000;
const BULK_MAX = 1000;
export const DELETION_TYPE_PERSON = 1;

const CREATE_HINT =
  'Creating persons via this API is not allowed. Please create persons by sending an $identify event. See https://posthog.com/docs/product-analytics/identify for details.';
const ID_HINT = 'The ID provided does not look like a personID. If you are using a distinctId, please use /persons?distinct_id=<value> instead.';

export interface PersonBody {
  id: number;
  name: string;
  distinct_ids: string[];
  properties: Record<string, unknown>;
  created_at: string;
  uuid: string;
  is_identified: boolean;
}

/** Non-anonymous distinct ids first (stable otherwise), as PostHog sorts them. */
function sortDistinctIds(ids: readonly string[]): string[] {
  return [...ids].sort((a, b) => Number(ANONYMOUS.test(a)) - Number(ANONYMOUS.test(b)));
}

export function personName(id: number, properties: Record<string, unknown>, distinctIds: readonly string[]): string {
  for (const key of NAME_PROPERTIES) {
    const value = properties[key];
    if (typeof value === 'string' && value !== '') return value;
    if (typeof value === 'number') return String(value);
  }
  return distinctIds[0] ?? String(id);
}

export function personBody(row: {
  id: number;
  uuid: string;
  properties: Record<string, unknown>;
  createdAt: Date;
  isIdentified: boolean;
  distinctIds: readonly string[];
}): PersonBody {
  const distinctIds = sortDistinctIds(row.distinctIds);
  return {
    id: row.id,
    name: personName(row.id, row.properties, distinctIds),
    distinct_ids: distinctIds,
    properties: row.properties,
    created_at: row.createdAt.toISOString(),
    uuid: row.uuid,
    is_identified: row.isIdentified,
  };
}

const fromPerson = (person: Person): PersonBody => personBody(person);

interface ListRow {
  id: number;
  uuid: string;
  properties: Record<string, unknown>;
  created_at: Date;
  /** `created_at` as Postgres prints it: a keyset bound that keeps the microseconds a Date would drop. */
  created_at_key: string;
  is_identified: boolean;
  distinct_ids: string[];
}

const listBody = (row: ListRow): PersonBody =>
  personBody({
    id: row.id,
    uuid: row.uuid,
    properties: row.properties,
    createdAt: row.created_at,
    isIdentified: row.is_identified,
    distinctIds: row.distinct_ids,
  });

/**
 * The listing's rows, newest first: `size` of them after `offset`, or after the row `after` (the keyset a CSV
 * export pages with, which stays fast deep into the listing where an offset would not).
 */
async function listRows(db: SqlExecutor, where: string, condition: SqlBuilder, size: number, offset: number, after?: ListRow): Promise<ListRow[]> {
  const params = new SqlBuilder(condition.params);
  const keyset = after ? ` AND (p.created_at, p.id) < (${params.bind(after.created_at_key)}::timestamptz, ${params.bind(after.id)})` : '';
  const rows = await db.query<ListRow>(
    'management.listPersons',
    `SELECT p.id, p.uuid, p.properties, p.created_at, p.created_at::text AS created_at_key, p.is_identified,
            ARRAY(SELECT d.distinct_id FROM person_distinct_ids d WHERE d.person_id = p.id ORDER BY d.id LIMIT 1000) AS distinct_ids
       FROM persons p WHERE ${where}${keyset}
      ORDER BY p.created_at DESC, p.id DESC LIMIT ${size} OFFSET ${after ? 0 : offset}`,
    params.params,
  );
  return rows.rows;
}

/** The person a path `:id` names: an integer id or a uuid; anything else (a distinct id) is a 400 with a hint. */
function personRef(raw: string): number | string {
  if (/^[0-9]{1,15}$/.test(raw)) return Number(raw);
  if (isUuid(raw)) return raw.toLowerCase();
  throw errors.validation(ID_HINT);
}

function invalidRegex(error: unknown): boolean {
  return error instanceof StorageError && error.code === '2201B';
}

/** Builds the WHERE clause of the listing from the query string (project first: every index leads with it). */
function listCondition(req: Request, projectId: number): { where: string; sql: SqlBuilder } {
  const sql = new SqlBuilder([projectId]);
  const parts = ['p.project_id = $1'];
  const distinctId = queryValue(req, 'distinct_id');
  if (distinctId !== undefined && distinctId !== '') {
    parts.push(`p.id IN (SELECT d.person_id FROM person_distinct_ids d WHERE d.project_id = $1 AND d.distinct_id = ${sql.bind(distinctId)})`);
  }
  const email = queryValue(req, 'email');
  if (email !== undefined && email !== '') parts.push(`(p.properties ->> 'email') = ${sql.bind(email)}`);
  const search = queryValue(req, 'search')?.trim();
  if (search) {
    // A union of id lookups rather than an OR on the row, so each branch uses its index (the email one the
    // trigram index where pg_trgm exists) and a selective term never scans the project's persons in date order.
    const alternatives = [
      `SELECT s.id FROM persons s WHERE s.project_id = $1 AND (s.properties ->> 'email') ILIKE ${sql.bind(containsPattern(search))}`,
      `SELECT d.person_id FROM person_distinct_ids d WHERE d.project_id = $1 AND d.distinct_id = ${sql.bind(search)}`,
    ];
    if (isUuid(search)) alternatives.push(`SELECT u.id FROM persons u WHERE u.project_id = $1 AND u.uuid = ${sql.bind(search.toLowerCase())}::uuid`);
    parts.push(`p.id IN (${alternatives.join(' UNION ALL ')})`);
  }
  const properties = queryValue(req, 'properties');
  if (properties !== undefined && properties !== '') {
    const condition = propertiesCondition(properties, sql);
    if (condition) parts.push(condition);
  }
  return { where: parts.join(' AND '), sql };
}

async function countPersons(db: SqlExecutor, where: string, params: unknown[], exact: boolean): Promise<number> {
  if (exact) {
    const all = await db.query<{ n: number }>('management.countPersons', `SELECT count(*)::int AS n FROM persons p WHERE ${where}`, params);
    return all.rows[0]?.n ?? 0;
  }
  const capped = await db.query<{ n: number }>(
    'management.countPersonsCapped',
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM persons p WHERE ${where} LIMIT ${EXACT_COUNT_CAP + 1}) s`,
    params,
  );
  const n = capped.rows[0]?.n ?? 0;
  if (n <= EXACT_COUNT_CAP) return n;
  const plan = await db.query<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
    'management.estimatePersons',
    `EXPLAIN (FORMAT JSON) SELECT 1 FROM persons p WHERE ${where}`,
    params,
  );
  const estimate = plan.rows[0]?.['QUERY PLAN'][0]?.Plan['Plan Rows'] ?? n;
  return Math.max(Math.round(estimate), n);
}

/** Queues the deletion of the person's events (idempotent per person). */
async function queueEventDeletion(db: SqlExecutor, projectId: number, personUuid: string, userId: number): Promise<void> {
  await db.query(
    'management.queueDeletion',
    `INSERT INTO async_deletions (project_id, deletion_type, key, created_by) VALUES ($1, $2, $3, $4)
     ON CONFLICT (project_id, deletion_type, key) DO NOTHING`,
    [projectId, DELETION_TYPE_PERSON, personUuid, userId],
  );
}

/** Removes a queued deletion that this request added when the person turned out to be gone already. */
async function unqueueEventDeletion(db: SqlExecutor, projectId: number, personUuid: string): Promise<void> {
  await db.query(
    'management.unqueueDeletion',
    'DELETE FROM async_deletions WHERE project_id = $1 AND deletion_type = $2 AND key = $3 AND delete_verified_at IS NULL',
    [projectId, DELETION_TYPE_PERSON, personUuid],
  );
}

/** `/persons` under a project. Reads list rows itself (read-only); every write goes through PersonStore. */
export function personRoutes(sql: Sql): Router {
  const router = Router({ mergeParams: true });
  const store = new PersonStore(sql);

  router.get('/persons', async (req, res) => {
    requireScope(req, 'person:read');
    const project = projectOf(req);
    const page = pageOf(req);
    const { where, sql: builder } = listCondition(req, project.id);
    const includeTotal = queryBoolean(queryValue(req, 'include_total'), 'include_total') ?? false;
    try {
      if (formatOf(req) === 'csv') {
        await streamCsv<ListRow>(req, res, 'persons', async (after, size) =>
          (await listRows(sql, where, builder, size, page.offset, after)).map((row) => ({ row: listBody(row), cursor: row })),
        );
        return;
      }
      const rows = await listRows(sql, where, builder, page.limit + 1, page.offset);
      const results = rows.slice(0, page.limit).map(listBody);
      const hasMore = rows.length > page.limit;
      // A page that is not full tells the count without another query.
      const count =
        !hasMore && (results.length > 0 || page.offset === 0) ? page.offset + results.length : await countPersons(sql, where, builder.params, includeTotal);
      send(req, res, 200, envelope(req, page, results, count, hasMore), 'persons');
    } catch (error) {
      if (invalidRegex(error)) throw errors.validation('Invalid regular expression.', 'properties', 'invalid');
      throw error;
    }
  });

  router.post('/persons', (req) => {
    requireScope(req, 'person:write');
    throw errors.methodNotAllowed('POST', CREATE_HINT);
  });

  router.post('/persons/bulk_delete', async (req, res) => {
    requireScope(req, 'person:write');
    const project = projectOf(req);
    const body = bodyOf(req);
    validateBody('PersonBulkDelete', body);
    const deleteEvents = body.delete_events;
    if (deleteEvents !== undefined && typeof deleteEvents !== 'boolean') throw errors.validation('Must be a valid boolean.', 'delete_events', 'invalid');
    const { distinct_ids: distinctIds, ids } = body;
    let refs: Array<{ distinctId: string } | { ref: number | string }>;
    if (distinctIds !== undefined && distinctIds !== null) {
      if (!Array.isArray(distinctIds) || distinctIds.some((d) => typeof d !== 'string'))
        throw errors.validation('Expected a list of strings.', 'distinct_ids', 'invalid');
      if (distinctIds.length > BULK_MAX) throw errors.validation(`You can only pass ${BULK_MAX} distinct_ids in one call`, 'distinct_ids');
      refs = (distinctIds as string[]).map((distinctId) => ({ distinctId }));
    } else if (ids !== undefined && ids !== null) {
      if (!Array.isArray(ids)) throw errors.validation('Expected a list of items.', 'ids', 'not_a_list');
      if (ids.length > BULK_MAX) throw errors.validation(`You can only pass ${BULK_MAX} ids in one call`, 'ids');
      refs = ids.map((id, index) => {
        if (typeof id === 'number' && Number.isInteger(id) && id > 0) return { ref: id };
        if (typeof id === 'string' && isUuid(id)) return { ref: id.toLowerCase() };
        throw errors.validation('Must be a person uuid or integer id.', `ids__${index}`, 'invalid');
      });
    } else {
      throw errors.validation('You need to specify either distinct_ids or ids');
    }
    const userId = principalOf(req).user.id;
    for (const item of refs) {
      const person = 'distinctId' in item ? await store.getPersonByDistinctId(project.id, item.distinctId) : await store.getPerson(project.id, item.ref);
      if (!person) continue;
      if (deleteEvents === true) await queueEventDeletion(sql, project.id, person.uuid, userId);
      const deleted = await store.deletePerson(project.id, person.id);
      if (!deleted && deleteEvents === true) await unqueueEventDeletion(sql, project.id, person.uuid);
    }
    res.status(202).end();
  });
  // Other methods on bulk_delete are a 405 here, before `/persons/:id` reads "bulk_delete" as a person id (400).
  router.all('/persons/bulk_delete', (req) => {
    throw errors.methodNotAllowed(req.method);
  });

  router.get('/persons/:id', async (req, res) => {
    requireScope(req, 'person:read');
    const person = await store.getPerson(projectOf(req).id, personRef(req.params.id));
    if (!person) throw errors.notFound();
    send(req, res, 200, fromPerson(person), 'person');
  });

  const update = async (req: Request, res: import('express').Response) => {
    requireScope(req, 'person:write');
    const project = projectOf(req);
    const ref = personRef(req.params.id as string);
    const body = bodyOf(req);
    validateBody('PersonPatch', body);
    const properties = body.properties;
    if (properties === undefined) throw errors.required('properties');
    if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) {
      throw errors.validation('Expected a dictionary of items.', 'properties', 'not_a_dict');
    }
    const result = await store.updateProperties(project.id, ref, { set: properties });
    if (!result) throw errors.notFound();
    if (result.outcome === 'too_large')
      throw errors.validation('Person properties would exceed the size limit; nothing was written.', 'properties', 'too_large');
    send(req, res, 200, fromPerson(result.person), 'person');
  };
  router.patch('/persons/:id', update);
  router.put('/persons/:id', update);

  router.delete('/persons/:id', async (req, res) => {
    requireScope(req, 'person:write');
    const project = projectOf(req);
    const deleteEvents = queryBoolean(queryValue(req, 'delete_events'), 'delete_events') ?? false;
    const person = await store.getPerson(project.id, personRef(req.params.id));
    if (!person) throw errors.notFound();
    if (deleteEvents) await queueEventDeletion(sql, project.id, person.uuid, principalOf(req).user.id);
    const deleted = await store.deletePerson(project.id, person.id);
    if (!deleted) {
      if (deleteEvents) await unqueueEventDeletion(sql, project.id, person.uuid);
      throw errors.notFound();
    }
    res.status(204).end();
  });

  return router;
}
