/**
 * The ClickHouse rows of one processed event: its `events` row (PostHog's create-event.ts),
 * the warnings raised on the way, and copies of the person overrides Postgres wrote.
 */
import { uuidv5 } from '@plover/core';
import { sqlTimestamp } from '@plover/core/utc-text';
import type { EventRow, IngestionWarningRow, PersonOverrideRow } from '@plover/clickhouse';
import { storableText, type EventGroup, type EventPerson, type PersonOverride } from '@plover/persons';
import type { CapturedInput } from './message';
import type { NormalizedProperties } from './normalize';

/** A warning before it becomes a row: PostHog's type name and detail keys. */
export interface Warning {
  type: string;
  details: Record<string, unknown>;
}

/** `$group_0` … `$group_4`: the five group type indices a project can have (docs/ingestion.md#groups). */
const GROUP_SLOTS = [0, 1, 2, 3, 4];
/** What an unused `group<N>_created_at` holds (the column's default). */
const NO_TIME = '1970-01-01 00:00:00.000';

export function eventRow(input: CapturedInput, normalized: NormalizedProperties, person: EventPerson, groups: readonly EventGroup[], now: Date): EventRow {
  const properties = { ...normalized.properties };
  // PostHog stores the resolved groups in the properties too, so `properties.$group_0` works in any query.
  for (const group of groups) properties[`$group_${group.groupTypeIndex}`] = group.groupKey;
  const slot = GROUP_SLOTS.map((index) => groups.find((group) => group.groupTypeIndex === index));
  const groupKey = (group: EventGroup | undefined) => storableText(group?.groupKey ?? '');
  const groupProperties = (group: EventGroup | undefined) => (group?.group ? JSON.stringify(group.group.properties) : '');
  const groupCreatedAt = (group: EventGroup | undefined) => (group?.group ? sqlTimestamp(group.group.createdAt.getTime()) : NO_TIME);
  return {
    uuid: input.uuid,
    event: storableText(input.event),
    properties: JSON.stringify(properties),
    timestamp: sqlTimestamp(input.timestamp.getTime()),
    team_id: input.projectId,
    distinct_id: storableText(input.distinctId),
    elements_chain: storableText(normalized.elementsChain),
    created_at: sqlTimestamp(now.getTime()),
    person_id: person.personUuid,
    person_properties: JSON.stringify(person.properties),
    person_created_at: sqlTimestamp(person.createdAt.getTime()),
    person_mode: person.mode,
    group0_properties: groupProperties(slot[0]),
    group1_properties: groupProperties(slot[1]),
    group2_properties: groupProperties(slot[2]),
    group3_properties: groupProperties(slot[3]),
    group4_properties: groupProperties(slot[4]),
    group0_created_at: groupCreatedAt(slot[0]),
    group1_created_at: groupCreatedAt(slot[1]),
    group2_created_at: groupCreatedAt(slot[2]),
    group3_created_at: groupCreatedAt(slot[3]),
    group4_created_at: groupCreatedAt(slot[4]),
    $group_0: groupKey(slot[0]),
    $group_1: groupKey(slot[1]),
    $group_2: groupKey(slot[2]),
    $group_3: groupKey(slot[3]),
    $group_4: groupKey(slot[4]),
    session_id: scalarText(properties.$session_id),
    window_id: scalarText(properties.$window_id),
    historical_migration: input.historical,
  };
}

/**
 * A warning row. Its uuid is the event's, or for a message without one a uuid derived from the message's bus
 * position, and its time the bus's append time: both fixed per message, so a redelivery's copy collapses.
 */
export function warningRow(
  input: { projectId: number; eventUuid: string | null; message: { topic: string; partition: number; offset: string; timestamp: number } },
  warning: Warning,
): IngestionWarningRow {
  const { message } = input;
  return {
    team_id: input.projectId,
    type: warning.type,
    details: JSON.stringify(warning.details),
    timestamp: sqlTimestamp(message.timestamp),
    event_uuid: input.eventUuid ?? uuidv5(`${message.topic}:${message.partition}:${message.offset}`, BUS_POSITION_NAMESPACE),
  };
}

/** Namespace of the uuids that stand for a bus position (random, fixed forever: changing it breaks dedupe). */
const BUS_POSITION_NAMESPACE = '5b0f4f5e-3c1e-4c38-9b7a-2f0d2d6c9e41';

export function overrideRow(projectId: number, override: PersonOverride): PersonOverrideRow {
  return { team_id: projectId, old_person_id: override.oldPersonUuid, override_person_id: override.overridePersonUuid, version: override.version };
}

/** PostHog's materialized `$session_id`/`$window_id` columns: the property's JSON value with string quotes trimmed. */
function scalarText(value: unknown): string {
  if (typeof value === 'string') return storableText(value);
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
}
