import type { ActionDefinition, ActionStep } from '@plover/insights';
import type { SqlExecutor } from '@plover/postgres';
import { errors } from './errors';
import { USER_JSON, type UserBasic } from './users';

export interface ActionRow {
  id: number;
  project_id: number;
  name: string | null;
  description: string;
  tags: string[];
  post_to_slack: boolean;
  slack_message_format: string;
  steps: ActionStep[];
  pinned_at: Date | null;
  deleted: boolean;
  created_by: UserBasic | null;
  created_at: Date;
  updated_at: Date;
}

export const SELECT_ACTION = `SELECT a.id, a.project_id, a.name, a.description, a.tags, a.post_to_slack, a.slack_message_format, a.steps, a.pinned_at,
       a.deleted, ${USER_JSON('u')} AS created_by, a.created_at, a.updated_at
  FROM actions a LEFT JOIN users u ON u.id = a.created_by_id`;

/** A project's action by id (deleted ones only when asked). */
export async function actionById(db: SqlExecutor, projectId: number, id: number, includeDeleted = false): Promise<ActionRow | undefined> {
  const deleted = includeDeleted ? '' : ' AND NOT a.deleted';
  return (await db.query<ActionRow>('actions.get', `${SELECT_ACTION} WHERE a.project_id = $1 AND a.id = $2${deleted}`, [projectId, id])).rows[0];
}

/**
 * The live action a query names, by id (a number or a numeric string) or by name (HogQL's `matchesAction`); an
 * unknown one is a 400 naming it at `attr`.
 */
export async function actionOf(db: SqlExecutor, projectId: number, ref: number | string, attr: string): Promise<ActionDefinition> {
  const byId = typeof ref === 'number' || /^[0-9]{1,9}$/.test(ref);
  const row = byId
    ? await actionById(db, projectId, Number(ref))
    : (await db.query<ActionRow>('actions.byName', `${SELECT_ACTION} WHERE a.project_id = $1 AND a.name = $2 AND NOT a.deleted`, [projectId, ref])).rows[0];
  if (!row) throw errors.validation(`Action ${JSON.stringify(ref)} does not exist.`, attr, 'invalid_input');
  return { id: row.id, name: row.name, steps: row.steps };
}

/**
 * The project's live actions in the order PostHog picks web analytics' goals from: pinned ones first (earliest
 * pinned first), then the newest (PostHog's `-last_calculated_at`, which is the creation time of an action it never
 * calculated); `limit` of them.
 */
export async function goalActions(db: SqlExecutor, projectId: number, limit: number): Promise<ActionDefinition[]> {
  const rows = await db.query<ActionRow>(
    'actions.goals',
    `${SELECT_ACTION} WHERE a.project_id = $1 AND NOT a.deleted ORDER BY a.pinned_at ASC NULLS LAST, a.created_at DESC, a.id DESC LIMIT $2`,
    [projectId, limit],
  );
  return rows.rows.map((row) => ({ id: row.id, name: row.name, steps: row.steps }));
}
