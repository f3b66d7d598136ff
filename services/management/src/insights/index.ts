import { Router } from 'express';
import type { ManagementDeps } from '../deps';
import { computeRoutes } from './compute';
import { savedInsightRoutes } from './saved';
import { timingRoutes } from './timing';

/**
 * `/insights` under a project: the computed insights (`trend`, `funnel/correlation`), `timing`, and saved
 * insights with their views and access controls. The action routes come first so that `trend` or `timing` is
 * never read as an insight's short_id.
 */
export function insightRoutes(deps: ManagementDeps): Router {
  const router = Router({ mergeParams: true });
  router.use(computeRoutes(deps.sql, deps.clickhouse));
  router.use(timingRoutes(deps.sql, deps.metrics));
  router.use(savedInsightRoutes(deps.sql));
  return router;
}
