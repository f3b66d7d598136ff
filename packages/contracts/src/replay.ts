/**
 * The bus message capture produces for every `$snapshot` event it accepts on `/s/` (session replay), and the
 * replay consumer reads. One message holds one `$snapshot` event of the SDK: one session, one window, a list
 * of rrweb events kept exactly as the SDK sent them (compressed `cv` events included).
 *
 * Replay has its own topic and consumer group, so a flood of recordings never delays analytics events; the
 * key is `team_id:session_id`, so one session's batches land in one partition, in order.
 */
import { exceedsJsonDepth, MAX_JSON_DEPTH } from './json-depth';
import { ajv, schemaValidator, type Validation } from './validate';

export const REPLAY_TOPIC = 'session_recording_events';

/** A session or window id as posthog-js makes them (UUIDv7 text): at most 70 characters of `[A-Za-z0-9-]`. */
export const REPLAY_ID_PATTERN = '^[A-Za-z0-9-]{1,70}$';

export interface SnapshotMessage {
  /**
   * The `$snapshot` event's uuid (the SDK's, lowercased, or one capture generated). A redelivered message
   * carries the same uuid, which is how storage keeps a batch from counting twice.
   */
  uuid: string;
  /** The project's id (PostHog's wire name for a project is "team"). */
  team_id: number;
  /** Stringified like an event's distinct id (at most 200 characters). */
  distinct_id: string;
  session_id: string;
  /** `$window_id`; null when the SDK sent none (one window). */
  window_id: string | null;
  /** `$snapshot_source` (`web`, `mobile`); null when absent. */
  snapshot_source: string | null;
  /** `$lib` of the sending SDK (`web`, `posthog-ios`, …); null when absent. */
  snapshot_library: string | null;
  /** The rrweb events (`$snapshot_data`), at least one, each an object. */
  events: Record<string, unknown>[];
  /** When capture received the request (ISO 8601). */
  now: string;
  /** When the client says it sent the request (ISO 8601), if it said so. */
  sent_at: string | null;
}

export const snapshotMessageSchema = {
  $id: 'https://plover.dev/schemas/bus/snapshot-message.json',
  type: 'object',
  required: ['uuid', 'team_id', 'distinct_id', 'session_id', 'window_id', 'snapshot_source', 'snapshot_library', 'events', 'now', 'sent_at'],
  properties: {
    uuid: { type: 'string', minLength: 1 },
    team_id: { type: 'integer' },
    distinct_id: { type: 'string', minLength: 1, maxLength: 200 },
    session_id: { type: 'string', pattern: REPLAY_ID_PATTERN },
    window_id: { type: ['string', 'null'], maxLength: 200 },
    snapshot_source: { type: ['string', 'null'] },
    snapshot_library: { type: ['string', 'null'] },
    events: { type: 'array', minItems: 1, items: { type: 'object' } },
    now: { type: 'string' },
    sent_at: { type: ['string', 'null'] },
  },
} as const;

ajv.addSchema(snapshotMessageSchema);

export const validateSnapshotMessage = schemaValidator<SnapshotMessage>(snapshotMessageSchema.$id);

/**
 * Reads one message value from the replay topic, checked against the schema and against MAX_JSON_DEPTH. Never
 * throws: a message that fails is for the dead-letter store, with the violation as reason.
 */
export function parseSnapshotMessage(value: Buffer | string): Validation<SnapshotMessage> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof value === 'string' ? value : value.toString('utf8'));
  } catch {
    return { ok: false, violation: { attr: null, detail: 'The message is not valid JSON.' } };
  }
  const message = validateSnapshotMessage(parsed);
  if (!message.ok) return message;
  if (exceedsJsonDepth(message.value.events)) {
    return { ok: false, violation: { attr: 'events', detail: `events nest deeper than ${MAX_JSON_DEPTH} levels.` } };
  }
  return message;
}

/** The bus key: one session's batches land in one partition, in order. */
export function snapshotMessageKey(projectId: number, sessionId: string): string {
  return `${projectId}:${sessionId}`;
}
