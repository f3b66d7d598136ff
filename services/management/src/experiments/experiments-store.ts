import { containsPattern, SqlBuilder, type Sql, type SqlExecutor } from '@plover/postgres';
import type { Caller } from '../shared/access-store';
import { SELECT_EXPERIMENT, STATUS_SQL, type ExperimentRow } from '../shared/experiment-store';

/** Writable columns of an experiment. */
export interface ExperimentFields {
  name?: string;
  description?: string | null;
  start_date?: string | Date | null;
  end_date?: string | Date | null;
  parameters?: Record<string, unknown> | null;
  secondary_metrics?: unknown[];
  filters?: Record<string, unknown>;
  archived?: boolean;
  deleted?: boolean;
  type?: 'web' | 'product';
  exposure_criteria?: Record<string, unknown> | null;
  metrics?: unknown[];
  metrics_secondary?: unknown[];
  primary_metrics_ordered_uuids?: string[] | null;
  secondary_metrics_ordered_uuids?: string[] | null;
  stats_config?: Record<string, unknown> | null;
  scheduling_config?: Record<string, unknown> | null;
  only_count_matured_users?: boolean;
  conclusion?: string | null;
  conclusion_comment?: string | null;
}
const COLUMNS = [
  'name',
  'description',
  'start_date',
  'end_date',
  'parameters',
  'secondary_metrics',
  'filters',
  'archived',
  'deleted',
  'type',
  'exposure_criteria',
  'metrics',
  'metrics_secondary',
  'primary_metrics_ordered_uuids',
  'secondary_metrics_ordered_uuids',
  'stats_config',
  'scheduling_config',
  'only_count_matured_users',
  'conclusion',
  'conclusion_comment',
] as const satisfies readonly (keyof ExperimentFields)[];
const JSON_COLUMNS: ReadonlySet<string> = new Set([
  'parameters',
  'secondary_metrics',
  'filters',
  'exposure_criteria',
  'metrics',
  'metrics_secondary',
  'primary_metrics_ordered_uuids',
  'secondary_metrics_ordered_uuids',
  'stats_config',
  'scheduling_config',
]);

function valueOf(field: (typeof COLUMNS)[number], value: unknown): unknown {
  if (field === 'description') return value ?? '';
  return JSON_COLUMNS.has(field) && value !== null ? JSON.stringify(value) : value;
}

export interface ExperimentFilter {
  status?: string;
  archived?: boolean;
  search?: string;
  feature_flag_id?: number;
  created_by_id?: number;
  order?: string;
}

/** `order` values and their SQL (descending with a leading `-`). */
const ORDERS: Record<string, string> = {
  id: 'x.id',
  name: 'lower(x.name)',
  created_at: 'x.created_at',
  updated_at: 'x.updated_at',
  start_date: 'x.start_date',
  end_date: 'x.end_date',
  status: STATUS_SQL,
  feature_flag_key: 'f.key',
};

export class ExperimentsStore {
  constructor(private readonly sql: Sql) {}

  /** One page of a project's live experiments matching `filter`, and their count. */
  async list(projectId: number, filter: ExperimentFilter, page: { limit: number; offset: number }): Promise<{ rows: ExperimentRow[]; count: number }> {
    const params = new SqlBuilder([projectId]);
    let where = ' AND NOT x.deleted';
    // As PostHog: archived experiments are listed only when asked for.
    where += ` AND x.archived = ${params.bind(filter.archived ?? false)}`;
    const status = filter.status === 'complete' ? 'stopped' : filter.status;
    if (status !== undefined && status !== 'all') where += ` AND ${STATUS_SQL} = ${params.bind(status)}`;
    if (filter.search !== undefined) where += ` AND x.name ILIKE ${params.bind(containsPattern(filter.search))}`;
    if (filter.feature_flag_id !== undefined) where += ` AND x.feature_flag_id = ${params.bind(filter.feature_flag_id)}`;
    if (filter.created_by_id !== undefined) where += ` AND x.created_by_id = ${params.bind(filter.created_by_id)}`;
    const descending = filter.order?.startsWith('-') ?? true;
    const order = ORDERS[filter.order?.replace(/^-/, '') ?? 'created_at'] ?? ORDERS.created_at!;
    const direction = descending ? 'DESC NULLS LAST' : 'ASC NULLS LAST';
    const [rows, count] = await Promise.all([
      this.sql.query<ExperimentRow>(
        'experiments.list',
        `${SELECT_EXPERIMENT}${where} ORDER BY ${order} ${direction}, x.id DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
        params.params,
      ),
      this.sql.query<{ count: number }>(
        'experiments.count',
        `SELECT count(*) AS count FROM experiments x JOIN feature_flags f ON f.id = x.feature_flag_id WHERE x.project_id = $1${where}`,
        params.params,
      ),
    ]);
    return { rows: rows.rows, count: Number(count.rows[0]?.count ?? 0) };
  }

  async create(tx: SqlExecutor, caller: Caller, flagId: number, fields: ExperimentFields): Promise<number> {
    const given = COLUMNS.filter((field) => fields[field] !== undefined);
    const columns = ['project_id', 'created_by_id', 'feature_flag_id', ...given];
    const values = [caller.projectId, caller.userId, flagId, ...given.map((field) => valueOf(field, fields[field]))];
    const inserted = await tx.query<{ id: number }>(
      'experiments.create',
      `INSERT INTO experiments (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING id`,
      values,
    );
    return inserted.rows[0]!.id;
  }

  async update(tx: SqlExecutor, id: number, fields: ExperimentFields): Promise<void> {
    const given = COLUMNS.filter((field) => fields[field] !== undefined);
    if (given.length === 0) return;
    await tx.query(
      'experiments.update',
      `UPDATE experiments SET ${given.map((field, i) => `${field} = $${i + 2}`).join(', ')}, updated_at = now() WHERE id = $1`,
      [id, ...given.map((field) => valueOf(field, fields[field]))],
    );
  }
}
