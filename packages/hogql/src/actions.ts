/**
 * `matchesAction(id or name)`: whether an event matches one of the project's actions. The caller (which knows the
 * project's actions) turns each action a query names into a SQL condition over one row of the raw `events` table;
 * the printer uses it as `uuid IN (SELECT uuid FROM events WHERE <team guard> AND <condition>)`, so the condition
 * never sees the query's own names.
 */
import type { AstNode } from './parser';

export const MATCHES_ACTION = 'matchesAction';

/** How a query names an action: a number is its id, a string its name. */
export type ActionRef = number | string;

export interface ActionConditions {
  /** Per {@link actionKey} of each named action: its condition over an `events` row, values as bound parameters. */
  conditions: ReadonlyMap<string, string>;
  /** The values of those parameters. */
  params: Readonly<Record<string, unknown>>;
}

/** Loads the actions a query names and gives their conditions; an unknown action is its error. */
export type ActionResolver = (refs: readonly ActionRef[]) => Promise<ActionConditions>;

export const actionKey = (ref: ActionRef): string => (typeof ref === 'number' ? `id ${ref}` : `name ${ref}`);

/** The argument of a `matchesAction` call when it is one constant id or name; undefined otherwise. */
export function actionRefOf(call: AstNode): ActionRef | undefined {
  const args = Array.isArray(call.args) ? (call.args as AstNode[]) : [];
  const value = args.length === 1 && args[0]!.node === 'Constant' ? args[0]!.value : undefined;
  return typeof value === 'number' || typeof value === 'string' ? value : undefined;
}

/** The actions a parsed query names in `matchesAction(…)` calls, each once. */
export function actionRefs(node: unknown, found = new Map<string, ActionRef>()): ActionRef[] {
  if (Array.isArray(node)) {
    for (const item of node) actionRefs(item, found);
  } else if (node !== null && typeof node === 'object') {
    const ast = node as AstNode;
    const ref = ast.node === 'Call' && ast.name === MATCHES_ACTION ? actionRefOf(ast) : undefined;
    if (ref !== undefined) found.set(actionKey(ref), ref);
    for (const value of Object.values(ast)) actionRefs(value, found);
  }
  return [...found.values()];
}
