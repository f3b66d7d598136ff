/**
 * A trend answer as the builder's visualisation asks: a line or bar chart with its legend, big numbers, or a
 * table; a stickiness answer over the number of intervals active; a lifecycle answer as stacked bars.
 */
import { useMemo } from 'preact/hooks';
import type { TrendRequest, TrendSeries } from '../api/types';
import { Chart } from '../components/chart';
import { EmptyState } from '../components/empty-state';
import { DataTable } from '../components/table';
import { figure } from '../format';
import { chartModel, lifecycleModel, stickinessModel, totalRows, type ChartModel } from './chart-data';
import { visualizationOf } from './query';

/** `result` as `request` (the one it answers) asked to show it. */
export function TrendResult({ result, request }: { result: TrendSeries[]; request: TrendRequest }) {
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
    return <Chart model={model} kind={visualization} label={request.insight === 'STICKINESS' ? 'Stickiness' : 'Trend'} />;
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
