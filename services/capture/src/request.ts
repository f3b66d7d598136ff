/**
 * From decoded JSON to the request's events, its token and its routing: PostHog's `RawRequest` shapes and token
 * rules (docs/capture.md#body-shapes, docs/capture.md#token), validated against the schemas in packages/contracts.
 */
import { validateBatchBody, validateEventArray, validateRawEvent, type RawEvent, type Validation } from '@plover/contracts';
import { captureError } from './errors';
import { parseIsoTimestamp } from './timestamp';

export interface IndexedEvent {
  event: RawEvent;
  /** Prefix of this event's fields in error `attr`s: `batch__3__`, `3__` or `` (the body is the event). */
  attrPrefix: string;
}

export interface CaptureRequest {
  events: IndexedEvent[];
  /** The batch's own `api_key`/`token`; it overrides the events' tokens. */
  batchToken: string | undefined;
  /** `historical_migration: true`, read only from the batch shape as PostHog does. */
  historical: boolean;
  /** The batch's `sent_at` (epoch ms), when it has a valid one. */
  sentAt: number | undefined;
  /** The batch's `sent_at` as sent, when it is not an ISO 8601 time and so is ignored. */
  invalidSentAt: string | undefined;
}

/**
 * Events one request may carry. The body limits alone let a 2.8 MB gzip body expand to 475,000 small events, seconds
 * of the request thread; the SDKs send at most a few hundred per request (posthog-js and posthog-node batch 100 at
 * most, and halve a batch answered 413), `plover import` 1,000 by default. Counted before any event is validated.
 */
export const MAX_EVENTS_PER_REQUEST = 10_000;

/** Dropped without a word: posthog-js's performance events are not analytics (PostHog `RawRequest::events`). */
const DROPPED_EVENTS = new Set(['$performance_event']);

export function parseCaptureRequest(text: string): CaptureRequest {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw captureError.parsing(error instanceof Error ? error.message : 'invalid JSON');
  }
  checkEventCount(body);
  let request: CaptureRequest;
  if (Array.isArray(body)) {
    const events = valid(validateEventArray(body));
    request = {
      events: events.map((event, i) => ({ event, attrPrefix: `${i}__` })),
      batchToken: undefined,
      historical: false,
      sentAt: undefined,
      invalidSentAt: undefined,
    };
  } else if (isObject(body) && 'batch' in body) {
    const batch = valid(validateBatchBody(body));
    const sentAt = batch.sent_at ? parseIsoTimestamp(batch.sent_at) : undefined;
    request = {
      events: batch.batch.map((event, i) => ({ event, attrPrefix: `batch__${i}__` })),
      batchToken: batch.api_key ?? batch.token ?? undefined,
      historical: batch.historical_migration === true,
      sentAt,
      invalidSentAt: batch.sent_at && sentAt === undefined ? batch.sent_at : undefined,
    };
  } else if (isObject(body)) {
    request = {
      events: [{ event: valid(validateRawEvent(body)), attrPrefix: '' }],
      batchToken: undefined,
      historical: false,
      sentAt: undefined,
      invalidSentAt: undefined,
    };
  } else {
    throw captureError.parsing('expected an event, an array of events or a batch object');
  }
  if (request.events.length === 0) throw captureError.emptyBatch();
  request.events = request.events.filter(({ event }) => !(event.event !== undefined && DROPPED_EVENTS.has(event.event)));
  if (request.events.length === 0) throw captureError.emptyAfterFiltering();
  return request;
}

function checkEventCount(body: unknown): void {
  const events = Array.isArray(body) ? body : isObject(body) && Array.isArray(body.batch) ? (body.batch as unknown[]) : [];
  if (events.length > MAX_EVENTS_PER_REQUEST) {
    throw captureError.tooLarge(
      `The request holds ${events.length} events, above the limit of ${MAX_EVENTS_PER_REQUEST} per request: send them in smaller batches.`,
      Array.isArray(body) ? null : 'batch',
    );
  }
}

function valid<T>(validation: Validation<T>): T {
  if (validation.ok) return validation.value;
  throw captureError.invalidEvent(validation.violation.detail, validation.violation.attr);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/**
 * The one project token of the request: the batch's, else the one every event agrees on (`token`, `$token`,
 * `api_key`, then `properties.token`). PostHog `extract_and_verify_token` and `validate_token`.
 */
export function requestToken(request: CaptureRequest): string {
  let token = request.batchToken;
  if (token === undefined) {
    for (const { event } of request.events) {
      const own = eventToken(event);
      if (own === undefined) continue;
      if (token !== undefined && own !== token) throw captureError.mixedTokens();
      token = own;
    }
  }
  if (token === undefined) throw captureError.noToken();
  return checkTokenShape(token);
}

function eventToken(event: RawEvent): string | undefined {
  const token = event.token ?? event.$token ?? event.api_key ?? event.properties?.token;
  return typeof token === 'string' ? token : undefined;
}

/** PostHog's shape checks, before any lookup; a copied key's stray whitespace is forgiven. */
export function checkTokenShape(raw: string): string {
  const token = raw.trim();
  if (token === '') throw captureError.invalidToken('empty');
  if (token.length > 64) throw captureError.invalidToken('too_long');
  // eslint-disable-next-line no-control-regex -- the ASCII range, NUL included, is the point
  if (!/^[\x00-\x7f]*$/.test(token)) throw captureError.invalidToken('not_ascii');
  if (token.startsWith('phx_')) throw captureError.personalApiKey();
  if (token.includes('\0')) throw captureError.invalidToken('null_byte');
  return token;
}

/** The token of an `Authorization: Bearer …` header (the scheme in any case); undefined without one. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return authorization && /^bearer /i.test(authorization) ? authorization.slice(7) : undefined;
}
