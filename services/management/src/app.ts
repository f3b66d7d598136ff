import { Router, type RequestHandler } from 'express';
import helmet from 'helmet';
import { createServiceApp, type ServiceApp } from '@plover/http';
import type { ManagementDeps } from './deps';
import { AuthFailureThrottle, authenticate, resolveProject } from './http/auth';
import { checkQuery, jsonBody } from './http/body';
import { errors, unstorableInput } from './http/errors';
import { consoleRoutes } from './console';
import { checkFormat } from './http/render';
import { routerOf } from './http/route-table';
import { schemaRoutes } from './openapi';
import { replayPlayerRoutes } from './replay-player';
import { PROJECT_MOUNTS, routeTable } from './routes';
import { dataRoutes } from './routes/data';
import { personRoutes } from './routes/persons';
import { playlistRoutes } from './routes/playlists';
import { insightRoutes } from './insights';
import { projectFlagRoutes } from './feature-flags';

/** Answers 405 for the methods a path does not support (mounted after the path's handlers). */
export function methodNotAllowed(): RequestHandler {
  return (req) => {
    throw errors.methodNotAllowed(req.method);
  };
}

/**
 * The `/api` routes. Every request: helmet, `format` checked, personal-key authentication, query and path
 * checked (http/body.ts), JSON bodies only.
 * Project routes live under both `/api/projects/:project_id` and `/api/environments/:project_id`; the
 * insights and feature-flag routers are mounted on `projectRouter` the same way.
 */
export function managementRoutes(deps: ManagementDeps): Router {
  const table = routeTable(deps);
  const router = Router();
  const api = Router();
  api.use(checkFormat, authenticate(deps.sql, deps.authThrottle ?? new AuthFailureThrottle()), checkQuery, jsonBody);
  api.use(routerOf(table.api));

  const project = Router({ mergeParams: true });
  project.use(resolveProject(deps.sql));
  project.use(routerOf(table.project));
  project.use(personRoutes(deps.sql));
  project.use(playlistRoutes(deps.sql, deps.clickhouse));
  project.use(insightRoutes(deps));
  project.use(dataRoutes(deps.sql, deps.clickhouse));
  project.use(projectFlagRoutes(deps.sql));
  // Known paths answer 405 for methods they do not support (after every handler of those paths).
  project.all(
    [
      '/persons',
      '/persons/bulk_delete',
      '/persons/:id',
      '/session_recording_playlists',
      '/session_recording_playlists/:short_id',
      '/session_recording_playlists/:short_id/access_controls',
      '/session_recording_playlists/:short_id/recordings',
      '/session_recording_playlists/:short_id/recordings/:session_recording_id',
      '/session_recordings/:session_recording_id',
      '/groups_types',
      '/groups',
      '/events',
      '/ingestion_warnings',
      '/insights',
      '/insights/trend',
      '/insights/funnel/correlation',
      '/insights/timing',
      '/insights/my_last_viewed',
      '/insights/viewed',
      '/insights/:id',
      '/insights/:id/access_controls',
      '/feature_flags',
      '/feature_flags/:id',
      '/feature_flags/:id/access_controls',
      '/feature_flags/:id/remote_config',
      '/cohorts',
      '/cohorts/:id',
      '/early_access_features',
      '/early_access_features/:id',
      '/surveys',
      '/surveys/:id',
    ],
    methodNotAllowed(),
  );
  api.use(PROJECT_MOUNTS, project);

  router.use('/api', helmet(), schemaRoutes(table), api, unstorableInput);
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
