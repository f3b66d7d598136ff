import { randomUUID } from 'node:crypto';
import { uuidv7 } from '@plover/core';
import { GroupStore, PersonReads, PersonStore, type PersonEvent, type Properties } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { realService } from '../../../../test/support/services';
import { sqlBackends } from '../../../postgres/test/support/backends';

export interface Backend {
  name: string;
  /** A fresh, migrated database. */
  open(): Promise<{ sql: Sql; close: () => Promise<void> }>;
}

export const postgres = realService('TEST_DATABASE_URL');

/**
 * Every suite runs on PGlite (embedded) and on real Postgres. Without TEST_DATABASE_URL (local runs only;
 * CI fails in realService) the Postgres half is left out.
 */
export const backends: Backend[] = sqlBackends(postgres.url);

export interface Stores {
  sql: Sql;
  persons: PersonStore;
  reads: PersonReads;
  groups: GroupStore;
  /** A new project, so each test starts without persons or group types. */
  newProject(): Promise<number>;
}

/** Opens one database for the enclosing describe block; the returned object is filled in beforeAll. */
export function useStores(backend: Backend): Stores {
  const stores = {} as Stores;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const opened = await backend.open();
    close = opened.close;
    stores.sql = opened.sql;
    stores.persons = new PersonStore(opened.sql);
    stores.reads = new PersonReads(opened.sql);
    stores.groups = new GroupStore(opened.sql);
    stores.newProject = () => createProject(opened.sql);
  });
  afterAll(() => close());
  return stores;
}

export async function createProject(sql: Sql): Promise<number> {
  const organization = await sql.query<{ id: string }>('test.organization', `INSERT INTO organizations (name) VALUES ('Test') RETURNING id`);
  const project = await sql.query<{ id: number }>(
    'test.project',
    `INSERT INTO projects (organization_id, name, api_token) VALUES ($1, 'Test', $2) RETURNING id`,
    [organization.rows[0]!.id, `phc_${randomUUID()}`],
  );
  return project.rows[0]!.id;
}

export const T0 = new Date('2024-05-01T12:00:00.000Z');

/** An event at `T0 + minutes`, with a fresh uuid unless one is given (replays reuse the uuid). */
export function event(distinctId: string, name: string, properties: Properties = {}, options: { minutes?: number; uuid?: string } = {}): PersonEvent {
  return {
    uuid: options.uuid ?? uuidv7(),
    event: name,
    distinctId,
    timestamp: new Date(T0.getTime() + (options.minutes ?? 0) * 60_000),
    properties,
  };
}

/** Rows of the tables persons owns, for assertions on what was (not) written. */
export async function countRows(sql: Sql, projectId: number): Promise<{ persons: number; distinctIds: number; overrides: number }> {
  const result = await sql.query<{ persons: number; distinctIds: number; overrides: number }>(
    'test.counts',
    `SELECT (SELECT count(*)::int FROM persons WHERE project_id = $1) AS persons,
            (SELECT count(*)::int FROM person_distinct_ids WHERE project_id = $1) AS "distinctIds",
            (SELECT count(*)::int FROM person_overrides WHERE project_id = $1) AS overrides`,
    [projectId],
  );
  return result.rows[0]!;
}

export async function overrides(sql: Sql, projectId: number): Promise<Array<{ old: string; override: string; version: number }>> {
  const result = await sql.query<{ old: string; override: string; version: number }>(
    'test.overrides',
    `SELECT old_person_uuid AS old, override_person_uuid AS override, version FROM person_overrides
      WHERE project_id = $1 ORDER BY old_person_uuid`,
    [projectId],
  );
  return result.rows;
}

export async function distinctIdVersions(sql: Sql, projectId: number): Promise<Record<string, number>> {
  const result = await sql.query<{ distinct_id: string; version: number }>(
    'test.distinctIdVersions',
    'SELECT distinct_id, version FROM person_distinct_ids WHERE project_id = $1',
    [projectId],
  );
  return Object.fromEntries(result.rows.map((row) => [row.distinct_id, row.version]));
}
