import type { Properties } from '../json';
import { EMPTY_UPDATE, MAX_PROPERTIES_BYTES, applyPropertyUpdate, initialProperties, mergeProperties, propertiesSize, type PropertyUpdate } from './properties';

/** The stored state of a person that processing can change. */
export interface PersonState {
  properties: Properties;
  isIdentified: boolean;
  createdAt: Date;
  version: number;
}

export interface PersonChange {
  /** What to store; equal to the current state when `write` is false. */
  state: PersonState;
  write: boolean;
  /**
   * The properties after the event as the event sees them: includes churning changes that were not worth
   * a write, excludes an update refused for size.
   */
  properties: Properties;
  /** Size of the refused properties when they exceeded MAX_PROPERTIES_BYTES. */
  refusedBytes?: number;
}

export interface ChangeOptions {
  /** Write churning-property changes too (person events, the management API). */
  writeEveryChange: boolean;
  /** Mark the person identified (a legal merge request, docs/ingestion.md#merges). */
  identify: boolean;
  /** Merge this person into the target first (PostHog's mergePeople). */
  mergeFrom?: PersonState;
}

/**
 * The next state of an existing person. A write happens only when something changes, so re-processing an
 * event whose update is already applied is a no-op without a version bump:
 * - update: properties per applyPropertyUpdate, version + 1 per write;
 * - merge: `{...source, ...target}` then the event's update, created_at the older one, identified,
 *   version max(target, source) + 1 — always a write;
 * - properties over MAX_PROPERTIES_BYTES are not written (the person keeps its current properties, a merge
 *   the target's); the rest of the change (identification, merge) still is.
 */
export function nextPersonState(target: PersonState, update: PropertyUpdate, options: ChangeOptions): PersonChange {
  const source = options.mergeFrom;
  const base = source ? mergeProperties(source.properties, target.properties) : target.properties;
  const applied = applyPropertyUpdate(base, update, options.writeEveryChange);
  const wantsPropertiesWrite = source !== undefined || applied.triggersWrite;
  const size = wantsPropertiesWrite ? propertiesSize(applied.properties) : 0;
  const refused = size > MAX_PROPERTIES_BYTES;
  const properties = refused ? target.properties : applied.properties;
  const isIdentified = target.isIdentified || options.identify || source !== undefined;
  const write = source !== undefined || isIdentified !== target.isIdentified || (wantsPropertiesWrite && !refused);
  const refusal = refused ? { refusedBytes: size } : {};
  if (!write) return { state: target, write, properties, ...refusal };

  const state: PersonState = source
    ? {
        properties,
        isIdentified,
        createdAt: source.createdAt < target.createdAt ? source.createdAt : target.createdAt,
        version: Math.max(source.version, target.version) + 1,
      }
    : { properties, isIdentified, createdAt: target.createdAt, version: target.version + 1 };
  return { state, write, properties, ...refusal };
}

/**
 * A new person (docs/ingestion.md#persons): created_at is the event's timestamp, version 0, properties from the
 * event's `$set_once` and `$set`. Over the cap, it is created with only `$creator_event_uuid`.
 */
export function newPersonState(update: PropertyUpdate, creatorEventUuid: string, createdAt: Date, isIdentified: boolean): PersonChange {
  const properties = initialProperties(update, creatorEventUuid);
  const size = propertiesSize(properties);
  const refused = size > MAX_PROPERTIES_BYTES;
  const stored = refused ? initialProperties(EMPTY_UPDATE, creatorEventUuid) : properties;
  const state: PersonState = { properties: stored, isIdentified, createdAt, version: 0 };
  return { state, write: true, properties: stored, ...(refused ? { refusedBytes: size } : {}) };
}
