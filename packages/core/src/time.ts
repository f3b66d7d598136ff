/**
 * Wall clocks in IANA timezones without a timezone library: Intl gives the wall clock of an instant, and the
 * inverse is found by probing. A "wall clock" is a local date-time expressed as epoch milliseconds as if it were
 * UTC, so calendar arithmetic on it is plain Date.UTC arithmetic.
 */
const MS_PER_HOUR = 3_600_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timezone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timezone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timezone, formatter);
  }
  return formatter;
}

/** Whether `timezone` is an IANA zone this runtime knows. */
export function isKnownTimezone(timezone: string): boolean {
  try {
    formatterFor(timezone);
    return true;
  } catch {
    return false;
  }
}

/** The wall clock of `instant` in `timezone`, expressed as if that wall clock were UTC. */
export function toWallClock(instant: number, timezone: string): number {
  if (timezone === 'UTC') return instant;
  const fields: Record<string, number> = {};
  for (const part of formatterFor(timezone).formatToParts(new Date(instant))) fields[part.type] = Number(part.value);
  const wholeSeconds = Date.UTC(fields.year ?? 0, (fields.month ?? 1) - 1, fields.day ?? 1, fields.hour ?? 0, fields.minute ?? 0, fields.second ?? 0);
  return wholeSeconds + (((instant % 1000) + 1000) % 1000);
}

/**
 * The instant at which `timezone` shows the wall clock `wall`. On a fall-back overlap the earlier instant
 * wins; a wall clock skipped by a spring-forward gap does not exist (null), as in Rust `naive_to_utc_in_tz`.
 */
export function fromWallClock(wall: number, timezone: string): number | null {
  if (timezone === 'UTC') return wall;
  // Offsets half a day either side cover any single transition; each candidate must reproduce the wall clock.
  const candidates = [wall - 12 * MS_PER_HOUR, wall + 12 * MS_PER_HOUR]
    .map((probe) => wall - (toWallClock(probe, timezone) - probe))
    .filter((instant) => toWallClock(instant, timezone) === wall);
  return candidates.length === 0 ? null : Math.min(...candidates);
}
