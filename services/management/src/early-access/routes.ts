import type { Static } from '@sinclair/typebox';
import type { ManagementDeps } from '../http/deps';
import { callerOf } from '../http/access';
import { found, pageOf, requiredName, resourceRoutes } from '../http/resource-routes';
import type { Route } from '../http/route-table';
import { errors } from '../shared/errors';
import { checkFlagKey } from '../shared/flag-filters';
import { FeaturesStore, type FeatureRow } from './features-store';
import { EarlyAccessFeature, EarlyAccessFeatureWrite, FeatureUpdated } from './schemas';

const STAGES = new Set(['draft', 'concept', 'alpha', 'beta', 'general-availability', 'archived']);

const serializeFeature = (row: FeatureRow): Static<typeof EarlyAccessFeature> => ({
  id: row.id,
  name: row.name,
  description: row.description,
  stage: row.stage,
  documentation_url: row.documentation_url,
  created_at: row.created_at.toISOString(),
  feature_flag: row.flag_id === null ? null : { id: row.flag_id, key: row.flag_key, filters: row.flag_filters },
});

function slug(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 380) || 'feature'
  );
}

/**
 * `/early_access_features/` under a project. A new feature creates its flag with a super group on
 * `$feature_enrollment/<key>` (docs/management.md#resources), or takes an existing flag by `feature_flag_id`.
 */
export function earlyAccessRoutes({ sql }: Pick<ManagementDeps, 'sql'>): Route[] {
  const products = new FeaturesStore(sql);
  return resourceRoutes({
    base: '/early_access_features',
    object: 'early_access_feature',
    schema: EarlyAccessFeature,
    body: EarlyAccessFeatureWrite,
    updated: FeatureUpdated,
    names: ['an early access feature', 'early access features'],
    file: ['early_access_feature', 'early_access_features'],
    async list(req, { page }) {
      const { rows, count } = await products.listFeatures(callerOf(req).projectId, page);
      return pageOf(rows.map(serializeFeature), count, page.offset, page.limit);
    },
    async create(req, { body }) {
      const caller = callerOf(req);
      const name = requiredName(body.name);
      const stage = body.stage ?? 'draft';
      if (!STAGES.has(stage)) throw errors.validation(`${JSON.stringify(stage)} is not a valid choice.`, 'stage', 'invalid_choice');
      const row = await products.write(caller.projectId, async (tx) => {
        let flagId: number;
        if (body.feature_flag_id !== undefined) {
          const existing = await products.liveFlag(tx, caller.projectId, body.feature_flag_id);
          if (existing === undefined) throw errors.validation('Feature flag does not exist.', 'feature_flag_id');
          flagId = existing;
        } else {
          const key = body.feature_flag_key ?? slug(name);
          checkFlagKey(key, 'feature_flag_key');
          const filters = {
            groups: [{ properties: [], rollout_percentage: 0 }],
            super_groups: [
              { properties: [{ key: `$feature_enrollment/${key}`, type: 'person', operator: 'exact', value: ['true'] }], rollout_percentage: 100 },
            ],
          };
          flagId = await products.insertFlag(tx, caller.projectId, key, `Feature flag for ${name}`, filters, caller.userId);
        }
        const id = await products.createFeature(tx, caller.projectId, flagId, { ...body, name, stage });
        return found(await products.feature(caller.projectId, id, tx));
      });
      return serializeFeature(row);
    },
    retrieve: async (req) => serializeFeature(found(await products.feature(callerOf(req).projectId, String(req.params.id)))),
    async update(req, { body }) {
      if (body.stage !== undefined && !STAGES.has(body.stage)) throw errors.validation('Not a valid choice.', 'stage', 'invalid_choice');
      const { projectId } = callerOf(req);
      const id = String(req.params.id);
      const row = await products.write(projectId, async (tx) => {
        found(await products.feature(projectId, id, tx));
        await products.updateFeature(tx, projectId, id, body);
        return body.deleted === true ? undefined : found(await products.feature(projectId, id, tx));
      });
      return row ? serializeFeature(row) : { id, deleted: true as const };
    },
  });
}
