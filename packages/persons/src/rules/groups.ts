import { hasOwn, isPlainObject, jsonEqual, storableProperties, storableText, type Properties } from '../json';

/** Group rules (docs/ingestion.md#groups; PostHog's `groups/group-update.ts`). Pure. */

/** PostHog's MAX_GROUP_TYPES_PER_TEAM: indices 0–4, i.e. the events columns `$group_0` … `$group_4`. */
export const MAX_GROUP_TYPES = 5;

export interface GroupRef {
  groupType: string;
  groupKey: string;
}

/** Group keys arrive as strings or numbers (`group('company', 42)`); anything else names no group. */
function groupKeyOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : storableText(value);
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/** The groups an event belongs to: `properties.$groups` as `{ <group type>: <group key> }`. */
export function eventGroupsOf(properties: Properties): GroupRef[] {
  if (!isPlainObject(properties.$groups)) return [];
  return Object.entries(properties.$groups).flatMap(([groupType, value]) => {
    const groupKey = groupKeyOf(value);
    return groupType !== '' && groupKey !== undefined ? [{ groupType: storableText(groupType), groupKey }] : [];
  });
}

export interface GroupIdentify extends GroupRef {
  set: Properties;
}

/**
 * The names of the event that describes a group: `$groupidentify`, as the SDKs send it, and `$group_identify`,
 * as earlier descriptions of the API spelled it and clients written from them send. Both are processed alike;
 * the event keeps the name it was sent with.
 */
const GROUP_IDENTIFY_EVENTS = new Set(['$groupidentify', '$group_identify']);

export function isGroupIdentify(event: string): boolean {
  return GROUP_IDENTIFY_EVENTS.has(event);
}

/** A group identify needs `$group_type` and `$group_key`; `$group_set` (an object) is what it writes. */
export function groupIdentifyOf(event: string, properties: Properties): GroupIdentify | undefined {
  if (!isGroupIdentify(event) || typeof properties.$group_type !== 'string' || properties.$group_type === '') return undefined;
  const groupKey = groupKeyOf(properties.$group_key);
  if (groupKey === undefined) return undefined;
  const set = isPlainObject(properties.$group_set) ? storableProperties(properties.$group_set) : {};
  return { groupType: storableText(properties.$group_type), groupKey, set };
}

/**
 * PostHog compares group values with loose `!=` (`group-update.ts`), so `1` and `"1"` are the same value and
 * rewriting one with the other is no change. Objects and arrays compare as JSON: `!=` between two parsed
 * objects is always true and would bump the version on every replay.
 */
function looselyEqual(a: unknown, b: unknown): boolean {
  if (typeof a === 'object' || typeof b === 'object') return jsonEqual(a, b);
  return a == b;
}

/**
 * `$group_set` upserts: a key is (re)written when it is missing or its value differs. There is no
 * set-once and no unset for groups (as in PostHog).
 */
export function applyGroupSet(current: Properties, set: Properties): { properties: Properties; changed: boolean } {
  const changes = Object.entries(set).filter(([key, value]) => !hasOwn(current, key) || !looselyEqual(current[key], value));
  if (changes.length === 0) return { properties: current, changed: false };
  return { properties: { ...current, ...Object.fromEntries(changes) }, changed: true };
}
