/**
 * The bus message capture produces for every accepted event, and the ingestion consumer reads. Modelled on
 * PostHog's `CapturedEvent` (Rust `rust/common/types/src/event.rs`): routing fields at the top level so a
 * consumer can key, dedupe and drop without looking into the event, and the event itself as a JSON object in
 * `data`. PostHog (and Plover before) sends `data` as a JSON string holding the event: the string had to be
 * escaped by capture and parsed a second time by the consumer, and made the message twice the size of the event.
 * Messages written that way may still be on the bus (local log, Kafka topics), so the consumer reads both forms.
 */
import { wellFormedJson } from './identifiers';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from './json-depth';
import { ajv, schemaValidator, type Validation } from './validate';

/** Topics capture writes to. Historical imports have their own, consumed separately, so they never delay live events. */
export const CAPTURE_TOPICS = { events: 'events', historical: 'events_historical' } as const;

/** The event after capture's normalization; `CapturedEventMessage.data` holds it. */
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
  /**
   * The event. Capture writes it as a JSON object; messages written before that hold it as a JSON string
   * (`CapturedEvent` stringified), which `parseCapturedEventMessage` still reads. A parsed message always
   * holds the object.
   */
  data: CapturedEvent | string;
  /** Sent with `historical_migration: true`: an import, on the historical topic. */
  historical: boolean;
  /**
   * What capture changed in the event that the project should hear of (a client timestamp it could not use),
   * for ingestion to record as ingestion warnings. Absent when there is none, and in messages written before.
   */
  warnings?: CapturedEventWarning[];
}

/** An ingestion warning as capture raises it: PostHog's type name and detail keys. */
export interface CapturedEventWarning {
  type: string;
  details: Record<string, string | number | boolean | null>;
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

/** A message as `parseCapturedEventMessage` returns it: the event object in `data`, whichever form was on the bus. */
export type ParsedCapturedEventMessage = CapturedEventMessage & { data: CapturedEvent };

ajv.addSchema(capturedEventSchema);

/** The envelope with the event nested in `data`: the whole message is checked in one pass. */
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
    historical: { type: 'boolean' },
    warnings: {
      type: 'array',
      items: {
        type: 'object',
        required: ['type', 'details'],
        properties: {
          type: { type: 'string', minLength: 1 },
          // Scalars only: a detail is a value the client sent or one capture computed, never a tree to walk.
          details: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean', 'null'] } },
        },
      },
    },
    // Last, so that a broken envelope is reported before a broken event.
    data: { $ref: capturedEventSchema.$id },
  },
} as const;

export const validateCapturedEvent = schemaValidator<CapturedEvent>(capturedEventSchema.$id);
/** Checks a message whose `data` is the event object (a string `data` is for `parseCapturedEventMessage` to parse first). */
export const validateCapturedEventMessage = schemaValidator<ParsedCapturedEventMessage>(capturedEventMessageSchema);

/**
 * Reads one message value from the bus: the envelope and the event inside it, checked against the schema in
 * one pass, and the event's properties against MAX_JSON_DEPTH. `data` may be the event (as capture writes it)
 * or the event as a JSON string (as it was written before); the message returned holds the event object in
 * `data` either way. Never throws: a message that fails is for the dead-letter store, with the violation as
 * reason (one inside the event is named `data__…`).
 */
export function parseCapturedEventMessage(value: Buffer | string): Validation<{ message: ParsedCapturedEventMessage; event: CapturedEvent }> {
  const parsed = parseJson(value);
  if (typeof (parsed as { data?: unknown } | undefined)?.data === 'string') {
    const holder = parsed as { data: unknown };
    holder.data = parseJson(holder.data as string);
    if (holder.data === undefined) return { ok: false, violation: { attr: 'data', detail: 'data is not valid JSON.' } };
  }
  const message = validateCapturedEventMessage(parsed);
  if (!message.ok) return message;
  if (exceedsJsonDepth(message.value.data.properties)) {
    return { ok: false, violation: { attr: 'data__properties', detail: `data__properties nests deeper than ${MAX_JSON_DEPTH} levels.` } };
  }
  return { ok: true, value: { message: message.value, event: message.value.data } };
}

function parseJson(value: Buffer | string): unknown {
  try {
    return JSON.parse(typeof value === 'string' ? value : value.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The fields of a message that are the same for every event of one capture request. */
export type CapturedEventEnvelope = Pick<CapturedEventMessage, 'team_id' | 'ip' | 'now' | 'sent_at' | 'historical'>;

/**
 * Writes the messages of one capture request, as `parseCapturedEventMessage` reads them (the event object in
 * `data`). Written by hand rather than by one JSON.stringify of the message: the envelope's fields are
 * serialized once per request, and per event only its strings and its properties go through JSON.stringify.
 * Unpaired surrogates in the properties become U+FFFD, so the message is well-formed UTF-8.
 */
export class CapturedEventWriter {
  private readonly teamId: string;
  private readonly envelope: string;
  private readonly historical: string;

  constructor(envelope: CapturedEventEnvelope) {
    this.envelope = `"ip":${JSON.stringify(envelope.ip)},"now":${JSON.stringify(envelope.now)},"sent_at":${JSON.stringify(envelope.sent_at)}`;
    this.teamId = String(envelope.team_id);
    this.historical = String(envelope.historical);
  }

  /** One message's bytes; `warnings` is left out when there are none. */
  write(event: CapturedEvent, warnings?: readonly CapturedEventWarning[]): Buffer {
    const uuid = JSON.stringify(event.uuid);
    const distinctId = JSON.stringify(event.distinct_id);
    return Buffer.from(
      `{"uuid":${uuid},"team_id":${this.teamId},"distinct_id":${distinctId},${this.envelope},` +
        `"data":{"uuid":${uuid},"event":${JSON.stringify(event.event)},"distinct_id":${distinctId},` +
        `"properties":${wellFormedJson(JSON.stringify(event.properties))},"timestamp":${JSON.stringify(event.timestamp)}},"historical":${this.historical}` +
        `${warnings && warnings.length > 0 ? `,"warnings":${wellFormedJson(JSON.stringify(warnings))}` : ''}}`,
    );
  }
}

/** The bus key: one person's events land in one partition and are processed in order. */
export function capturedEventKey(projectId: number, distinctId: string): string {
  return `${projectId}:${distinctId}`;
}
