import { hasOwn, isPlainObject, jsonEqual, setOwn, storableProperties, storableText, type Properties } from '../json';
import { isGroupIdentify } from './groups';

/**
 * Person property rules (docs/ingestion.md#persons; PostHog's `person-update.ts`). Pure: no I/O, so ingestion and the
 * management PATCH compute the same result from the same person row.
 */

/** Postgres' check_properties_size in PostHog: 640 KiB. Measured here as UTF-8 JSON text. */
export const MAX_PROPERTIES_BYTES = 655_360;

/** The three operations an event can carry, sanitized for storage. */
export interface PropertyUpdate {
  set: Properties;
  setOnce: Properties;
  unset: string[];
}

export const EMPTY_UPDATE: PropertyUpdate = Object.freeze({ set: {}, setOnce: {}, unset: [] });

/** Events whose $set/$set_once/$unset never touch the person (PostHog's `person-update.ts`). */
const NO_PERSON_UPDATE_EVENTS = new Set(['$exception', '$$heatmap']);

/** Events for which every change is written, bypassing the churn filter below (PostHog's PERSON_EVENTS). */
const PERSON_EVENTS = new Set(['$identify', '$create_alias', '$merge_dangerously', '$set']);

/**
 * Properties that change on nearly every event: a change to these alone does not trigger a write
 * (PostHog's FILTERED_PERSON_UPDATE_PROPERTIES in `person-property-utils.ts`). The new value still reaches the
 * event's person_properties and is stored the next time another change causes a write.
 */
const CHURNING_PROPERTIES = new Set([
  '$current_url',
  '$pathname',
  '$referring_domain',
  '$referrer',
  '$screen_height',
  '$screen_width',
  '$viewport_height',
  '$viewport_width',
  '$browser',
  '$browser_version',
  '$device_type',
  '$raw_user_agent',
  '$os',
  '$os_name',
  '$os_version',
  // Every $geoip_* key except $geoip_country_name and $geoip_city_name, which segmentation relies on.
  '$geoip_postal_code',
  '$geoip_time_zone',
  '$geoip_latitude',
  '$geoip_longitude',
  '$geoip_accuracy_radius',
  '$geoip_subdivision_1_code',
  '$geoip_subdivision_1_name',
  '$geoip_subdivision_2_code',
  '$geoip_subdivision_2_name',
  '$geoip_subdivision_3_code',
  '$geoip_subdivision_3_name',
  '$geoip_city_confidence',
  '$geoip_country_confidence',
  '$geoip_postal_code_confidence',
  '$geoip_subdivision_1_confidence',
  '$geoip_subdivision_2_confidence',
]);

/**
 * The update an event asks for. `$unset` may be a list of keys or an object whose keys are used
 * (as in PostHog); values that are not objects or lists are ignored. Events in NO_PERSON_UPDATE_EVENTS
 * and group identifies (whose $set is stripped) ask for nothing.
 */
export function propertyUpdateOf(event: string, properties: Properties): PropertyUpdate {
  if (NO_PERSON_UPDATE_EVENTS.has(event) || isGroupIdentify(event)) return EMPTY_UPDATE;
  return normalizeUpdate({ set: properties.$set, setOnce: properties.$set_once, unset: properties.$unset });
}

/** Validates and sanitizes an update given as loose JSON (event properties, a PATCH body). */
export function normalizeUpdate(input: { set?: unknown; setOnce?: unknown; unset?: unknown }): PropertyUpdate {
  const unset = Array.isArray(input.unset) ? input.unset : isPlainObject(input.unset) ? Object.keys(input.unset) : [];
  return {
    set: isPlainObject(input.set) ? storableProperties(input.set) : {},
    setOnce: isPlainObject(input.setOnce) ? storableProperties(input.setOnce) : {},
    unset: unset.filter((key): key is string => typeof key === 'string').map(storableText),
  };
}

/** Whether a change to only churning properties should be written: always for person events and the API. */
export function writesEveryChange(event: string): boolean {
  return PERSON_EVENTS.has(event);
}

export interface AppliedUpdate {
  /** The properties after the update, whether or not it is worth a write. */
  properties: Properties;
  /** Something differs from the current properties. */
  changed: boolean;
  /** The change is worth a write: not only churning properties (or `writeEveryChange`). */
  triggersWrite: boolean;
}

/**
 * Applies `$set_once`, then `$set`, then `$unset` (docs/ingestion.md#persons):
 * 1. `$set_once[k]` only when the person has no key k (a key holding null counts as set);
 * 2. `$set[k]` when it differs from the current value, overriding a `$set_once` of the same key;
 * 3. `$unset[k]` only when k existed before the event, so a key both set and unset ends up deleted
 *    unless it is new.
 * Values are compared as JSON, not with PostHog's `!==`: an object value is then a no-op when equal,
 * which keeps a replayed event from bumping the version (see PersonStore).
 *
 * Write trigger (PostHog's person-update.ts): a `$set_once` of a non-churning key, a `$set` adding a key
 * or changing a non-churning one, or any `$unset`. If any `$set` key triggers, the whole update is written.
 */
export function applyPropertyUpdate(current: Properties, update: PropertyUpdate, writeEveryChange: boolean): AppliedUpdate {
  // Copied on the first change only: most events change nothing. A spread copies a `__proto__` key as an own
  // key, and setOwn writes one as such.
  let next: Properties | undefined;
  let triggersWrite = false;
  const note = (triggers: boolean): Properties => {
    triggersWrite ||= writeEveryChange || triggers;
    return (next ??= { ...current });
  };

  for (const [key, value] of Object.entries(update.setOnce)) {
    if (hasOwn(next ?? current, key)) continue;
    setOwn(note(!CHURNING_PROPERTIES.has(key)), key, value);
  }
  for (const [key, value] of Object.entries(update.set)) {
    const properties = next ?? current;
    if (hasOwn(properties, key) && jsonEqual(properties[key], value)) continue;
    setOwn(note(!hasOwn(current, key) || !CHURNING_PROPERTIES.has(key)), key, value);
  }
  for (const key of update.unset) {
    if (!hasOwn(current, key)) continue;
    // A key unset twice is already gone from `next` the second time: deleting it again changes nothing.
    Reflect.deleteProperty(note(true), key);
  }
  return { properties: next ?? current, changed: next !== undefined, triggersWrite };
}

/**
 * A new person's properties: `{...$set_once, ...$set, $creator_event_uuid}`, so `$set` wins a clash and
 * `$unset` is not applied (PostHog's `person-create-service.ts`).
 */
export function initialProperties(update: PropertyUpdate, creatorEventUuid: string): Properties {
  return { ...update.setOnce, ...update.set, $creator_event_uuid: creatorEventUuid };
}

/** Merged properties: the source's, overridden by the target's (the target wins, PostHog's mergePeople). */
export function mergeProperties(source: Properties, target: Properties): Properties {
  return { ...source, ...target };
}

/** Size of the properties as stored, in bytes of UTF-8 JSON. */
export function propertiesSize(properties: Properties): number {
  return Buffer.byteLength(JSON.stringify(properties), 'utf8');
}

/**
 * The event row's `person_properties`: the person's properties after the event, with the event's `$set`
 * on top (PostHog's create-event.ts). `$set` is repeated because a key the event both set
 * and unset is deleted from the person yet shows on the event, and a refused oversized update still shows.
 */
export function eventPersonProperties(personProperties: Properties, update: PropertyUpdate): Properties {
  return { ...personProperties, ...update.set };
}
