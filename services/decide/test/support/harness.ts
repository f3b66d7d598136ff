import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { bootstrap, ProjectTokenCache, type Credentials } from '@plover/accounts';
import { ApiError, silentLogger } from '@plover/core';
import { createMetricsRegistry, createServiceApp, type ServiceApp } from '@plover/http';
import { PgSql, type Sql, type SqlExecutor } from '@plover/postgres';
import { projectFlagRoutes } from '../../../management/src/flag-routes';
import { jsonBody } from '../../../management/src/http/body';
import { realService } from '../../../../test/support/services';
import { openMigratedPGlite, openMigratedPostgres } from '../../../../packages/postgres/test/support/backends';
export { FaultySql } from '../../../../packages/postgres/test/support/faulty-sql';
import { decideRoutes, DefinitionsCache, type DecideSettings } from '../../src/app';

export const postgres = realService('TEST_DATABASE_URL');

export interface Database {
  sql: Sql;
  /** Another connection to the same database (another process's view); undefined on PGlite. */
  openSecond?: () => Promise<Sql>;
  close(): Promise<void>;
}

export interface Backend {
  name: string;
  open(): Promise<Database>;
}

const real: Backend = {
  name: 'Postgres',
  async open() {
    const database = await openMigratedPostgres(postgres.url!, 5);
    const extra: Sql[] = [];
    return {
      sql: database.sql,
      openSecond() {
        const second = new PgSql({ connectionString: database.url, max: 2 });
        extra.push(second);
        return Promise.resolve(second);
      },
      async close() {
        await Promise.all(extra.map((s) => s.close()));
        await database.close();
      },
    };
  },
};

const pglite: Backend = { name: 'PGlite', open: openMigratedPGlite };

export const backends: Backend[] = postgres.url ? [pglite, real] : [pglite];

/**
 * Stands in for the management API's key authentication and project resolution: every request acts as the
 * project's owner with all scopes.
 */
function actAsOwner(sql: Sql): RequestHandler {
  return async (req, _res, next) => {
    const found = await sql.query<{ id: number; uuid: string; organization_id: string; timezone: string; user_id: number; user_uuid: string; email: string }>(
      'test.owner',
      `SELECT p.id, p.uuid, p.organization_id, p.timezone, u.id AS user_id, u.uuid AS user_uuid, u.email
         FROM projects p JOIN organization_memberships m ON m.organization_id = p.organization_id AND m.level = 'owner' JOIN users u ON u.id = m.user_id
        WHERE p.id = $1 ORDER BY u.id LIMIT 1`,
      [Number(req.params.project_id)],
    );
    const owner = found.rows[0];
    if (!owner) throw ApiError.notFound('Project not found.');
    req.principal = {
      user: { id: owner.user_id, uuid: owner.user_uuid, email: owner.email, isStaff: false },
      key: { id: 'test', scopes: ['*'], scopedProjects: null, scopedOrganizations: null },
    };
    req.project = { id: owner.id, uuid: owner.uuid, organizationId: owner.organization_id, timezone: owner.timezone, level: 'owner' };
    next();
  };
}

/** Decide's settings, and how often its definitions cache polls (a composition root's choice; 500 ms by default). */
export type HarnessSettings = DecideSettings & { definitionsPollMs?: number };

/**
 * Decide routes and the flag management routes on one app, like embedded mode (management auth stubbed; its
 * JSON body reader kept, since the flag routes read only bodies it has parsed).
 */
export function buildApp(sql: Sql, options: HarnessSettings = {}, managementSql: Sql = sql): ServiceApp {
  const { definitionsPollMs, ...settings } = options;
  const logger = silentLogger();
  // One registry, so that decide's counters show on the app's /metrics.
  const metrics = createMetricsRegistry('test');
  const decide = decideRoutes({
    logger,
    metrics,
    sql,
    trustProxy: false,
    projectTokens: new ProjectTokenCache(sql),
    definitions: new DefinitionsCache(sql, { logger, pollIntervalMs: definitionsPollMs }),
    settings,
  });
  return createServiceApp({
    logger,
    metrics,
    trustProxy: false,
    checks: {},
    fast: [decide.fast],
    mount(app) {
      app.use(decide.router);
      app.use(['/api/projects/:project_id', '/api/environments/:project_id'], actAsOwner(managementSql), jsonBody, projectFlagRoutes(managementSql));
    },
  });
}

export async function setup(sql: Sql): Promise<Credentials> {
  const credentials = await bootstrap(sql, { adminEmail: `a-${randomUUID()}@example.com`, projectName: 'P', timezone: 'UTC' });
  return credentials!;
}

export async function createPerson(sql: SqlExecutor, projectId: number, distinctIds: string[], properties: Record<string, unknown>): Promise<number> {
  const person = await sql.query<{ id: number }>(
    'test.person',
    `INSERT INTO persons (project_id, uuid, properties, created_at) VALUES ($1, gen_random_uuid(), $2, now()) RETURNING id`,
    [projectId, JSON.stringify(properties)],
  );
  const id = person.rows[0]!.id;
  for (const distinctId of distinctIds) {
    await sql.query('test.distinctId', 'INSERT INTO person_distinct_ids (project_id, distinct_id, person_id) VALUES ($1, $2, $3)', [projectId, distinctId, id]);
  }
  return id;
}

export async function createGroup(
  sql: SqlExecutor,
  projectId: number,
  type: string,
  index: number,
  key: string,
  properties: Record<string, unknown>,
): Promise<void> {
  await sql.query('test.groupType', 'INSERT INTO group_type_mappings (project_id, group_type, group_type_index) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
    projectId,
    type,
    index,
  ]);
  await sql.query('test.group', 'INSERT INTO groups (project_id, group_type_index, group_key, group_properties, created_at) VALUES ($1, $2, $3, $4, now())', [
    projectId,
    index,
    key,
    JSON.stringify(properties),
  ]);
}
