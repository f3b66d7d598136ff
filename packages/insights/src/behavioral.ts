/**
 * Behavioral cohort criteria (what a person did, PostHog's `type: "behavioral"` cohort filters) → the persons
 * who meet one, computed in ClickHouse over the project's events, each event counted for its person with merged
 * persons resolved (PERSON_ID_EXPRESSION). docs/cohorts.md describes each kind.
 */
import { PERSON_ID_EXPRESSION, PERSON_OVERRIDES_SUBQUERY, type ClickHouse } from '@plover/clickhouse';
import { ApiError } from '@plover/core';
import { actionCondition } from './actions';
import { resolveInstant } from './dates';
import { parsePropertyFilters } from './filters';
import { Params } from './params';
import { propertiesCondition, type FilterScope } from './properties';
import type { InsightContext, PropertyGroup } from './types';

export const BEHAVIORAL_KINDS = [
  'performed_event',
  'performed_event_multiple',
  'performed_event_first_time',
  'stopped_performing_event',
  'restarted_performing_event',
] as const;
export type BehavioralKind = (typeof BEHAVIORAL_KINDS)[number];

export const COUNT_OPERATORS = ['gte', 'lte', 'gt', 'lt', 'exact'] as const;
export type CountOperator = (typeof COUNT_OPERATORS)[number];

/** One criterion, its dates resolved against the context's `now` and timezone. */
export interface BehavioralCriterion {
  kind: BehavioralKind;
  /** The event name, or the action id (`event_type: "actions"`). */
  target: { event: string } | { action: number };
  /** The window's first instant. */
  from: Date;
  /** The window's last instant (now, unless `explicit_datetime_to`). */
  to: Date;
  /** stopped/restarted: the start of the recent window (`seq_time_value` `seq_time_interval` back). */
  recentFrom: Date | null;
  /** performed_event_multiple: how the count in the window compares with `operator_value`. */
  count: { operator: CountOperator; value: number } | null;
  /** Conditions on the counted events (`event_filters`). */
  eventFilters: PropertyGroup | null;
}

const INTERVAL_LETTERS: Readonly<Record<string, string>> = { day: 'd', week: 'w', month: 'm', year: 'y' };

const invalid = (detail: string, attr: string) => ApiError.validation(detail, attr, 'invalid');

function positiveInteger(value: unknown, attr: string): number {
  const number = typeof value === 'string' && /^[0-9]{1,9}$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number <= 0) throw invalid(`${attr} must be a whole number above 0.`, attr);
  return number;
}

/** `value` `interval`s before now, as a relative date of the insights' grammar (`-30d`: the start of that day). */
function relativeStart(value: unknown, interval: unknown, ctx: Pick<InsightContext, 'now' | 'timezone'>, attr: string): Date {
  const letter = typeof interval === 'string' ? INTERVAL_LETTERS[interval] : undefined;
  if (letter === undefined) throw invalid(`${attr}_interval must be day, week, month or year.`, attr);
  const amount = positiveInteger(value, attr);
  if (amount > 9999) throw invalid(`${attr} is too large.`, attr);
  return resolveInstant(`-${amount}${letter}`, ctx, false, attr);
}

/**
 * A stored behavioral filter → a criterion; 400 (ApiError) naming `attr` when a field is missing or out of range,
 * or when the kind is one this computation does not evaluate (`performed_event_sequence`, `performed_event_regularly`).
 */
export function parseBehavioral(raw: Record<string, unknown>, ctx: Pick<InsightContext, 'now' | 'timezone'>, attr: string): BehavioralCriterion {
  const kind = BEHAVIORAL_KINDS.find((known) => known === raw.value);
  if (kind === undefined) throw invalid(`Behavioral criteria of kind ${JSON.stringify(raw.value)} are not supported.`, `${attr}__value`);
  let target: BehavioralCriterion['target'];
  if (raw.event_type === 'actions') target = { action: positiveInteger(raw.key, `${attr}__key`) };
  else if (raw.event_type === 'events' && typeof raw.key === 'string' && raw.key !== '') target = { event: raw.key };
  else throw invalid('A behavioral criterion names an event (event_type "events") or an action id (event_type "actions") in key.', `${attr}__key`);
  const explicit = typeof raw.explicit_datetime === 'string' && kind !== 'restarted_performing_event';
  const from = explicit
    ? resolveInstant(raw.explicit_datetime as string, ctx, false, `${attr}__explicit_datetime`)
    : relativeStart(raw.time_value, raw.time_interval, ctx, `${attr}__time_value`);
  const to =
    explicit && typeof raw.explicit_datetime_to === 'string' ? resolveInstant(raw.explicit_datetime_to, ctx, true, `${attr}__explicit_datetime_to`) : ctx.now;
  const sequenced = kind === 'stopped_performing_event' || kind === 'restarted_performing_event';
  const recentFrom = sequenced ? relativeStart(raw.seq_time_value, raw.seq_time_interval, ctx, `${attr}__seq_time_value`) : null;
  let count: BehavioralCriterion['count'] = null;
  if (kind === 'performed_event_multiple') {
    const operator = raw.operator === undefined || raw.operator === null ? 'exact' : COUNT_OPERATORS.find((known) => known === raw.operator);
    if (operator === undefined) throw invalid('operator must be gte, lte, gt, lt or exact.', `${attr}__operator`);
    count = { operator, value: positiveInteger(raw.operator_value, `${attr}__operator_value`) };
  }
  return { kind, target, from, to, recentFrom, count, eventFilters: parsePropertyFilters(raw.event_filters ?? null, `${attr}__event_filters`) };
}

const COUNT_SQL: Readonly<Record<CountOperator, string>> = { gte: '>=', lte: '<=', gt: '>', lt: '<', exact: '=' };

/** The uuids of the persons meeting the criterion now (a person merged into another counts as that one). */
export async function behavioralPersons(ch: ClickHouse, ctx: InsightContext, criterion: BehavioralCriterion, attr: string): Promise<string[]> {
  const params = new Params();
  params.values.projectId = ctx.projectId;
  const scope: FilterScope = { personId: PERSON_ID_EXPRESSION, ctx };
  const instant = (date: Date) => `fromUnixTimestamp64Milli(${params.add(date.getTime(), 'Int64')})`;
  const matches =
    'event' in criterion.target
      ? `e.event = ${params.add(criterion.target.event, 'String')}`
      : await actionCondition(await ctx.action(criterion.target.action, `${attr}__key`), params, scope);
  const filtered = await propertiesCondition(criterion.eventFilters, params, scope, `${attr}__event_filters`);
  const from = instant(criterion.from);
  const recent = criterion.recentFrom === null ? from : instant(criterion.recentFrom);
  // First-time and restarted need each person's first matching event ever; the others only the window.
  const allTime = criterion.kind === 'performed_event_first_time' || criterion.kind === 'restarted_performing_event';
  const kept: Record<BehavioralKind, string> = {
    performed_event: 'in_window > 0',
    performed_event_multiple: `in_window ${COUNT_SQL[criterion.count?.operator ?? 'exact']} ${params.add(criterion.count?.value ?? 0, 'UInt64')}`,
    performed_event_first_time: `first >= ${from}`,
    stopped_performing_event: 'in_window > 0 AND recent = 0',
    restarted_performing_event: `recent > 0 AND first < ${recent} AND before_recent = 0`,
  };
  const sql = `SELECT toString(person) AS person FROM (
      SELECT ${PERSON_ID_EXPRESSION} AS person, countIf(e.timestamp >= ${from}) AS in_window, countIf(e.timestamp >= ${recent}) AS recent,
        countIf(e.timestamp >= ${from} AND e.timestamp < ${recent}) AS before_recent, min(e.timestamp) AS first
      FROM events AS e FINAL LEFT JOIN (${PERSON_OVERRIDES_SUBQUERY}) AS o ON e.person_id = o.old_person_id
      WHERE e.team_id = {projectId:Int64} AND e.timestamp <= ${instant(criterion.to)}${allTime ? '' : ` AND e.timestamp >= ${from}`}
        AND (${matches}) AND (${filtered})
      GROUP BY person)
    WHERE ${kept[criterion.kind]} ORDER BY person`;
  const rows = await ch.query<{ person: string }>('cohorts.behavioral', sql, params.values);
  return rows.map((row) => row.person);
}
