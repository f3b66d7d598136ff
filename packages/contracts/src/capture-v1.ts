/**
 * Capture v1 (`POST /i/v1/analytics/events`): what posthog-node 5.x and posthog-python send in
 * `POSTHOG_CAPTURE_MODE=v1`. Field list: PostHog's `v1::analytics::types::Batch` and `Event`
 * (docs/capture.md#capture-v1-iv1analyticsevents). As in PostHog, a field of the wrong JSON type fails the whole
 * batch; per-event rules (names, distinct ids, timestamps) are the capture service's, which drops only that event.
 */
import { schemaValidator } from './validate';

/** Typed stand-ins for the legacy `$`-prefixed properties; an unknown option is ignored. */
export interface V1EventOptions {
  cookieless_mode?: boolean | null;
  /** PostHog's name; posthog-node 5.70 sends `disable_skew_correction`, which means the same. */
  disable_skew_adjustment?: boolean | null;
  disable_skew_correction?: boolean | null;
  process_person_profile?: boolean | null;
  product_tour_id?: string | null;
}

export interface V1Event {
  event: string;
  uuid: string;
  distinct_id: string;
  /** RFC 3339. */
  timestamp: string;
  session_id?: string | null;
  window_id?: string | null;
  options: V1EventOptions;
  /** Must be an object for the event to be kept; anything else drops that event alone. */
  properties?: unknown;
}

export interface V1Batch {
  /** RFC 3339; the same on every attempt of one batch. */
  created_at: string;
  historical_migration?: boolean | null;
  capture_internal?: boolean | null;
  batch: V1Event[];
}

const nullableBoolean = { type: ['boolean', 'null'] };

export const v1BatchSchema = {
  $id: 'https://plover.dev/schemas/capture/v1-batch.json',
  type: 'object',
  required: ['created_at', 'batch'],
  properties: {
    created_at: { type: 'string' },
    historical_migration: nullableBoolean,
    capture_internal: nullableBoolean,
    batch: {
      type: 'array',
      items: {
        type: 'object',
        required: ['event', 'uuid', 'distinct_id', 'timestamp', 'options'],
        properties: {
          event: { type: 'string' },
          uuid: { type: 'string' },
          distinct_id: { type: 'string' },
          timestamp: { type: 'string' },
          session_id: { type: ['string', 'null'] },
          window_id: { type: ['string', 'null'] },
          options: {
            type: 'object',
            properties: {
              cookieless_mode: nullableBoolean,
              disable_skew_adjustment: nullableBoolean,
              disable_skew_correction: nullableBoolean,
              process_person_profile: nullableBoolean,
              product_tour_id: { type: ['string', 'null'] },
            },
          },
          properties: {},
        },
      },
    },
  },
} as const;

export const validateV1Batch = schemaValidator<V1Batch>(v1BatchSchema);
