import type { Request } from 'express';
import type { Static } from '@sinclair/typebox';
import type { Sql } from '@plover/postgres';
import { projectOf, sharingOf } from '../http/auth';
import { found } from '../http/resource-routes';
import { route, updates, type Route } from '../http/route-table';
import type { Caller } from '../shared/access-store';
import { CAN_VIEW } from '../shared/dashboard-tiles';
import { insightContext } from '../shared/insight-context';
import { insightRecord } from '../shared/insight-record';
import type { NodeRunner } from '../shared/node-runner';
import { DashboardsStore, type SharingRow } from './dashboards-store';
import { dashboardRenderer } from './render';
import { SharedPage, Sharing, SharingWrite } from './schemas';

/** What a sharing route is about: how to find its dashboard or insight (404 when the caller cannot see it; 403 to change it unless they may edit it). */
export interface SharingTarget {
  path: string;
  what: string;
  target(this: void, req: Request, edit: boolean): Promise<{ dashboard_id: number } | { insight_id: number }>;
}

const sharingBody = (row: SharingRow): Static<typeof Sharing> => ({
  created_at: row.created_at.toISOString(),
  enabled: row.enabled,
  access_token: row.access_token,
  settings: row.settings,
  password_required: false,
  share_passwords: [],
});

/**
 * `GET|PATCH <object>/sharing` and `POST <object>/sharing/refresh` (PostHog's sharing API): the link's
 * configuration, created disabled on first read; PATCH enables or disables it and sets its display settings;
 * refresh gives it a new token, and the old one stops working at once.
 */
export function sharingRoutes(sql: Sql, { path, what, target }: SharingTarget): Route[] {
  const store = new DashboardsStore(sql);
  const configuration = async (req: Request, edit: boolean) => store.sharing(projectOf(req).id, await target(req, edit));
  return [
    route({
      method: 'get',
      path,
      scope: 'sharing_configuration:read',
      summary: `The public sharing link of ${what} (created disabled on first read)`,
      response: { status: 200, schema: Sharing },
      handler: async (req) => sharingBody(await configuration(req, false)),
    }),
    ...updates({
      path,
      scope: 'sharing_configuration:write',
      summary: `Enable or disable the public sharing link of ${what}, or set its display settings`,
      body: SharingWrite,
      response: { status: 200, schema: Sharing },
      async handler(req, { body }) {
        const row = await configuration(req, true);
        await store.updateSharing(row, body);
        return sharingBody(await configuration(req, true));
      },
    }),
    route({
      method: 'post',
      path: `${path}/refresh`,
      scope: 'sharing_configuration:write',
      summary: `Give the sharing link of ${what} a new token; the old one stops working`,
      response: { status: 200, schema: Sharing },
      async handler(req) {
        const row = await configuration(req, true);
        await store.updateSharing(row, { rotate: true });
        return sharingBody(await configuration(req, true));
      },
    }),
  ];
}

/**
 * `GET /shared/:access_token.json`, public (http/auth.ts's `resolveSharing` found the link): the one dashboard
 * (its tiles and their insights' results) or insight the link shows, and nothing else — no creators, the
 * results from the cache, computed when missing, never on the visitor's demand, and no filter overrides.
 */
export function sharedRoutes(sql: Sql, run: NodeRunner): Route[] {
  const store = new DashboardsStore(sql);
  const render = dashboardRenderer(store, run);
  return [
    route({
      method: 'get',
      path: '/shared/:access_token.json',
      scope: null,
      summary: 'What a public sharing link shows: its dashboard with every tile’s result, or its insight with its result',
      response: { status: 200, schema: SharedPage },
      async handler(req) {
        const sharing = sharingOf(req);
        const project = projectOf(req);
        // No user: every insight of the project is visible to this caller, and only the shared object's are read.
        const caller: Caller = { projectId: project.id, organizationId: project.organizationId, userId: 0, admin: true };
        const ctx = insightContext(sql, project);
        const page = { type: 'scene' as const, accessToken: sharing.accessToken, settings: sharing.settings };
        if (sharing.dashboardId !== null) {
          const row = found(await store.get(project.id, sharing.dashboardId));
          return { ...page, dashboard: await render.dashboardBody({ caller, ctx, privilege: CAN_VIEW, shared: true }, row, 'cached') };
        }
        const insight = found(await store.insight(caller, String(sharing.insightId)));
        const computed = insight.query === null ? null : await run(insight.query, ctx, 'cached');
        return { ...page, insight: { ...insightRecord(insight, computed), created_by: null, last_modified_by: null, user_access_level: 'viewer' as const } };
      },
    }),
  ];
}
