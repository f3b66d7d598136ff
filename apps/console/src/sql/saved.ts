/**
 * The SQL editor's state as a saved insight keeps it: PostHog's `DataVisualizationNode` around a `HogQLQuery`,
 * with the display and the chart's columns by name (`chartSettings`), and back.
 */
import { sourceOfKind } from '../api/nodes';
import type { QueryNode } from '../api/types';

export type SqlDisplay = 'table' | 'line' | 'bar';

export interface SqlView {
  query: string;
  display: SqlDisplay;
  /** The chart's columns by name; absent: the default (first column along x, the other numeric ones over it). */
  x?: string;
  y?: string[];
}

const DISPLAYS: Record<SqlDisplay, string> = { table: 'ActionsTable', line: 'ActionsLineGraph', bar: 'ActionsBar' };

export function sqlNode(view: SqlView): QueryNode {
  const chartSettings = view.x === undefined ? undefined : { xAxis: { column: view.x }, yAxis: (view.y ?? []).map((column) => ({ column })) };
  return {
    kind: 'DataVisualizationNode',
    source: { kind: 'HogQLQuery', query: view.query },
    display: DISPLAYS[view.display],
    ...(chartSettings && { chartSettings }),
  };
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The HogQL query a node runs (bare, or as a wrapper's source), or null for any other node. */
export function hogqlSource(node: QueryNode | null): Record<string, unknown> | null {
  const source = sourceOfKind(node, 'HogQLQuery');
  return source && typeof source.query === 'string' ? source : null;
}

/** The editor's state of a saved node; null when the node is not a HogQL query. */
export function viewFromNode(node: QueryNode | null): SqlView | null {
  const source = hogqlSource(node);
  if (!source || !node) return null;
  const display = (Object.keys(DISPLAYS) as SqlDisplay[]).find((key) => DISPLAYS[key] === node.display) ?? 'table';
  const settings = isObject(node.chartSettings) ? node.chartSettings : {};
  const x = isObject(settings.xAxis) && typeof settings.xAxis.column === 'string' ? settings.xAxis.column : undefined;
  const y = Array.isArray(settings.yAxis)
    ? settings.yAxis.flatMap((axis: unknown) => (isObject(axis) && typeof axis.column === 'string' ? [axis.column] : []))
    : undefined;
  return { query: source.query as string, display, ...(x !== undefined && { x, y: y ?? [] }) };
}
