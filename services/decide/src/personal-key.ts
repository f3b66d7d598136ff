import { hasScope, keyLimitAllows, projectForUser, type PersonalKeyAuth } from '@plover/accounts';
import { ApiError } from '@plover/core';
import type { SqlExecutor } from '@plover/postgres';

/**
 * Checks a `Bearer phx_…` personal API key (`PersonalKeyAuth`, shared with the management API: its failure
 * throttle and last-used update) for reading a project's flag definitions (local evaluation): scope
 * `feature_flag:read` (or write, or `*`, or a legacy key without scopes), the project within the key's project
 * and organization limits, and the user a member of its organization. 401 without a valid key, 403 otherwise.
 */
export async function authorizeDefinitionsRead(
  sql: SqlExecutor,
  keys: PersonalKeyAuth,
  request: { authorization: string | undefined; address: string },
  projectId: number,
): Promise<void> {
  const { user, key } = await keys.authenticate(request.authorization, request.address, () =>
    ApiError.unauthenticated('Invalid Personal API key.', 'invalid_personal_key'),
  );
  if (!hasScope(key.scopes, 'feature_flag:read')) throw ApiError.forbidden("API key missing required scope 'feature_flag:read'");
  const project = await projectForUser(sql, projectId, user.id);
  if (!project?.level || !keyLimitAllows(key.scopedProjects, projectId) || !keyLimitAllows(key.scopedOrganizations, project.organizationId)) {
    throw ApiError.forbidden('You do not have access to this project.');
  }
}
