/**
 * UTC instants as text and back, for the hot paths: capture writes a timestamp for every event and reads the one
 * each event came with, and ingestion writes several per row. A Date with its `toISOString` (or `Date.parse`)
 * costs several times what is done here; the events of a request nearly always fall on one day, so the date
 * part is worked out once per day and only the time of day per call.
 *
 * Imported as `@plover/core/utc-text`, not through the package index: run from source (tsx), a function the
 * index re-exports is reached through a chain of getters on every call, which made capture's per-event
 * normalization about a tenth slower than with these as module-local functions.
 */

const DAY_MS = 86_400_000;
/** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the instants whose ISO text has 4-digit years. */
const FIRST_MS = -62_167_219_200_000;
const LAST_MS = 253_402_300_799_999;

const TWO_DIGITS = Array.from({ length: 60 }, (_, n) => String(n).padStart(2, '0'));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, '0'));

/** The UTC day last written or read: its first millisecond and its `YYYY-MM-DD`. */
const lastDay = { startMs: Number.NaN, text: '' };

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return month === 2 && leap ? 29 : (DAYS_IN_MONTH[month - 1] as number);
}

/** The Gregorian calendar repeats every 400 years, which are exactly this many milliseconds. */
const FOUR_CENTURIES_MS = 146_097 * DAY_MS;

/**
 * Epoch ms of the UTC midnight that starts a Gregorian date (month 1–12), NaN when there is no such date: dates
 * do not roll over (2024-02-30 is not March 1st).
 */
export function utcDateMs(year: number, month: number, dayOfMonth: number): number {
  if (!(Number.isInteger(year) && month >= 1 && month <= 12 && dayOfMonth >= 1 && dayOfMonth <= daysInMonth(year, month))) return Number.NaN;
  // Date.UTC reads years 0–99 as 1900–1999; four centuries later is the same calendar, and unambiguous.
  if (year >= 0 && year < 100) return Date.UTC(year + 400, month - 1, dayOfMonth) - FOUR_CENTURIES_MS;
  return Date.UTC(year, month - 1, dayOfMonth);
}

/** Whether the instant's ISO text has a 4-digit year and whole milliseconds (years 0000–9999, an integer ms). */
function plain(ms: number): boolean {
  return Number.isInteger(ms) && ms >= FIRST_MS && ms <= LAST_MS;
}

/** `YYYY-MM-DD<separator>HH:MM:SS.sss<zone>` of a `plain` instant, written in one template (one string, not a tree of them). */
function dateTimeText(ms: number, separator: string, zone: string): string {
  let msOfDay = ms - lastDay.startMs;
  if (!(msOfDay >= 0 && msOfDay < DAY_MS)) {
    msOfDay = ((ms % DAY_MS) + DAY_MS) % DAY_MS;
    lastDay.startMs = ms - msOfDay;
    lastDay.text = new Date(lastDay.startMs).toISOString().slice(0, 10);
  }
  const seconds = Math.floor(msOfDay / 1000);
  const minutes = Math.floor(seconds / 60);
  return `${lastDay.text}${separator}${TWO_DIGITS[Math.floor(minutes / 60)]}:${TWO_DIGITS[minutes % 60]}:${TWO_DIGITS[seconds % 60]}.${THREE_DIGITS[msOfDay % 1000]}${zone}`;
}

/** Exactly `new Date(ms).toISOString()`, `YYYY-MM-DDTHH:MM:SS.sssZ` in years 0000–9999; throws as it does for a time no Date holds. */
export function isoTimestamp(ms: number): string {
  return plain(ms) ? dateTimeText(ms, 'T', 'Z') : new Date(ms).toISOString();
}

/** `YYYY-MM-DD HH:MM:SS.sss` in UTC, without a zone: the DateTime64 text ClickHouse reads fastest. */
export function sqlTimestamp(ms: number): string {
  return plain(ms) ? dateTimeText(ms, ' ', '') : new Date(ms).toISOString().replace('T', ' ').slice(0, -1);
}

function digit(text: string, index: number): number {
  const code = text.charCodeAt(index) - 48;
  return code >= 0 && code <= 9 ? code : Number.NaN;
}

function twoDigits(text: string, index: number): number {
  return digit(text, index) * 10 + digit(text, index + 1);
}

/** Epoch ms of the date `YYYY-MM-DD` at the start of `text`, NaN when it is no date. */
function leadingDateMs(text: string): number {
  const date = text.slice(0, 10);
  if (date === lastDay.text) return lastDay.startMs;
  if (date.charCodeAt(4) !== 45 /* - */ || date.charCodeAt(7) !== 45) return Number.NaN;
  const ms = utcDateMs(twoDigits(date, 0) * 100 + twoDigits(date, 2), twoDigits(date, 5), twoDigits(date, 8));
  if (!Number.isNaN(ms)) {
    lastDay.startMs = ms;
    lastDay.text = date;
  }
  return ms;
}

/**
 * Epoch ms of `YYYY-MM-DDTHH:MM:SS.sssZ`, the shape `isoTimestamp` writes and so what nearly every SDK sends.
 * Undefined for text of any other shape, or a date or time of day that does not exist (2025-02-29, 24:00): the
 * caller's general parser decides those.
 */
export function isoTimestampMs(text: string): number | undefined {
  if (text.length !== 24 || text.charCodeAt(10) !== 84 /* T */ || text.charCodeAt(23) !== 90 /* Z */) return undefined;
  const separators = text.charCodeAt(13) === 58 /* : */ && text.charCodeAt(16) === 58 && text.charCodeAt(19) === 46; /* . */
  const hour = twoDigits(text, 11);
  const minute = twoDigits(text, 14);
  const second = twoDigits(text, 17);
  const millis = twoDigits(text, 20) * 10 + digit(text, 22);
  // NaN (a non-digit) fails every comparison.
  if (!(separators && hour <= 23 && minute <= 59 && second <= 59 && millis >= 0)) return undefined;
  const date = leadingDateMs(text);
  return Number.isNaN(date) ? undefined : date + ((hour * 60 + minute) * 60 + second) * 1000 + millis;
}
