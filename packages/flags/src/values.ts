import type { JsonValue } from './types';

/** Own-property lookup: a property named `constructor` or `__proto__` is data, never the prototype's. */
export function lookup<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/**
 * The text PostHog compares: strings as they are, everything else as compact JSON (`5`, `true`, `null`,
 * `["a"]`). Rust `to_string_representation` in `rust/feature-flags/src/properties/property_matching.rs`.
 */
export function toText(value: JsonValue): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * Parses text the way Rust's `str::parse::<f64>` does, null where Rust would fail: an optional sign, decimal
 * digits with an optional fraction and exponent, or inf/infinity/nan in any case; no whitespace, hex or digit
 * separators. A scan rather than a regular expression: the text is a client's property value, up to a whole
 * request long, and V8's backtracking engine keeps a stack entry per digit of a greedy run, which overflows on
 * a 20 MiB run of digits.
 */
export function parseRustFloat(text: string): number | null {
  const negative = text.charCodeAt(0) === 0x2d;
  const start = negative || text.charCodeAt(0) === 0x2b ? 1 : 0;
  if (text.length - start <= 8) {
    const word = text.slice(start).toLowerCase();
    if (word === 'nan') return NaN;
    if (word === 'inf' || word === 'infinity') return negative ? -Infinity : Infinity;
  }
  const integerEnd = digitsEnd(text, start);
  let end = integerEnd;
  let fractionDigits = 0;
  if (text.charCodeAt(end) === 0x2e) {
    const fractionEnd = digitsEnd(text, end + 1);
    fractionDigits = fractionEnd - end - 1;
    end = fractionEnd;
  }
  if (integerEnd === start && fractionDigits === 0) return null;
  if ((text.charCodeAt(end) | 0x20) === 0x65) {
    const sign = text.charCodeAt(end + 1);
    const exponentStart = end + (sign === 0x2b || sign === 0x2d ? 2 : 1);
    end = digitsEnd(text, exponentStart);
    if (end === exponentStart) return null;
  }
  return end === text.length ? Number(text) : null;
}

/** Where the run of ASCII digits starting at `from` ends. */
function digitsEnd(text: string, from: number): number {
  let at = from;
  while (at < text.length && text.charCodeAt(at) >= 0x30 && text.charCodeAt(at) <= 0x39) at++;
  return at;
}

/** Numbers as they are; anything else through its text form (Rust `to_f64_representation`). */
export function toNumber(value: JsonValue): number | null {
  return typeof value === 'number' ? value : parseRustFloat(toText(value));
}

const ASCII_UPPER = /[A-Z]/;
const ASCII_UPPER_RUNS = /[A-Z]+/g;

/**
 * PostHog's Rust service lowercases only ASCII for the substring operators (`to_ascii_lowercase`), so
 * `İ` and `i` stay different there; we follow the server, not the SDKs that lowercase Unicode.
 */
export function asciiLowercase(text: string): string {
  // Most texts (emails, needles) are lowercase already: a test is cheaper than a replace that finds nothing.
  return ASCII_UPPER.test(text) ? text.replace(ASCII_UPPER_RUNS, (upper) => upper.toLowerCase()) : text;
}

/** Group keys and hash keys: strings as they are, numbers as text, anything else unusable (`""`). */
export function identifierText(value: JsonValue | undefined): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return '';
}
