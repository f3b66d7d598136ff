import { accountRoutes, projectRoutes } from './accounts/routes';
import { actionRoutes } from './actions/routes';
import { annotationRoutes } from './annotations/routes';
import { dashboardRoutes } from './dashboards/routes';
import { sharedRoutes } from './dashboards/sharing';
import { dataRoutes } from './data/routes';
import { definitionRoutes } from './definitions/routes';
import { experimentRoutes } from './experiments/routes';
import { flagDefinitionRoutes } from './flag-routes';
import { analysisOf, type ManagementDeps } from './http/deps';
import type { Route } from './http/route-table';
import { insightRoutes } from './insights/routes';
import { llmPromptRoutes } from './llm-prompts/routes';
import { personRoutes } from './persons/routes';
import { playlistRoutes } from './playlists/routes';
import { nodeRunner, queryRoutes } from './query/routes';
import { InsightResultCache } from '@plover/insights';
import { recordingRoutes } from './recordings/routes';
import { surveyResultRoutes } from './surveys/results-routes';

/**
 * The management API's route table: `api` routes answer under `/api`, `project` routes under every mount of
 * {@link PROJECT_MOUNTS} (the project resolved first). Each feature folder contributes its own routes.
 */
export interface RouteTable {
  api: Route[];
  project: Route[];
  /** Public routes of sharing links, at the root (`/shared/:access_token.json`), behind http/auth.ts's resolveSharing. */
  shared: Route[];
}

/** Where the project routes answer, relative to `/api`: PostHog registers its environment viewsets twice. */
export const PROJECT_MOUNTS = ['/projects/:project_id', '/environments/:project_id'];

export function routeTable(deps: ManagementDeps): RouteTable {
  // One result cache for `/query/` and the saved queries that dashboards and insights show.
  const cache = new InsightResultCache();
  const run = nodeRunner(deps, analysisOf(deps).limits, { cache });
  return {
    api: accountRoutes(deps),
    project: [
      ...projectRoutes(deps),
      ...personRoutes(deps),
      ...playlistRoutes(deps),
      ...recordingRoutes(deps),
      ...insightRoutes(deps, run),
      ...dashboardRoutes(deps, run),
      ...actionRoutes(deps),
      ...annotationRoutes(deps),
      ...queryRoutes(deps, { cache }),
      ...dataRoutes(deps),
      ...definitionRoutes(deps),
      // Before the flag-side routes: `/surveys/stats` must not be read as `/surveys/:id`.
      ...surveyResultRoutes(deps),
      ...flagDefinitionRoutes({ ...deps, run }),
      ...experimentRoutes(deps),
      ...llmPromptRoutes(),
    ],
    shared: sharedRoutes(deps.sql, run),
  };
}
