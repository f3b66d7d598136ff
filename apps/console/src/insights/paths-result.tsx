/**
 * A paths answer as a Sankey diagram (SVG, laid out by insights/paths-data.ts): a column per step, a node per
 * item as tall as the paths through it, bands as wide as each link's count, and under it a table of every link
 * with its count and mean time. The diagram is as wide as its panel, and scrolls sideways where a column would be
 * narrower than a label (on a phone).
 */
import type { RefObject } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { PathEdge } from '../api/types';
import { EmptyState } from '../components/empty-state';
import { DataTable } from '../components/table';
import { duration, figure } from '../format';
import { layoutPaths, splitNodeName, type PathNode } from './paths-data';

const SERIES_COLOURS = 8;
const MIN_COLUMN = 170;
const NODE_ROOM = 44;
const LABEL_CHARS = 26;

const short = (text: string) => (text.length > LABEL_CHARS ? `${text.slice(0, LABEL_CHARS - 1)}…` : text);
const itemName = (item: string) => (item === '' ? '(none)' : item);
const seconds = (ms: number) => duration(ms / 1000);

function useWidth(): [RefObject<HTMLDivElement | null>, number] {
  const ref = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(0);
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    setWidth(element.clientWidth);
    const observer = new ResizeObserver(() => setWidth(element.clientWidth));
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}

export function PathsResult({ edges }: { edges: PathEdge[] }) {
  const [ref, available] = useWidth();
  // The nodes of each step: the diagram needs a column per step and room for the fullest one.
  const perStep = useMemo(() => {
    const steps = new Map<number, Set<string>>();
    for (const name of edges.flatMap((edge) => [edge.source, edge.target])) {
      const { step } = splitNodeName(name);
      steps.set(step, (steps.get(step) ?? new Set()).add(name));
    }
    return [...steps.values()].map((names) => names.size);
  }, [edges]);
  const width = Math.max(available, perStep.length * MIN_COLUMN);
  const height = Math.max(240, Math.max(0, ...perStep) * NODE_ROOM);
  // Room on the right of the last column for its labels.
  const layout = useMemo(() => (width > 0 ? layoutPaths(edges, width - MIN_COLUMN + 12, height) : null), [edges, width, height]);
  const colours = useMemo(() => {
    const items = [...new Set(edges.flatMap((edge) => [edge.source, edge.target]).map((name) => splitNodeName(name).item))].sort();
    return new Map(items.map((item, index) => [item, `sankey-colour-${index % SERIES_COLOURS}`]));
  }, [edges]);
  if (edges.length === 0) return <EmptyState title="Nothing to show">No path in this range: widen it, or change the event types or points.</EmptyState>;
  const colour = (node: PathNode) => colours.get(node.item)!;
  return (
    <>
      <div class="sankey-scroll" ref={ref} tabIndex={0} role="region" aria-label="Paths diagram">
        {layout && (
          <svg
            class="sankey"
            width={width}
            height={height + 8}
            viewBox={`0 -4 ${width} ${height + 8}`}
            role="img"
            aria-label={`Paths over ${layout.steps} steps`}
          >
            <g class="sankey-links">
              {layout.links.map((link) => (
                <path key={`${link.source.id} ${link.target.id}`} class={`sankey-link ${colour(link.source)}`} d={link.path} stroke-width={link.width}>
                  <title>
                    {`${itemName(link.source.item)} → ${itemName(link.target.item)}: ${figure(link.value)}, ${seconds(link.averageConversionTime)} on average`}
                  </title>
                </path>
              ))}
            </g>
            <g class="sankey-nodes">
              {layout.nodes.map((node) => (
                <g key={node.id} class="sankey-node" data-node={node.id}>
                  <rect class={colour(node)} x={node.x0} y={node.y0} width={node.x1 - node.x0} height={Math.max(1, node.y1 - node.y0)}>
                    <title>{`Step ${node.step}: ${itemName(node.item)} — ${figure(node.value)}${node.dropOff > 0 ? `, ${figure(node.dropOff)} end here` : ''}`}</title>
                  </rect>
                  <text x={node.x1 + 6} y={(node.y0 + node.y1) / 2} dy="-0.2em">
                    {short(itemName(node.item))}
                  </text>
                  <text class="sankey-count" x={node.x1 + 6} y={(node.y0 + node.y1) / 2} dy="1em">
                    {figure(node.value)}
                    {node.dropOff > 0 && ` · ${figure(node.dropOff)} end`}
                  </text>
                </g>
              ))}
            </g>
          </svg>
        )}
      </div>
      <DataTable
        caption="Path links"
        rows={edges}
        rowKey={(edge) => `${edge.source} ${edge.target}`}
        columns={[
          { label: 'Step', numeric: true, cell: (edge) => splitNodeName(edge.source).step },
          { label: 'From', cell: (edge) => <span class="cell-name">{itemName(splitNodeName(edge.source).item)}</span> },
          { label: 'To', cell: (edge) => <span class="cell-name">{itemName(splitNodeName(edge.target).item)}</span> },
          { label: 'Count', numeric: true, cell: (edge) => figure(edge.value) },
          { label: 'Average time', numeric: true, cell: (edge) => seconds(edge.average_conversion_time) },
        ]}
      />
    </>
  );
}
