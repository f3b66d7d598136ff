import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { AuthFailureThrottle, hashPersonalApiKey, maskPersonalApiKey, newPersonalApiKey, newProjectToken } from '@plover/accounts';
import type { ClickHouse } from '@plover/clickhouse';
import { createLogger } from '@plover/core';
import { createMetricsRegistry, type ServiceApp } from '@plover/http';
import type { Sql } from '@plover/postgres';
import { createApp } from '../../src/app';
import { realService } from '../../../../test/support/services';
import { sqlBackends } from '../../../../packages/postgres/test/support/backends';

export interface Backend {
  name: string;
  open(): Promise<{ sql: Sql; close: () => Promise<void> }>;
}

const postgres = realService('TEST_DATABASE_URL');

/** Every suite runs on PGlite and, when TEST_DATABASE_URL is set, on real Postgres. */
export const backends: Backend[] = sqlBackends(postgres.url);

/** A ClickHouse that answers nothing; suites that need events pass chDB. */
export const noClickHouse: ClickHouse = {
  command: () => Promise.resolve(),
  query: () => Promise.resolve([]),
  queryRows: () => Promise.resolve({ columns: [], rows: [] }),
  queryRaw: () => Promise.resolve(Buffer.alloc(0)),
  queryRawStream: async function* () {},
  insert: () => Promise.resolve(),
  ping: () => Promise.resolve(),
  close: () => Promise.resolve(),
};

export interface World {
  sql: Sql;
  app: ServiceApp;
  throttle: AuthFailureThrottle;
  clickhouse: ClickHouse;
  newOrganization(): Promise<string>;
  newProject(organizationId: string, name?: string): Promise<{ id: number; uuid: string; api_token: string }>;
  newUser(organizationId: string | null, level?: 'member' | 'admin' | 'owner', currentProjectId?: number): Promise<{ id: number; uuid: string; email: string }>;
  newKey(userId: number, scopes: string[], options?: { projects?: number[]; organizations?: string[] }): Promise<string>;
  /** An organization with a project and an owner holding a `*` key. */
  tenant(): Promise<{ organizationId: string; projectId: number; userId: number; key: string; auth: Record<string, string> }>;
}

/** One database (and app) per describe block, filled in beforeAll. */
export function useWorld(backend: Backend, options: { clickhouse?: () => ClickHouse } = {}): World {
  const world = {} as World;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const opened = await backend.open();
    close = opened.close;
    const sql = opened.sql;
    world.sql = sql;
    world.throttle = new AuthFailureThrottle(1000);
    world.clickhouse = options.clickhouse?.() ?? noClickHouse;
    world.app = createApp({
      logger: createLogger({ service: 'test', level: 'silent' }),
      metrics: createMetricsRegistry('test'),
      sql,
      clickhouse: world.clickhouse,
      trustProxy: false,
      authThrottle: world.throttle,
    });
    world.newOrganization = async () => (await sql.query<{ id: string }>('t.org', `INSERT INTO organizations (name) VALUES ('Org') RETURNING id`)).rows[0]!.id;
    world.newProject = async (organizationId, name = 'Project') =>
      (
        await sql.query<{ id: number; uuid: string; api_token: string }>(
          't.project',
          'INSERT INTO projects (organization_id, name, api_token) VALUES ($1, $2, $3) RETURNING id, uuid, api_token',
          [organizationId, name, newProjectToken()],
        )
      ).rows[0]!;
    world.newUser = async (organizationId, level = 'owner', currentProjectId) => {
      const user = (
        await sql.query<{ id: number; uuid: string; email: string }>(
          't.user',
          'INSERT INTO users (email, first_name, current_project_id) VALUES ($1, $2, $3) RETURNING id, uuid, email',
          [`${randomUUID()}@example.com`, 'Test', currentProjectId ?? null],
        )
      ).rows[0]!;
      if (organizationId) {
        await sql.query('t.member', 'INSERT INTO organization_memberships (organization_id, user_id, level) VALUES ($1, $2, $3)', [
          organizationId,
          user.id,
          level,
        ]);
      }
      return user;
    };
    world.newKey = async (userId, scopes, keyOptions = {}) => {
      const value = newPersonalApiKey();
      await sql.query(
        't.key',
        `INSERT INTO personal_api_keys (user_id, label, secure_value, mask_value, scopes, scoped_projects, scoped_organizations)
         VALUES ($1, 'test', $2, $3, $4, $5, $6)`,
        [userId, hashPersonalApiKey(value), maskPersonalApiKey(value), scopes, keyOptions.projects ?? null, keyOptions.organizations ?? null],
      );
      return value;
    };
    world.tenant = async () => {
      const organizationId = await world.newOrganization();
      const project = await world.newProject(organizationId);
      const user = await world.newUser(organizationId, 'owner', project.id);
      const key = await world.newKey(user.id, ['*']);
      return { organizationId, projectId: project.id, userId: user.id, key, auth: { Authorization: `Bearer ${key}` } };
    };
  });
  afterAll(() => close());
  return world;
}

export function bearer(key: string): Record<string, string> {
  return { Authorization: `Bearer ${key}` };
}

/** A new tenant, and `call`: a request under its project (`/api/<mount>/<id><url>`) with its key unless another is given. */
export async function tenantOf(world: World) {
  const t = await world.tenant();
  const call = (method: 'get' | 'post' | 'patch' | 'delete', url: string, body?: Record<string, unknown>, key = t.key, mount = 'projects') => {
    const req = request(world.app)[method](`/api/${mount}/${t.projectId}${url}`).set(bearer(key));
    return body === undefined ? req : req.send(body);
  };
  return { ...t, call };
}
