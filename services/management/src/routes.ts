import { accountRoutes, projectRoutes } from './accounts/routes';
import { dataRoutes } from './data/routes';
import { flagDefinitionRoutes } from './flag-routes';
import type { ManagementDeps } from './http/deps';
import type { Route } from './http/route-table';
import { insightRoutes } from './insights/routes';
import { personRoutes } from './persons/routes';
import { playlistRoutes } from './playlists/routes';
import { queryRoutes } from './query/routes';
import { recordingRoutes } from './recordings/routes';

/**
 * The management API's route table: `api` routes answer under `/api`, `project` routes under every mount of
 * {@link PROJECT_MOUNTS} (the project resolved first). Each feature folder contributes its own routes.
 */
export interface RouteTable {
  api: Route[];
  project: Route[];
}

/** Where the project routes answer, relative to `/api`: PostHog registers its environment viewsets twice. */
export const PROJECT_MOUNTS = ['/projects/:project_id', '/environments/:project_id'];

export function routeTable(deps: ManagementDeps): RouteTable {
  return {
    api: accountRoutes(deps),
    project: [
      ...projectRoutes(deps),
      ...personRoutes(deps),
      ...playlistRoutes(deps),
      ...recordingRoutes(deps),
      ...insightRoutes(deps),
      ...queryRoutes(deps),
      ...dataRoutes(deps),
      ...flagDefinitionRoutes(deps),
    ],
  };
}
