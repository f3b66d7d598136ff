import type { Request } from 'express';
import type { Sql } from '@plover/postgres';
import { ACCESS_LEVELS, AccessStore, type AccessLevel, type AccessTarget, type Caller, type RuleRow } from '../shared/access-store';
import { principalOf, projectOf } from './auth';
import { errors } from '../shared/errors';
import { Type, type Static } from '@sinclair/typebox';
import { component, Enum, Types } from '../shared/schema';
import { Reply, route, type Route } from './route-table';

/**
 * Object-level access control (PostHog's AccessControl, `posthog/rbac/access_control_api_mixin.py`), reusable by
 * playlists, insights and feature flags: a level per organization member or an object-wide default,
 * `none < viewer < editor`. The object's creator and organization admins/owners are always editors; without a
 * rule, everyone is an editor.
 */
const RANK: Record<AccessLevel, number> = { none: 0, viewer: 1, editor: 2 };

function isAdmin(req: Request): boolean {
  const level = projectOf(req).level;
  return level === 'admin' || level === 'owner';
}

/** The caller of a project route, as access rules see them. */
export function callerOf(req: Request): Caller {
  const project = projectOf(req);
  return { projectId: project.id, organizationId: project.organizationId, userId: principalOf(req).user.id, admin: isAdmin(req) };
}

/** 403 unless the caller has at least `needed` on the object; answers the caller's level otherwise. */
export async function requireAccess(sql: Sql, req: Request, target: AccessTarget, needed: AccessLevel): Promise<AccessLevel> {
  const level = await new AccessStore(sql).level(callerOf(req), target);
  if (RANK[level] < RANK[needed]) throw errors.forbidden(`You do not have ${needed} access to this resource.`);
  return level;
}

const AccessControlPut = component(
  'AccessControlPut',
  Type.Object({
    access_level: Types<string | null>(['string', 'null'], { description: '`none`, `viewer`, `editor`; null removes the rule' }),
    organization_member: Type.Optional(Types<string | null>(['string', 'null'], { format: 'uuid' })),
    role: Type.Optional(Type.Null()),
  }),
);

const AccessControl = component(
  'AccessControl',
  Type.Object({
    access_level: Type.String(),
    resource: Type.String(),
    resource_id: Type.String(),
    organization_member: Types<string | null>(['string', 'null'], { format: 'uuid' }),
    role: Type.Null(),
    created_by: Types<number | null>(['integer', 'null']),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  }),
);

const AccessControls = component(
  'AccessControls',
  Type.Object({
    access_controls: Type.Array(AccessControl),
    available_access_levels: Type.Array(Type.String()),
    default_access_level: Type.String(),
    user_access_level: Enum(['none', 'viewer', 'editor']),
    user_can_edit_access_levels: Type.Boolean(),
  }),
);

function ruleBody(target: AccessTarget, row: RuleRow): Static<typeof AccessControl> {
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

/**
 * `GET` and `PUT <path>/access_controls` of the objects `load` finds (404 when the caller cannot see one).
 * PUT `{access_level, organization_member?}` upserts the member's rule (or the object default without a member);
 * `access_level: null` removes it → 204. Only editors of the object may change its rules.
 */
export function accessControlRoutes(sql: Sql, path: string, what: string, load: (req: Request) => Promise<AccessTarget>): Route[] {
  const store = new AccessStore(sql);
  return [
    route({
      method: 'get',
      path: `${path}/access_controls`,
      scope: 'access_control:read',
      summary: `Access rules of ${what}`,
      csv: { file: 'access_controls' },
      response: { status: 200, schema: AccessControls },
      async handler(req) {
        const target = await load(req);
        const level = await requireAccess(sql, req, target, 'viewer');
        const rules = await store.rules(callerOf(req), target);
        return {
          access_controls: rules.map((row) => ruleBody(target, row)),
          available_access_levels: [...ACCESS_LEVELS],
          default_access_level: rules.find((row) => row.organization_member === null)?.access_level ?? 'editor',
          user_access_level: level,
          user_can_edit_access_levels: level === 'editor',
        };
      },
    }),
    route({
      method: 'put',
      path: `${path}/access_controls`,
      scope: 'access_control:write',
      summary: 'Set or remove an access rule',
      body: AccessControlPut,
      csv: { file: 'access_control' },
      response: { status: 200, schema: AccessControl },
      async handler(req, { body }) {
        const level = body.access_level;
        if (level !== null && !(ACCESS_LEVELS as readonly string[]).includes(level)) {
          throw errors.validation(`Invalid access level. Must be one of: ${ACCESS_LEVELS.join(', ')}`, 'access_level', 'invalid_choice');
        }
        const target = await load(req);
        if ((await requireAccess(sql, req, target, 'viewer')) !== 'editor') throw errors.forbidden(`Must be editor to modify ${target.resource} permissions.`);
        const caller = callerOf(req);
        const member = body.organization_member ?? null;
        const userId = member === null ? null : await store.memberUser(caller, member);
        if (userId === undefined) throw errors.validation('Organization member not found.', 'organization_member', 'does_not_exist');
        if (level === null) {
          await store.remove(caller, target, userId);
          return new Reply(204);
        }
        return ruleBody(target, await store.set(caller, target, userId, member, level as AccessLevel));
      },
    }),
  ];
}
