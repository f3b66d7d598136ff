import type { Router } from 'express';
import type { Sql } from '@plover/postgres';
import { routerOf } from '../http/route-table';
import { featureFlagRoutes } from './routes';

/**
 * The flag-side routes as a router of their own, for an app that authenticates and resolves the project itself
 * (decide's tests mount them beside decide, as embedded mode serves both).
 */
export function projectFlagRoutes(sql: Sql): Router {
  return routerOf(featureFlagRoutes({ sql }));
}
