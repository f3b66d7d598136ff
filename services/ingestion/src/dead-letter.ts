/**
 * The dead-letter topic: messages that can never be ingested go there with the reason and the original bytes,
 * never dropped silently (docs/ingestion.md#dead-letters). Replaying one means producing `payload` back to `source.topic` with
 * `source.key`, e.g. after fixing what made it fail.
 */
import { isUtf8 } from 'node:buffer';
import type { BusMessage, OutgoingMessage } from '@plover/bus';

export type DeadLetterReason =
  /** Not a captured-event message: not JSON, or not the shape capture produces (packages/contracts). */
  | 'invalid_message'
  /** The event's uuid is not a UUID: it could never be deduplicated (PostHog drops these). */
  | 'invalid_uuid'
  /** Person or group processing refused the event for good (e.g. its project no longer exists). */
  | 'processing_failed'
  /** ClickHouse refused the event's row as invalid data. */
  | 'insert_failed';

export interface DeadLetter {
  reason: DeadLetterReason;
  /** Why, for a human: the schema violation or the error message. */
  detail: string;
  /** Where the message was read: enough to find it again and to replay it with its key. */
  source: { topic: string; partition: number; offset: string; key: string; timestamp: number };
  /** The project, when the message says which. */
  team_id: number | null;
  event_uuid: string | null;
  failed_at: string;
  /** The message value as received: UTF-8 text, or base64 when the bytes are not valid UTF-8. */
  payload: string;
  payload_encoding: 'utf8' | 'base64';
}

export function deadLetterOf(
  message: BusMessage,
  failure: { reason: DeadLetterReason; detail: string; projectId: number | null; eventUuid: string | null },
  now: Date,
): DeadLetter {
  const text = isUtf8(message.value);
  return {
    reason: failure.reason,
    detail: failure.detail,
    source: { topic: message.topic, partition: message.partition, offset: message.offset, key: message.key, timestamp: message.timestamp },
    team_id: failure.projectId,
    event_uuid: failure.eventUuid,
    failed_at: now.toISOString(),
    payload: message.value.toString(text ? 'utf8' : 'base64'),
    payload_encoding: text ? 'utf8' : 'base64',
  };
}

/** Keyed like the original, so one person's dead letters stay in order in the dead-letter topic too. */
export function deadLetterMessage(deadLetter: DeadLetter): OutgoingMessage {
  return { key: deadLetter.source.key, value: Buffer.from(JSON.stringify(deadLetter)) };
}
