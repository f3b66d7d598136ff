/**
 * One bus message to the event ingestion works on, or the reason it cannot be one. The message format is
 * capture's (packages/contracts `CapturedEventMessage`), read with the contract's own parser, which also reads
 * messages of the previous format (the event as a JSON string in `data`) still on the bus.
 */
import type { BusMessage } from '@plover/bus';
import { capturedEventKey, parseCapturedEventMessage, type CapturedEventWarning } from '@plover/contracts';
import { isUuid } from '@plover/core';
import type { DeadLetterReason } from './dead-letter';
import type { Properties } from './normalize';

export interface CapturedInput {
  message: BusMessage;
  projectId: number;
  /** Lowercased. */
  uuid: string;
  event: string;
  distinctId: string;
  properties: Properties;
  /** The event's time, or a substitute when it was unusable (see `invalidTimestamp`). */
  timestamp: Date;
  /** The timestamp as sent, when it could not be stored and `timestamp` is capture's receive time instead. */
  invalidTimestamp?: string;
  /** Warnings capture raised for the event (a client time it did not use), to record with the event's own. */
  captureWarnings: CapturedEventWarning[];
  sentAt: string | null;
  historical: boolean;
  /** Events with the same key are processed one at a time, in bus order: one person's events in order. */
  key: string;
}

export interface Unreadable {
  reason: DeadLetterReason;
  detail: string;
  projectId: number | null;
  eventUuid: string | null;
}

// DateTime64's range: a timestamp outside it would be stored as a different time (or refused), so it is
// treated as unusable, as PostHog's `ignored_invalid_timestamp` does for unparseable ones.
const MIN_TIMESTAMP_MS = Date.UTC(1900, 0, 1);
const MAX_TIMESTAMP_MS = Date.UTC(2300, 0, 1) - 1;

export function readMessage(message: BusMessage): { ok: true; input: CapturedInput } | { ok: false; unreadable: Unreadable } {
  const parsed = parseCapturedEventMessage(message.value);
  if (!parsed.ok) {
    // The contract's detail names the offending field already (`data__uuid is required.`).
    return { ok: false, unreadable: { reason: 'invalid_message', detail: parsed.violation.detail, ...identityOf(message.value) } };
  }
  const { message: envelope, event } = parsed.value;
  if (!isUuid(event.uuid)) {
    return {
      ok: false,
      unreadable: { reason: 'invalid_uuid', detail: `uuid ${JSON.stringify(event.uuid)} is not a UUID`, projectId: envelope.team_id, eventUuid: null },
    };
  }
  const timestamp = usableTime(event.timestamp);
  return {
    ok: true,
    input: {
      message,
      projectId: envelope.team_id,
      uuid: event.uuid.toLowerCase(),
      event: event.event,
      distinctId: event.distinct_id,
      properties: event.properties,
      // Capture's receive time (fixed in the message, so a redelivery computes the same row), else the bus's.
      timestamp: timestamp ?? usableTime(envelope.now) ?? new Date(message.timestamp),
      ...(timestamp ? {} : { invalidTimestamp: event.timestamp }),
      captureWarnings: envelope.warnings ?? [],
      sentAt: envelope.sent_at,
      historical: envelope.historical,
      key: capturedEventKey(envelope.team_id, event.distinct_id),
    },
  };
}

function usableTime(text: string): Date | undefined {
  const ms = Date.parse(text);
  return ms >= MIN_TIMESTAMP_MS && ms <= MAX_TIMESTAMP_MS ? new Date(ms) : undefined;
}

/**
 * The project and the event of a message that failed validation, when its envelope still names them: the
 * warning is listed under the project, and carries the client's uuid so that the client's event can be found.
 */
export function identityOf(value: Buffer): { projectId: number | null; eventUuid: string | null } {
  let envelope: unknown;
  try {
    envelope = JSON.parse(value.toString('utf8'));
  } catch {
    return { projectId: null, eventUuid: null };
  }
  if (typeof envelope !== 'object' || envelope === null) return { projectId: null, eventUuid: null };
  const { team_id: projectId, uuid } = envelope as { team_id?: unknown; uuid?: unknown };
  return {
    projectId: Number.isSafeInteger(projectId) ? (projectId as number) : null,
    eventUuid: typeof uuid === 'string' && isUuid(uuid) ? uuid.toLowerCase() : null,
  };
}
