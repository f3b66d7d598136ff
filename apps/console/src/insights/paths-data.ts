/**
 * A paths answer as a Sankey diagram, laid out by d3-sankey (no DOM: the shapes are numbers and SVG path data).
 * The API names each node `<step>_<item>` (`1_/pricing`, `2_signup`); a column per step, one node per item in
 * it, a link per edge as wide as its count.
 */
import { sankey, sankeyLinkHorizontal, sankeyLeft, type SankeyGraph } from 'd3-sankey';
import type { PathEdge } from '../api/types';

export interface PathNode {
  /** The API's name, `<step>_<item>`. */
  id: string;
  step: number;
  item: string;
  /** Paths through the node: its incoming count, or the outgoing one in the first step. */
  value: number;
  /** Of those, the ones that end here. */
  dropOff: number;
  x0: number;
  x1: number;
  y0: number;
  y1: number;
}

export interface PathLink {
  source: PathNode;
  target: PathNode;
  value: number;
  averageConversionTime: number;
  /** The stroke width and SVG path of the link's band. */
  width: number;
  path: string;
}

export interface PathsLayout {
  nodes: PathNode[];
  links: PathLink[];
  steps: number;
}

/** The step and item of a node name: `3_/a_b` is step 3, item `/a_b`. */
export function splitNodeName(name: string): { step: number; item: string } {
  const cut = name.indexOf('_');
  const step = Number(name.slice(0, cut));
  return cut > 0 && Number.isInteger(step) ? { step, item: name.slice(cut + 1) } : { step: 0, item: name };
}

type Node = { id: string; step: number; item: string };
type Link = { averageConversionTime: number };

/** Lays `edges` out in a `width` × `height` box; the columns are the steps, left to right. */
export function layoutPaths(edges: readonly PathEdge[], width: number, height: number): PathsLayout {
  if (edges.length === 0) return { nodes: [], links: [], steps: 0 };
  const names = [...new Set(edges.flatMap((edge) => [edge.source, edge.target]))];
  const graph: SankeyGraph<Node, Link> = {
    nodes: names.map((id) => ({ id, ...splitNodeName(id) })),
    links: edges.map((edge) => ({ source: edge.source, target: edge.target, value: edge.value, averageConversionTime: edge.average_conversion_time })),
  };
  const laid = sankey<Node, Link>()
    .nodeId((node) => node.id)
    .nodeAlign(sankeyLeft)
    .nodeWidth(12)
    .nodePadding(14)
    // Within a column, the busiest node first; ties by item, so a layout never depends on the answer's order.
    .nodeSort((a, b) => (b.value ?? 0) - (a.value ?? 0) || a.item.localeCompare(b.item))
    .extent([
      [0, 0],
      [width, height],
    ])(graph);
  const shape = sankeyLinkHorizontal();
  const nodes = new Map<string, PathNode>();
  for (const node of laid.nodes) {
    const outgoing = (node.sourceLinks ?? []).reduce((sum, link) => sum + link.value, 0);
    const incoming = (node.targetLinks ?? []).reduce((sum, link) => sum + link.value, 0);
    const value = incoming > 0 ? incoming : outgoing;
    nodes.set(node.id, {
      id: node.id,
      step: node.step,
      item: node.item,
      value,
      dropOff: Math.max(0, value - outgoing),
      x0: node.x0 ?? 0,
      x1: node.x1 ?? 0,
      y0: node.y0 ?? 0,
      y1: node.y1 ?? 0,
    });
  }
  const links = laid.links.map((link) => ({
    source: nodes.get((link.source as Node).id)!,
    target: nodes.get((link.target as Node).id)!,
    value: link.value,
    averageConversionTime: link.averageConversionTime,
    width: Math.max(1, link.width ?? 1),
    path: shape(link) ?? '',
  }));
  return { nodes: [...nodes.values()], links, steps: Math.max(...[...nodes.values()].map((node) => node.step)) };
}
