/** A JSON object as parsed from an event or read from a jsonb column. */
export type Properties = Record<string, unknown>;

export function isPlainObject(value: unknown): value is Properties {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Own keys only: a property named `toString` or `__proto__` must not be mistaken for an inherited member. */
export function hasOwn(properties: Properties, key: string): boolean {
  return Object.hasOwn(properties, key);
}

/**
 * Equality of JSON values, objects compared key by key in any order. jsonb returns keys in its own order,
 * and an object or array parsed from each event is a new reference, so `===` would report every such
 * value as changed and bump the version on every replay.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, index) => jsonEqual(item, b[index]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => hasOwn(b, key) && jsonEqual(a[key], b[key]));
  }
  return false;
}

// NUL and unpaired surrogates: JSON.stringify writes them as \u0000 / \udXXX escapes, which Postgres
// refuses in jsonb (22P05, 22P02), and NUL is refused in text too. Replaced as PostHog does for distinct ids
// (NUL becomes U+FFFD, docs/capture.md#normalization), so one odd character cannot fail every write for a person.
// Ingestion applies the same replacement to the events' text columns: events.distinct_id stays equal to
// person_distinct_ids.distinct_id, and unpaired surrogates (which JSONEachRow cannot carry as UTF-8) stay out.
// eslint-disable-next-line no-control-regex -- matching NUL is the point
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Whether the text may hold one of them: a plain scan, far cheaper than UNSTORABLE's lookarounds, for the usual clean text. */
// eslint-disable-next-line no-control-regex -- matching NUL is the point
const MAYBE_UNSTORABLE = /[\u0000\ud800-\udfff]/;

export function storableText(text: string): string {
  return MAYBE_UNSTORABLE.test(text) ? text.replace(UNSTORABLE, '\ufffd') : text;
}

/** A copy of a JSON value that Postgres accepts as jsonb, with the characters above replaced in keys and strings. */
export function storableJson(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storableJson);
  if (isPlainObject(value)) return storableProperties(value);
  return value;
}

export function storableProperties(properties: Properties): Properties {
  const result: Properties = {};
  for (const [key, value] of Object.entries(properties)) setOwn(result, storableText(key), storableJson(value));
  return result;
}

/** `properties[key] = value`, except that a `__proto__` key stays a key instead of setting the prototype. */
export function setOwn(properties: Properties, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(properties, key, { value, writable: true, enumerable: true, configurable: true });
  else properties[key] = value;
}
