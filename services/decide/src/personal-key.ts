import { timingSafeEqual } from 'node:crypto';
import { hashPersonalApiKey, keyLimitAllows } from '@plover/accounts';
import { ApiError } from '@plover/core';
import type { SqlExecutor } from '@plover/postgres';

interface KeyRow {
  secure_value: string;
  scopes: string[];
  scoped_projects: number[] | null;
  scoped_organizations: string[] | null;
  organization_id: string | null;
  member: boolean;
}

/**
 * Checks a `Bearer phx_…` personal API key for reading a project's flag definitions (local evaluation):
 * scope `feature_flag:read` (or write, or `*`, or a legacy key without scopes), the project within the key's
 * project and organization limits, and the user a member of its organization. 401 without a valid key, 403 otherwise.
 */
export async function authorizeDefinitionsRead(sql: SqlExecutor, authorization: string | undefined, projectId: number): Promise<void> {
  const match = /^Bearer\s+(\S+)$/i.exec(authorization ?? '');
  if (!match) throw ApiError.unauthenticated('Authentication credentials were not provided.');
  const secure = hashPersonalApiKey(match[1]!);
  const result = await sql.query<KeyRow>(
    'decide.personalKey',
    `SELECT k.secure_value, k.scopes, k.scoped_projects, k.scoped_organizations,
            (SELECT p.organization_id FROM projects p WHERE p.id = $2) AS organization_id,
            EXISTS (SELECT 1 FROM projects p JOIN organization_memberships m ON m.organization_id = p.organization_id
                     WHERE p.id = $2 AND m.user_id = u.id) AS member
       FROM personal_api_keys k JOIN users u ON u.id = k.user_id
      WHERE k.secure_value = $1 AND u.is_active`,
    [secure, projectId],
  );
  const row = result.rows[0];
  if (!row || !timingSafeEqual(Buffer.from(row.secure_value), Buffer.from(secure))) {
    throw ApiError.unauthenticated('Invalid Personal API key.', 'invalid_personal_key');
  }
  const scoped = row.scopes.length === 0 || row.scopes.some((scope) => scope === '*' || scope === 'feature_flag:read' || scope === 'feature_flag:write');
  if (!scoped) throw ApiError.forbidden("API key missing required scope 'feature_flag:read'");
  if (!row.member || !keyLimitAllows(row.scoped_projects, projectId) || !keyLimitAllows(row.scoped_organizations, row.organization_id)) {
    throw ApiError.forbidden('You do not have access to this project.');
  }
}
