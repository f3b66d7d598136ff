import { fromWallClock, toWallClock } from '@plover/core';
import type { JsonValue } from './types';
import { parseRustFloat } from './values';

/**
 * Date handling for `is_date_before` / `is_date_after` / `is_date_exact`, after Rust
 * `rust/feature-flags/src/properties/property_matching.rs` (`parse_date_string_in_tz`,
 * `determine_parsed_date_for_property_matching`) and `relative_date.rs`. All instants are epoch milliseconds.
 * Naive values (no offset) are wall-clock times in the project's timezone, as HogQL reads them.
 */
export interface Clock {
  readonly nowMs: number;
  readonly timezone: string;
}

const MS_PER_HOUR = 3_600_000;
const MS_PER_DAY = 24 * MS_PER_HOUR;

const RELATIVE_DATE = /^-?([0-9]+)([hdwmy])$/;

/**
 * `-7d`, `24h`, `-1w`, `3m`, `1y`: always *now minus N* (the sign is optional and ignored), N < 10,000.
 * Months and years are calendar steps taken one at a time, each clamping to the end of the month, exactly
 * like the Rust loop (so 2 months back from 31 March is 29 January, not 31 January). The arithmetic runs on
 * the project-timezone wall clock, so "the last 7 days" ends on the same local day boundary as in insights.
 */
export function parseRelativeDate(text: string, clock: Clock): number | null {
  const match = RELATIVE_DATE.exec(text);
  if (match === null) return null;
  const amount = Number(match[1]);
  if (amount >= 10_000) return null;
  const now = new Date(toWallClock(clock.nowMs, clock.timezone));
  const wall = subtractFromWallClock(now, amount, match[2] ?? '');
  return fromWallClock(wall, clock.timezone);
}

function subtractFromWallClock(now: Date, amount: number, unit: string): number {
  switch (unit) {
    case 'h':
      return now.getTime() - amount * MS_PER_HOUR;
    case 'd':
      return now.getTime() - amount * MS_PER_DAY;
    case 'w':
      return now.getTime() - amount * 7 * MS_PER_DAY;
    case 'm':
      return stepBack(now, amount, (year, month) => (month === 0 ? [year - 1, 11] : [year, month - 1]));
    default:
      return stepBack(now, amount, (year, month) => [year - 1, month]);
  }
}

function stepBack(from: Date, steps: number, previous: (year: number, month: number) => [number, number]): number {
  let year = from.getUTCFullYear();
  let month = from.getUTCMonth();
  let day = from.getUTCDate();
  for (let step = 0; step < steps; step += 1) {
    [year, month] = previous(year, month);
    day = Math.min(day, daysInMonth(year, month));
  }
  const timeOfDay = from.getTime() - Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate());
  return Date.UTC(year, month, day) + timeOfDay;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

// RFC 3339 and the ISO forms `dateparser` accepts with an explicit offset: seconds and fraction optional,
// offset `Z`, `±HH:MM`, `±HHMM` or `±HH`.
const WITH_OFFSET = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?\s?([Zz]|[+-]\d{2}(?::?\d{2})?)$/;
// Naive forms read in the project timezone: a bare date, or a date-time with `T` or space.
const NAIVE = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?$/;

/**
 * A filter-side date: a relative date, an ISO/RFC 3339 date-time with an offset, or a naive date or
 * date-time. Rust falls back to the `dateparser` crate for anything else (`May 6 2021`, `2021/05/06`…);
 * those free-form formats are not supported here and do not match.
 */
export function parseDateText(text: string, clock: Clock): number | null {
  const relative = parseRelativeDate(text, clock);
  if (relative !== null) return relative;

  const withOffset = WITH_OFFSET.exec(text);
  if (withOffset !== null) {
    const wall = wallClockFromParts(withOffset);
    const offset = offsetMinutes(withOffset[8] ?? 'Z');
    return wall === null ? null : wall - offset * 60_000;
  }

  const naive = NAIVE.exec(text);
  if (naive !== null) {
    const wall = wallClockFromParts(naive);
    return wall === null ? null : fromWallClock(wall, clock.timezone);
  }
  return null;
}

/**
 * A property-side date: numbers, and strings that parse as numbers, are unix **seconds** (fractions
 * allowed); other strings are read like filter dates. Anything else is not a date.
 */
export function parsePropertyDate(value: JsonValue, clock: Clock): number | null {
  if (typeof value === 'number') return fromUnixSeconds(value);
  if (typeof value !== 'string') return null;
  const seconds = parseRustFloat(value);
  return seconds === null ? parseDateText(value, clock) : fromUnixSeconds(seconds);
}

// chrono's DateTime range is about ±262,000 years; Date's is ±100,000,000 days. Outside both: no date.
function fromUnixSeconds(seconds: number): number | null {
  const ms = seconds * 1000;
  return Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? ms : null;
}

function wallClockFromParts(parts: RegExpExecArray): number | null {
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(parts[i] ?? 0)) as [number, number, number, number, number, number];
  // Fractions beyond milliseconds are truncated: JS instants have millisecond precision.
  const millis = Number(((parts[7] ?? '').slice(1) + '000').slice(0, 3));
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month - 1)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  return Date.UTC(year, month - 1, day, hour, minute, second, millis);
}

function offsetMinutes(offset: string): number {
  if (offset === 'Z' || offset === 'z') return 0;
  const sign = offset.startsWith('-') ? -1 : 1;
  const digits = offset.slice(1).replace(':', '');
  return sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || '0'));
}
