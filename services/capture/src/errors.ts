import { MAX_JSON_DEPTH } from '@plover/contracts';
import { ApiError } from '@plover/core';

/**
 * Capture's errors, in our `{type, code, detail, attr}` shape with the codes of PostHog's newest capture
 * (Rust `rust/capture/src/api.rs`), so that a client's logs read the same on either server. Every token problem
 * is a 401, where PostHog's newest capture answers 403 for a bad or unknown token (docs/capture.md#token).
 */
export const captureError = {
  emptyPayload: () => ApiError.validation('Request missing data payload.', null, 'empty_payload'),
  decoding: (detail: string) => ApiError.validation(`Failed to decode request: ${detail}.`, null, 'request_decoding_error'),
  parsing: (detail: string) => ApiError.validation(`Failed to parse request: ${detail}`, null, 'request_parsing_error'),
  invalidEvent: (detail: string, attr: string | null) => ApiError.validation(detail, attr, 'invalid_event'),
  // PostHog answers a request past serde_json's recursion limit with request_parsing_error too.
  tooDeep: (attr: string) => ApiError.validation(`Failed to parse request: ${attr} nests deeper than ${MAX_JSON_DEPTH} levels.`, attr, 'request_parsing_error'),
  emptyBatch: () => ApiError.validation('Request holds no event.', null, 'empty_batch'),
  emptyAfterFiltering: () => ApiError.validation('Payload empty after filtering invalid event types.', null, 'empty_payload_filtered'),
  missingEventName: (attr: string, detail: string) => ApiError.validation(detail, attr, 'missing_event_name'),
  missingDistinctId: (attr: string) => ApiError.validation('Event submitted without a distinct_id.', attr, 'missing_distinct_id'),
  // Session replay (`/s/`): PostHog's messages, with codes named after its error variants.
  missingSessionId: (attr: string) => ApiError.validation('Replay event submitted without session id.', attr, 'missing_session_id'),
  invalidSessionId: (attr: string) => ApiError.validation('Replay event has invalid session id.', attr, 'invalid_session_id'),
  missingSnapshotData: (attr: string) => ApiError.validation('Replay event submitted without snapshot data.', attr, 'missing_snapshot_data'),
  tooLarge: (detail: string, attr: string | null = null) => new ApiError(413, 'validation_error', 'payload_too_large', detail, attr),
  noToken: () => ApiError.unauthenticated('Event submitted without an api_key.', 'ingest_key_required'),
  mixedTokens: () => ApiError.validation('Batch submitted with inconsistent api_key values.', null, 'unroutable_events'),
  invalidToken: (reason: string) => ApiError.unauthenticated(`API key is not valid: ${reason}.`, 'ingest_key_unknown'),
  personalApiKey: () =>
    ApiError.unauthenticated(
      'API key is not valid: personal_api_key. Events take the project API key (phc_…), not a personal API key (phx_…).',
      'ingest_key_unknown',
    ),
  unknownToken: () => ApiError.unauthenticated('API key does not resolve to a known project.', 'ingest_key_unknown'),
  rateLimited: () => new ApiError(429, 'throttled', 'rate_limited', 'Rate limit exceeded: too many events for this project.'),
  unavailable: () => ApiError.unavailable('Transient error, please retry.'),
  // Capture v1 (`/i/v1/analytics/events`): the codes of PostHog's `v1::Error`.
  missingHeaders: (names: string[]) => ApiError.validation(`Request is missing required headers: ${names.join(', ')}.`, null, 'missing_required_headers'),
  invalidHeader: (detail: string, header: string) => ApiError.validation(`Invalid header value: ${detail}.`, header, 'invalid_header_value'),
  unsupportedContentType: (type: string) => new ApiError(415, 'validation_error', 'unsupported_content_type', `Unsupported content type: ${type}.`),
  unsupportedEncoding: (encoding: string) => new ApiError(415, 'validation_error', 'unsupported_encoding', `Unsupported content encoding: ${encoding}.`),
  invalidBatch: (detail: string) => ApiError.validation(`Invalid batch: ${detail}.`, 'created_at', 'invalid_batch'),
  missingEventUuid: (attr: string) => ApiError.validation('Event submitted without a uuid.', attr, 'missing_event_uuid'),
  duplicateEventUuid: (attr: string, uuid: string) => ApiError.validation(`Duplicate event uuid: ${uuid}.`, attr, 'duplicate_event_uuid'),
};
