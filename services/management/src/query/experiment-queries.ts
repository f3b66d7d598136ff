/**
 * ExperimentExposureQuery and ExperimentQuery (docs/experiments.md): an experiment's exposures per variant and
 * day, and one metric's per-variant statistics compared with control, in PostHog's response shapes.
 */
import {
  CONTROL_VARIANT_KEY,
  experimentResults,
  experimentStatistics,
  parseExperimentMetric,
  parseExposureCriteria,
  runExperimentExposures,
  type ExperimentStatsMethod,
  type ExperimentTarget,
} from '@plover/insights';
import { errors } from '../shared/errors';
import { experimentById, experimentTarget } from '../shared/experiment-store';
import type { QueryContext, QueryKind } from './query-kind';
import { ExperimentExposureQueryResponse, ExperimentQueryResponse } from './schemas';

const MINUTE = 60_000;

function experimentId(node: Record<string, unknown>): number {
  const id = node.experiment_id;
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 1 || id > 2_147_483_647) throw errors.validation('experiment_id is required', 'experiment_id');
  return id;
}

/** A node's date (`start_date`, `end_date`) overriding the experiment's; undefined when the node gives none. */
function dateOverride(node: Record<string, unknown>, field: 'start_date' | 'end_date'): Date | undefined {
  const raw = node[field];
  if (raw === undefined || raw === null) return undefined;
  const date = typeof raw === 'string' ? new Date(raw) : null;
  if (!date || Number.isNaN(date.getTime())) throw errors.validation('Must be a date-time.', field);
  return date;
}

interface Loaded {
  target: ExperimentTarget;
  method: ExperimentStatsMethod;
  /** The end date (null while running). */
  ended: Date | null;
  /** The end the results depend on: the end date, or the current minute for a running experiment. */
  endKey: number;
}

/**
 * The experiment a node names, as the engine needs it. An exposure node may override its dates and exposure
 * criteria (PostHog's node carries them); a running experiment ends now.
 */
async function load(node: Record<string, unknown>, ctx: QueryContext): Promise<Loaded> {
  const row = await experimentById(ctx.sql, ctx.insight.projectId, experimentId(node));
  if (!row) throw errors.validation('Experiment does not exist.', 'experiment_id');
  const start = dateOverride(node, 'start_date') ?? row.start_date;
  const end = dateOverride(node, 'end_date') ?? row.end_date;
  const exposureCriteria = node.exposure_criteria ?? row.exposure_criteria;
  const now = ctx.insight.now;
  const target = experimentTarget({ ...row, start_date: start, end_date: end }, now, 'experiment_id');
  const method = row.stats_config?.method === 'frequentist' ? 'frequentist' : 'bayesian';
  return {
    target: { ...target, exposure: parseExposureCriteria(exposureCriteria) },
    method,
    ended: end,
    endKey: end ? end.getTime() : Math.floor(now.getTime() / MINUTE),
  };
}

/** What the results depend on besides the node: the experiment as loaded (its flag, dates, criteria, method). */
async function scope(node: Record<string, unknown>, ctx: QueryContext): Promise<unknown> {
  const { target, method, endKey } = await load(node, ctx);
  return { ...target, end: endKey, method };
}

export const experimentExposureQuery: QueryKind<typeof ExperimentExposureQueryResponse> = {
  response: ExperimentExposureQueryResponse,
  async run(node, ctx) {
    const { target, ended } = await load(node, ctx);
    const { timeseries, total_exposures } = await runExperimentExposures(ctx.clickhouse, target, ctx.insight);
    return {
      kind: 'ExperimentExposureQuery',
      timeseries,
      total_exposures,
      date_range: { date_from: target.start.toISOString(), date_to: ended?.toISOString() ?? null },
      sample_ratio_mismatch: null,
      bias_risk: null,
    };
  },
  cacheScope: scope,
};

export const experimentQuery: QueryKind<typeof ExperimentQueryResponse> = {
  response: ExperimentQueryResponse,
  async run(node, ctx) {
    const metric = parseExperimentMetric(node.metric, 'metric');
    const { target, method } = await load(node, ctx);
    const statistics = await experimentStatistics(ctx.clickhouse, target, metric, ctx.insight);
    const baseline = statistics.find((variant) => variant.key === CONTROL_VARIANT_KEY)!;
    const goal = (node.metric as Record<string, unknown>).goal === 'decrease' ? 'decrease' : 'increase';
    const results = experimentResults(
      baseline,
      statistics.filter((variant) => variant !== baseline),
      { metric_type: metric.type, goal, method },
    );
    return { kind: 'ExperimentQuery', metric: node.metric as object, ...results };
  },
  cacheScope: scope,
};
