import { hasScope } from '@plover/accounts';
import type { Principal } from './auth';

/** What a personal API key may do: its scopes and the projects and organizations it is limited to (null or empty: none). */
export type KeyLimits = Omit<Principal['key'], 'id'>;

/** `*`, or the legacy empty list, grants every scope there is. */
function grantsAll(scopes: readonly string[]): boolean {
  return scopes.length === 0 || scopes.includes('*');
}

function limited<T>(list: readonly T[] | null): list is readonly T[] {
  return list !== null && list.length > 0;
}

/** A limit list of `inner` within `outer`'s: anything is within no limit; within a limit only a non-empty subset. */
function listWithin<T>(inner: readonly T[] | null, outer: readonly T[] | null): boolean {
  if (!limited(outer)) return true;
  return limited(inner) && inner.every((item) => outer.includes(item));
}

/**
 * The first field (as the API names it) in which `inner` can do something `outer` cannot, or null when `inner`
 * is within `outer`. A key may only mint, see, change or revoke keys within itself: otherwise a key limited
 * to one project, or holding only `personal_api_key:write`, could mint itself an unlimited `*` key.
 */
export function exceededLimit(inner: KeyLimits, outer: KeyLimits): 'scopes' | 'scoped_teams' | 'scoped_organizations' | null {
  const scopesWithin = grantsAll(inner.scopes)
    ? grantsAll(outer.scopes)
    : inner.scopes.every((scope) => (scope === '*' ? grantsAll(outer.scopes) : hasScope(outer.scopes, scope)));
  if (!scopesWithin) return 'scopes';
  if (!listWithin(inner.scopedProjects, outer.scopedProjects)) return 'scoped_teams';
  if (!listWithin(inner.scopedOrganizations, outer.scopedOrganizations)) return 'scoped_organizations';
  return null;
}

/**
 * SQL condition: the project `projectExpr` of organization `organizationExpr` is within the key's limits given
 * as `$n` parameters by {@link limitParams} (`projectsParam` int[], `organizationsParam` uuid[], null = no limit).
 */
export function projectWithinSql(projectExpr: string, organizationExpr: string, projectsParam: string, organizationsParam: string): string {
  return `(${projectsParam}::int[] IS NULL OR ${projectExpr} = ANY(${projectsParam}::int[]))
      AND (${organizationsParam}::uuid[] IS NULL OR ${organizationExpr} = ANY(${organizationsParam}::uuid[]))`;
}

/** SQL condition: the organization `organizationExpr` holds a project within the key's limits (see {@link projectWithinSql}). */
export function organizationWithinSql(organizationExpr: string, projectsParam: string, organizationsParam: string): string {
  return `(${organizationsParam}::uuid[] IS NULL OR ${organizationExpr} = ANY(${organizationsParam}::uuid[]))
      AND (${projectsParam}::int[] IS NULL OR EXISTS (
        SELECT 1 FROM projects lp WHERE lp.organization_id = ${organizationExpr} AND lp.id = ANY(${projectsParam}::int[])))`;
}

/** The key's project and organization limits as SQL parameters: null where it has none. */
export function limitParams(key: KeyLimits): [number[] | null, string[] | null] {
  return [limited(key.scopedProjects) ? key.scopedProjects : null, limited(key.scopedOrganizations) ? key.scopedOrganizations : null];
}
