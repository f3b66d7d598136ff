/**
 * HogQL's `matchesAction(id or name)` for one request: each action the query names is loaded from the project's
 * live actions (through the insight context, once) and turned into its condition by `actionCondition`, the one
 * matcher every query uses (docs/actions.md). An unknown, deleted or foreign action is a 400.
 */
import { actionKey, type ActionResolver } from '@plover/hogql';
import { actionCondition, Params, type InsightContext } from '@plover/insights';

export function hogqlActions(ctx: InsightContext): ActionResolver {
  return async (refs) => {
    const params = new Params();
    const conditions = new Map<string, string>();
    for (const ref of refs) {
      const action = await ctx.action(ref, 'query');
      conditions.set(actionKey(ref), await actionCondition(action, params, { personId: 'person_id', ctx }));
    }
    return { conditions, params: params.values };
  };
}
