import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { hasScope, keyLimitAllows, projectForUser, type AuthenticatedKey, type PersonalKeyAuth } from '@plover/accounts';
import type { Sql } from '@plover/postgres';
import { errors } from '../shared/errors';

export type Principal = AuthenticatedKey;

export interface ProjectContext {
  id: number;
  uuid: string;
  organizationId: string;
  /** The caller's membership level in the project's organization. */
  level: 'member' | 'admin' | 'owner';
  /** IANA timezone insights bucket by. */
  timezone: string;
}

/** What a public sharing link opens: one dashboard or one insight of its project, nothing else. */
export interface SharedObject {
  accessToken: string;
  dashboardId: number | null;
  insightId: number | null;
  settings: Record<string, unknown>;
}

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
    project?: ProjectContext;
    sharing?: SharedObject;
  }
}

/** `Authorization: Bearer phx_…` → req.principal (`PersonalKeyAuth`: 401, or 429 once failures are throttled). */
export function authenticate(keys: PersonalKeyAuth): RequestHandler {
  return async (req: Request, _res: Response, next: NextFunction) => {
    const address = req.ip ?? req.socket.remoteAddress ?? 'unknown';
    req.principal = await keys.authenticate(req.headers.authorization, address, () => errors.invalidKey('Authorization header'));
    next();
  };
}

export function principalOf(req: Request): Principal {
  if (!req.principal) throw errors.notAuthenticated();
  return req.principal;
}

export function projectOf(req: Request): ProjectContext {
  if (!req.project) throw errors.notFound('Project not found.');
  return req.project;
}

export function sharingOf(req: Request): SharedObject {
  if (!req.sharing) throw errors.notFound();
  return req.sharing;
}

/** A sharing link's token: URL-safe base64, as the links are minted. */
const ACCESS_TOKEN = /^[A-Za-z0-9_-]{16,64}$/;

/**
 * Resolves a public sharing link's `:access_token` (PostHog's SharingAccessTokenAuthentication): an enabled link
 * whose dashboard or insight is not deleted sets req.sharing and req.project (its project, as no user: there is
 * no principal, so nothing that needs a key can run); anything else → 404, whatever made it fail.
 */
export function resolveSharing(sql: Sql): RequestHandler {
  return async (req, _res, next) => {
    const token: unknown = req.params.access_token;
    if (typeof token !== 'string' || !ACCESS_TOKEN.test(token)) throw errors.notFound();
    const row = (
      await sql.query<{
        dashboard_id: number | null;
        insight_id: number | null;
        settings: Record<string, unknown>;
        id: number;
        uuid: string;
        organization_id: string;
        timezone: string;
      }>(
        'management.sharedBy',
        `SELECT s.dashboard_id, s.insight_id, s.settings, p.id, p.uuid, p.organization_id, p.timezone
           FROM sharing_configurations s
           JOIN projects p ON p.id = s.project_id
           LEFT JOIN dashboards d ON d.id = s.dashboard_id
           LEFT JOIN insights i ON i.id = s.insight_id
          WHERE s.access_token = $1 AND s.enabled AND NOT COALESCE(d.deleted, i.deleted)`,
        [token],
      )
    ).rows[0];
    if (!row) throw errors.notFound();
    req.sharing = { accessToken: token, dashboardId: row.dashboard_id, insightId: row.insight_id, settings: row.settings };
    req.project = { id: row.id, uuid: row.uuid, organizationId: row.organization_id, level: 'member', timezone: row.timezone };
    next();
  };
}

export function requireScope(req: Request, scope: string): void {
  if (!hasScope(principalOf(req).key.scopes, scope)) throw errors.missingScope(scope);
}

/**
 * Resolves `:project_id` (an integer or `@current`) for a project-scoped route: non-integer → 404; a key limited
 * to other projects or organizations → 403; unknown project → 404; not a member of its organization → 403.
 */
export function resolveProject(sql: Sql): RequestHandler {
  return async (req, _res, next) => {
    const principal = principalOf(req);
    const param: unknown = req.params.project_id;
    const raw = typeof param === 'string' ? param : '';
    let id: number;
    if (raw === '@current') {
      const current = await sql.query<{ current_project_id: number | null }>(
        'management.currentProject',
        'SELECT current_project_id FROM users WHERE id = $1',
        [principal.user.id],
      );
      const value = current.rows[0]?.current_project_id;
      if (value == null) throw errors.notFound('Project not found.');
      id = value;
    } else if (/^[0-9]{1,9}$/.test(raw)) {
      id = Number(raw);
    } else {
      throw errors.notFound('Project not found.');
    }
    const { scopedProjects, scopedOrganizations } = principal.key;
    if (!keyLimitAllows(scopedProjects, id)) {
      throw errors.forbidden(`API key does not have access to the requested project: ID ${id}.`);
    }
    const project = await projectForUser(sql, id, principal.user.id);
    if (!project) throw errors.notFound('Project not found.');
    if (!keyLimitAllows(scopedOrganizations, project.organizationId)) {
      throw errors.forbidden(`API key does not have access to the requested organization: ID ${project.organizationId}.`);
    }
    const { level } = project;
    if (!level) throw errors.forbidden("You don't have access to the project.");
    req.project = { ...project, level };
    next();
  };
}
