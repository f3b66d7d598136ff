import { SqlBuilder, containsPattern, type SqlExecutor } from '@plover/postgres';
import type { Page } from '../http/render';
import type { Caller } from '../shared/access-store';
import { callerParams, selectInsights, VISIBLE_INSIGHT as VISIBLE, type InsightRow } from '../shared/insight-record';
import { newShortId } from '../shared/users';

/** Writable fields, each the column it is stored in. */
export const COLUMNS = {
  name: 'name',
  derived_name: 'derived_name',
  description: 'description',
  filters: 'filters',
  query: 'query',
  order: '"order"',
  deleted: 'deleted',
  tags: 'tags',
  favorited: 'favorited',
  saved: 'saved',
} as const;
export type Field = keyof typeof COLUMNS;
/** Changes to these bump last_modified_at/by (PostHog's MATERIAL_INSIGHT_FIELDS, plus the query node). */
const MATERIAL: Record<'name' | 'description' | 'filters' | 'query', string> = { name: 'text', description: 'text', filters: 'jsonb', query: 'jsonb' };

export interface InsightFilter {
  saved?: boolean;
  favorited?: boolean;
  shortId?: string;
  search?: string;
  createdBy?: number[];
  /** Only the caller's own insights. */
  mine?: boolean;
}

/** Saved insights, the caller's views of them, and client timing reports. */
export class InsightsStore {
  constructor(private readonly sql: SqlExecutor) {}

  /** By integer id (`id`, tried first) or short_id (`raw`), deleted ones too when asked. */
  async get(caller: Caller, id: number | null, raw: string, includeDeleted: boolean): Promise<InsightRow | undefined> {
    const result = await this.sql.query<InsightRow>(
      'management.getInsight',
      `${selectInsights(`(i.id = $4::int OR i.short_id = $5)${includeDeleted ? '' : ' AND NOT i.deleted'}`)}
        ORDER BY CASE WHEN i.id = $4::int THEN 0 ELSE 1 END LIMIT 1`,
      [...callerParams(caller), id, raw],
    );
    return result.rows[0];
  }

  /** One page (and one row more) of the insights the caller may see, by `order` then last modified, with their count. */
  async list(caller: Caller, filter: InsightFilter, page: Page): Promise<{ rows: InsightRow[]; count: number }> {
    const params = new SqlBuilder(callerParams(caller));
    const where = ['NOT i.deleted', VISIBLE];
    if (filter.saved !== undefined) where.push(`i.saved = ${params.bind(filter.saved)}`);
    if (filter.favorited !== undefined) where.push(`i.favorited = ${params.bind(filter.favorited)}`);
    if (filter.shortId !== undefined) where.push(`i.short_id = ${params.bind(filter.shortId)}`);
    if (filter.search !== undefined) {
      const pattern = params.bind(containsPattern(filter.search));
      where.push(`(i.name ILIKE ${pattern} OR i.derived_name ILIKE ${pattern})`);
    }
    if (filter.createdBy !== undefined) where.push(`i.created_by_id = ANY(${params.bind(filter.createdBy)}::int[])`);
    if (filter.mine) where.push('i.created_by_id = $2');
    const condition = where.join(' AND ');
    const rows = await this.sql.query<InsightRow>(
      'management.listInsights',
      `${selectInsights(condition)} ORDER BY i."order" NULLS LAST, i.last_modified_at DESC, i.id DESC LIMIT ${page.limit + 1} OFFSET ${page.offset}`,
      params.params,
    );
    const count = await this.sql.query<{ n: number }>(
      'management.countInsights',
      `SELECT count(*)::int AS n FROM insights i WHERE i.project_id = $1 AND ${condition}`,
      params.params,
    );
    return { rows: rows.rows, count: count.rows[0]?.n ?? 0 };
  }

  /** The caller's 5 most recently viewed insights, newest view first. */
  async lastViewed(caller: Caller): Promise<InsightRow[]> {
    const rows = await this.sql.query<InsightRow>(
      'management.lastViewedInsights',
      `${selectInsights(`v.last_viewed_at IS NOT NULL AND NOT i.deleted AND ${VISIBLE}`)} ORDER BY v.last_viewed_at DESC LIMIT 5`,
      callerParams(caller),
    );
    return rows.rows;
  }

  /** Creates an insight under a fresh short_id (drawn again if taken) and answers its id. */
  async create(caller: Caller, fields: Partial<Record<Field, unknown>>): Promise<number> {
    // $3 is the short_id.
    const insert = new SqlBuilder([caller.projectId, caller.userId, null]);
    const columns = Object.keys(fields) as Field[];
    const values = columns.map((field) => insert.bind(fields[field]));
    for (let attempt = 0; attempt < 5; attempt++) {
      insert.params[2] = newShortId();
      const id = (
        await this.sql.query<{ id: number }>(
          'management.createInsight',
          `INSERT INTO insights (project_id, created_by_id, last_modified_by_id, short_id${columns.map((field) => `, ${COLUMNS[field]}`).join('')})
           VALUES ($1, $2, $2, $3${values.map((value) => `, ${value}`).join('')})
           ON CONFLICT (project_id, short_id) DO NOTHING RETURNING id`,
          insert.params,
        )
      ).rows[0]?.id;
      if (id !== undefined) return id;
    }
    throw new Error('could not allocate a unique insight short_id');
  }

  /** Sets the given fields; a change of a material field makes `userId` the last modifier, now. */
  async update(id: number, fields: Partial<Record<Field, unknown>>, userId: number): Promise<void> {
    const params = new SqlBuilder([id]);
    const placeholders = new Map(Object.entries(fields).map(([field, value]) => [field, params.bind(value)]));
    const sets = [...placeholders].map(([field, placeholder]) => `${COLUMNS[field as Field]} = ${placeholder}`);
    const changed = Object.entries(MATERIAL)
      .filter(([field]) => placeholders.has(field))
      .map(([field, type]) => `${placeholders.get(field)!}::${type} IS DISTINCT FROM ${field}`);
    if (changed.length > 0) {
      const material = `(${changed.join(' OR ')})`;
      sets.push(`last_modified_at = CASE WHEN ${material} THEN now() ELSE last_modified_at END`);
      sets.push(`last_modified_by_id = CASE WHEN ${material} THEN ${params.bind(userId)}::int ELSE last_modified_by_id END`);
    }
    await this.sql.query('management.updateInsight', `UPDATE insights SET ${[...sets, 'updated_at = now()'].join(', ')} WHERE id = $1`, params.params);
  }

  /** Upserts the caller's views of the given insights, skipping those deleted, elsewhere or invisible to them. */
  async recordViews(caller: Caller, ids: readonly number[]): Promise<Map<number, Date>> {
    const rows = await this.sql.query<{ insight_id: number; last_viewed_at: Date }>(
      'management.recordInsightViews',
      `INSERT INTO insight_views (project_id, user_id, insight_id, last_viewed_at)
       SELECT $1, $2, i.id, clock_timestamp() FROM insights i
        WHERE i.project_id = $1 AND i.id = ANY($4::int[]) AND NOT i.deleted AND ${VISIBLE}
       ON CONFLICT (project_id, user_id, insight_id) DO UPDATE SET last_viewed_at = excluded.last_viewed_at
       RETURNING insight_id, last_viewed_at`,
      [...callerParams(caller), ids],
    );
    return new Map(rows.rows.map((row) => [row.insight_id, row.last_viewed_at]));
  }

  /** Stores a client's timing report as sent. */
  async recordTiming(caller: Caller, payload: Record<string, unknown>): Promise<void> {
    await this.sql.query('management.recordInsightTiming', 'INSERT INTO insight_timings (project_id, user_id, payload) VALUES ($1, $2, $3)', [
      caller.projectId,
      caller.userId,
      payload,
    ]);
  }
}
