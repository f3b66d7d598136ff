/**
 * Building queries from parts instead of text: callers (EventsQuery, ActorsQuery) parse each user expression on
 * its own with `parseExpr`, so no expression can reach past its place in the query, and assemble the SELECT here.
 */
import { isAggregate } from './functions';
import { parseExpr, type AstNode } from './parser';

/** Whether `node` calls an aggregate function outside a subquery (such a column makes the query group by the others). */
export function containsAggregate(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(containsAggregate);
  if (node === null || typeof node !== 'object') return false;
  const ast = node as AstNode;
  if (ast.node === 'SelectQuery' || ast.node === 'SelectSetQuery') return false;
  if (ast.node === 'Call' && typeof ast.name === 'string' && isAggregate(ast.name)) return true;
  return Object.values(ast).some(containsAggregate);
}

/** A field reference, e.g. `['properties', key]`: any key, no quoting needed. */
export const field = (...chain: string[]): AstNode => ({ node: 'Field', chain });
export const constant = (value: string | number | boolean | null | readonly (string | number)[]): AstNode => ({ node: 'Constant', value });
export const call = (name: string, ...args: AstNode[]): AstNode => ({ node: 'Call', name, args, distinct: false });
export const and = (exprs: AstNode[]): AstNode => (exprs.length === 1 ? exprs[0]! : { node: 'And', exprs });

/**
 * A HogQL expression written by Plover, with `{name}` placeholders replaced by the given nodes (fields whose
 * names are data, constants): `template('{f} = {v}', {f: field('properties', key), v: constant(value)})`.
 */
export async function template(text: string, nodes: Readonly<Record<string, AstNode>>): Promise<AstNode> {
  return replace(await parseExpr(text), nodes) as AstNode;
}

function replace(value: unknown, nodes: Readonly<Record<string, AstNode>>): unknown {
  if (Array.isArray(value)) return value.map((item) => replace(item, nodes));
  if (value === null || typeof value !== 'object') return value;
  const node = value as AstNode;
  if (node.node === 'Placeholder') {
    const chain = (node.expr as AstNode | undefined)?.chain as unknown[] | undefined;
    const name = chain?.length === 1 ? String(chain[0]) : '';
    if (Object.hasOwn(nodes, name)) return nodes[name];
  }
  return Object.fromEntries(Object.entries(node).map(([key, item]) => [key, replace(item, nodes)]));
}

export interface SelectParts {
  select: AstNode[];
  /** A virtual table's name. */
  from: string;
  where?: AstNode[];
  groupBy?: AstNode[];
  having?: AstNode[];
  /** `OrderExpr` nodes (`parseOrderExpr`). */
  orderBy?: AstNode[];
  limit: number;
  offset: number;
}

/** A SELECT over one virtual table from its parts. */
export function selectQuery(parts: SelectParts): AstNode {
  const nonEmpty = (list: AstNode[] | undefined) => (list !== undefined && list.length > 0 ? list : null);
  const where = nonEmpty(parts.where);
  const having = nonEmpty(parts.having);
  return {
    node: 'SelectQuery',
    select: parts.select,
    select_from: { node: 'JoinExpr', table: field(parts.from), alias: null, next_join: null },
    where: where && and(where),
    group_by: nonEmpty(parts.groupBy),
    having: having && and(having),
    order_by: nonEmpty(parts.orderBy),
    limit: constant(parts.limit),
    offset: constant(parts.offset),
  };
}
