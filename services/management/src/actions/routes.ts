import type { Request } from 'express';
import type { Static } from '@sinclair/typebox';
import { isUniqueViolation } from '@plover/postgres';
import { actionCondition, Params, selectorRegex, STRING_MATCHINGS, validateActionStep, type ActionStep as Step } from '@plover/insights';
import type { ManagementDeps } from '../http/deps';
import { callerOf } from '../http/access';
import { found, idParam } from '../http/resource-routes';
import { route, updates, type Route } from '../http/route-table';
import { actionById, type ActionRow } from '../shared/action-store';
import { errors } from '../shared/errors';
import { insightContext } from '../shared/insight-context';
import { projectOf } from '../http/auth';
import { ActionsStore } from './actions-store';
import { Action, ActionCount, ActionList, ActionWrite } from './schemas';

const ACTION = '/actions/:id';
const STEP_KEYS = ['event', 'properties', 'selector', 'tag_name', 'text', 'text_matching', 'href', 'href_matching', 'url', 'url_matching'] as const;

function serializeAction(row: ActionRow): Static<typeof Action> {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    tags: row.tags,
    post_to_slack: row.post_to_slack,
    slack_message_format: row.slack_message_format,
    steps: row.steps.map((step) => ({
      ...Object.fromEntries(STEP_KEYS.map((key) => [key, step[key] ?? null])),
      selector_regex: step.selector ? selectorRegex(step.selector) : null,
    })),
    created_at: row.created_at.toISOString(),
    created_by: row.created_by,
    deleted: row.deleted,
    is_calculating: false,
    last_calculated_at: row.updated_at.toISOString(),
    team_id: row.project_id,
    is_action: true,
    bytecode_error: null,
    pinned_at: row.pinned_at?.toISOString() ?? null,
    creation_context: null,
    user_access_level: 'editor',
  };
}

/** A step the queries can run: its property filters parse, its regexes compile. */
function checkSteps(steps: Step[]): void {
  steps.forEach((step, index) => {
    validateActionStep(step, index);
    const regexes: [string, string | null | undefined][] = [
      ['url', step.url_matching === 'regex' ? step.url : null],
      ['text', step.text_matching === 'regex' ? step.text : null],
      ['href', step.href_matching === 'regex' ? step.href : null],
    ];
    for (const [field, pattern] of regexes) {
      if (!pattern) continue;
      try {
        new RegExp(pattern);
      } catch {
        throw errors.validation('Not a valid regular expression.', `steps__${index}__${field}`);
      }
    }
    for (const field of ['url_matching', 'text_matching', 'href_matching'] as const) {
      const matching = step[field];
      if (matching != null && !STRING_MATCHINGS.includes(matching))
        throw errors.validation('Not a valid choice.', `steps__${index}__${field}`, 'invalid_choice');
    }
  });
}

/** Matching events of the last 30 days, by the same condition insights use. */
async function countLast30Days({ sql, clickhouse }: Pick<ManagementDeps, 'sql' | 'clickhouse'>, req: Request, row: ActionRow): Promise<number> {
  const project = projectOf(req);
  const params = new Params();
  const condition = await actionCondition({ id: row.id, name: row.name, steps: row.steps }, params, {
    personId: 'person_id',
    ctx: insightContext(sql, project),
  });
  const [counted] = await clickhouse.query<{ n: string }>(
    'management.actionCount',
    `SELECT count() AS n FROM events FINAL
      WHERE team_id = {projectId:Int64} AND timestamp >= now64(6) - INTERVAL 30 DAY AND timestamp <= now64(6) AND ${condition}`,
    { ...params.values, projectId: project.id },
  );
  return Number(counted?.n ?? 0);
}

/**
 * `/actions/` under a project: PostHog's actions — named sets of steps events match (docs/actions.md). CRUD with
 * soft delete (DELETE → 405), names unique among live actions, and each action's matching events of the last 30
 * days (`/actions/:id/count/`).
 */
export function actionRoutes(deps: Pick<ManagementDeps, 'sql' | 'clickhouse'>): Route[] {
  const store = new ActionsStore(deps.sql);

  async function checkName(projectId: number, name: string | null | undefined, except: number | null): Promise<void> {
    if (name === undefined) return;
    if (name === null || name.trim() === '') throw errors.validation('This field may not be blank.', 'name', 'blank');
    const other = await store.namesake(projectId, name, except);
    if (other !== undefined) throw errors.validation(`This project already has an action with this name, ID ${other}`, 'name', 'unique');
  }

  /** `write`; a name another request took since checkName (the unique index refused it) is checkName's 400. */
  async function named<T>(projectId: number, name: string | null, except: number | null, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (isUniqueViolation(error)) await checkName(projectId, name, except);
      throw error;
    }
  }

  return [
    route({
      method: 'get',
      path: '/actions',
      scope: 'action:read',
      summary: "List the project's actions by name (not paginated, as in PostHog)",
      response: { status: 200, schema: ActionList },
      async handler(req) {
        return { results: (await store.list(callerOf(req).projectId)).map(serializeAction) };
      },
    }),
    route({
      method: 'post',
      path: '/actions',
      scope: 'action:write',
      summary: 'Create an action: a name unique among live actions, and steps (an event matches when it matches any step)',
      body: ActionWrite,
      csv: { file: 'action' },
      response: { status: 201, schema: Action },
      async handler(req, { body }) {
        const caller = callerOf(req);
        if (body.name === undefined) throw errors.required('name');
        await checkName(caller.projectId, body.name, null);
        checkSteps(body.steps ?? []);
        const id = await named(caller.projectId, body.name, null, () => store.create(caller, body));
        return serializeAction(found(await actionById(deps.sql, caller.projectId, id)));
      },
    }),
    route({
      method: 'get',
      path: ACTION,
      scope: 'action:read',
      summary: 'Retrieve an action',
      csv: { file: 'action' },
      response: { status: 200, schema: Action },
      async handler(req) {
        return serializeAction(found(await actionById(deps.sql, callerOf(req).projectId, idParam(req))));
      },
    }),
    ...updates({
      path: ACTION,
      scope: 'action:write',
      summary: 'Update an action; `deleted: true` soft-deletes it, `deleted: false` restores it',
      body: ActionWrite,
      csv: { file: 'action' },
      response: { status: 200, schema: Action },
      async handler(req, { body }) {
        const { projectId } = callerOf(req);
        // Deleted actions stay reachable here, so `{"deleted": false}` restores one.
        const row = found(await actionById(deps.sql, projectId, idParam(req), true));
        if (body.name !== undefined || body.deleted === false) await checkName(projectId, body.name ?? row.name, row.id);
        if (body.steps) checkSteps(body.steps);
        await named(projectId, body.name ?? row.name, row.id, () => store.update(row.id, body));
        return serializeAction(found(await actionById(deps.sql, projectId, row.id, true)));
      },
    }),
    route({
      method: 'delete',
      path: ACTION,
      scope: 'action:write',
      summary: 'Hard delete is not allowed: 405 (PATCH `deleted: true` instead)',
      response: { status: 405 },
      handler(req) {
        throw errors.methodNotAllowed(req.method);
      },
    }),
    route({
      method: 'get',
      path: `${ACTION}/count`,
      scope: 'action:read',
      summary: 'How many events of the last 30 days match the action',
      response: { status: 200, schema: ActionCount },
      async handler(req) {
        const row = found(await actionById(deps.sql, callerOf(req).projectId, idParam(req)));
        return { count: await countLast30Days(deps, req, row) };
      },
    }),
  ];
}
