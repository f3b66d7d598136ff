import { hashPersonalApiKey, maskPersonalApiKey, newProjectToken } from '@plover/accounts';
import type { Sql, SqlExecutor } from '@plover/postgres';
import { errors } from '../shared/errors';
import { limitParams, organizationWithinSql, projectWithinSql, type KeyLimits } from '../http/key-limits';
import type { Page } from '../http/render';
import type { UserBasic } from '../shared/users';

export interface ProjectRow {
  id: number;
  uuid: string;
  organization: string;
  name: string;
  api_token: string;
  timezone: string;
  ingested_event: boolean;
  anonymize_ips: boolean;
  created_at: Date;
}

export interface KeyRow {
  id: string;
  label: string;
  mask_value: string;
  scopes: string[];
  scoped_projects: number[] | null;
  scoped_organizations: string[] | null;
  created_at: Date;
  last_used_at: Date | null;
  last_rolled_at: Date | null;
}

export interface UserRow extends UserBasic {
  is_staff: boolean;
  current_project_id: number | null;
  date_joined: Date;
}

export interface NewKey {
  userId: number;
  label: string;
  value: string;
  scopes: string[];
  scopedProjects: number[] | null;
  scopedOrganizations: string[] | null;
}

const PROJECT_COLUMNS = `p.id, p.uuid, p.organization_id AS organization, p.name, p.api_token, p.timezone, p.ingested_event, p.anonymize_ips, p.created_at`;
const KEY_COLUMNS = 'id, label, mask_value, scopes, scoped_projects, scoped_organizations, created_at, last_used_at, last_rolled_at';
const MEMBER_PROJECTS = 'FROM projects p JOIN organization_memberships m ON m.organization_id = p.organization_id';
/** PostHog's limit of personal API keys per user. */
const MAX_KEYS_PER_USER = 10;

/** Users, their personal API keys and projects: the SQL of the routes outside a project and of the project itself. */
export class AccountsStore {
  constructor(private readonly sql: Sql) {}

  async user(id: number): Promise<UserRow | undefined> {
    const result = await this.sql.query<UserRow>(
      'management.me',
      `SELECT id, uuid, distinct_id, first_name, last_name, email, is_email_verified, hedgehog_config, role_at_organization,
              is_staff, current_project_id, created_at AS date_joined FROM users WHERE id = $1`,
      [id],
    );
    return result.rows[0];
  }

  /** The user's organizations that hold a project within the key's limits. */
  async organizations(userId: number, key: KeyLimits): Promise<Array<{ id: string; name: string; level: string }>> {
    const result = await this.sql.query<{ id: string; name: string; level: string }>(
      'management.myOrganizations',
      `SELECT o.id, o.name, m.level FROM organization_memberships m JOIN organizations o ON o.id = m.organization_id
        WHERE m.user_id = $1 AND ${organizationWithinSql('o.id', '$2', '$3')} ORDER BY o.created_at, o.id`,
      [userId, ...limitParams(key)],
    );
    return result.rows;
  }

  /** The project when it is within the key's limits. */
  async projectWithin(id: number, key: KeyLimits): Promise<ProjectRow | undefined> {
    const result = await this.sql.query<ProjectRow>(
      'management.myProject',
      `SELECT ${PROJECT_COLUMNS} FROM projects p WHERE p.id = $1 AND ${projectWithinSql('p.id', 'p.organization_id', '$2', '$3')}`,
      [id, ...limitParams(key)],
    );
    return result.rows[0];
  }

  async project(id: number): Promise<ProjectRow | undefined> {
    return (await this.sql.query<ProjectRow>('management.getProject', `SELECT ${PROJECT_COLUMNS} FROM projects p WHERE p.id = $1`, [id])).rows[0];
  }

  /** One page of the projects of the user's organizations within the key's limits, by id, with their count. */
  async listProjects(userId: number, key: KeyLimits, page: Page): Promise<{ rows: ProjectRow[]; count: number }> {
    const params = [userId, ...limitParams(key)];
    const where = `m.user_id = $1 AND ${projectWithinSql('p.id', 'p.organization_id', '$2', '$3')}`;
    const rows = await this.sql.query<ProjectRow>(
      'management.listProjects',
      `SELECT ${PROJECT_COLUMNS} ${MEMBER_PROJECTS} WHERE ${where} ORDER BY p.id LIMIT $4 OFFSET $5`,
      [...params, page.limit + 1, page.offset],
    );
    const count = await this.sql.query<{ n: number }>('management.countProjects', `SELECT count(*)::int AS n ${MEMBER_PROJECTS} WHERE ${where}`, params);
    return { rows: rows.rows, count: count.rows[0]?.n ?? 0 };
  }

  /** The user's memberships, the organization of their current project first. */
  async memberships(userId: number): Promise<Array<{ organization_id: string; level: string }>> {
    const result = await this.sql.query<{ organization_id: string; level: string }>(
      'management.adminMemberships',
      `SELECT m.organization_id, m.level FROM organization_memberships m
         LEFT JOIN users u ON u.id = m.user_id
         LEFT JOIN projects p ON p.id = u.current_project_id
        WHERE m.user_id = $1 ORDER BY (p.organization_id = m.organization_id) DESC NULLS LAST, m.created_at`,
      [userId],
    );
    return result.rows;
  }

  async createProject(organizationId: string, name: string, timezone: string): Promise<ProjectRow> {
    const result = await this.sql.query<ProjectRow>(
      'management.createProject',
      `INSERT INTO projects (organization_id, name, api_token, timezone) VALUES ($1, $2, $3, $4)
       RETURNING id, uuid, organization_id AS organization, name, api_token, timezone, ingested_event, anonymize_ips, created_at`,
      [organizationId, name, newProjectToken(), timezone],
    );
    return result.rows[0]!;
  }

  /** Renames the project or changes its timezone (either may be absent), within the caller's transaction. */
  async updateProject(tx: SqlExecutor, projectId: number, change: { name?: string; timezone?: string; anonymize_ips?: boolean }): Promise<void> {
    await tx.query(
      'management.updateProject',
      `UPDATE projects SET name = COALESCE($2, name), timezone = COALESCE($3, timezone), anonymize_ips = COALESCE($4, anonymize_ips), updated_at = now()
        WHERE id = $1`,
      [projectId, change.name ?? null, change.timezone ?? null, change.anonymize_ips ?? null],
    );
  }

  async rotateToken(projectId: number): Promise<void> {
    await this.sql.query('management.rotateToken', 'UPDATE projects SET api_token = $2, updated_at = now() WHERE id = $1', [projectId, newProjectToken()]);
  }

  async listKeys(userId: number): Promise<KeyRow[]> {
    const result = await this.sql.query<KeyRow>(
      'management.listKeys',
      `SELECT ${KEY_COLUMNS} FROM personal_api_keys WHERE user_id = $1 ORDER BY created_at DESC, id`,
      [userId],
    );
    return result.rows;
  }

  async key(id: string, userId: number): Promise<KeyRow | undefined> {
    const result = await this.sql.query<KeyRow>('management.getKey', `SELECT ${KEY_COLUMNS} FROM personal_api_keys WHERE id = $1 AND user_id = $2`, [
      id,
      userId,
    ]);
    return result.rows[0];
  }

  /** Whether the key was there to delete. */
  async deleteKey(id: string, userId: number): Promise<boolean> {
    const deleted = await this.sql.query('management.deleteKey', 'DELETE FROM personal_api_keys WHERE id = $1 AND user_id = $2', [id, userId]);
    return deleted.rowCount > 0;
  }

  /**
   * Stores a new key after checking, under a lock on the user (so the limit holds under concurrent requests),
   * that they have fewer than 10 keys and belong to every project and organization the key is limited to.
   */
  async createKey(key: NewKey): Promise<KeyRow> {
    return this.sql.transaction(async (tx) => {
      await tx.query('management.lockUser', 'SELECT id FROM users WHERE id = $1 FOR UPDATE', [key.userId]);
      const count = await tx.query<{ n: number }>('management.countKeys', 'SELECT count(*)::int AS n FROM personal_api_keys WHERE user_id = $1', [key.userId]);
      if ((count.rows[0]?.n ?? 0) >= MAX_KEYS_PER_USER) {
        throw errors.validation(`You can only have ${MAX_KEYS_PER_USER} personal API keys. Remove an existing key before creating a new one.`);
      }
      if (key.scopedProjects && key.scopedProjects.length > 0) {
        const visible = await tx.query<{ id: number }>(
          'management.visibleProjects',
          `SELECT p.id ${MEMBER_PROJECTS} WHERE m.user_id = $1 AND p.id = ANY($2::int[])`,
          [key.userId, key.scopedProjects],
        );
        if (visible.rowCount !== new Set(key.scopedProjects).size)
          throw errors.validation('You must be a member of all projects you are scoping the key to.', 'scoped_teams');
      }
      if (key.scopedOrganizations && key.scopedOrganizations.length > 0) {
        const visible = await tx.query<{ id: string }>(
          'management.visibleOrganizations',
          'SELECT organization_id FROM organization_memberships WHERE user_id = $1 AND organization_id = ANY($2::uuid[])',
          [key.userId, key.scopedOrganizations],
        );
        if (visible.rowCount !== new Set(key.scopedOrganizations).size) {
          throw errors.validation('You must be a member of all organizations you are scoping the key to.', 'scoped_organizations');
        }
      }
      const inserted = await tx.query<KeyRow>(
        'management.createKey',
        `INSERT INTO personal_api_keys (user_id, label, secure_value, mask_value, scopes, scoped_projects, scoped_organizations)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${KEY_COLUMNS}`,
        [key.userId, key.label, hashPersonalApiKey(key.value), maskPersonalApiKey(key.value), key.scopes, key.scopedProjects, key.scopedOrganizations],
      );
      return inserted.rows[0]!;
    });
  }
}
