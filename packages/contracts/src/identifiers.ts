/**
 * How capture writes the identifiers a client sends (distinct ids, event names), shared with decide, which must
 * look a person up under exactly the text capture stored it under.
 */
const MAX_ID_CHARS = 200;

/**
 * JSON.stringify's text with unpaired surrogates replaced by U+FFFD, as PostHog's capture replaces them before
 * parsing (Rust strings cannot hold them). JSON.stringify writes exactly those as `\udXXX` escapes (paired
 * ones it writes as they are), so the text is looked at only when it holds `\ud`. Every escape is matched
 * from its backslash, so that an escaped backslash followed by `ud800` is not mistaken for one.
 */
export function wellFormedJson(json: string): string {
  return json.includes('\\ud') ? json.replace(JSON_ESCAPE, (escape, body: string) => (body.length === 5 ? '\uFFFD' : escape)) : json;
}

const JSON_ESCAPE = /\\(ud[89a-f][0-9a-f]{2}|.)/g;

/**
 * PostHog `extract_distinct_id`: strings as they are, anything else as compact JSON (objects with sorted keys,
 * as serde_json writes them), NUL and unpaired surrogates → U+FFFD, at most 200 characters. Missing, null and ""
 * are no id. `value` must be within MAX_JSON_DEPTH (sortKeys recurses).
 */
export function distinctIdOf(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const text = typeof value === 'string' ? value.toWellFormed() : wellFormedJson(JSON.stringify(sortKeys(value)));
  if (text === '') return undefined;
  return firstChars(text.includes('\0') ? text.replace(/\0/g, '\uFFFD') : text);
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== 'object' || value === null) return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
  return sorted;
}

/**
 * The first 200 characters: code points, as Rust's `chars()` and ingestion's schema (ajv's maxLength) count
 * them, so a surrogate pair is never split and the cut text is never longer than ingestion accepts.
 */
export function firstChars(text: string): string {
  if (text.length <= MAX_ID_CHARS) return text;
  let end = 0;
  for (let count = 0; count < MAX_ID_CHARS && end < text.length; count++) end += isSurrogatePair(text, end) ? 2 : 1;
  return text.slice(0, end);
}

function isSurrogatePair(text: string, index: number): boolean {
  const high = text.charCodeAt(index);
  const low = text.charCodeAt(index + 1);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff;
}
