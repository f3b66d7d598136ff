/**
 * Stickiness (docs/insights.md, "Stickiness"): per series, how many persons (groups for `unique_group`) were active
 * in exactly 1, 2, … N of the range's N intervals. One ClickHouse query per series and period counts them.
 */
import type { ClickHouse } from '@plover/clickhouse';
import { previousRange } from './dates';
import { insightRange } from './range';
import { seriesLabel, seriesReference, withActionNames } from './series';
import type { Params } from './params';
import { query, SeriesQuery } from './trends';
import type { InsightContext, ResolvedRange, Series, StickinessSeriesResult, TrendsInput } from './types';

/**
 * One row per person (group for `unique_group`) with events of the series in the range: `target`, `intervals`
 * (how many of the range's intervals they were active in) and `uuids` (their matching events). The counts and
 * the actors behind each count (actors.ts) both read it.
 */
export async function stickinessTargetsSql(
  series: Series,
  input: TrendsInput,
  range: ResolvedRange,
  ctx: InsightContext,
): Promise<{ sql: string; params: Params }> {
  const groups = series.math === 'unique_group';
  const q = new SeriesQuery(series, input, ctx, !groups);
  const where = await q.where(range.from, range.to);
  const sql = q.sql(
    `${q.counted()} AS target, uniqExact(${q.bucket(range.interval)}) AS intervals, groupArray(e.uuid) AS uuids`,
    groups ? `${where} AND target != ''` : where,
    'target',
  );
  return { sql, params: q.params };
}

/** Per number of active intervals, the persons (or groups) with that many. */
async function activeIntervals(ch: ClickHouse, series: Series, input: TrendsInput, range: ResolvedRange, ctx: InsightContext): Promise<Map<number, number>> {
  const targets = await stickinessTargetsSql(series, input, range, ctx);
  const rows = await query(ch, 'insights.stickiness', `SELECT intervals, count() AS targets FROM (${targets.sql}) GROUP BY intervals`, targets.params);
  return new Map(rows.map((row) => [Number(row.intervals), Number(row.targets)]));
}

function render(series: Series, range: ResolvedRange, counts: Map<number, number>, compareLabel?: 'current' | 'previous'): StickinessSeriesResult {
  const days = range.buckets.map((_, index) => index + 1);
  const data = days.map((intervals) => counts.get(intervals) ?? 0);
  const result: StickinessSeriesResult = {
    data,
    labels: days.map((intervals) => `${intervals} ${range.interval}${intervals === 1 ? '' : 's'}`),
    days,
    count: data.reduce((sum, value) => sum + value, 0),
    label: seriesLabel(series),
    action: { ...seriesReference(series), order: series.order, name: seriesLabel(series), custom_name: series.customName },
  };
  if (compareLabel !== undefined) {
    result.compare = true;
    result.compare_label = compareLabel;
  }
  return result;
}

/** Computes stickiness: one result per series, each followed by its previous period when comparing (as PostHog orders them). */
export async function runStickiness(ch: ClickHouse, input: TrendsInput, ctx: InsightContext): Promise<StickinessSeriesResult[]> {
  if (input.series.length === 0) return [];
  const range = await insightRange(ch, input, input.interval, ctx);
  const periods = input.compare
    ? [
        { range, label: 'current' as const },
        { range: previousRange(range), label: 'previous' as const },
      ]
    : [{ range, label: undefined }];
  const results: StickinessSeriesResult[] = [];
  for (const series of await withActionNames(input.series, ctx)) {
    for (const period of periods) results.push(render(series, period.range, await activeIntervals(ch, series, input, period.range, ctx), period.label));
  }
  return results;
}
