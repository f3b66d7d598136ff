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

// Rust's `str::parse::<f64>` grammar: optional sign, decimal digits with an optional fraction and exponent,
// or inf/infinity/nan in any case. No whitespace, no hex, no digit separators. Each digit can be matched in
// one way only (`\d+(?:\.\d*)?`, not `\d+\.?\d*`): the text is a client's property value, and a pattern
// that can split a run of digits between two quantifiers backtracks quadratically on `1111…1x`.
const RUST_FLOAT = /^[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)$/i;

/** Parses text the way Rust's `f64` parser does; null when Rust would fail. */
export function parseRustFloat(text: string): number | null {
  if (!RUST_FLOAT.test(text)) return null;
  const unsigned = text.replace(/^[+-]/, '').toLowerCase();
  const negative = text.startsWith('-');
  if (unsigned === 'nan') return NaN;
  if (unsigned === 'inf' || unsigned === 'infinity') return negative ? -Infinity : Infinity;
  return Number(text);
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
