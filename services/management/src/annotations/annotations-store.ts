import type { Sql } from '@plover/postgres';
import type { Page } from '../http/render';
import type { Caller } from '../shared/access-store';
import { USER_JSON, type UserBasic } from '../shared/users';

export interface AnnotationRow {
  id: number;
  content: string | null;
  date_marker: Date | null;
  creation_type: 'USR' | 'GIT';
  scope: 'dashboard_item' | 'dashboard' | 'project' | 'organization' | 'recording';
  dashboard_item: number | null;
  dashboard_id: number | null;
  dashboard_name: string | null;
  insight_short_id: string | null;
  insight_name: string | null;
  insight_derived_name: string | null;
  created_by: UserBasic | null;
  created_at: Date;
  updated_at: Date;
  deleted: boolean;
}

export interface AnnotationFields {
  content?: string | null;
  date_marker?: string | null;
  creation_type?: 'USR' | 'GIT';
  scope?: AnnotationRow['scope'];
  dashboard_item?: number | null;
  dashboard_id?: number | null;
  deleted?: boolean;
}
const COLUMNS = {
  content: 'content',
  date_marker: 'date_marker',
  creation_type: 'creation_type',
  scope: 'scope',
  dashboard_item: 'dashboard_item_id',
  dashboard_id: 'dashboard_id',
  deleted: 'deleted',
} as const;

export interface AnnotationFilters {
  search?: string;
  scope?: string;
  dateFrom?: string;
  dateTo?: string;
}

const SELECT = `SELECT a.id, a.content, a.date_marker, a.creation_type, a.scope, a.dashboard_item_id AS dashboard_item, a.dashboard_id,
       d.name AS dashboard_name, i.short_id AS insight_short_id, i.name AS insight_name, i.derived_name AS insight_derived_name,
       ${USER_JSON('u')} AS created_by, a.created_at, a.updated_at, a.deleted
  FROM annotations a
  LEFT JOIN users u ON u.id = a.created_by_id
  LEFT JOIN insights i ON i.id = a.dashboard_item_id
  LEFT JOIN dashboards d ON d.id = a.dashboard_id`;
/** What a project sees: its own annotations and its organization's organization-scoped ones. */
const VISIBLE = `(a.project_id = $1 OR (a.scope = 'organization' AND a.organization_id = $2))`;

export class AnnotationsStore {
  constructor(private readonly sql: Sql) {}

  async list(caller: Caller, filters: AnnotationFilters, page: Page): Promise<{ rows: AnnotationRow[]; count: number }> {
    const params: unknown[] = [caller.projectId, caller.organizationId];
    const where = [VISIBLE, 'NOT a.deleted'];
    if (filters.search !== undefined) {
      params.push(`%${filters.search.replace(/[\\%_]/g, '\\$&')}%`);
      where.push(`a.content ILIKE $${params.length}`);
    }
    if (filters.scope !== undefined) {
      params.push(filters.scope);
      where.push(`a.scope = $${params.length}`);
    }
    if (filters.dateFrom !== undefined) {
      params.push(filters.dateFrom);
      where.push(`a.date_marker >= $${params.length}`);
    }
    if (filters.dateTo !== undefined) {
      params.push(filters.dateTo);
      where.push(`a.date_marker <= $${params.length}`);
    }
    const condition = where.join(' AND ');
    const [rows, count] = await Promise.all([
      this.sql.query<AnnotationRow>(
        'annotations.list',
        `${SELECT} WHERE ${condition} ORDER BY a.date_marker DESC NULLS LAST, a.id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
        [...params, page.limit, page.offset],
      ),
      this.sql.query<{ count: string }>('annotations.count', `SELECT count(*) AS count FROM annotations a WHERE ${condition}`, params),
    ]);
    return { rows: rows.rows, count: Number(count.rows[0]?.count ?? 0) };
  }

  /** One visible annotation (deleted ones only when asked). */
  async get(caller: Caller, id: number, includeDeleted = false): Promise<AnnotationRow | undefined> {
    const deleted = includeDeleted ? '' : ' AND NOT a.deleted';
    return (
      await this.sql.query<AnnotationRow>('annotations.get', `${SELECT} WHERE ${VISIBLE} AND a.id = $3${deleted}`, [
        caller.projectId,
        caller.organizationId,
        id,
      ])
    ).rows[0];
  }

  async create(caller: Caller, fields: AnnotationFields): Promise<number> {
    const given = (Object.keys(COLUMNS) as (keyof typeof COLUMNS)[]).filter((field) => fields[field] !== undefined);
    const columns = ['project_id', 'organization_id', 'created_by_id', ...given.map((field) => COLUMNS[field])];
    const values = [caller.projectId, caller.organizationId, caller.userId, ...given.map((field) => fields[field])];
    const inserted = await this.sql.query<{ id: number }>(
      'annotations.create',
      `INSERT INTO annotations (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING id`,
      values,
    );
    return inserted.rows[0]!.id;
  }

  async update(id: number, fields: AnnotationFields): Promise<void> {
    const given = (Object.keys(COLUMNS) as (keyof typeof COLUMNS)[]).filter((field) => fields[field] !== undefined);
    if (given.length === 0) return;
    await this.sql.query(
      'annotations.update',
      `UPDATE annotations SET ${given.map((field, i) => `${COLUMNS[field]} = $${i + 2}`).join(', ')}, updated_at = now() WHERE id = $1`,
      [id, ...given.map((field) => fields[field])],
    );
  }

  /** Whether the project has this live insight / dashboard. */
  async owns(projectId: number, table: 'insights' | 'dashboards', id: number): Promise<boolean> {
    const rows = await this.sql.query('annotations.owns', `SELECT 1 FROM ${table} WHERE project_id = $1 AND id = $2 AND NOT deleted`, [projectId, id]);
    return rows.rows.length > 0;
  }
}
