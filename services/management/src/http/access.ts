import type { Request, Response } from 'express';
import type { Sql } from '@plover/postgres';
import { principalOf, projectOf, requireScope } from './auth';
import { bodyOf } from './body';
import { validateBody } from '../schemas';
import { errors } from './errors';
import { send } from './render';

/**
 * Object-level access control (PostHog's AccessControl, `posthog/rbac/access_control_api_mixin.py`), reusable by playlists, insights and
 * feature flags: a level per organization member or an object-wide default, `none < viewer < editor`. The
 * object's creator and organization admins/owners are always editors; without a rule, everyone is an editor.
 */
export const ACCESS_LEVELS = ['none', 'viewer', 'editor'] as const;
export type AccessLevel = (typeof ACCESS_LEVELS)[number];
const RANK: Record<AccessLevel, number> = { none: 0, viewer: 1, editor: 2 };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface AccessTarget {
  resource: string;
  resourceId: string;
  createdBy: number | null;
}

/**
 * SQL for the caller's level on each row, for listings: `$userParam` is the user id, `$adminParam` whether they
 * administer the organization. `idExpr`/`createdByExpr` name the row's id (as text) and creator.
 */
export function accessLevelSql(resource: string, idExpr: string, createdByExpr: string, projectParam: string, userParam: string, adminParam: string): string {
  const rule = (who: string) =>
    `(SELECT ac.access_level FROM access_controls ac WHERE ac.project_id = ${projectParam} AND ac.resource = '${resource}' AND ac.resource_id = ${idExpr} AND ${who})`;
  return `(CASE WHEN ${adminParam}::boolean OR ${createdByExpr} = ${userParam} THEN 'editor'
    ELSE COALESCE(${rule(`ac.user_id = ${userParam}`)}, ${rule('ac.user_id IS NULL')}, 'editor') END)`;
}

export function isAdmin(req: Request): boolean {
  const level = projectOf(req).level;
  return level === 'admin' || level === 'owner';
}

export async function accessLevel(sql: Sql, req: Request, target: AccessTarget): Promise<AccessLevel> {
  const result = await sql.query<{ level: AccessLevel }>(
    'management.accessLevel',
    `SELECT ${accessLevelSql(target.resource, '$4', '$5::int', '$1', '$2', '$3')} AS level`,
    [projectOf(req).id, principalOf(req).user.id, isAdmin(req), target.resourceId, target.createdBy],
  );
  return result.rows[0]?.level ?? 'editor';
}

/** 403 unless the caller has at least `needed` on the object; answers the caller's level otherwise. */
export async function requireAccess(sql: Sql, req: Request, target: AccessTarget, needed: AccessLevel): Promise<AccessLevel> {
  const level = await accessLevel(sql, req, target);
  if (RANK[level] < RANK[needed]) throw errors.forbidden(`You do not have ${needed} access to this resource.`);
  return level;
}

interface RuleRow {
  access_level: AccessLevel;
  organization_member: string | null;
  created_by: number | null;
  created_at: Date;
  updated_at: Date;
}

function ruleBody(target: AccessTarget, row: RuleRow): Record<string, unknown> {
  return {
    access_level: row.access_level,
    resource: target.resource,
    resource_id: target.resourceId,
    organization_member: row.organization_member,
    role: null,
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** `GET /<resource>/:id/access_controls` (scope access_control:read). */
export async function getAccessControls(sql: Sql, req: Request, res: Response, target: AccessTarget): Promise<void> {
  requireScope(req, 'access_control:read');
  const level = await requireAccess(sql, req, target, 'viewer');
  const rows = await sql.query<RuleRow>(
    'management.listAccessControls',
    `SELECT ac.access_level, m.id::text AS organization_member, ac.created_by, ac.created_at, ac.updated_at
       FROM access_controls ac
       LEFT JOIN organization_memberships m ON m.user_id = ac.user_id AND m.organization_id = $4
      WHERE ac.project_id = $1 AND ac.resource = $2 AND ac.resource_id = $3
      ORDER BY ac.user_id NULLS FIRST, ac.id`,
    [projectOf(req).id, target.resource, target.resourceId, projectOf(req).organizationId],
  );
  const fallback = rows.rows.find((row) => row.organization_member === null);
  send(
    req,
    res,
    200,
    {
      access_controls: rows.rows.map((row) => ruleBody(target, row)),
      available_access_levels: ACCESS_LEVELS,
      default_access_level: fallback?.access_level ?? 'editor',
      user_access_level: level,
      user_can_edit_access_levels: level === 'editor',
    },
    'access_controls',
  );
}

/**
 * `PUT /<resource>/:id/access_controls` (scope access_control:write): `{access_level, organization_member?}`
 * upserts the member's rule (or the object default without a member); `access_level: null` removes it → 204.
 */
export async function putAccessControl(sql: Sql, req: Request, res: Response, target: AccessTarget): Promise<void> {
  requireScope(req, 'access_control:write');
  const body = bodyOf(req);
  validateBody('AccessControlPut', body);
  const level = body.access_level;
  if (level !== null && (typeof level !== 'string' || !(ACCESS_LEVELS as readonly string[]).includes(level))) {
    throw errors.validation(`Invalid access level. Must be one of: ${ACCESS_LEVELS.join(', ')}`, 'access_level', 'invalid_choice');
  }
  if (body.role !== undefined && body.role !== null) throw errors.validation('Roles are not supported.', 'role', 'invalid');
  const member = body.organization_member;
  if (member !== undefined && member !== null && (typeof member !== 'string' || !UUID.test(member))) {
    throw errors.validation('Must be a valid UUID.', 'organization_member', 'invalid');
  }
  const callerLevel = await requireAccess(sql, req, target, 'viewer');
  if (callerLevel !== 'editor') throw errors.forbidden(`Must be editor to modify ${target.resource} permissions.`);
  const project = projectOf(req);
  let userId: number | null = null;
  if (typeof member === 'string') {
    const found = await sql.query<{ user_id: number }>(
      'management.memberUser',
      'SELECT user_id FROM organization_memberships WHERE id = $1 AND organization_id = $2',
      [member, project.organizationId],
    );
    if (!found.rows[0]) throw errors.validation('Organization member not found.', 'organization_member', 'does_not_exist');
    userId = found.rows[0].user_id;
  }
  const who = userId === null ? 'user_id IS NULL' : 'user_id = $4';
  const params: unknown[] = [project.id, target.resource, target.resourceId];
  if (userId !== null) params.push(userId);
  if (level === null) {
    await sql.query(
      'management.deleteAccessControl',
      `DELETE FROM access_controls WHERE project_id = $1 AND resource = $2 AND resource_id = $3 AND ${who}`,
      params,
    );
    res.status(204).end();
    return;
  }
  const row = await sql.transaction(async (tx) => {
    const updated = await tx.query<{ id: number }>(
      'management.updateAccessControl',
      `UPDATE access_controls SET access_level = $${params.length + 1}, updated_at = now()
        WHERE project_id = $1 AND resource = $2 AND resource_id = $3 AND ${who} RETURNING id`,
      [...params, level],
    );
    if (updated.rowCount === 0) {
      await tx.query(
        'management.insertAccessControl',
        `INSERT INTO access_controls (project_id, resource, resource_id, user_id, access_level, created_by) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT DO NOTHING`,
        [project.id, target.resource, target.resourceId, userId, level, principalOf(req).user.id],
      );
    }
    return (
      await tx.query<RuleRow>(
        'management.getAccessControl',
        `SELECT access_level, ${typeof member === 'string' ? '$4::text' : 'NULL::text'} AS organization_member, created_by, created_at, updated_at
           FROM access_controls WHERE project_id = $1 AND resource = $2 AND resource_id = $3 AND ${userId === null ? 'user_id IS NULL' : 'user_id = $5'}`,
        typeof member === 'string' ? [...params.slice(0, 3), member, userId] : params,
      )
    ).rows[0]!;
  });
  send(req, res, 200, ruleBody(target, row), 'access_control');
}
