/**
 * Date ranges and buckets in the project's timezone (docs/insights.md, "Date range and buckets"). Everything
 * here is wall-clock arithmetic (a local date-time held as epoch milliseconds as if it were UTC); ClickHouse
 * turns the resulting local times into instants with the timezone, so DST never enters this code.
 */
import { ApiError, fromWallClock, toWallClock } from '@plover/core';
import { sqlTimestamp } from '@plover/core/utc-text';
import type { InsightContext, Interval, ResolvedRange } from './types';

const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
const MAX_BUCKETS = 5000;

const RELATIVE = /^-?(\d{1,4})([hdwmqyM])$/;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const WITH_OFFSET = /([Zz]|[+-]\d{2}:?\d{2})$/;
const NAIVE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?)?$/;

/** `YYYY-MM-DD HH:MM:SS` of a wall clock. */
export function formatWall(wall: number): string {
  return sqlTimestamp(wall).slice(0, 19);
}

export function parseWall(text: string): number {
  return Date.parse(`${text.replace(' ', 'T')}Z`);
}

function startOfDay(wall: number): number {
  return Math.floor(wall / DAY) * DAY;
}

function addMonths(wall: number, months: number): number {
  const date = new Date(wall);
  const target = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + months, 1));
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  return Date.UTC(target.getUTCFullYear(), target.getUTCMonth(), Math.min(date.getUTCDate(), lastDay)) + (wall - startOfDay(wall));
}

/** The start of the interval containing `wall` (weeks start on Sunday). */
export function truncate(wall: number, interval: Interval): number {
  switch (interval) {
    case 'minute':
      return Math.floor(wall / MINUTE) * MINUTE;
    case 'hour':
      return Math.floor(wall / HOUR) * HOUR;
    case 'day':
      return startOfDay(wall);
    case 'week':
      return startOfDay(wall) - new Date(wall).getUTCDay() * DAY;
    case 'month': {
      const date = new Date(wall);
      return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
    }
  }
}

/** `wall` moved by `steps` intervals (negative: back). */
export function step(wall: number, interval: Interval, steps: number): number {
  switch (interval) {
    case 'minute':
      return wall + steps * MINUTE;
    case 'hour':
      return wall + steps * HOUR;
    case 'day':
      return wall + steps * DAY;
    case 'week':
      return wall + steps * 7 * DAY;
    case 'month':
      return addMonths(wall, steps);
  }
}

/** The day `amount` days, weeks, months, quarters or years before the day of `now`, at 00:00. */
function daysAgo(amount: number, unit: string, now: number): number {
  switch (unit) {
    case 'd':
      return startOfDay(now) - amount * DAY;
    case 'w':
      return startOfDay(now) - amount * 7 * DAY;
    case 'm':
      return addMonths(startOfDay(now), -amount);
    case 'q':
      return addMonths(startOfDay(now), -3 * amount);
    default:
      return addMonths(startOfDay(now), -12 * amount);
  }
}

/** One date of the grammar → a wall clock (`end`: the last second it covers); 400 on `attr` otherwise. */
function resolveDate(text: string, now: number, timezone: string, end: boolean, attr: string): number {
  const rel = RELATIVE.exec(text);
  if (rel !== null) {
    const amount = Number(rel[1]);
    const unit = rel[2] ?? 'd';
    if (unit === 'h' || unit === 'M') {
      const back = now - amount * (unit === 'h' ? HOUR : MINUTE);
      return end ? back : truncate(back, unit === 'h' ? 'hour' : 'minute');
    }
    const day = daysAgo(amount, unit, now);
    return end ? day + DAY - SECOND : day;
  }
  const starts: Record<string, number> = {
    dStart: startOfDay(now),
    wStart: truncate(now, 'week'),
    mStart: truncate(now, 'month'),
    yStart: Date.UTC(new Date(now).getUTCFullYear(), 0, 1),
  };
  const start = starts[text];
  if (start !== undefined) return end ? start + DAY - SECOND : start;
  if (DATE_ONLY.test(text)) {
    const wall = parseWall(text);
    if (!Number.isNaN(wall)) return end ? wall + DAY - SECOND : wall;
  } else if (WITH_OFFSET.test(text)) {
    const instant = Date.parse(text);
    if (!Number.isNaN(instant)) return Math.floor(toWallClock(instant, timezone) / SECOND) * SECOND;
  } else {
    const naive = NAIVE.exec(text);
    const wall = naive === null ? Number.NaN : parseWall(`${naive[1]}-${naive[2]}-${naive[3]} ${naive[4] ?? '00'}:${naive[5] ?? '00'}:${naive[6] ?? '00'}`);
    if (!Number.isNaN(wall)) return wall;
  }
  throw ApiError.validation(`"${text}" is not a valid date.`, attr, 'invalid');
}

/** `now` as a wall clock in the timezone, in whole seconds. */
function wallNow(ctx: Pick<InsightContext, 'now' | 'timezone'>): number {
  return Math.floor(toWallClock(ctx.now.getTime(), ctx.timezone) / SECOND) * SECOND;
}

/**
 * One date of the same grammar as an instant, for filters that compare times rather than bucket them
 * (recordings): `end` takes the last second that a date or a day-relative value covers. A wall clock that a
 * spring-forward gap skips is read with the offset from before the jump.
 */
export function resolveInstant(text: string, ctx: Pick<InsightContext, 'now' | 'timezone'>, end: boolean, attr: string): Date {
  const wall = resolveDate(text, wallNow(ctx), ctx.timezone, end, attr);
  return new Date(fromWallClock(wall, ctx.timezone) ?? fromWallClock(wall + HOUR, ctx.timezone) ?? wall);
}

/**
 * Resolves `date_from`/`date_to` for an interval. `firstEvent` is the instant of the project's first event,
 * needed (and only read) for `date_from: "all"`.
 */
export function resolveRange(
  dateFrom: string | null,
  dateTo: string | null,
  interval: Interval,
  ctx: Pick<InsightContext, 'now' | 'timezone'>,
  firstEvent: Date | null = null,
): ResolvedRange {
  const now = wallNow(ctx);
  const to = dateTo === null ? now : resolveDate(dateTo, now, ctx.timezone, true, 'date_to');
  let from: number;
  if (dateFrom === 'all') from = startOfDay(firstEvent === null ? now : toWallClock(firstEvent.getTime(), ctx.timezone));
  else from = resolveDate(dateFrom ?? '-7d', now, ctx.timezone, false, 'date_from');
  from = truncate(from, interval);
  if (from > to) throw ApiError.validation('date_from must be before date_to.', 'date_from', 'invalid');
  const buckets: string[] = [];
  for (let bucket = from; bucket <= to; bucket = step(bucket, interval, 1)) {
    if (buckets.length === MAX_BUCKETS) {
      throw ApiError.validation(`The date range has more than ${MAX_BUCKETS} ${interval} intervals; choose a longer interval.`, 'interval', 'invalid');
    }
    buckets.push(formatWall(bucket));
  }
  return { timezone: ctx.timezone, interval, from: formatWall(from), to: formatWall(to), buckets };
}

/** The range of the same number of buckets immediately before `range` (for `compare`). */
export function previousRange(range: ResolvedRange): ResolvedRange {
  const from = parseWall(range.from);
  const start = step(from, range.interval, -range.buckets.length);
  const buckets = range.buckets.map((_, index) => formatWall(step(start, range.interval, index)));
  return { ...range, from: formatWall(start), to: formatWall(from - SECOND), buckets };
}

/** The local day `days` days before the day of `wall` (a `YYYY-MM-DD HH:MM:SS` string), at 00:00. */
export function daysBefore(wall: string, days: number): string {
  return formatWall(startOfDay(parseWall(wall)) - days * DAY);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** PostHog's `days` entry for a bucket. */
export function bucketDay(bucket: string, interval: Interval): string {
  return interval === 'hour' || interval === 'minute' ? bucket : bucket.slice(0, 10);
}

/** PostHog's label for a bucket: `1-Jan-2025`, with ` HH:MM` for hour and minute intervals. */
export function bucketLabel(bucket: string, interval: Interval): string {
  const [year, month, day] = bucket.slice(0, 10).split('-');
  const label = `${Number(day)}-${MONTHS[Number(month) - 1] ?? ''}-${year ?? ''}`;
  return interval === 'hour' || interval === 'minute' ? `${label} ${bucket.slice(11, 16)}` : label;
}

/**
 * A retention range: `date_to` (default now) widened to the end of its interval; `date_from`, or else the start of
 * the interval `intervals - 1` before `date_to`'s. One bucket per cohort row.
 */
export function resolveIntervalsRange(
  dateFrom: string | null,
  dateTo: string | null,
  interval: Interval,
  intervals: number,
  ctx: Pick<InsightContext, 'now' | 'timezone'>,
): ResolvedRange {
  const now = wallNow(ctx);
  const last = truncate(dateTo === null ? now : resolveDate(dateTo, now, ctx.timezone, true, 'date_to'), interval);
  const from = dateFrom === null ? step(last, interval, -(intervals - 1)) : truncate(resolveDate(dateFrom, now, ctx.timezone, false, 'date_from'), interval);
  if (from > last) throw ApiError.validation('date_from must be before date_to.', 'date_from', 'invalid');
  const buckets: string[] = [];
  for (let bucket = from; bucket <= last; bucket = step(bucket, interval, 1)) {
    if (buckets.length === MAX_BUCKETS) throw ApiError.validation(`The date range has more than ${MAX_BUCKETS} ${interval} intervals.`, 'date_from', 'invalid');
    buckets.push(formatWall(bucket));
  }
  return { timezone: ctx.timezone, interval, from: formatWall(from), to: formatWall(step(last, interval, 1) - SECOND), buckets };
}
