/**
 * One raw event to its bus message: PostHog capture's per-event processing (Rust `extract_distinct_id`,
 * `parse_event_timestamp`) plus the normalization its Node pipeline did first thing (`normalizeEvent`), so
 * ingestion reads clean events. The rules: docs/capture.md#normalization.
 */
import type { OutgoingMessage } from '@plover/bus';
import { capturedEventKey, distinctIdOf, exceedsJsonDepth, firstChars, CapturedEventWriter, type CapturedEventWarning, type RawEvent } from '@plover/contracts';
import { isoTimestamp } from '@plover/core/utc-text';
import { captureError } from './errors';
import { eventTimestamp, type EventTime } from './timestamp';

/** What is the same for every event of one request. */
export interface RequestContext {
  projectId: number;
  ip: string | null;
  /** Receive time, epoch ms. */
  now: number;
  /** When the client sent the request (epoch ms), if it said so. */
  sentAt: number | undefined;
  /** The batch's `sent_at` as sent, when it was not a time and so was ignored: each event warns of it. */
  invalidSentAt?: string | undefined;
  historical: boolean;
  /** On `/engage` an event without a name is a Mixpanel-style profile update: it becomes `$identify`. */
  engage: boolean;
  /** Bus message size limit (Kafka's default `message.max.bytes`); a bigger event is refused with 413. */
  maxMessageBytes: number;
  /** The uuid of an event sent without one, by its place in the request (`requestUuids`). */
  eventUuid: (attrPrefix: string) => string;
}

/** A request's context with what its events share computed once: the receive time as text, the message writer. */
export interface PreparedContext extends RequestContext {
  nowIso: string;
  writer: CapturedEventWriter;
}

export function prepareContext(context: RequestContext): PreparedContext {
  const nowIso = isoTimestamp(context.now);
  const sent_at = context.sentAt === undefined ? null : isoTimestamp(context.sentAt);
  const writer = new CapturedEventWriter({ team_id: context.projectId, ip: context.ip, now: nowIso, sent_at, historical: context.historical });
  return { ...context, nowIso, writer };
}

export function toBusMessage(raw: RawEvent, attrPrefix: string, context: PreparedContext): OutgoingMessage {
  const name = eventName(raw, attrPrefix, context.engage);
  const properties = raw.properties ?? {};
  const rawDistinctId = raw.distinct_id ?? raw.$distinct_id ?? properties.distinct_id;
  if (exceedsJsonDepth(rawDistinctId)) throw captureError.tooDeep(`${attrPrefix}distinct_id`);
  const distinctId = distinctIdOf(rawDistinctId);
  if (distinctId === undefined) throw captureError.missingDistinctId(`${attrPrefix}distinct_id`);
  // posthog-js puts `$set`/`$set_once` at the top level of `$identify`; persons read them from properties,
  // and the top-level value wins a clash (PostHog `normalizeEvent`).
  if (raw.$set) properties.$set = { ...asObject(properties.$set), ...raw.$set };
  if (raw.$set_once) properties.$set_once = { ...asObject(properties.$set_once), ...raw.$set_once };
  if (properties.$ip === undefined && context.ip !== null) properties.$ip = context.ip;
  // After the folding above, which may put `$set` one level deeper: this is what ingestion checks too.
  if (exceedsJsonDepth(properties)) throw captureError.tooDeep(`${attrPrefix}properties`);

  const uuid = raw.uuid ? raw.uuid.toLowerCase() : context.eventUuid(attrPrefix);
  const ignoreSentAt = properties.$ignore_sent_at === true;
  const sentAt = ignoreSentAt ? undefined : context.sentAt;
  const invalidSentAt = ignoreSentAt ? undefined : context.invalidSentAt;
  const time = eventTimestamp({ timestamp: raw.timestamp, offset: raw.offset, sentAt, now: context.now });
  const timestamp = isoTimestamp(time.ms);
  const warnings =
    time.ignored || invalidSentAt !== undefined ? timestampWarnings(raw, time, { uuid, name, sentAt, invalidSentAt }, context.nowIso) : undefined;
  const value = context.writer.write({ uuid, event: name, distinct_id: distinctId, properties, timestamp }, warnings);
  if (value.length > context.maxMessageBytes) {
    const attr = attrPrefix === '' ? null : attrPrefix.slice(0, -2);
    const which = attr === null ? 'The event' : `Event ${attr}`;
    throw captureError.tooLarge(`${which} is ${value.length} bytes, above the limit of ${context.maxMessageBytes} bytes per event.`, attr);
  }
  return { key: capturedEventKey(context.projectId, distinctId), value };
}

/**
 * The warnings of a client time capture did not use, with the type names and detail keys of PostHog's
 * `parseEventTimestamp`, so that the project's ingestion warnings say why an event is stamped when it arrived.
 */
function timestampWarnings(
  raw: RawEvent,
  time: EventTime,
  event: { uuid: string; name: string; sentAt: number | undefined; invalidSentAt: string | undefined },
  nowIso: string,
): CapturedEventWarning[] {
  const warnings: CapturedEventWarning[] = [];
  if (event.invalidSentAt !== undefined) {
    warnings.push({
      type: 'ignored_invalid_timestamp',
      details: { eventUuid: event.uuid, field: 'sent_at', value: event.invalidSentAt, reason: 'invalid format' },
    });
  }
  const ignored = time.ignored;
  if (ignored?.reason === 'in_future') {
    warnings.push({
      type: 'event_timestamp_in_future',
      details: {
        timestamp: raw.timestamp ?? '',
        sentAt: event.sentAt === undefined ? '' : isoTimestamp(event.sentAt),
        offset: raw.offset ?? '',
        now: nowIso,
        result: timeText(ignored.result),
        eventUuid: event.uuid,
        eventName: event.name,
      },
    });
  } else if (ignored) {
    const reason = ignored.reason === 'invalid_format' ? 'invalid format' : 'out of bounds';
    warnings.push({ type: 'ignored_invalid_timestamp', details: { eventUuid: event.uuid, field: 'timestamp', value: raw.timestamp ?? '', reason } });
  }
  return warnings;
}

/** ISO 8601 when the time is one a Date can hold; a far-off `offset` can put it past that. */
function timeText(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString();
}

function eventName(raw: RawEvent, attrPrefix: string, engage: boolean): string {
  if (raw.event === undefined) {
    if (engage) return '$identify';
    throw captureError.missingEventName(`${attrPrefix}event`, 'Event submitted without an event name.');
  }
  if (raw.event === '') throw captureError.missingEventName(`${attrPrefix}event`, 'Event submitted with an empty event name.');
  return firstChars(raw.event.toWellFormed());
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
