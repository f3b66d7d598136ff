/**
 * What every computation asks of a series, whether it names an event or an action: the condition its events meet,
 * how its result names it, and (for actions) the action's name as its label. Actions are loaded through
 * `InsightContext.action`, once per request, and matched by `actionCondition` (docs/actions.md).
 */
import { actionCondition } from './actions';
import type { ActionDefinition } from './types';
import type { Params } from './params';
import type { FilterScope } from './properties';
import type { InsightContext, Series, SeriesAction, SeriesReference } from './types';

/** The condition an `events AS e` row meets to count for the series (its own property filters aside); `'1'` for all events. */
export async function seriesEventCondition(series: Series, params: Params, scope: FilterScope): Promise<string> {
  if (series.action !== null) return actionCondition(await scope.ctx.action(series.action.id, series.action.attr), params, scope);
  return series.event === null ? '1' : `e.event = ${params.add(series.event, 'String')}`;
}

/** PostHog's `action.id` / `action.type` of a result: the event name, or the action id. */
export function seriesReference(series: Series): SeriesReference {
  return series.action === null ? { id: series.event, type: 'events' } : { id: series.action.id, type: 'actions' };
}

/**
 * The series with each action series named after its action (as PostHog labels them); an unknown action is the
 * 400 `InsightContext.action` gives. Event series are returned as they are.
 */
export function withActionNames(series: readonly Series[], ctx: InsightContext): Promise<Series[]> {
  return Promise.all(
    series.map(async (item) => {
      if (item.action === null) return item;
      const action = await ctx.action(item.action.id, item.action.attr);
      return { ...item, name: action.name ?? `Action ${action.id}` };
    }),
  );
}

/** The label stickiness and lifecycle give a series: its event (or "All events"), or its action's name. */
export function seriesLabel(series: Series): string {
  return series.action === null ? (series.event ?? 'All events') : series.name;
}

function isSeriesAction(value: unknown): value is SeriesAction {
  return typeof value === 'object' && value !== null && typeof (value as SeriesAction).id === 'number' && typeof (value as SeriesAction).attr === 'string';
}

/** The actions the series of a parsed input name, as they appear in it (the same objects). */
export function seriesActionsOf(value: unknown, found: SeriesAction[] = []): SeriesAction[] {
  if (Array.isArray(value)) {
    for (const item of value) seriesActionsOf(item, found);
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (key === 'action' && isSeriesAction(item)) found.push(item);
      else seriesActionsOf(item, found);
    }
  }
  return found;
}

/**
 * The definitions of the actions a parsed input's series count, by id: what a cached result of it also depends on
 * (actions live outside the events' data version, so an edited action must not be answered from the cache).
 */
export async function actionsUsed(input: unknown, ctx: InsightContext): Promise<Record<number, ActionDefinition>> {
  const used: Record<number, ActionDefinition> = {};
  for (const action of seriesActionsOf(input)) used[action.id] = await ctx.action(action.id, action.attr);
  return used;
}
