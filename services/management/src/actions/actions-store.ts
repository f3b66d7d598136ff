import type { ActionStep } from '@plover/insights';
import type { Sql } from '@plover/postgres';
import type { Caller } from '../shared/access-store';
import { SELECT_ACTION, type ActionRow } from '../shared/action-store';

/** Writable columns of an action. */
export interface ActionFields {
  name?: string | null;
  description?: string;
  tags?: string[];
  post_to_slack?: boolean;
  slack_message_format?: string;
  steps?: ActionStep[];
  pinned_at?: string | null;
  deleted?: boolean;
}
const COLUMNS = ['name', 'description', 'tags', 'post_to_slack', 'slack_message_format', 'steps', 'pinned_at', 'deleted'] as const;

const valueOf = (field: (typeof COLUMNS)[number], value: unknown) => (field === 'steps' ? JSON.stringify(value) : value);

export class ActionsStore {
  constructor(private readonly sql: Sql) {}

  /** Live actions, PostHog's order (by name: Plover never calculates actions in the background). */
  async list(projectId: number): Promise<ActionRow[]> {
    return (await this.sql.query<ActionRow>('actions.list', `${SELECT_ACTION} WHERE a.project_id = $1 AND NOT a.deleted ORDER BY a.name, a.id`, [projectId]))
      .rows;
  }

  /** Another live action of the project with this name. */
  async namesake(projectId: number, name: string, except: number | null): Promise<number | undefined> {
    const rows = await this.sql.query<{ id: number }>(
      'actions.namesake',
      'SELECT id FROM actions WHERE project_id = $1 AND name = $2 AND NOT deleted AND id IS DISTINCT FROM $3',
      [projectId, name, except],
    );
    return rows.rows[0]?.id;
  }

  async create(caller: Caller, fields: ActionFields): Promise<number> {
    const given = COLUMNS.filter((field) => fields[field] !== undefined);
    const columns = ['project_id', 'created_by_id', ...given];
    const values = [caller.projectId, caller.userId, ...given.map((field) => valueOf(field, fields[field]))];
    const inserted = await this.sql.query<{ id: number }>(
      'actions.create',
      `INSERT INTO actions (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING id`,
      values,
    );
    return inserted.rows[0]!.id;
  }

  async update(id: number, fields: ActionFields): Promise<void> {
    const given = COLUMNS.filter((field) => fields[field] !== undefined);
    if (given.length === 0) return;
    await this.sql.query(
      'actions.update',
      `UPDATE actions SET ${given.map((field, i) => `${field} = $${i + 2}`).join(', ')}, updated_at = now() WHERE id = $1`,
      [id, ...given.map((field) => valueOf(field, fields[field]))],
    );
  }
}
