/**
 * A trend answer as the builder's visualisation asks: a line or bar chart with its legend, big numbers, or a
 * table; a stickiness answer over the number of intervals active; a lifecycle answer as stacked bars.
 */
import { useCallback, useMemo, useState } from 'preact/hooks';
import type { QueryNode, TrendRequest, TrendSeries } from '../api/types';
import { Chart } from '../components/chart';
import { EmptyState } from '../components/empty-state';
import { DataTable } from '../components/table';
import { figure } from '../format';
import { chartModel, lifecycleModel, seriesLabel, stickinessModel, totalRows, type ChartModel } from './chart-data';
import { PersonsDialog, type PersonsPoint } from './persons-dialog';
import { visualizationOf } from './query';

/** `result` as `request` (the one it answers) asked to show it. */
export function TrendResult({ result, request, node }: { result: TrendSeries[]; request: TrendRequest; node?: QueryNode }) {
  const [point, setPoint] = useState<PersonsPoint | null>(null);
  // A click on a trend or stickiness point lists its persons (the query's `InsightActorsQuery`).
  const onPoint = useCallback(
    (index: number, bucket: number) => {
      const series = result[index];
      if (!node || !series || request.insight === 'LIFECYCLE') return;
      const day = series.days[bucket];
      setPoint({
        title: `${seriesLabel(series)} · ${series.labels[bucket] ?? day}`,
        source: {
          kind: 'InsightActorsQuery',
          source: node,
          series: series.action?.order ?? 0,
          day,
          ...(series.breakdown_value !== undefined && { breakdown: series.breakdown_value }),
          ...(series.compare_label !== undefined && { compare: series.compare_label }),
        },
      });
    },
    [result, request.insight, node],
  );
  const visualization = visualizationOf(request.display);
  const model = useMemo((): ChartModel => {
    if (request.insight === 'LIFECYCLE') return lifecycleModel(result, request.interval);
    if (request.insight === 'STICKINESS') return stickinessModel(result);
    return chartModel(result, request.interval);
  }, [result, request.insight, request.interval]);
  const rows = useMemo(() => totalRows(result), [result]);
  if (result.length === 0) return <EmptyState title="Nothing to show">No series matched: add a series, or widen the filters.</EmptyState>;
  if (request.insight === 'LIFECYCLE') return <Chart model={model} kind="stacked" label="Lifecycle" />;
  if (visualization === 'line' || visualization === 'bar')
    return (
      <>
        <Chart model={model} kind={visualization} label={request.insight === 'STICKINESS' ? 'Stickiness' : 'Trend'} onPoint={node ? onPoint : undefined} />
        <PersonsDialog point={point} onClose={() => setPoint(null)} />
      </>
    );
  if (visualization === 'number') {
    return (
      <ul class="numbers">
        {rows.map((row, index) => (
          <li key={index}>
            <span class="big-number">{figure(row.value)}</span>
            <span class="muted">{row.label}</span>
          </li>
        ))}
      </ul>
    );
  }
  return (
    <DataTable
      caption="Trend totals"
      rows={rows}
      rowKey={(_, index) => index}
      columns={[
        { label: 'Series', cell: (row) => <span class="cell-name">{row.label}</span> },
        { label: 'Value', numeric: true, cell: (row) => figure(row.value) },
      ]}
    />
  );
}
