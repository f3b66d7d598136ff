/**
 * What the PostHog SDKs send to capture (`/e`, `/batch`, `/i/v0/e`, …), after decoding.
 * Field list and aliases: PostHog's `RawEvent` and `RawRequest` (Rust capture), summarized in
 * docs/capture.md#body-shapes.
 *
 * The schemas check JSON types only. Rules that depend on the route or on several fields at once (an event
 * name is required except on `/engage`; `distinct_id` falls back to `properties.distinct_id`; one token per
 * request) are the capture service's, because their errors name PostHog's codes.
 */
import { ajv, schemaValidator } from './validate';

/** One event as a client sends it. Unknown top-level keys are allowed and dropped by capture. */
export interface RawEvent {
  event?: string;
  /** Any JSON value; capture stringifies it. `$distinct_id` is the Mixpanel-style alias `/engage` bodies use. */
  distinct_id?: unknown;
  $distinct_id?: unknown;
  /** Client-chosen event id; an empty string counts as missing. */
  uuid?: string | null;
  token?: string | null;
  $token?: string | null;
  api_key?: string | null;
  properties?: Record<string, unknown> | null;
  /** ISO 8601 (or another format capture's timestamp parser knows). */
  timestamp?: string | null;
  /** Milliseconds before `now` the event happened (posthog-js batches). Overrides `timestamp`. */
  offset?: number | null;
  $set?: Record<string, unknown> | null;
  $set_once?: Record<string, unknown> | null;
}

/** posthog-node, posthog-python and the newest posthog-js: `{api_key, batch, sent_at, historical_migration}`. */
export interface BatchBody {
  batch: RawEvent[];
  api_key?: string | null;
  token?: string | null;
  historical_migration?: boolean | null;
  /** ISO 8601 time the client sent the request, for clock-skew correction. */
  sent_at?: string | null;
}

/** The three JSON shapes capture accepts: one event, an array of events (posthog-js), a batch object. */
export type CaptureBody = RawEvent | RawEvent[] | BatchBody;

const nullableString = { type: ['string', 'null'] };
const nullableObject = { type: ['object', 'null'] };

// PostHog parses `uuid` with the uuid crate and answers 400 for anything else; "" means "none" (v0_request.rs).
const UUID_OR_EMPTY = '^(?:|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$';

export const rawEventSchema = {
  $id: 'https://plover.dev/schemas/capture/raw-event.json',
  type: 'object',
  properties: {
    event: { type: 'string' },
    distinct_id: {},
    $distinct_id: {},
    uuid: { type: ['string', 'null'], pattern: UUID_OR_EMPTY },
    token: nullableString,
    $token: nullableString,
    api_key: nullableString,
    properties: nullableObject,
    timestamp: nullableString,
    offset: { type: ['number', 'null'] },
    $set: nullableObject,
    $set_once: nullableObject,
  },
} as const;

export const batchBodySchema = {
  $id: 'https://plover.dev/schemas/capture/batch-body.json',
  type: 'object',
  required: ['batch'],
  properties: {
    batch: { type: 'array', items: { $ref: rawEventSchema.$id } },
    api_key: nullableString,
    token: nullableString,
    historical_migration: { type: ['boolean', 'null'] },
    sent_at: nullableString,
  },
} as const;

export const eventArraySchema = {
  $id: 'https://plover.dev/schemas/capture/event-array.json',
  type: 'array',
  items: { $ref: rawEventSchema.$id },
} as const;

ajv.addSchema(rawEventSchema);

/** Validators of the three body shapes; a failure names the first offending field (see `schemaValidator`). */
export const validateRawEvent = schemaValidator<RawEvent>(rawEventSchema.$id);
export const validateEventArray = schemaValidator<RawEvent[]>(eventArraySchema);
export const validateBatchBody = schemaValidator<BatchBody>(batchBodySchema);
