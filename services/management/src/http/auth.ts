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

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
    project?: ProjectContext;
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
