/**
 * Stickiness and lifecycle (docs/insights.md) in plain TypeScript over events in plain form: the oracle their
 * tests compare the engine with. Dates, buckets and filters come from the trends reference (reference.ts); the
 * intervals a person was active in are a list of bucket starts walked in order, not numbered arithmetic as in
 * the SQL.
 */
import { toWallClock } from '@plover/core';
import type { Interval, LifecycleSeriesResult, LifecycleStatus, Series, StickinessSeriesResult, TrendsInput } from '../../src/types';
import {
  addIntervals,
  bucketStart,
  dayLabel,
  instantOf,
  matchesGroup,
  propertyText,
  resolvePeriods,
  wallDate,
  wallDateTime,
  type PlainEvent,
  type ReferenceContext,
} from './reference';

/** An event with its person's created_at as stored with it (epoch milliseconds). */
export interface PersonEvent extends PlainEvent {
  personCreatedAt: number;
}

export type ComparedStickiness = Omit<StickinessSeriesResult, 'action'>;
export type ComparedLifecycle = Omit<LifecycleSeriesResult, 'action'>;

const matchesSeries = (event: PlainEvent, series: Series, input: TrendsInput, ctx: ReferenceContext) =>
  (series.event === null || event.event === series.event) && matchesGroup(event, input.properties, ctx) && matchesGroup(event, series.properties, ctx);

const bucketOf = (event: PlainEvent, interval: Interval, timezone: string) => bucketStart(toWallClock(event.timestamp, timezone), interval);

export function referenceStickiness(input: TrendsInput, ctx: ReferenceContext, events: readonly PlainEvent[]): ComparedStickiness[] {
  if (input.series.length === 0) return [];
  const { current, previous } = resolvePeriods(input, ctx, events);
  const periods = input.compare
    ? [
        { period: current, label: 'current' as const },
        { period: previous, label: 'previous' as const },
      ]
    : [{ period: current, label: undefined }];
  return input.series.flatMap((series) =>
    periods.map(({ period, label }) => {
      const active = new Map<string, Set<number>>();
      for (const event of events) {
        if (event.timestamp < period.fromInstant || event.timestamp >= period.endInstant || !matchesSeries(event, series, input, ctx)) continue;
        const target = series.math === 'unique_group' ? (event.groups[series.mathGroupTypeIndex ?? 0] ?? '') : event.person;
        if (target === '') continue;
        const buckets = active.get(target) ?? new Set<number>();
        active.set(target, buckets.add(bucketOf(event, input.interval, ctx.timezone)));
      }
      const days = period.buckets.map((_, index) => index + 1);
      const data = days.map((count) => [...active.values()].filter((buckets) => buckets.size === count).length);
      return {
        data,
        labels: days.map((count) => `${count} ${input.interval}${count === 1 ? '' : 's'}`),
        days,
        count: data.reduce((a, b) => a + b, 0),
        label: series.event ?? 'All events',
        ...(label === undefined ? {} : { compare: true, compare_label: label }),
      };
    }),
  );
}

const STATUSES: readonly LifecycleStatus[] = ['new', 'returning', 'resurrecting', 'dormant'];

export function referenceLifecycle(input: TrendsInput, ctx: ReferenceContext, events: readonly PersonEvent[]): ComparedLifecycle[] {
  const series = input.series[0];
  if (series === undefined) return [];
  const { interval } = input;
  const { buckets } = resolvePeriods(input, ctx, events).current;
  // The bucket before the range, the range's buckets, and the one after (only ever dormant, never shown).
  const walls = [addIntervals(buckets[0]!, interval, -1), ...buckets, addIntervals(buckets[buckets.length - 1]!, interval, 1)];
  const start = instantOf(walls[0]!, ctx.timezone);
  const end = instantOf(walls[walls.length - 1]!, ctx.timezone);
  const personful = events.filter((event) => propertyText(event.properties.$process_person_profile) !== 'false');

  const createdAt = new Map<string, number>();
  for (const event of personful) createdAt.set(event.person, Math.min(createdAt.get(event.person) ?? Infinity, event.personCreatedAt));
  const active = new Map<string, Set<number>>();
  for (const event of personful) {
    if (event.timestamp < start || event.timestamp >= end || !matchesSeries(event, series, input, ctx)) continue;
    const indexes = active.get(event.person) ?? new Set<number>();
    active.set(event.person, indexes.add(walls.indexOf(bucketOf(event, interval, ctx.timezone))));
  }

  const counts = new Map<string, number>();
  const count = (index: number, status: LifecycleStatus) => counts.set(`${index} ${status}`, (counts.get(`${index} ${status}`) ?? 0) + 1);
  for (const [person, indexes] of active) {
    const created = bucketStart(toWallClock(createdAt.get(person)!, ctx.timezone), interval);
    [...indexes]
      .sort((a, b) => a - b)
      .forEach((index, position) => {
        count(index, position === 0 && walls[index] === created ? 'new' : indexes.has(index - 1) ? 'returning' : 'resurrecting');
        if (!indexes.has(index + 1)) count(index + 1, 'dormant');
      });
  }
  const name = series.event ?? 'All events';
  const hasTime = interval === 'hour' || interval === 'minute';
  return STATUSES.map((status) => {
    const data = buckets.map((_, i) => (status === 'dormant' ? 0 - (counts.get(`${i + 1} ${status}`) ?? 0) : (counts.get(`${i + 1} ${status}`) ?? 0)));
    return {
      data,
      labels: buckets.map((bucket) => dayLabel(bucket, interval)),
      days: buckets.map((bucket) => (hasTime ? wallDateTime(bucket) : wallDate(bucket))),
      count: data.reduce((a, b) => a + b, 0),
      label: `${name} - ${status}`,
      status,
    };
  });
}
