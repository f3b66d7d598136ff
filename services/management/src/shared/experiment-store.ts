import { CONTROL_VARIANT_KEY, parseExposureCriteria, type ExperimentTarget } from '@plover/insights';
import type { SqlExecutor } from '@plover/postgres';
import { errors } from './errors';
import { USER_JSON, type UserBasic } from './users';

export interface ExperimentRow {
  id: number;
  project_id: number;
  name: string;
  description: string;
  feature_flag_id: number;
  start_date: Date | null;
  end_date: Date | null;
  archived: boolean;
  deleted: boolean;
  type: 'web' | 'product';
  filters: Record<string, unknown>;
  parameters: Record<string, unknown> | null;
  secondary_metrics: unknown[];
  exposure_criteria: Record<string, unknown> | null;
  metrics: unknown[];
  metrics_secondary: unknown[];
  primary_metrics_ordered_uuids: string[] | null;
  secondary_metrics_ordered_uuids: string[] | null;
  stats_config: Record<string, unknown> | null;
  scheduling_config: Record<string, unknown> | null;
  only_count_matured_users: boolean;
  conclusion: string | null;
  conclusion_comment: string | null;
  created_by: UserBasic | null;
  created_at: Date;
  updated_at: Date;
  /** The experiment's flag. */
  flag_key: string;
  flag_name: string;
  flag_filters: Record<string, unknown>;
  flag_active: boolean;
  flag_deleted: boolean;
  flag_version: number;
  flag_ensure_experience_continuity: boolean;
}

/** Experiments of project $1 with their flag, and the derived `status` (draft, running, paused, stopped). */
export const SELECT_EXPERIMENT = `SELECT x.id, x.project_id, x.name, x.description, x.feature_flag_id, x.start_date, x.end_date, x.archived, x.deleted,
       x.type, x.filters, x.parameters, x.secondary_metrics, x.exposure_criteria, x.metrics, x.metrics_secondary,
       x.primary_metrics_ordered_uuids, x.secondary_metrics_ordered_uuids, x.stats_config, x.scheduling_config,
       x.only_count_matured_users, x.conclusion, x.conclusion_comment, ${USER_JSON('u')} AS created_by, x.created_at, x.updated_at,
       f.key AS flag_key, f.name AS flag_name, f.filters AS flag_filters, f.active AS flag_active, f.deleted AS flag_deleted,
       f.version AS flag_version, f.ensure_experience_continuity AS flag_ensure_experience_continuity
  FROM experiments x JOIN feature_flags f ON f.id = x.feature_flag_id LEFT JOIN users u ON u.id = x.created_by_id
 WHERE x.project_id = $1`;

/** SQL for an experiment's derived status, over SELECT_EXPERIMENT's aliases. */
export const STATUS_SQL = `CASE WHEN x.start_date IS NULL THEN 'draft' WHEN x.end_date IS NOT NULL THEN 'stopped' WHEN NOT f.active THEN 'paused' ELSE 'running' END`;

export type ExperimentStatus = 'draft' | 'running' | 'paused' | 'stopped';

export function statusOf(row: Pick<ExperimentRow, 'start_date' | 'end_date' | 'flag_active'>): ExperimentStatus {
  if (row.start_date === null) return 'draft';
  if (row.end_date !== null) return 'stopped';
  return row.flag_active ? 'running' : 'paused';
}

/** A project's live experiment by id (a deleted one only when asked). */
export async function experimentById(db: SqlExecutor, projectId: number, id: number, includeDeleted = false): Promise<ExperimentRow | undefined> {
  const deleted = includeDeleted ? '' : ' AND NOT x.deleted';
  return (await db.query<ExperimentRow>('experiments.get', `${SELECT_EXPERIMENT} AND x.id = $2${deleted}`, [projectId, id])).rows[0];
}

/** The variant keys of a flag's filters, in order. */
export function variantKeys(filters: Record<string, unknown>): string[] {
  const multivariate = filters.multivariate as { variants?: { key?: unknown }[] } | null | undefined;
  return (multivariate?.variants ?? []).flatMap((variant) => (typeof variant.key === 'string' ? [variant.key] : []));
}

/**
 * What the results queries need of an experiment: its flag's key and variants, its dates (a running experiment
 * ends now) and its exposure criteria. A draft has no results yet: 400 naming `attr`.
 */
export function experimentTarget(row: ExperimentRow, now: Date, attr: string): ExperimentTarget {
  if (row.start_date === null) throw errors.validation('Experiment has not been launched yet: there are no exposures.', attr);
  const variants = variantKeys(row.flag_filters);
  if (!variants.includes(CONTROL_VARIANT_KEY)) throw errors.validation(`The experiment's flag has no "${CONTROL_VARIANT_KEY}" variant.`, attr);
  const group = row.flag_filters.aggregation_group_type_index;
  return {
    flagKey: row.flag_key,
    variants,
    start: row.start_date,
    end: row.end_date ?? now,
    groupTypeIndex: typeof group === 'number' ? group : null,
    exposure: parseExposureCriteria(row.exposure_criteria),
  };
}
