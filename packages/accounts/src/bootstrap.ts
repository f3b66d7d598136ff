import type { Sql } from '@plover/postgres';
import { hashPersonalApiKey, maskPersonalApiKey, newPersonalApiKey, newProjectToken } from './keys';

export interface BootstrapOptions {
  adminEmail: string;
  projectName: string;
  timezone: string;
}

export interface Credentials {
  organization: { id: string; name: string };
  project: { id: number; uuid: string; name: string; api_token: string; timezone: string };
  user: { id: number; uuid: string; email: string };
  personal_api_key: { id: string; label: string; value: string; scopes: string[] };
}

// Any fixed number works; it only has to be the same for every process bootstrapping this database.
const BOOTSTRAP_LOCK = 7_140_221_001;

/**
 * On an empty database: creates the organization, a project with its `phc_` key, an admin user and a
 * `phx_` personal key with every scope, and returns them (the personal key in clear, the only time it is).
 * On a database that has an organization: does nothing and returns undefined. Safe when several
 * processes start at once: they serialize on an advisory lock and only the first creates anything.
 */
export async function bootstrap(sql: Sql, options: BootstrapOptions): Promise<Credentials | undefined> {
  return sql.transaction(async (tx) => {
    await tx.query('accounts.bootstrapLock', 'SELECT pg_advisory_xact_lock($1)', [BOOTSTRAP_LOCK]);
    const existing = await tx.query('accounts.anyOrganization', 'SELECT 1 FROM organizations LIMIT 1');
    if (existing.rowCount > 0) return undefined;

    const organization = (
      await tx.query<{ id: string; name: string }>('accounts.createOrganization', 'INSERT INTO organizations (name) VALUES ($1) RETURNING id, name', [
        'Default organization',
      ])
    ).rows[0]!;
    const project = (
      await tx.query<Credentials['project']>(
        'accounts.createProject',
        `INSERT INTO projects (organization_id, name, api_token, timezone) VALUES ($1, $2, $3, $4)
         RETURNING id, uuid, name, api_token, timezone`,
        [organization.id, options.projectName, newProjectToken(), options.timezone],
      )
    ).rows[0]!;
    const user = (
      await tx.query<Credentials['user']>(
        'accounts.createUser',
        `INSERT INTO users (email, first_name, is_staff, current_project_id) VALUES ($1, $2, true, $3)
         RETURNING id, uuid, email`,
        [options.adminEmail, 'Admin', project.id],
      )
    ).rows[0]!;
    await tx.query('accounts.addMembership', `INSERT INTO organization_memberships (organization_id, user_id, level) VALUES ($1, $2, 'owner')`, [
      organization.id,
      user.id,
    ]);
    const value = newPersonalApiKey();
    const scopes = ['*'];
    const key = (
      await tx.query<{ id: string; label: string }>(
        'accounts.createPersonalApiKey',
        `INSERT INTO personal_api_keys (user_id, label, secure_value, mask_value, scopes) VALUES ($1, $2, $3, $4, $5)
         RETURNING id, label`,
        [user.id, 'Bootstrap key', hashPersonalApiKey(value), maskPersonalApiKey(value), scopes],
      )
    ).rows[0]!;
    return { organization, project, user, personal_api_key: { ...key, value, scopes } };
  });
}
