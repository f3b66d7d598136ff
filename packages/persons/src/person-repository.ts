import { isUuid } from '@plover/core';
import type { SqlExecutor } from '@plover/postgres';
import type { Properties } from './json';
import type { PersonState } from './rules/person-state';
import { LostRaceError } from './transactions';

/**
 * The person statements, one function each, over any executor (the Sql or a transaction). Values are
 * always bound; properties go in whole as one jsonb parameter, computed by the rules under a row lock.
 */

/** A person row as the rules see it. */
export interface StoredPerson extends PersonState {
  id: number;
  uuid: string;
}

export interface PersonOverride {
  oldPersonUuid: string;
  overridePersonUuid: string;
  version: number;
}

export type PersonRef = { id: number } | { uuid: string };

/** An integer id, or a uuid when given a string; undefined for anything else (it matches no person). */
export function toRef(personIdOrUuid: number | string): PersonRef | undefined {
  if (typeof personIdOrUuid === 'number') return Number.isSafeInteger(personIdOrUuid) ? { id: personIdOrUuid } : undefined;
  return isUuid(personIdOrUuid) ? { uuid: personIdOrUuid.toLowerCase() } : undefined;
}

const PERSON_COLUMNS = `p.id, p.uuid, p.properties, p.is_identified AS "isIdentified", p.created_at AS "createdAt", p.version`;
const OVERRIDE_COLUMNS = `old_person_uuid AS "oldPersonUuid", override_person_uuid AS "overridePersonUuid", version`;

function refCondition(ref: PersonRef): { column: string; value: number | string } {
  return 'id' in ref ? { column: 'p.id', value: ref.id } : { column: 'p.uuid', value: ref.uuid };
}

/** Without a lock: the read-only fast path and personless events. */
export async function findPersonByDistinctId(db: SqlExecutor, projectId: number, distinctId: string): Promise<StoredPerson | undefined> {
  const result = await db.query<StoredPerson>(
    'persons.findByDistinctId',
    `SELECT ${PERSON_COLUMNS}
       FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
      WHERE d.project_id = $1 AND d.distinct_id = $2`,
    [projectId, distinctId],
  );
  return result.rows[0];
}

/**
 * Without a lock, many distinct ids in one statement: PersonStore.readPersons. Ids without a person are absent.
 * `known` maps some of the ids to the person id and version the caller holds for them: a row whose person is
 * still at that version comes back with `properties` undefined, for the caller to reuse its own, since reading
 * and parsing the jsonb is most of what the statement costs.
 */
export async function findPersonsByDistinctIds(
  db: SqlExecutor,
  projectId: number,
  distinctIds: readonly string[],
  known: ReadonlyMap<string, { id: number; version: number }>,
): Promise<Map<string, Omit<StoredPerson, 'properties'> & { properties: Properties | undefined }>> {
  const result = await db.query<Omit<StoredPerson, 'properties'> & { distinctId: string; properties: Properties | null }>(
    'persons.findByDistinctIds',
    // properties is NOT NULL in the table, so NULL here can only mean "as known".
    `SELECT d.distinct_id AS "distinctId", p.id, p.uuid,
            CASE WHEN p.id = k.id AND p.version = k.version THEN NULL ELSE p.properties END AS properties,
            p.is_identified AS "isIdentified", p.created_at AS "createdAt", p.version
       FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
       LEFT JOIN unnest($3::text[], $4::bigint[], $5::bigint[]) AS k (distinct_id, id, version) ON k.distinct_id = d.distinct_id
      WHERE d.project_id = $1 AND d.distinct_id = ANY($2::text[])`,
    [projectId, distinctIds, [...known.keys()], [...known.values()].map((person) => person.id), [...known.values()].map((person) => person.version)],
  );
  return new Map(result.rows.map(({ distinctId, properties, ...person }) => [distinctId, { ...person, properties: properties ?? undefined }]));
}

/**
 * Locks the distinct-id rows of `distinctIds` and their persons, in distinct-id order so that two
 * transactions over the same ids queue instead of deadlocking. Ids without a person are absent from the map.
 */
export async function lockPersonsByDistinctIds(tx: SqlExecutor, projectId: number, distinctIds: readonly string[]): Promise<Map<string, StoredPerson>> {
  const result = await tx.query<StoredPerson & { distinctId: string }>(
    'persons.lockByDistinctIds',
    `SELECT d.distinct_id AS "distinctId", ${PERSON_COLUMNS}
       FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
      WHERE d.project_id = $1 AND d.distinct_id = ANY($2::text[])
      ORDER BY d.distinct_id
        FOR UPDATE OF d, p`,
    [projectId, distinctIds],
  );
  return new Map(result.rows.map(({ distinctId, ...person }) => [distinctId, person]));
}

/**
 * Creates a person with its distinct ids in one statement. It also drops an override left from an earlier
 * person with the same uuid: uuids are deterministic, so a person deleted (with its distinct ids) comes back
 * under the same uuid when its distinct id is seen again, and must count as itself.
 * A person or distinct id created meanwhile by a concurrent transaction is a lost race.
 */
export async function insertPerson(
  tx: SqlExecutor,
  projectId: number,
  uuid: string,
  state: PersonState,
  distinctIds: readonly string[],
): Promise<StoredPerson> {
  const result = await tx.query<StoredPerson & { attached: number }>(
    'persons.insert',
    `WITH cleared AS (
       DELETE FROM person_overrides WHERE project_id = $1 AND old_person_uuid = $2
     ), p AS (
       INSERT INTO persons (project_id, uuid, properties, is_identified, created_at, version)
       VALUES ($1, $2, $3::jsonb, $4, $5, $6)
       ON CONFLICT (project_id, uuid) DO NOTHING
       RETURNING *
     ), attached AS (
       INSERT INTO person_distinct_ids (project_id, distinct_id, person_id)
       SELECT $1, ids.distinct_id, p.id FROM p, unnest($7::text[]) WITH ORDINALITY AS ids (distinct_id, position)
        ORDER BY ids.position
       ON CONFLICT (project_id, distinct_id) DO NOTHING
       RETURNING 1
     )
     SELECT ${PERSON_COLUMNS}, (SELECT count(*) FROM attached)::int AS attached FROM p`,
    [projectId, uuid, JSON.stringify(state.properties), state.isIdentified, state.createdAt, state.version, distinctIds],
  );
  const row = result.rows[0];
  if (!row || row.attached !== distinctIds.length) throw new LostRaceError('person created concurrently');
  const { attached: _attached, ...person } = row;
  return person;
}

export async function updatePersonState(tx: SqlExecutor, personId: number, state: PersonState): Promise<void> {
  await tx.query('persons.update', 'UPDATE persons SET properties = $2::jsonb, is_identified = $3, created_at = $4, version = $5 WHERE id = $1', [
    personId,
    JSON.stringify(state.properties),
    state.isIdentified,
    state.createdAt,
    state.version,
  ]);
}

/**
 * Writes the properties and version of many persons in one statement, each only if its version is still
 * `expectedVersion` (optimistic concurrency instead of row locks held across the batch). Returns the ids written;
 * a person missing from them changed or vanished meanwhile.
 */
export async function updatePersonsIfUnchanged(
  db: SqlExecutor,
  writes: ReadonlyArray<{ id: number; expectedVersion: number; properties: Properties; version: number }>,
): Promise<Set<number>> {
  const result = await db.query<{ id: number }>(
    'persons.updateIfUnchanged',
    `UPDATE persons p SET properties = w.properties, version = w.version
       FROM jsonb_to_recordset($1::jsonb) AS w (id bigint, expected bigint, properties jsonb, version bigint)
      WHERE p.id = w.id AND p.version = w.expected
      RETURNING p.id`,
    [JSON.stringify(writes.map(({ id, expectedVersion, properties, version }) => ({ id, expected: expectedVersion, properties, version })))],
  );
  return new Set(result.rows.map((row) => row.id));
}

/** The stored properties and version of persons by id, without a lock. Ids without a person are absent. */
export async function selectPersonStates(db: SqlExecutor, ids: readonly number[]): Promise<Map<number, { properties: Properties; version: number }>> {
  const result = await db.query<{ id: number; properties: Properties; version: number }>(
    'persons.selectStates',
    'SELECT id, properties, version FROM persons WHERE id = ANY($1::bigint[])',
    [ids],
  );
  return new Map(result.rows.map(({ id, ...state }) => [id, state]));
}

export async function attachDistinctId(tx: SqlExecutor, projectId: number, distinctId: string, personId: number): Promise<void> {
  const result = await tx.query(
    'persons.attachDistinctId',
    `INSERT INTO person_distinct_ids (project_id, distinct_id, person_id) VALUES ($1, $2, $3)
     ON CONFLICT (project_id, distinct_id) DO NOTHING`,
    [projectId, distinctId, personId],
  );
  if (result.rowCount !== 1) throw new LostRaceError('distinct id attached concurrently');
}

/** Moves every distinct id of the merged-away person; each moved row gets version + 1 (PostHog's mergePeople). */
export async function moveDistinctIds(tx: SqlExecutor, projectId: number, fromPersonId: number, toPersonId: number): Promise<void> {
  await tx.query('persons.moveDistinctIds', 'UPDATE person_distinct_ids SET person_id = $3, version = version + 1 WHERE project_id = $1 AND person_id = $2', [
    projectId,
    fromPersonId,
    toPersonId,
  ]);
}

/**
 * Upserts overrides `[old, new]` and returns the rows written. Re-writing an existing mapping is a no-op
 * (no version bump), so replaying the event that wrote it changes nothing.
 */
export async function writeOverrides(tx: SqlExecutor, projectId: number, pairs: ReadonlyArray<readonly [string, string]>): Promise<PersonOverride[]> {
  const effective = pairs.filter(([oldUuid, newUuid]) => oldUuid !== newUuid);
  if (effective.length === 0) return [];
  const result = await tx.query<PersonOverride>(
    'persons.writeOverrides',
    `INSERT INTO person_overrides (project_id, old_person_uuid, override_person_uuid)
     SELECT $1, pairs.old_uuid, pairs.new_uuid FROM unnest($2::uuid[], $3::uuid[]) AS pairs (old_uuid, new_uuid)
     ON CONFLICT (project_id, old_person_uuid) DO UPDATE
       SET override_person_uuid = EXCLUDED.override_person_uuid, version = person_overrides.version + 1
       WHERE person_overrides.override_person_uuid <> EXCLUDED.override_person_uuid
     RETURNING ${OVERRIDE_COLUMNS}`,
    [projectId, effective.map(([oldUuid]) => oldUuid), effective.map(([, newUuid]) => newUuid)],
  );
  return result.rows;
}

/** The overrides that point at `personUuid`: what the merges into the person wrote (flat, see repointOverrides). */
export async function overridesInto(executor: SqlExecutor, projectId: number, personUuid: string): Promise<PersonOverride[]> {
  const result = await executor.query<PersonOverride>(
    'persons.overridesInto',
    `SELECT ${OVERRIDE_COLUMNS} FROM person_overrides WHERE project_id = $1 AND override_person_uuid = $2 ORDER BY old_person_uuid`,
    [projectId, personUuid],
  );
  return result.rows;
}

/** Keeps override chains flat: what pointed at the merged-away person now points at the survivor. */
export async function repointOverrides(tx: SqlExecutor, projectId: number, fromUuid: string, toUuid: string): Promise<PersonOverride[]> {
  const result = await tx.query<PersonOverride>(
    'persons.repointOverrides',
    `UPDATE person_overrides SET override_person_uuid = $3, version = version + 1
      WHERE project_id = $1 AND override_person_uuid = $2
      RETURNING ${OVERRIDE_COLUMNS}`,
    [projectId, fromUuid, toUuid],
  );
  return result.rows;
}

export async function deletePersonRow(tx: SqlExecutor, personId: number): Promise<StoredPerson | undefined> {
  const result = await tx.query<StoredPerson>('persons.delete', `DELETE FROM persons p WHERE p.id = $1 RETURNING ${PERSON_COLUMNS}`, [personId]);
  return result.rows[0];
}

/** Deletes a person's distinct ids first, so their row locks are taken before the person's, as ingestion does. */
export async function deleteDistinctIds(tx: SqlExecutor, personId: number): Promise<string[]> {
  const result = await tx.query<{ distinct_id: string }>(
    'persons.deleteDistinctIds',
    'DELETE FROM person_distinct_ids WHERE person_id = $1 RETURNING distinct_id',
    [personId],
  );
  return result.rows.map((row) => row.distinct_id);
}

/**
 * A person with its distinct ids, oldest first (the order PostHog's API lists them in); `forUpdate` also
 * locks the person row (the management API's writes).
 */
export async function selectPerson(
  db: SqlExecutor,
  projectId: number,
  ref: PersonRef,
  lock: 'forUpdate' | 'noLock' = 'noLock',
): Promise<(StoredPerson & { distinctIds: string[] }) | undefined> {
  const { column, value } = refCondition(ref);
  const result = await db.query<StoredPerson & { distinctIds: string[] }>(
    lock === 'forUpdate' ? 'persons.selectForUpdate' : 'persons.select',
    `SELECT ${PERSON_COLUMNS},
            array(SELECT d.distinct_id FROM person_distinct_ids d WHERE d.person_id = p.id ORDER BY d.id) AS "distinctIds"
       FROM persons p WHERE p.project_id = $1 AND ${column} = $2
       ${lock === 'forUpdate' ? 'FOR UPDATE' : ''}`,
    [projectId, value],
  );
  return result.rows[0];
}
