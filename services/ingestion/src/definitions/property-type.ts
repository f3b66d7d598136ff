/**
 * The type PostHog gives a property from the first value it sees of it (property-defs-rs, `detect_property_type`
 * in `rust/property-defs-rs/src/types.rs`): some key families are always strings, keys that name a time are
 * date-times when the value looks like one, and otherwise the JSON type decides. docs/definitions.md lists the rules.
 */
export type PropertyType = 'DateTime' | 'String' | 'Numeric' | 'Boolean';

/** Substrings of a lowercased key that make a date-like value (or a recent Unix time in seconds) a DateTime. */
const TIME_KEY_WORDS = ['time', 'timestamp', 'date', '_at', '-at', 'createdat', 'updatedat'];

/** PostHog counts six months as 15,768,000 seconds (182.5 days). */
const SIX_MONTHS_S = 15_768_000;

/** A date `YYYY-MM-DD`, `YYYY/MM/DD`, `DD-MM-YYYY` or `DD/MM/YYYY`, optionally followed by ` ` or `T` and `HH:MM:SS…`. */
const DATE_PREFIX = /^(?:[0-9]{4}[/-][0-2][0-9][/-][0-3][0-9]|[0-2][0-9][/-][0-3][0-9][/-][0-9]{4})(?:[ T][0-2][0-9]:[0-6][0-9]:[0-6][0-9].*)?$/s;

/** RFC 3339 with the separators the Rust parser also takes (`t`, a space); the prefix rule covers the rest of its forms. */
const RFC_3339 = /^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})$/;

/** RFC 2822: `[Day, ]D Mon YYYY HH:MM[:SS] zone`. */
const RFC_2822 =
  /^(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),\s*)?[0-9]{1,2}\s+(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+[0-9]{2,4}\s+[0-9]{2}:[0-9]{2}(?::[0-9]{2})?\s+(?:[+-][0-9]{4}|UT|GMT|[ECMP][SD]T|[A-IK-Za-ik-z])$/i;

function looksLikeDate(text: string): boolean {
  return DATE_PREFIX.test(text) || RFC_3339.test(text) || RFC_2822.test(text);
}

/** `value` is a JSON integer ≥ 0 (not a fraction: PostHog reads it as an unsigned integer) within six months of `nowS` or later. */
function looksLikeRecentUnixSeconds(value: number, nowS: number): boolean {
  return Number.isInteger(value) && value >= 0 && value >= nowS - SIX_MONTHS_S;
}

/**
 * The detected type of property `key` from one of its values, or null for values without one (null, arrays,
 * objects), which leave the type to a later value. `nowS`: the current Unix time in seconds.
 */
export function detectPropertyType(key: string, value: unknown, nowS: number): PropertyType | null {
  const lower = key.toLowerCase();
  // Values of these families look like numbers or booleans at first and like strings later (flag variants,
  // campaign ids, survey answers): PostHog pins them to String.
  if (lower.startsWith('utm_') || lower.startsWith('$feature/') || lower === '$feature_flag_response' || lower.startsWith('$survey_response')) {
    return 'String';
  }
  if (TIME_KEY_WORDS.some((word) => lower.includes(word))) {
    if (typeof value === 'string' && looksLikeDate(value)) return 'DateTime';
    if (typeof value === 'number' && looksLikeRecentUnixSeconds(value, nowS)) return 'DateTime';
  }
  switch (typeof value) {
    case 'string': {
      const text = value.trim();
      if (text === 'true' || text === 'false' || text === 'TRUE' || text === 'FALSE') return 'Boolean';
      return looksLikeDate(text) ? 'DateTime' : 'String';
    }
    case 'number':
      return 'Numeric';
    case 'boolean':
      return 'Boolean';
    default:
      return null;
  }
}
