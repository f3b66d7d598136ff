import { uuidv5 } from '@plover/core';
import { hasOwn, storableText, type Properties } from '../json';
import type { PersonWarning } from '../warnings';

/**
 * Identity rules (docs/ingestion.md#merges; PostHog's `person-merge-service.ts`): which person an event
 * belongs to and when two persons become one. Pure: the store looks persons up under lock and executes the plan.
 */

/** PostHog's namespace for person uuids (TypeScript `uuidFromDistinctId`, Python `missing_person.py`). */
export const PERSON_UUID_NAMESPACE = '932979b4-65c3-4424-8467-0b66ec27bc22';

/** The person uuid a distinct id gets on first sight, and the person_id of its personless events. */
export function personUuid(projectId: number, distinctId: string): string {
  return uuidv5(`${projectId}:${distinctId}`, PERSON_UUID_NAMESPACE);
}

/** Every entry is also illegal wrapped in single or double quotes (`'null'`, `"null"`). */
function withQuotes(ids: readonly string[]): ReadonlySet<string> {
  return new Set(ids.flatMap((id) => [id, `'${id}'`, `"${id}"`]));
}

// Compared after toLowerCase(), not trimmed (PostHog's `isDistinctIdIllegal`).
const ILLEGAL_IGNORING_CASE = withQuotes(['anonymous', 'guest', 'distinctid', 'distinct_id', 'id', 'not_authenticated', 'email', 'undefined', 'true', 'false']);
// Compared as is: `NULL` is a legal id while `null` is not (PostHog's lists).
const ILLEGAL_EXACT = withQuotes(['[object Object]', 'NaN', 'None', 'none', 'null', '0', 'undefined']);

/**
 * Ids that SDKs send by mistake (`identify(null)`, `[object Object]` as anon id: PostHog/posthog#5527 and
 * PostHog/posthog#12008). They still get their own person and events; they only never merge, or one junk id
 * would join every user.
 */
export function isDistinctIdIllegal(distinctId: string): boolean {
  return distinctId.trim() === '' || ILLEGAL_IGNORING_CASE.has(distinctId.toLowerCase()) || ILLEGAL_EXACT.has(distinctId);
}

export type MergeKind = '$identify' | '$create_alias' | '$merge_dangerously';

/** Merge `other`'s person into `into`'s person (`into` is the event's distinct_id). */
export interface MergeRequest {
  kind: MergeKind;
  into: string;
  other: string;
}

export interface IdentityEvent {
  uuid: string;
  event: string;
  distinctId: string;
  properties: Properties;
}

/**
 * The merge an event asks for (docs/ingestion.md#merges): `$identify` with `$anon_distinct_id` present, or
 * `$create_alias` / `$merge_dangerously` with a truthy `alias`. The other id is stringified as PostHog does,
 * so an object sent as anon id becomes `[object Object]` and is refused as illegal. No request when both ids
 * are the same (posthog-node aliases a user to itself); a warning instead when either id is illegal.
 */
export function mergeRequestOf(event: IdentityEvent): { request?: MergeRequest; warning?: PersonWarning } {
  let kind: MergeKind;
  let otherValue: unknown;
  if (event.event === '$identify' && hasOwn(event.properties, '$anon_distinct_id')) {
    kind = '$identify';
    otherValue = event.properties.$anon_distinct_id;
  } else if ((event.event === '$create_alias' || event.event === '$merge_dangerously') && event.properties.alias) {
    kind = event.event;
    otherValue = event.properties.alias;
  } else {
    return {};
  }
  const into = event.distinctId;
  const other = storableText(String(otherValue));
  if (into === other) return {};
  const illegal = [into, other].find(isDistinctIdIllegal);
  if (illegal !== undefined) {
    const otherDistinctId = illegal === into ? other : into;
    return {
      warning: { type: 'cannot_merge_with_illegal_distinct_id', details: { illegalDistinctId: illegal, otherDistinctId, eventUuid: event.uuid } },
    };
  }
  return { request: { kind, into, other } };
}

/** What identity needs to know about a person. */
export interface IdentityPerson {
  id: number;
  isIdentified: boolean;
}

/**
 * What to do with the persons of the event's distinct ids (docs/ingestion.md#merges). A legal merge request marks the
 * resulting person identified in every case, even when the merge itself is refused (PostHog sets
 * `updateIsIdentified` before looking the persons up); a bare `$identify` does not.
 */
export type IdentityPlan<P extends IdentityPerson> =
  /** Nobody has these ids: one new person with all of them, the first being the one its uuid derives from. */
  | { kind: 'create'; distinctIds: [string, ...string[]]; identify: boolean }
  /**
   * The person exists and keeps its ids. `joined`: a merge request whose ids are this person's already (merged
   * before, perhaps by this very event in an attempt that did not finish).
   */
  | { kind: 'update'; person: P; identify: boolean; warning?: PersonWarning; joined?: boolean }
  /** Only one id has a person: the other id joins it. */
  | { kind: 'attach'; person: P; distinctId: string }
  /** Two persons: `source` (the other id's) is merged into `target` (the event's). */
  | { kind: 'merge'; source: P; target: P };

export function planIdentity<P extends IdentityPerson>(
  distinctId: string,
  request: MergeRequest | undefined,
  personOf: (distinctId: string) => P | undefined,
  eventUuid: string,
): IdentityPlan<P> {
  const into = personOf(distinctId);
  if (!request) return into ? { kind: 'update', person: into, identify: false } : { kind: 'create', distinctIds: [distinctId], identify: false };

  const other = personOf(request.other);
  if (!into) {
    return other ? { kind: 'attach', person: other, distinctId: request.into } : { kind: 'create', distinctIds: [request.into, request.other], identify: true };
  }
  if (!other) return { kind: 'attach', person: into, distinctId: request.other };
  if (into.id === other.id) return { kind: 'update', person: into, identify: true, joined: true };
  // An identified person is somebody: merging it away on an $identify or alias would join two users.
  // Only $merge_dangerously may (PostHog's mergePeople, PostHog/posthog#11873).
  if (other.isIdentified && request.kind !== '$merge_dangerously') {
    return {
      kind: 'update',
      person: into,
      identify: true,
      warning: {
        type: 'cannot_merge_already_identified',
        details: { sourcePersonDistinctId: request.other, targetPersonDistinctId: request.into, eventUuid },
      },
    };
  }
  return { kind: 'merge', source: other, target: into };
}

/**
 * `$process_person_profile: false` (posthog-js marks anonymous events so): no person row is written and
 * $set/$set_once/$unset are ignored (docs/ingestion.md#personless-events). Only the boolean false counts.
 */
export function isPersonless(properties: Properties): boolean {
  return properties.$process_person_profile === false;
}

/** person_created_at of a personless event without a person: 5 s after the epoch, recognisable in data. */
export const PERSONLESS_CREATED_AT = new Date('1970-01-01T00:00:05Z');

/**
 * A personless event for a distinct id whose person was created more than this before the event is
 * "force upgraded": it carries the person's properties (PostHog's processPersonlessStep). The minute
 * of slack covers events sent before the person existed but ingested after.
 */
export const FORCE_UPGRADE_AFTER_MS = 60_000;
