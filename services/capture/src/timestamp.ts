/**
 * When an event happened, from what the client says and when we received it: PostHog's clock-skew rule
 * (Rust `rust/common/types/src/timestamp.rs` `parse_event_timestamp`; docs/capture.md#timestamps).
 */
import { isoTimestampMs, utcDateMs } from '@plover/core/utc-text';

/** A client more than this far ahead of us is not believed: the event is stamped `now` instead. */
export const MAX_FUTURE_MS = 23 * 60 * 60 * 1000;

export interface TimestampInput {
  timestamp?: string | null;
  /** Milliseconds before `now` (posthog-js batches). */
  offset?: number | null;
  /** When the client sent the request, in epoch ms; undefined when unknown or to be ignored (`$ignore_sent_at`). */
  sentAt?: number | undefined;
  now: number;
}

/** Why the client's time was not used; the event is then stamped `now` and ingestion records a warning. */
export type IgnoredTimestamp =
  /** `timestamp` is in none of the formats `parseTimestamp` reads. */
  | { reason: 'invalid_format' }
  /** The result is more than 23 h ahead of `now`: the client's clock or the SDK is wrong. */
  | { reason: 'in_future'; result: number }
  /** The result is before year 0. */
  | { reason: 'out_of_bounds'; result: number };

export interface EventTime {
  /** Epoch ms. */
  ms: number;
  ignored?: IgnoredTimestamp;
}

/**
 * `offset` wins; else `timestamp`, moved by the client's clock error (`now − sent_at`) when `sent_at` is known;
 * else `now`. A result more than 23 h ahead, or outside years 0–9999, becomes `now`, and so does an unparseable
 * `timestamp` (the event is kept); `ignored` says which, for the warning PostHog's pipeline records.
 */
export function eventTimestamp(input: TimestampInput): EventTime {
  const { now } = input;
  let result = now;
  if (typeof input.offset === 'number' && Number.isFinite(input.offset)) {
    result = now - input.offset;
  } else if (input.timestamp) {
    const timestamp = parseTimestamp(input.timestamp);
    if (timestamp === undefined) return { ms: now, ignored: { reason: 'invalid_format' } };
    result = input.sentAt === undefined ? timestamp : now + (timestamp - input.sentAt);
  }
  // Past the future cutoff is checked first, as PostHog does: a result past year 9999 is also in the future.
  if (result - now > MAX_FUTURE_MS) return { ms: now, ignored: { reason: 'in_future', result } };
  if (result < MIN_TIME || result > MAX_TIME) return { ms: now, ignored: { reason: 'out_of_bounds', result } };
  return { ms: result };
}

// Years 0 to 9999, as in PostHog; its older Node ingestion also fell back to now outside them.
const MIN_TIME = Date.parse('0000-01-01T00:00:00.000Z');
const MAX_TIME = Date.parse('9999-12-31T23:59:59.999Z');

/** The time the client sent the request, from the `_` or `sent_at` query parameter (epoch ms). */
export function sentAtFromQuery(value: string | null): number | undefined {
  if (!value || !/^\d{1,16}$/.test(value)) return undefined;
  const ms = Number(value);
  // PostHog ignores values that land in 2020 or earlier: they are seconds sent by old SDKs, not milliseconds.
  return ms >= FIRST_MS_OF_2021 ? ms : undefined;
}

const FIRST_MS_OF_2021 = Date.UTC(2021, 0, 1);

// ISO 8601 / RFC 3339 and the relaxed forms PostHog's parser accepts: date only, space instead of `T`, no
// seconds, no zone (read as UTC), `+03` and `+0300` for `+03:00`.
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;
const SLASHED = /^(\d{4})\/(\d{1,2})\/(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?$/;
const EPOCH = /^\d{9,19}(?:\.\d+)?$/;
const RFC2822 = /^(?:[A-Za-z]{3},\s*)?\d{1,2}\s+[A-Za-z]{3}\s+\d{4}\s+\d{2}:\d{2}(?::\d{2})?\s+(?:[+-]\d{4}|[A-Za-z]{1,5})$/;

/** Epoch milliseconds of a client timestamp, or undefined when it is in none of the accepted formats. */
export function parseTimestamp(value: string): number | undefined {
  // The shape nearly every SDK sends, read without the regexes.
  const exact = isoTimestampMs(value);
  if (exact !== undefined) return exact;
  const text = value.trim();
  let match = ISO.exec(text);
  if (match) return fromFields(match, match[8]);
  match = SLASHED.exec(text);
  if (match) return fromFields(match, undefined);
  if (EPOCH.test(text)) return fromEpoch(Number(text));
  if (RFC2822.test(text)) {
    const ms = Date.parse(text);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}

/** An ISO 8601 timestamp only (the batch body's `sent_at`). */
export function parseIsoTimestamp(value: string): number | undefined {
  const match = ISO.exec(value.trim());
  return match ? fromFields(match, match[8]) : undefined;
}

function fromFields(match: RegExpExecArray, zone: string | undefined): number | undefined {
  // Plain arithmetic rather than a Date per event: this runs for nearly every captured event.
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  const hour = Number(match[4] ?? 0);
  const minute = Number(match[5] ?? 0);
  const second = Number(match[6] ?? 0);
  const date = utcDateMs(year, month, day);
  if (Number.isNaN(date) || hour > 23 || minute > 59 || second > 59) return undefined;
  const fraction = match[7];
  const millis = fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0'));
  return date + ((hour * 60 + minute) * 60 + second) * 1000 + millis - zoneOffsetMs(zone);
}

function zoneOffsetMs(zone: string | undefined): number {
  if (!zone || zone === 'Z' || zone === 'z') return 0;
  const sign = zone[0] === '-' ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  return sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || 0)) * 60_000;
}

/** Seconds, milliseconds, microseconds or nanoseconds since the epoch, told apart by magnitude. */
function fromEpoch(value: number): number {
  if (value < 1e11) return value * 1000;
  if (value < 1e14) return value;
  if (value < 1e17) return value / 1000;
  return value / 1e6;
}
