import type { Sql } from '@plover/postgres';

/** `none < viewer < editor`: what a member may do with an object under access control. */
export const ACCESS_LEVELS = ['none', 'viewer', 'editor'] as const;
export type AccessLevel = (typeof ACCESS_LEVELS)[number];

/** An object under access control: its resource kind, id and creator (always an editor). */
export interface AccessTarget {
  resource: string;
  resourceId: string;
  createdBy: number | null;
}

/** Who asks: the project, the user and whether they administer its organization (always an editor). */
export interface Caller {
  projectId: number;
  organizationId: string;
  userId: number;
  admin: boolean;
}

export interface RuleRow {
  access_level: AccessLevel;
  organization_member: string | null;
  created_by: number | null;
  created_at: Date;
  updated_at: Date;
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

/** The `access_controls` rules: a level per organization member, or the object's default (no member). */
export class AccessStore {
  constructor(private readonly sql: Sql) {}

  async level(caller: Caller, target: AccessTarget): Promise<AccessLevel> {
    const result = await this.sql.query<{ level: AccessLevel }>(
      'management.accessLevel',
      `SELECT ${accessLevelSql(target.resource, '$4', '$5::int', '$1', '$2', '$3')} AS level`,
      [caller.projectId, caller.userId, caller.admin, target.resourceId, target.createdBy],
    );
    return result.rows[0]?.level ?? 'editor';
  }

  /** The object's rules, its default first. */
  async rules(caller: Caller, target: AccessTarget): Promise<RuleRow[]> {
    const rows = await this.sql.query<RuleRow>(
      'management.listAccessControls',
      `SELECT ac.access_level, m.id::text AS organization_member, ac.created_by, ac.created_at, ac.updated_at
         FROM access_controls ac
         LEFT JOIN organization_memberships m ON m.user_id = ac.user_id AND m.organization_id = $4
        WHERE ac.project_id = $1 AND ac.resource = $2 AND ac.resource_id = $3
        ORDER BY ac.user_id NULLS FIRST, ac.id`,
      [caller.projectId, target.resource, target.resourceId, caller.organizationId],
    );
    return rows.rows;
  }

  /** The user of an organization membership, if it is one of the caller's organization. */
  async memberUser(caller: Caller, member: string): Promise<number | undefined> {
    const found = await this.sql.query<{ user_id: number }>(
      'management.memberUser',
      'SELECT user_id FROM organization_memberships WHERE id = $1 AND organization_id = $2',
      [member, caller.organizationId],
    );
    return found.rows[0]?.user_id;
  }

  /** Removes the rule of `userId` (null: the object's default). */
  async remove(caller: Caller, target: AccessTarget, userId: number | null): Promise<void> {
    const params: unknown[] = [caller.projectId, target.resource, target.resourceId];
    if (userId !== null) params.push(userId);
    await this.sql.query(
      'management.deleteAccessControl',
      `DELETE FROM access_controls WHERE project_id = $1 AND resource = $2 AND resource_id = $3 AND ${userId === null ? 'user_id IS NULL' : 'user_id = $4'}`,
      params,
    );
  }

  /** Sets the rule of `userId` (null: the object's default), named in the answer by `member`. */
  async set(caller: Caller, target: AccessTarget, userId: number | null, member: string | null, level: AccessLevel): Promise<RuleRow> {
    const who = userId === null ? 'user_id IS NULL' : 'user_id = $4';
    const params: unknown[] = [caller.projectId, target.resource, target.resourceId];
    if (userId !== null) params.push(userId);
    return this.sql.transaction(async (tx) => {
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
          [caller.projectId, target.resource, target.resourceId, userId, level, caller.userId],
        );
      }
      const rule = await tx.query<RuleRow>(
        'management.getAccessControl',
        `SELECT access_level, $4::text AS organization_member, created_by, created_at, updated_at
           FROM access_controls WHERE project_id = $1 AND resource = $2 AND resource_id = $3 AND ${userId === null ? 'user_id IS NULL' : 'user_id = $5'}`,
        [...params.slice(0, 3), member, ...(userId === null ? [] : [userId])],
      );
      return rule.rows[0]!;
    });
  }
}
