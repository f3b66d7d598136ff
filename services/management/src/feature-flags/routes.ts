/**
 * Feature flags (`/feature_flags/` under a project), PostHog's shapes: PUT is PATCH, soft delete by PATCH
 * `deleted`, DELETE → 405 once the key holds the write scope. Every write bumps the project's definitions version
 * in its transaction (decide polls it). Flags carry object-level access control (http/access.ts): a
 * `user_access_level` on every flag, `none` hides a flag, writes need `editor`.
 */
import type { Request } from 'express';
import { Type, type Static } from '@sinclair/typebox';
import type { SqlExecutor } from '@plover/postgres';
import type { ManagementDeps } from '../http/deps';
import { accessControlRoutes, callerOf, requireAccess } from '../http/access';
import { idParam, pageOf, resourceRoutes } from '../http/resource-routes';
import { Q, route, type Route } from '../http/route-table';
import type { AccessTarget } from '../shared/access-store';
import { errors } from '../shared/errors';
import { checkFlagKey, isObject, validateFilters } from '../shared/flag-filters';
import { FlagsStore, RESOURCE, type FlagFields, type FlagRow } from '../shared/flags-store';
import { FeatureFlag, FeatureFlagWrite, RemoteConfigPayload } from './schemas';

function serializeFlag(row: FlagRow): Static<typeof FeatureFlag> {
  const filters = row.filters;
  const groups = Array.isArray(filters.groups) ? (filters.groups as Record<string, unknown>[]) : [];
  return {
    id: row.id,
    name: row.name,
    key: row.key,
    filters,
    deleted: row.deleted,
    active: row.active,
    created_by:
      row.created_by_id === null
        ? null
        : {
            id: row.created_by_id,
            uuid: row.created_by_uuid,
            distinct_id: row.created_by_distinct_id,
            first_name: row.created_by_first_name ?? '',
            email: row.created_by_email,
          },
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    version: row.version,
    is_simple_flag:
      !filters.multivariate &&
      groups.length === 1 &&
      (!Array.isArray(groups[0]?.properties) || groups[0].properties.length === 0) &&
      filters.aggregation_group_type_index == null,
    // A stored group's rollout was checked to be a number or null when written (validateFilters).
    rollout_percentage: groups.length === 1 ? ((groups[0]?.rollout_percentage as number | null | undefined) ?? null) : row.rollout_percentage,
    ensure_experience_continuity: row.ensure_experience_continuity,
    is_remote_configuration: row.is_remote_configuration,
    has_encrypted_payloads: false,
    experiment_set: row.experiment_set,
    surveys: [],
    features: [],
    rollback_conditions: null,
    performed_rollback: false,
    tags: [],
    can_edit: row.user_access_level === 'editor',
    status: row.deleted ? 'DELETED' : 'ACTIVE',
    user_access_level: row.user_access_level,
  };
}

/** The routes of feature flags under a project. */
export function flagRoutes({ sql }: Pick<ManagementDeps, 'sql'>): Route[] {
  const flags = new FlagsStore(sql);
  const target = (row: FlagRow): AccessTarget => ({ resource: RESOURCE, resourceId: String(row.id), createdBy: row.created_by_id });

  /** The flag `where` ($4 = `value`) names, or 404 (also when the caller's level is `none`). */
  async function readFlag(req: Request, value: number | string, where?: string, db: SqlExecutor = sql): Promise<FlagRow> {
    const row = await flags.flag(callerOf(req), value, where, db);
    if (!row || row.user_access_level === 'none') throw errors.notFound();
    return row;
  }

  /** A flag body's key (required on create) must be a slug. */
  function checkKey(body: FlagFields, creating: boolean): void {
    if (!creating && body.key === undefined) return;
    if (typeof body.key !== 'string' || body.key === '') throw errors.required('key');
    checkFlagKey(body.key, 'key');
  }

  const routes = resourceRoutes({
    base: '/feature_flags',
    object: 'feature_flag',
    schema: FeatureFlag,
    body: FeatureFlagWrite,
    names: ['a feature flag', 'feature flags'],
    file: ['feature_flag', 'feature_flags'],
    query: Type.Object({ search: Q.string, active: Q.boolean }),
    async list(req, { page, query }) {
      const { rows, count } = await flags.listFlags(callerOf(req), { search: query.search, active: query.active }, page);
      return pageOf(rows.map(serializeFlag), count, page.offset, page.limit);
    },
    async create(req, { body }) {
      const fields: FlagFields = body;
      checkKey(fields, true);
      const filters = fields.filters ?? { groups: [{ properties: [], rollout_percentage: fields.rollout_percentage ?? null }] };
      const refs = validateFilters(filters);
      const caller = callerOf(req);
      const row = await flags.write(caller.projectId, async (tx) => {
        await flags.checkCohortRefs(tx, caller.projectId, refs);
        await flags.refuseBehavioralCohorts(tx, caller.projectId, refs);
        return readFlag(req, await flags.createFlag(tx, caller, { ...fields, key: fields.key!, filters }), undefined, tx);
      });
      return serializeFlag(row);
    },
    retrieve: async (req) => serializeFlag(await readFlag(req, idParam(req))),
    async update(req, { body }) {
      const id = idParam(req);
      const fields: FlagFields = body;
      checkKey(fields, false);
      const refs = fields.filters !== undefined ? validateFilters(fields.filters) : undefined;
      await requireAccess(sql, req, target(await readFlag(req, id)), 'editor');
      const caller = callerOf(req);
      const row = await flags.write(caller.projectId, async (tx) => {
        if (refs) {
          await flags.checkCohortRefs(tx, caller.projectId, refs);
          await flags.refuseBehavioralCohorts(tx, caller.projectId, refs);
        }
        if (fields.deleted === true && (await flags.usedByExperiment(tx, caller.projectId, id))) {
          throw errors.validation('Cannot delete a feature flag that is in use with experiments. Please delete the experiment before deleting the flag.');
        }
        await flags.updateFlag(tx, caller, id, fields);
        return readFlag(req, id, undefined, tx);
      });
      return serializeFlag(row);
    },
  });

  return [
    ...routes,
    ...accessControlRoutes(sql, '/feature_flags/:id', 'a feature flag', async (req) => target(await readFlag(req, idParam(req)))),
    route({
      method: 'get',
      path: '/feature_flags/:id/remote_config',
      scope: 'feature_flag:read',
      summary: 'The payload of a remote-configuration flag, by id or key, JSON-encoded',
      response: { status: 200, schema: RemoteConfigPayload },
      // The stored `"true"` payload, itself a JSON string, JSON-encoded once more (or null), for SDKs'
      // getRemoteConfigPayload (posthog-node 4.6.0+). Payloads are stored in clear: there is nothing to decrypt.
      async handler(req) {
        const raw = String(req.params.id);
        const flag = /^\d+$/.test(raw) ? await readFlag(req, idParam(req)) : await readFlag(req, raw, 'f.key = $4 AND NOT f.deleted');
        if (!flag.is_remote_configuration) throw errors.notFound();
        const payloads = isObject(flag.filters.payloads) ? flag.filters.payloads : {};
        return payloads.true ?? null;
      },
    }),
  ];
}
