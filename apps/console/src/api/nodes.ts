/** Reading query nodes: which node a saved insight's query runs (no DOM, no client, for unit tests). */
import type { QueryNode } from './types';

/** The node an insight's query runs when it is of `kind`: the node itself, or a wrapper's (`InsightVizNode`…) `source`. */
export function sourceOfKind(node: QueryNode | null, kind: string): Record<string, unknown> | null {
  const source: unknown = node && (node.kind === kind ? node : node.source);
  return typeof source === 'object' && source !== null && !Array.isArray(source) && (source as QueryNode).kind === kind ? (source as QueryNode) : null;
}
