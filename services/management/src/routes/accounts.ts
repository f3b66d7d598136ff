import { Router, type Request } from 'express';
import { hashPersonalApiKey, maskPersonalApiKey, newPersonalApiKey, newProjectToken } from '@plover/accounts';
import type { Sql } from '@plover/postgres';
import { principalOf, requireScope } from '../http/auth';
import { bodyOf, optionalString } from '../http/body';
import { errors } from '../http/errors';
import { exceededLimit, limitParams, organizationWithinSql, projectWithinSql, type KeyLimits } from '../http/key-limits';
import { envelope, pageOf, send } from '../http/render';
import { validateBody } from '../schemas';

/** Scope objects a key may carry (PostHog's posthog/scopes.py). */
export const SCOPE_OBJECTS = [
  'action',
  'access_control',
  'activity_log',
  'annotation',
  'batch_export',
  'batch_import',
  'cohort',
  'dashboard',
  'dashboard_template',
  'early_access_feature',
  'error_tracking',
  'event_definition',
  'experiment',
  'export',
  'feature_flag',
  'file_system',
  'file_system_shortcut',
  'group',
  'hog_function',
  'insight',
  'link',
  'notebook',
  'organization',
  'organization_member',
  'person',
  'persisted_folder',
  'personal_api_key',
  'plugin',
  'project',
  'property_definition',
  'query',
  'session_recording',
  'session_recording_playlist',
  'sharing_configuration',
  'subscription',
  'survey',
  'user',
  'webhook',
  'warehouse_view',
  'warehouse_table',
  'logs',
] as const;

const MAX_KEYS_PER_USER = 10;

export interface ProjectRow {
  id: number;
  uuid: string;
  organization: string;
  name: string;
  api_token: string;
  timezone: string;
  ingested_event: boolean;
  created_at: Date;
}

const PROJECT_COLUMNS = `p.id, p.uuid, p.organization_id AS organization, p.name, p.api_token, p.timezone, p.ingested_event, p.created_at`;

function projectBody(row: ProjectRow): Record<string, unknown> {
  return {
    id: row.id,
    uuid: row.uuid,
    organization: row.organization,
    name: row.name,
    api_token: row.api_token,
    timezone: row.timezone,
    ingested_event: row.ingested_event,
    is_demo: false,
    access_control: false,
    created_at: row.created_at.toISOString(),
  };
}

function isValidTimezone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

interface KeyRow {
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

function keyBody(row: KeyRow, value?: string): Record<string, unknown> {
  return {
    id: row.id,
    label: row.label,
    value: value ?? null,
    mask_value: row.mask_value,
    scopes: row.scopes.length === 0 ? ['*'] : row.scopes,
    scoped_teams: row.scoped_projects ?? [],
    scoped_organizations: row.scoped_organizations ?? [],
    created_at: row.created_at.toISOString(),
    last_used_at: row.last_used_at?.toISOString() ?? null,
    last_rolled_at: row.last_rolled_at?.toISOString() ?? null,
  };
}

const KEY_COLUMNS = 'id, label, mask_value, scopes, scoped_projects, scoped_organizations, created_at, last_used_at, last_rolled_at';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const limitsOf = (row: KeyRow): KeyLimits => ({ scopes: row.scopes, scopedProjects: row.scoped_projects, scopedOrganizations: row.scoped_organizations });

/**
 * The caller's key `:id` (`@current`: the calling key); 404 if the user has none such, 403 if it is wider than
 * the calling key, which may not see or revoke it.
 */
async function keyWithinCaller(sql: Sql, req: Request): Promise<KeyRow> {
  const principal = principalOf(req);
  const param = String(req.params.id);
  const id = param === '@current' ? principal.key.id : param;
  if (!UUID.test(id)) throw errors.notFound();
  const row = (
    await sql.query<KeyRow>('management.getKey', `SELECT ${KEY_COLUMNS} FROM personal_api_keys WHERE id = $1 AND user_id = $2`, [id, principal.user.id])
  ).rows[0];
  if (!row) throw errors.notFound();
  const field = exceededLimit(limitsOf(row), principal.key);
  if (field) throw errors.forbidden(`This personal API key has wider ${field} than the API key used for the request.`);
  return row;
}

function validScopes(value: unknown): string[] {
  if (value === undefined) throw errors.required('scopes');
  if (!Array.isArray(value)) throw errors.validation('Expected a list of items but got type "' + typeof value + '".', 'scopes', 'not_a_list');
  if (value.length === 0) throw errors.validation('This list may not be empty.', 'scopes', 'empty');
  value.forEach((scope, index) => {
    if (typeof scope !== 'string') throw errors.validation('Not a valid string.', `scopes__${index}`, 'invalid');
    if (scope === '*') return;
    const [object, action, extra] = scope.split(':');
    if (extra !== undefined || !(SCOPE_OBJECTS as readonly string[]).includes(object ?? '') || (action !== 'read' && action !== 'write')) {
      throw errors.validation(`Invalid scope: ${scope}`, 'scopes', 'invalid_input');
    }
  });
  return [...new Set(value as string[])];
}

/** `/api/users/@me`, `/api/personal_api_keys`, `/api/projects` (the routes that are not inside one project). */
export function accountRoutes(sql: Sql): Router {
  const router = Router();

  router.get('/users/@me', async (req, res) => {
    requireScope(req, 'user:read');
    const { user } = principalOf(req);
    const row = (
      await sql.query<{
        id: number;
        uuid: string;
        distinct_id: string;
        first_name: string;
        last_name: string;
        email: string;
        is_email_verified: boolean;
        hedgehog_config: unknown;
        role_at_organization: string;
        is_staff: boolean;
        current_project_id: number | null;
        date_joined: Date;
      }>(
        'management.me',
        `SELECT id, uuid, distinct_id, first_name, last_name, email, is_email_verified, hedgehog_config, role_at_organization,
                is_staff, current_project_id, created_at AS date_joined FROM users WHERE id = $1`,
        [user.id],
      )
    ).rows[0];
    if (!row) throw errors.notAuthenticated();
    // A key limited to some projects or organizations sees only those (and the organizations holding them).
    const limits = limitParams(principalOf(req).key);
    const organizations = (
      await sql.query<{ id: string; name: string; level: string }>(
        'management.myOrganizations',
        `SELECT o.id, o.name, m.level FROM organization_memberships m JOIN organizations o ON o.id = m.organization_id
          WHERE m.user_id = $1 AND ${organizationWithinSql('o.id', '$2', '$3')} ORDER BY o.created_at, o.id`,
        [user.id, ...limits],
      )
    ).rows;
    const team =
      row.current_project_id === null
        ? null
        : (
            await sql.query<ProjectRow>(
              'management.myProject',
              `SELECT ${PROJECT_COLUMNS} FROM projects p WHERE p.id = $1 AND ${projectWithinSql('p.id', 'p.organization_id', '$2', '$3')}`,
              [row.current_project_id, ...limits],
            )
          ).rows[0];
    const { current_project_id: _current, date_joined, ...basic } = row;
    send(
      req,
      res,
      200,
      {
        ...basic,
        date_joined: date_joined.toISOString(),
        team: team ? projectBody(team) : null,
        organization: team ? (organizations.find((o) => o.id === team.organization) ?? null) : (organizations[0] ?? null),
        organizations: organizations.map((o) => ({ id: o.id, name: o.name, membership_level: o.level })),
      },
      'user',
    );
  });

  router.get('/personal_api_keys', async (req, res) => {
    requireScope(req, 'personal_api_key:read');
    const rows = await sql.query<KeyRow>(
      'management.listKeys',
      `SELECT ${KEY_COLUMNS} FROM personal_api_keys WHERE user_id = $1 ORDER BY created_at DESC, id`,
      [principalOf(req).user.id],
    );
    const visible = rows.rows.filter((row) => exceededLimit(limitsOf(row), principalOf(req).key) === null);
    send(
      req,
      res,
      200,
      visible.map((row) => keyBody(row)),
      'personal_api_keys',
    );
  });

  router.get('/personal_api_keys/:id', async (req, res) => {
    requireScope(req, 'personal_api_key:read');
    send(req, res, 200, keyBody(await keyWithinCaller(sql, req)), 'personal_api_key');
  });

  router.post('/personal_api_keys', async (req, res) => {
    requireScope(req, 'personal_api_key:write');
    const principal = principalOf(req);
    const { user } = principal;
    const body = bodyOf(req);
    validateBody('PersonalApiKeyCreate', body);
    const label = optionalString(body, 'label', { max: 40 });
    if (label === undefined || label === null) throw errors.required('label');
    if (label.trim() === '') throw errors.validation('This field may not be blank.', 'label', 'blank');
    const scopes = validScopes(body.scopes);
    // Omitted limits are the calling key's own, so a limited key mints limited keys by default; an explicit
    // empty list asks for no limit, which only an unlimited key may grant.
    const scopedProjects = integerList(body.scoped_teams, 'scoped_teams') ?? principal.key.scopedProjects;
    const scopedOrganizations = uuidList(body.scoped_organizations, 'scoped_organizations') ?? principal.key.scopedOrganizations;
    const exceeded = exceededLimit({ scopes, scopedProjects, scopedOrganizations }, principal.key);
    if (exceeded) throw errors.forbidden(`A personal API key cannot create a key with wider ${exceeded} than its own.`);
    const value = newPersonalApiKey();
    const row = await sql.transaction(async (tx) => {
      // Serializes this user's key creations, so the limit holds under concurrent requests.
      await tx.query('management.lockUser', 'SELECT id FROM users WHERE id = $1 FOR UPDATE', [user.id]);
      const count = await tx.query<{ n: number }>('management.countKeys', 'SELECT count(*)::int AS n FROM personal_api_keys WHERE user_id = $1', [user.id]);
      if ((count.rows[0]?.n ?? 0) >= MAX_KEYS_PER_USER) {
        throw errors.validation(`You can only have ${MAX_KEYS_PER_USER} personal API keys. Remove an existing key before creating a new one.`);
      }
      if (scopedProjects && scopedProjects.length > 0) {
        const visible = await tx.query<{ id: number }>(
          'management.visibleProjects',
          `SELECT p.id FROM projects p JOIN organization_memberships m ON m.organization_id = p.organization_id
            WHERE m.user_id = $1 AND p.id = ANY($2::int[])`,
          [user.id, scopedProjects],
        );
        if (visible.rowCount !== new Set(scopedProjects).size)
          throw errors.validation('You must be a member of all projects you are scoping the key to.', 'scoped_teams');
      }
      if (scopedOrganizations && scopedOrganizations.length > 0) {
        const visible = await tx.query<{ id: string }>(
          'management.visibleOrganizations',
          'SELECT organization_id FROM organization_memberships WHERE user_id = $1 AND organization_id = ANY($2::uuid[])',
          [user.id, scopedOrganizations],
        );
        if (visible.rowCount !== new Set(scopedOrganizations).size) {
          throw errors.validation('You must be a member of all organizations you are scoping the key to.', 'scoped_organizations');
        }
      }
      const inserted = await tx.query<KeyRow>(
        'management.createKey',
        `INSERT INTO personal_api_keys (user_id, label, secure_value, mask_value, scopes, scoped_projects, scoped_organizations)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${KEY_COLUMNS}`,
        [user.id, label, hashPersonalApiKey(value), maskPersonalApiKey(value), scopes, scopedProjects, scopedOrganizations],
      );
      return inserted.rows[0]!;
    });
    send(req, res, 201, keyBody(row, value), 'personal_api_key');
  });

  router.delete('/personal_api_keys/:id', async (req, res) => {
    requireScope(req, 'personal_api_key:write');
    const row = await keyWithinCaller(sql, req);
    const deleted = await sql.query('management.deleteKey', 'DELETE FROM personal_api_keys WHERE id = $1 AND user_id = $2', [row.id, principalOf(req).user.id]);
    if (deleted.rowCount === 0) throw errors.notFound();
    res.status(204).end();
  });

  router.get('/projects', async (req, res) => {
    requireScope(req, 'project:read');
    const principal = principalOf(req);
    const page = pageOf(req);
    const params = [principal.user.id, ...limitParams(principal.key)];
    const where = `m.user_id = $1 AND ${projectWithinSql('p.id', 'p.organization_id', '$2', '$3')}`;
    const rows = await sql.query<ProjectRow>(
      'management.listProjects',
      `SELECT ${PROJECT_COLUMNS} FROM projects p JOIN organization_memberships m ON m.organization_id = p.organization_id
        WHERE ${where} ORDER BY p.id LIMIT $4 OFFSET $5`,
      [...params, page.limit + 1, page.offset],
    );
    const count = await sql.query<{ n: number }>(
      'management.countProjects',
      `SELECT count(*)::int AS n FROM projects p JOIN organization_memberships m ON m.organization_id = p.organization_id WHERE ${where}`,
      params,
    );
    const results = rows.rows.slice(0, page.limit).map(projectBody);
    send(req, res, 200, envelope(req, page, results, count.rows[0]?.n ?? 0, rows.rows.length > page.limit), 'projects');
  });

  router.post('/projects', async (req, res) => {
    requireScope(req, 'project:write');
    const principal = principalOf(req);
    if (principal.key.scopedProjects?.length) throw errors.forbidden('API keys with scoped projects are only supported on project-based endpoints.');
    const body = bodyOf(req);
    validateBody('ProjectCreate', body);
    const name = optionalString(body, 'name', { max: 200 });
    if (name === undefined || name === null) throw errors.required('name');
    if (name.trim() === '') throw errors.validation('This field may not be blank.', 'name', 'blank');
    const timezone = optionalString(body, 'timezone') ?? 'UTC';
    if (!isValidTimezone(timezone)) throw errors.validation(`"${timezone}" is not a valid choice.`, 'timezone', 'invalid_choice');
    const organization = optionalString(body, 'organization');
    if (organization !== undefined && organization !== null && !UUID.test(organization))
      throw errors.validation('Must be a valid UUID.', 'organization', 'invalid');
    const memberships = await sql.query<{ organization_id: string; level: string }>(
      'management.adminMemberships',
      `SELECT m.organization_id, m.level FROM organization_memberships m
         LEFT JOIN users u ON u.id = m.user_id
         LEFT JOIN projects p ON p.id = u.current_project_id
        WHERE m.user_id = $1 ORDER BY (p.organization_id = m.organization_id) DESC NULLS LAST, m.created_at`,
      [principal.user.id],
    );
    const target = organization ? memberships.rows.find((m) => m.organization_id === organization) : memberships.rows[0];
    if (!target) throw errors.forbidden("You don't have access to the organization.");
    const scopedOrganizations = principal.key.scopedOrganizations;
    if (scopedOrganizations?.length && !scopedOrganizations.includes(target.organization_id)) {
      throw errors.forbidden(`API key does not have access to the requested organization: ID ${target.organization_id}.`);
    }
    if (target.level !== 'admin' && target.level !== 'owner') throw errors.forbidden('Your organization access level is insufficient.');
    const row = (
      await sql.query<ProjectRow>(
        'management.createProject',
        `INSERT INTO projects (organization_id, name, api_token, timezone) VALUES ($1, $2, $3, $4)
         RETURNING id, uuid, organization_id AS organization, name, api_token, timezone, ingested_event, created_at`,
        [target.organization_id, name, newProjectToken(), timezone],
      )
    ).rows[0]!;
    send(req, res, 201, projectBody(row), 'project');
  });

  return router;
}

/** `/api/projects/:project_id` itself (the project resolved by resolveProject) and its token rotation. */
export function projectRoutes(sql: Sql): Router {
  const router = Router({ mergeParams: true });
  const load = async (id: number) =>
    (await sql.query<ProjectRow>('management.getProject', `SELECT ${PROJECT_COLUMNS} FROM projects p WHERE p.id = $1`, [id])).rows[0];

  router.get('/', async (req, res) => {
    requireScope(req, 'project:read');
    const row = await load(req.project!.id);
    if (!row) throw errors.notFound('Project not found.');
    send(req, res, 200, projectBody(row), 'project');
  });

  const rotate = async (req: import('express').Request, res: import('express').Response) => {
    requireScope(req, 'project:write');
    const project = req.project!;
    if (project.level === 'member') throw errors.forbidden('Your organization access level is insufficient.');
    await sql.query('management.rotateToken', 'UPDATE projects SET api_token = $2, updated_at = now() WHERE id = $1', [project.id, newProjectToken()]);
    const row = await load(project.id);
    send(req, res, 200, projectBody(row!), 'project');
  };
  router.patch('/reset_token', rotate);
  router.post('/reset_token', rotate);
  return router;
}

function integerList(value: unknown, attr: string): number[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) throw errors.validation('Expected a list of items.', attr, 'not_a_list');
  value.forEach((item, index) => {
    if (typeof item !== 'number' || !Number.isInteger(item) || item < 1 || item > 2_147_483_647) {
      throw errors.validation('A valid integer is required.', `${attr}__${index}`, 'invalid');
    }
  });
  return value as number[];
}

function uuidList(value: unknown, attr: string): string[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) throw errors.validation('Expected a list of items.', attr, 'not_a_list');
  value.forEach((item, index) => {
    if (typeof item !== 'string' || !UUID.test(item)) throw errors.validation('Must be a valid UUID.', `${attr}__${index}`, 'invalid');
  });
  return value as string[];
}
