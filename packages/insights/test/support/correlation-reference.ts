/**
 * docs/insights.md "Funnel correlation" in plain TypeScript over events already read back (no SQL): the oracle
 * the correlation property test compares the engine with. Filters are the trends reference's (every operator).
 */
import type { CorrelationEntry, CorrelationInput, CorrelationResult } from '../../src/correlation';
import type { FunnelWindowUnit } from '../../src/funnel-input';
import type { PropertyGroup, Series } from '../../src/types';
import { matchesGroup, propertyText, resolvePeriods, type PlainEvent, type ReferenceContext } from './reference';

const UNIT_MS: Record<Exclude<FunnelWindowUnit, 'month'>, number> = {
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 7 * 86_400_000,
};

/** `instant` plus the window, in UTC; months are calendar months with the day clamped to the month's end. */
function deadline(instant: number, { amount, unit }: CorrelationInput['window']): number {
  if (unit !== 'month') return instant + amount * UNIT_MS[unit];
  const date = new Date(instant);
  const target = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + amount, 1));
  const length = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(date.getUTCDate(), length));
  return target.getTime() + (instant - Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()));
}

const matchesEntity = (event: PlainEvent, series: Series, global: PropertyGroup | null, ctx: ReferenceContext) =>
  (series.event === null || event.event === series.event) && matchesGroup(event, series.properties, ctx) && matchesGroup(event, global, ctx);

const byTimeThenUuid = (a: PlainEvent, b: PlainEvent) => a.timestamp - b.timestamp || (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0);

interface Actor {
  success: boolean;
  t0: number;
  until: number;
  entry: PlainEvent;
}

/** The person's counted attempt, or undefined when they did not enter. */
function countedAttempt(input: CorrelationInput, events: readonly PlainEvent[], ctx: ReferenceContext): Actor | undefined {
  const stepTimes = input.steps.map((step) => events.filter((event) => matchesEntity(event, step, input.properties, ctx)).map((event) => event.timestamp));
  const exclusionTimes = input.exclusions.map((exclusion) =>
    events.filter((event) => matchesEntity(event, exclusion.series, input.properties, ctx)).map((event) => event.timestamp),
  );
  const starts = events.filter((event) => matchesEntity(event, input.steps[0]!, input.properties, ctx)).sort(byTimeThenUuid);
  let best: (Actor & { level: number }) | undefined;
  for (const entry of starts) {
    const t0 = entry.timestamp;
    const end = deadline(t0, input.window);
    const reached = [t0];
    for (let i = 1; i < input.steps.length; i++) {
      const previous = reached[i - 1]!;
      const next = Math.min(...stepTimes[i]!.filter((time) => time > previous));
      if (!(next <= end)) break;
      reached.push(next);
    }
    const disqualified = input.exclusions.some(
      (exclusion, j) =>
        reached.length > exclusion.toStep && exclusionTimes[j]!.some((time) => time > reached[exclusion.fromStep]! && time < reached[exclusion.toStep]!),
    );
    const level = reached.length;
    // Starts are in (time, uuid) order, so the first attempt with the most steps wins.
    if (!disqualified && (best === undefined || level > best.level)) {
      const success = level === input.steps.length;
      best = { level, success, t0, until: success ? reached[level - 1]! : end, entry };
    }
  }
  return best;
}

function propertyEntries(properties: Record<string, unknown>, keys: readonly string[], excluded: readonly string[]): string[] {
  return keys.flatMap((key) => {
    const text = propertyText(properties[key] as never);
    return text === undefined || excluded.includes(key) ? [] : [`${key}::${text}`];
  });
}

/** The names a person counts towards. */
function namesOf(input: CorrelationInput, actor: Actor, events: readonly PlainEvent[]): Set<string> {
  if (input.correlationType === 'properties') {
    const properties = actor.entry.personProperties;
    const keys = input.propertyNames.includes('$all') ? Object.keys(properties) : input.propertyNames;
    return new Set(propertyEntries(properties, keys, input.excludePropertyNames));
  }
  const stepNames = input.steps.flatMap((step) => (step.event === null ? [] : [step.event]));
  const during = events.filter((event) => event.timestamp > actor.t0 && event.timestamp < actor.until && !stepNames.includes(event.event));
  if (input.correlationType === 'events') return new Set(during.filter((event) => !input.excludeEventNames.includes(event.event)).map((event) => event.event));
  return new Set(
    during
      .filter((event) => input.eventNames.includes(event.event))
      .flatMap((event) =>
        propertyEntries(event.properties, Object.keys(event.properties), input.excludeEventPropertyNames).map((entry) => `${event.event}::${entry}`),
      ),
  );
}

export function referenceCorrelation(input: CorrelationInput, ctx: ReferenceContext, allEvents: readonly PlainEvent[]): CorrelationResult {
  if (input.steps.length === 0) return { events: [], skewed: false };
  const { current } = resolvePeriods(
    {
      series: [],
      dateFrom: input.dateFrom,
      dateTo: input.dateTo,
      interval: 'day',
      properties: null,
      breakdown: null,
      compare: false,
      formula: null,
      display: 'ActionsLineGraph',
    },
    ctx,
    allEvents,
  );
  const events = allEvents.filter((event) => event.timestamp >= current.fromInstant && event.timestamp < current.endInstant);
  const byPerson = new Map<string, PlainEvent[]>();
  for (const event of events) byPerson.set(event.person, [...(byPerson.get(event.person) ?? []), event]);

  let S = 0;
  let F = 0;
  const counts = new Map<string, { vs: number; vf: number }>();
  for (const personEvents of byPerson.values()) {
    const actor = countedAttempt(input, personEvents, ctx);
    if (actor === undefined) continue;
    if (actor.success) S += 1;
    else F += 1;
    for (const name of namesOf(input, actor, personEvents)) {
      const count = counts.get(name) ?? { vs: 0, vf: 0 };
      if (actor.success) count.vs += 1;
      else count.vf += 1;
      counts.set(name, count);
    }
  }
  if (S === 0 || F === 0) return { events: [], skewed: true };

  const entries: CorrelationEntry[] = [...counts]
    .filter(([, { vs, vf }]) => vs + vf >= Math.min(25, 0.02 * (S + F)) && (input.correlationType !== 'event_with_properties' || vs + vf > 2))
    .map(([name, { vs, vf }]): CorrelationEntry => {
      const oddsRatio = ((vs + 1) * (F - vf + 1)) / ((S - vs + 1) * (vf + 1));
      return {
        event: { event: name, properties: {}, elements: [] },
        success_count: vs,
        failure_count: vf,
        odds_ratio: oddsRatio,
        correlation_type: oddsRatio > 1 ? 'success' : 'failure',
      };
    });
  const byName = (a: CorrelationEntry, b: CorrelationEntry) => (a.event.event < b.event.event ? -1 : a.event.event > b.event.event ? 1 : 0);
  const success = entries.filter((entry) => entry.correlation_type === 'success').sort((a, b) => b.odds_ratio - a.odds_ratio || byName(a, b));
  const failure = entries.filter((entry) => entry.correlation_type === 'failure').sort((a, b) => a.odds_ratio - b.odds_ratio || byName(a, b));
  return { events: [...success.slice(0, 10), ...failure.slice(0, 10)], skewed: S / F > 10 || F / S > 10 };
}
