/** Reading query nodes: which node a saved insight's query runs (no DOM, no client, for unit tests). */
import type { QueryNode } from './types';

/** The node an insight's query runs when it is of `kind`: the node itself, or a wrapper's (`InsightVizNode`…) `source`. */
export function sourceOfKind(node: QueryNode | null, kind: string): Record<string, unknown> | null {
  const source: unknown = node && (node.kind === kind ? node : node.source);
  return typeof source === 'object' && source !== null && !Array.isArray(source) && (source as QueryNode).kind === kind ? (source as QueryNode) : null;
}

/** Lenient readers of a saved node's fields: what is not of the expected type reads as empty or the fallback. */
export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
export const asObject = (value: unknown): Record<string, unknown> => (isObject(value) ? value : {});
export const asList = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
export const asText = (value: unknown, fallback = ''): string => (typeof value === 'string' ? value : fallback);
export const oneOf = <T extends string>(value: unknown, choices: readonly T[], fallback: T): T =>
  (choices as readonly unknown[]).includes(value) ? (value as T) : fallback;
/** A whole number from `min` to `max`, else `fallback`. */
export const wholeIn = (value: unknown, min: number, max: number, fallback: number): number =>
  typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max ? value : fallback;
