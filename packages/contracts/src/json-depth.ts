/**
 * How deep user JSON may nest. Capture and ingestion walk event properties recursively (JSON.stringify, the
 * person and group property rules, the elements chain), and a recursion thousands of levels deep overflows the
 * stack: a client sending `[[[[…]]]]` would fail its request with a 500, or an event already acknowledged.
 * Capture refuses a deeper value and ingestion checks the same on every message, so nothing deeper is ever
 * walked recursively.
 *
 * 128 is serde_json's recursion limit, which PostHog's capture parses every request with: a request PostHog
 * accepts nests at most 127 levels in all, so its properties and distinct id, and the properties with the
 * top-level `$set` folded in one level down, stay within 128 here. No SDK nests anywhere near it.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * Whether `value` nests more than `maxDepth` objects and arrays deep (`{}` and `[]` are depth 1, a scalar 0).
 * A loop over an explicit stack, so that the check itself never overflows, whatever the input; it stops at
 * the first value too deep.
 */
export function exceedsJsonDepth(value: unknown, maxDepth: number = MAX_JSON_DEPTH): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const pending: object[] = [value];
  const depths: number[] = [1];
  while (pending.length > 0) {
    const container = pending.pop() as object;
    const depth = depths.pop() as number;
    if (depth > maxDepth) return true;
    const children: unknown[] = Array.isArray(container) ? container : Object.values(container);
    for (const child of children) {
      if (typeof child === 'object' && child !== null) {
        pending.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}
