/**
 * The bus message capture produces for every accepted event, and the ingestion consumer reads. Modelled on
 * PostHog's `CapturedEvent` (reference/posthog-capture-persons.md §1.7): routing fields at the top level so a
 * consumer can key, dedupe and drop without parsing the event, and the event itself as a JSON string.
 */
import { schemaValidator, type Validation } from './validate';

/** Topics capture writes to. Historical imports have their own, consumed separately, so they never delay live events. */
export const CAPTURE_TOPICS = { events: 'events', historical: 'events_historical' } as const;

/** The event after capture's normalization; `CapturedEventMessage.data` holds it as JSON. */
export interface CapturedEvent {
  /** The client's uuid (lowercased) or a UUIDv7 capture generated; events are deduplicated by it. */
  uuid: string;
  /** At most 200 characters. */
  event: string;
  /** Stringified, NUL replaced by U+FFFD, at most 200 characters. */
  distinct_id: string;
  /**
   * The client's properties, unchanged except: top-level `$set`/`$set_once` merged into `$set`/`$set_once`
   * (top level wins on a clash), and `$ip` set from the message's `ip` when the client sent none.
   */
  properties: Record<string, unknown>;
  /** When the event happened, clock-skew corrected (ISO 8601, UTC, milliseconds). */
  timestamp: string;
}

export interface CapturedEventMessage {
  uuid: string;
  /** The project's id (PostHog's wire name for a project is "team"). */
  team_id: number;
  distinct_id: string;
  /** The client's address (X-Forwarded-For when capture trusts its proxy); null when unknown. */
  ip: string | null;
  /** When capture received the request (ISO 8601). */
  now: string;
  /** When the client says it sent the request (ISO 8601), if it said so. */
  sent_at: string | null;
  /** `CapturedEvent` as JSON. */
  data: string;
  /** Sent with `historical_migration: true`: an import, on the historical topic. */
  historical: boolean;
}

export const capturedEventSchema = {
  $id: 'https://plover.dev/schemas/bus/captured-event.json',
  type: 'object',
  required: ['uuid', 'event', 'distinct_id', 'properties', 'timestamp'],
  properties: {
    uuid: { type: 'string' },
    event: { type: 'string', minLength: 1, maxLength: 200 },
    distinct_id: { type: 'string', minLength: 1, maxLength: 200 },
    properties: { type: 'object' },
    timestamp: { type: 'string' },
  },
} as const;

export const capturedEventMessageSchema = {
  $id: 'https://plover.dev/schemas/bus/captured-event-message.json',
  type: 'object',
  required: ['uuid', 'team_id', 'distinct_id', 'ip', 'now', 'sent_at', 'data', 'historical'],
  properties: {
    uuid: { type: 'string' },
    team_id: { type: 'integer' },
    distinct_id: { type: 'string', minLength: 1, maxLength: 200 },
    ip: { type: ['string', 'null'] },
    now: { type: 'string' },
    sent_at: { type: ['string', 'null'] },
    data: { type: 'string' },
    historical: { type: 'boolean' },
  },
} as const;

export const validateCapturedEvent = schemaValidator<CapturedEvent>(capturedEventSchema);
export const validateCapturedEventMessage = schemaValidator<CapturedEventMessage>(capturedEventMessageSchema);

/**
 * Reads one message value from the bus: the envelope and the event inside it, both checked against their
 * schemas. Never throws: a message that fails is for the dead-letter store, with the violation as reason.
 */
export function parseCapturedEventMessage(value: Buffer | string): Validation<{ message: CapturedEventMessage; event: CapturedEvent }> {
  const envelope = validateCapturedEventMessage(parseJson(value));
  if (!envelope.ok) return envelope;
  const event = validateCapturedEvent(parseJson(envelope.value.data));
  if (!event.ok) return { ok: false, violation: { ...event.violation, attr: event.violation.attr === null ? 'data' : `data__${event.violation.attr}` } };
  return { ok: true, value: { message: envelope.value, event: event.value } };
}

function parseJson(value: Buffer | string): unknown {
  try {
    return JSON.parse(typeof value === 'string' ? value : value.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The bus key: one person's events land in one partition and are processed in order. */
export function capturedEventKey(teamId: number, distinctId: string): string {
  return `${teamId}:${distinctId}`;
}
