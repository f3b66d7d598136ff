/** How the console writes times, durations and property values for people to read. */

export function dateTime(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : '—';
}

/** A number for people: grouped digits, at most two decimals (`1,234`, `0.33`). */
export function figure(value: number): string {
  return value.toLocaleString(undefined, { maximumFractionDigits: 2 });
}

/** `42 s ago`, `5 min ago`, `3 h ago`, then the date. */
export function timeAgo(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  return dateTime(iso);
}

/** `45s`, `3m 05s`, `1h 02m 03s`. */
export function duration(seconds: number): string {
  const whole = Math.max(0, Math.floor(seconds));
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = whole % 60;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (h > 0) return `${h}h ${pad(m)}m ${pad(s)}s`;
  return m > 0 ? `${m}m ${pad(s)}s` : `${s}s`;
}

/** A property value as text: a string as it is, anything else as JSON. */
export function propertyText(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
}

/**
 * The value a person typed for a property: text where the property held text (so `42` stays the string it was),
 * else the JSON it reads as (`42`, `true`, `null`, `[1, 2]`, `{"a": 1}`, `"quoted"`), else the text itself.
 */
export function parsePropertyValue(text: string, previous?: unknown): unknown {
  if (typeof previous === 'string') return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
