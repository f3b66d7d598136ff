/**
 * A dashboard tile's insight drawn from the result the dashboard answered with (the cache; nothing is computed
 * here), by its query's kind: a trend, stickiness or lifecycle chart, funnel steps, a retention grid, paths. The
 * API computes tiles from insights' query nodes only, so an insight saved as legacy filters (the trend builder's)
 * has no result on a tile; neither has one the console cannot draw on a tile (HogQL): both link to the insight.
 */
import { sourceOfKind } from '../api/nodes';
import type { Insight, PathEdge, RetentionRow, TrendSeries } from '../api/types';
import { FunnelResult } from '../insights/funnel-result';
import { funnelFormFromNode } from '../insights/funnel-form';
import { PathsResult } from '../insights/paths-result';
import { Chart } from '../components/chart';
import { chartModel, lifecycleModel, stickinessModel } from '../insights/chart-data';
import { oneOfIntervals } from '../insights/query';
import { RetentionResult } from '../insights/retention-result';
import { retentionFormFromNode } from '../insights/retention-form';

export function TileResult({ insight }: { insight: Insight }) {
  const { result, query } = insight;
  if (query === null) return <p class="muted">Saved as a legacy trend, which dashboards do not compute: open the insight to see it.</p>;
  if (result === null || result === undefined) return <p class="muted">Not computed yet: refresh the dashboard.</p>;
  for (const [kind, label] of [
    ['TrendsQuery', 'Trend'],
    ['StickinessQuery', 'Stickiness'],
    ['LifecycleQuery', 'Lifecycle'],
  ] as const) {
    const source = sourceOfKind(query, kind);
    if (!source) continue;
    const series = result as TrendSeries[];
    const interval = oneOfIntervals(source.interval);
    if (kind === 'LifecycleQuery') return <Chart model={lifecycleModel(series, interval)} kind="stacked" label={label} />;
    return <Chart model={kind === 'StickinessQuery' ? stickinessModel(series) : chartModel(series, interval)} kind="line" label={label} />;
  }
  const funnel = funnelFormFromNode(query);
  if (funnel) return <FunnelResult result={result} vizType={funnel.vizType} interval={funnel.interval} />;
  const retention = retentionFormFromNode(query);
  if (retention) return <RetentionResult rows={result as RetentionRow[]} period={retention.period} endsNow />;
  if (sourceOfKind(query, 'PathsQuery')) return <PathsResult edges={result as PathEdge[]} />;
  return <p class="muted">Open the insight to see it.</p>;
}
