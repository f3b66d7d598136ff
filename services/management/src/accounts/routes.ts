import type { Request } from 'express';
import {
  newPersonalApiKey,
  readSessionReplaySettings,
  SESSION_REPLAY_SETTINGS,
  updateSessionReplaySettings,
  type SessionReplaySettingsPatch,
} from '@plover/accounts';
import { writeDefinitions } from '@plover/flag-store';
import type { ManagementDeps } from '../http/deps';
import { principalOf, projectOf } from '../http/auth';
import { errors } from '../shared/errors';
import { exceededLimit, type KeyLimits } from '../http/key-limits';
import { Type, type Static } from '@sinclair/typebox';
import { pageFrom, route, updates, type Route } from '../http/route-table';
import { AccountsStore, type KeyRow, type ProjectRow } from './accounts-store';
import { PersonalApiKey, PersonalApiKeyCreate, Project, ProjectCreate, ProjectUpdate, User } from './schemas';

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
  'llm_prompt',
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function projectBody(row: ProjectRow): Static<typeof Project> {
  return {
    id: row.id,
    uuid: row.uuid,
    organization: row.organization,
    name: row.name,
    api_token: row.api_token,
    timezone: row.timezone,
    ingested_event: row.ingested_event,
    anonymize_ips: row.anonymize_ips,
    is_demo: false,
    access_control: false,
    created_at: row.created_at.toISOString(),
  };
}

function keyBody(row: KeyRow, value?: string): Static<typeof PersonalApiKey> {
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

function isValidTimezone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

const limitsOf = (row: KeyRow): KeyLimits => ({ scopes: row.scopes, scopedProjects: row.scoped_projects, scopedOrganizations: row.scoped_organizations });

/** Scopes of a new key (the schema has checked they are a non-empty list of strings): `*` or a known `object:read|write`. */
function validScopes(scopes: string[]): string[] {
  for (const scope of scopes) {
    if (scope === '*') continue;
    const [object, action, extra] = scope.split(':');
    if (extra !== undefined || !(SCOPE_OBJECTS as readonly string[]).includes(object ?? '') || (action !== 'read' && action !== 'write')) {
      throw errors.validation(`Invalid scope: ${scope}`, 'scopes', 'invalid_input');
    }
  }
  return [...new Set(scopes)];
}

/** A required text field (the schema has checked it is a non-empty string) that must not be only blanks either. */
function nonBlank(text: string, attr: string): string {
  if (text.trim() === '') throw errors.validation('This field may not be blank.', attr, 'blank');
  return text;
}

/** `/api/users/@me`, `/api/personal_api_keys`, `/api/projects`: the routes outside any one project. */
export function accountRoutes({ sql }: ManagementDeps): Route[] {
  const store = new AccountsStore(sql);

  /**
   * The caller's key `:id` (`@current`: the calling key); 404 if the user has none such, 403 if it is wider than
   * the calling key, which may not see or revoke it.
   */
  async function keyWithinCaller(req: Request): Promise<KeyRow> {
    const principal = principalOf(req);
    const param = String(req.params.id);
    const id = param === '@current' ? principal.key.id : param;
    if (!UUID.test(id)) throw errors.notFound();
    const row = await store.key(id, principal.user.id);
    if (!row) throw errors.notFound();
    const field = exceededLimit(limitsOf(row), principal.key);
    if (field) throw errors.forbidden(`This personal API key has wider ${field} than the API key used for the request.`);
    return row;
  }

  return [
    route({
      method: 'get',
      path: '/users/@me',
      scope: 'user:read',
      summary: 'The authenticated user',
      csv: { file: 'user' },
      response: { status: 200, schema: User },
      async handler(req) {
        const { user, key } = principalOf(req);
        const row = await store.user(user.id);
        if (!row) throw errors.notAuthenticated();
        // A key limited to some projects or organizations sees only those (and the organizations holding them).
        const organizations = await store.organizations(user.id, key);
        const team = row.current_project_id === null ? undefined : await store.projectWithin(row.current_project_id, key);
        const { current_project_id: _current, date_joined, ...basic } = row;
        return {
          ...basic,
          date_joined: date_joined.toISOString(),
          team: team ? projectBody(team) : null,
          organization: team ? (organizations.find((o) => o.id === team.organization) ?? null) : (organizations[0] ?? null),
          organizations: organizations.map((o) => ({ id: o.id, name: o.name, membership_level: o.level })),
        };
      },
    }),
    route({
      method: 'get',
      path: '/personal_api_keys',
      scope: 'personal_api_key:read',
      summary: 'List your personal API keys (masked)',
      csv: { file: 'personal_api_keys' },
      response: { status: 200, schema: Type.Array(PersonalApiKey) },
      async handler(req) {
        const { user, key } = principalOf(req);
        const rows = await store.listKeys(user.id);
        return rows.filter((row) => exceededLimit(limitsOf(row), key) === null).map((row) => keyBody(row));
      },
    }),
    route({
      method: 'get',
      path: '/personal_api_keys/:id',
      scope: 'personal_api_key:read',
      summary: 'One of your personal API keys (masked); `@current` is the calling key',
      csv: { file: 'personal_api_key' },
      response: { status: 200, schema: PersonalApiKey },
      handler: async (req) => keyBody(await keyWithinCaller(req)),
    }),
    route({
      method: 'post',
      path: '/personal_api_keys',
      scope: 'personal_api_key:write',
      summary: 'Create a personal API key; `value` is shown once',
      body: PersonalApiKeyCreate,
      csv: { file: 'personal_api_key' },
      response: { status: 201, schema: PersonalApiKey },
      async handler(req, { body }) {
        const principal = principalOf(req);
        const label = nonBlank(body.label, 'label');
        const scopes = validScopes(body.scopes);
        // Omitted limits are the calling key's own, so a limited key mints limited keys by default; an explicit
        // empty list asks for no limit, which only an unlimited key may grant.
        const scopedProjects = body.scoped_teams ?? principal.key.scopedProjects;
        const scopedOrganizations = body.scoped_organizations ?? principal.key.scopedOrganizations;
        const exceeded = exceededLimit({ scopes, scopedProjects, scopedOrganizations }, principal.key);
        if (exceeded) throw errors.forbidden(`A personal API key cannot create a key with wider ${exceeded} than its own.`);
        const value = newPersonalApiKey();
        const row = await store.createKey({ userId: principal.user.id, label, value, scopes, scopedProjects, scopedOrganizations });
        return keyBody(row, value);
      },
    }),
    route({
      method: 'delete',
      path: '/personal_api_keys/:id',
      scope: 'personal_api_key:write',
      summary: 'Revoke a personal API key',
      response: { status: 204 },
      async handler(req) {
        const row = await keyWithinCaller(req);
        if (!(await store.deleteKey(row.id, principalOf(req).user.id))) throw errors.notFound();
      },
    }),
    route({
      method: 'get',
      path: '/projects',
      scope: 'project:read',
      summary: 'Projects you can access',
      paginated: 'envelope',
      csv: { file: 'projects' },
      response: { status: 200, schema: Project },
      async handler(req, { page }) {
        const { user, key } = principalOf(req);
        const { rows, count } = await store.listProjects(user.id, key, page);
        return pageFrom(rows, page, projectBody, count);
      },
    }),
    route({
      method: 'post',
      path: '/projects',
      scope: 'project:write',
      summary: 'Create a project (organization admins)',
      body: ProjectCreate,
      csv: { file: 'project' },
      response: { status: 201, schema: Project },
      async handler(req, { body }) {
        const principal = principalOf(req);
        if (principal.key.scopedProjects?.length) throw errors.forbidden('API keys with scoped projects are only supported on project-based endpoints.');
        const name = nonBlank(body.name, 'name');
        const timezone = body.timezone ?? 'UTC';
        if (!isValidTimezone(timezone)) throw errors.validation(`"${timezone}" is not a valid choice.`, 'timezone', 'invalid_choice');
        const organization = body.organization;
        const memberships = await store.memberships(principal.user.id);
        const target = organization ? memberships.find((m) => m.organization_id === organization) : memberships[0];
        if (!target) throw errors.forbidden("You don't have access to the organization.");
        const scopedOrganizations = principal.key.scopedOrganizations;
        if (scopedOrganizations?.length && !scopedOrganizations.includes(target.organization_id)) {
          throw errors.forbidden(`API key does not have access to the requested organization: ID ${target.organization_id}.`);
        }
        if (target.level !== 'admin' && target.level !== 'owner') throw errors.forbidden('Your organization access level is insufficient.');
        return projectBody(await store.createProject(target.organization_id, name, timezone));
      },
    }),
  ];
}

/**
 * `/api/projects/:project_id` itself (the project resolved by resolveProject, with its session replay settings),
 * its changes and its token rotation. Both writes are for the organization's admins, as PostHog's strict team
 * management has them.
 */
export function projectRoutes({ sql, projectTokens }: ManagementDeps): Route[] {
  const store = new AccountsStore(sql);
  const current = async (req: Request) => {
    const id = projectOf(req).id;
    const [row, replay] = await Promise.all([store.project(id), readSessionReplaySettings(sql, id)]);
    if (!row) throw errors.notFound('Project not found.');
    return { ...projectBody(row), ...replay };
  };
  const adminOnly = (req: Request) => {
    if (projectOf(req).level === 'member') throw errors.forbidden('Your organization access level is insufficient.');
  };
  const rotate = (method: 'patch' | 'post'): Route =>
    route({
      method,
      path: '/reset_token',
      scope: 'project:write',
      summary: 'Rotate the project API key (admins)',
      csv: { file: 'project' },
      response: { status: 200, schema: Project },
      async handler(req) {
        adminOnly(req);
        const id = projectOf(req).id;
        const rotated = await store.project(id);
        await store.rotateToken(id);
        if (rotated) projectTokens?.invalidate(rotated.api_token);
        return current(req);
      },
    });
  return [
    route({
      method: 'get',
      path: '/',
      scope: 'project:read',
      summary: 'A project and its session replay settings',
      csv: { file: 'project' },
      response: { status: 200, schema: Project },
      handler: current,
    }),
    ...updates({
      path: '/',
      scope: 'project:write',
      summary: 'Change the name, timezone, anonymize_ips, session replay or logs settings of a project (admins)',
      body: ProjectUpdate,
      csv: { file: 'project' },
      response: { status: 200, schema: Project },
      async handler(req, { body }) {
        adminOnly(req);
        const name = body.name === undefined ? undefined : nonBlank(body.name, 'name');
        const timezone = body.timezone;
        if (timezone !== undefined && !isValidTimezone(timezone)) throw errors.validation(`"${timezone}" is not a valid choice.`, 'timezone', 'invalid_choice');
        const replay = Object.fromEntries(
          SESSION_REPLAY_SETTINGS.filter((key) => key in body).map((key) => [key, (body as Record<string, unknown>)[key]]),
        ) as SessionReplaySettingsPatch;
        const id = projectOf(req).id;
        // One transaction that bumps the definitions version: decide serves the new timezone and recording
        // config on its next request.
        await writeDefinitions(sql, id, async (tx) => {
          if (name !== undefined || timezone !== undefined || body.anonymize_ips !== undefined) {
            await store.updateProject(tx, id, { name, timezone, anonymize_ips: body.anonymize_ips });
          }
          if (Object.keys(replay).length > 0) await updateSessionReplaySettings(tx, id, replay);
        });
        return current(req);
      },
    }),
    rotate('patch'),
    rotate('post'),
  ];
}
