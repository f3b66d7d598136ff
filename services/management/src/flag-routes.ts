import type { Router } from 'express';
import type { Sql } from '@plover/postgres';
import type { ManagementDeps } from './http/deps';
import { cohortRoutes } from './cohorts/routes';
import { earlyAccessRoutes } from './early-access/routes';
import { flagRoutes } from './feature-flags/routes';
import { routerOf, type Route } from './http/route-table';
import type { NodeRunner } from './shared/node-runner';
import { surveyRoutes } from './surveys/routes';

/** The routes of flags, cohorts, early access features and surveys under a project: what decide evaluates. */
export function flagDefinitionRoutes(deps: { sql: Sql; run?: NodeRunner } & Partial<Pick<ManagementDeps, 'clickhouse' | 'logger'>>): Route[] {
  return [...flagRoutes(deps), ...cohortRoutes(deps), ...earlyAccessRoutes(deps), ...surveyRoutes(deps)];
}

/**
 * The flag-side routes as a router of their own, for an app that authenticates and resolves the project itself
 * (decide's tests mount them beside decide, as embedded mode serves both).
 */
export function projectFlagRoutes(sql: Sql): Router {
  return routerOf(flagDefinitionRoutes({ sql }));
}
