import { Router } from 'express';
import helmet from 'helmet';
import { PersonalKeyAuth } from '@plover/accounts';
import { limitedClickHouse } from '@plover/clickhouse';
import { createServiceApp, type ServiceApp } from '@plover/http';
import { analysisOf, siteUrlOf, type ManagementDeps } from './http/deps';
import { AnalysisGate } from './http/analysis-gate';
import { authenticate, resolveProject, resolveSharing } from './http/auth';
import { checkQuery, jsonBody } from './http/body';
import { unstorableInput } from './http/errors';
import { consoleRoutes } from './console';
import { checkFormat } from './http/render';
import { routerOf } from './http/route-table';
import { schemaRoutes } from './openapi';
import { replayPlayerRoutes } from './replay-player';
import { PROJECT_MOUNTS, routeTable } from './routes';

/**
 * The `/api` routes of the route table (routes.ts). Every request: helmet, `format` checked, personal-key
 * authentication, query and path checked (http/body.ts), JSON bodies only; project routes resolve their project
 * first. `/api/schema/` (the OpenAPI document of the same table) is public.
 */
export function managementRoutes(deps: ManagementDeps): Router {
  const analysis = analysisOf(deps);
  const gate = new AnalysisGate(analysis.concurrencyPerProject, analysis.exportConcurrency, analysis.csvMaxColumns);
  // Every ClickHouse read of every handler is bounded and counted against its project (http/analysis-gate.ts).
  const table = routeTable({ ...deps, analysis, clickhouse: limitedClickHouse(deps.clickhouse, analysis.limits, () => AnalysisGate.enter()) });
  const api = Router();
  const siteUrl = siteUrlOf(deps);
  api.use((_req, res, next) => {
    res.locals.siteUrl = siteUrl;
    next();
  });
  api.use(checkFormat, authenticate(new PersonalKeyAuth(deps.sql, deps.authThrottle)), checkQuery, jsonBody);
  api.use(routerOf(table.api));
  const project = Router({ mergeParams: true });
  project.use(resolveProject(deps.sql), gate.middleware, routerOf(table.project));
  api.use(PROJECT_MOUNTS, project);

  // A sharing link's public page: its token resolves its project (and the one object it shows) instead of a key.
  const shared = Router();
  shared.use('/shared/:access_token.json', helmet(), checkFormat, resolveSharing(deps.sql), gate.middleware);
  shared.use(routerOf(table.shared));

  const router = Router();
  router.use('/api', helmet(), schemaRoutes(table), api, unstorableInput);
  router.use(shared);
  router.use(replayPlayerRoutes());
  // The web console: `/` and its client routes `/project/…` (every other path keeps its own handler).
  router.use(consoleRoutes());
  return router;
}

export function createApp(deps: ManagementDeps): ServiceApp {
  return createServiceApp({
    ...deps,
    checks: { postgres: () => deps.sql.ping(), clickhouse: () => deps.clickhouse.ping() },
    mount: (app) => app.use(managementRoutes(deps)),
  });
}
