/**
 * Capture v1 (`POST /i/v1/analytics/events`): posthog-node's and posthog-python's `POSTHOG_CAPTURE_MODE=v1`
 * protocol. The token is a Bearer header, the request carries its id, attempt and clock in headers, and the answer
 * to an accepted batch is per event: `ok`, or `drop` with the reason, so one bad event no longer costs the batch.
 * PostHog's behaviour behind each rule: docs/capture.md#capture-v1-iv1analyticsevents.
 */
import type { IncomingMessage } from 'node:http';
import type { ProjectByToken } from '@plover/accounts';
import type { OutgoingMessage } from '@plover/bus';
import { validateV1Batch, type RawEvent, type V1Batch, type V1Event } from '@plover/contracts';
import { ApiError } from '@plover/core';
import { isoTimestamp } from '@plover/core/utc-text';
import { decodeContentEncoding, readBody, type DecompressionLease } from '@plover/http';
import { captureError } from './errors';
import { prepareContext, toBusMessage } from './normalize';
import { requestUuids } from './uuids';
import { checkTokenShape } from './request';
import { MAX_FUTURE_MS } from './timestamp';

export interface V1CaptureDeps {
  topics: { events: string; historical: string };
  limits: {
    /** The body as received (PostHog's v1: 10 MiB). */
    bodyBytes: number;
    /** After decompression. */
    decompressedBytes: number;
    /** One bus message. */
    eventBytes: number;
  };
  /** Epoch ms. */
  now: () => number;
  lookUpProject(token: string): Promise<ProjectByToken>;
  /** The project's event rate limit: false when the request's events are over it. */
  admit(projectId: number, events: number): Promise<boolean>;
  clientIp(req: IncomingMessage): string | null;
  /** Resolves once the bus has the messages durably; rejects with capture's 503 otherwise. */
  produce(topic: string, messages: OutgoingMessage[]): Promise<void>;
}

export interface V1EventResult {
  result: 'ok' | 'drop';
  details?: string;
}

/** The 200 body: one result per event uuid of the batch. */
export interface V1Response {
  results: Record<string, V1EventResult>;
}

const REQUIRED_HEADERS = [
  'authorization',
  'content-type',
  'posthog-sdk-info',
  'posthog-attempt',
  'posthog-request-id',
  'posthog-request-timestamp',
  'user-agent',
];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;
const MAX_NAME_LENGTH = 200;
const MAX_DISTINCT_ID_LENGTH = 200;
/** Values a buggy or misconfigured SDK sends as a distinct id; compared trimmed and case-insensitively (PostHog's list). */
const ILLEGAL_DISTINCT_IDS = new Set([
  '0',
  '00000000-0000-0000-0000-000000000000',
  '[object object]',
  'anonymous',
  'anonymous-user',
  'backend',
  'distinct_id',
  'distinctid',
  'email',
  'false',
  'guest',
  'id',
  'nan',
  'none',
  'not_authenticated',
  'null',
  'system',
  'true',
  'undefined',
  'user',
]);

interface V1Headers {
  token: string;
  /** `name/version` of the SDK, which v1 events no longer carry in `$lib`/`$lib_version`. */
  sdk: { lib: string; version: string | undefined };
  /** The client's clock when it sent this attempt, epoch ms. */
  clientTime: number;
}

export function v1Capture(deps: V1CaptureDeps): (req: IncomingMessage, lease: DecompressionLease) => Promise<V1Response> {
  return async (req, lease) => {
    const now = deps.now();
    const headers = readHeaders(req);
    const body = await readBody(req, deps.limits.bodyBytes, captureError);
    const bytes = await decodeContentEncoding(body, req.headers['content-encoding'], deps.limits.decompressedBytes, captureError, lease);
    const batch = parseBatch(bytes);
    const project = await deps.lookUpProject(headers.token);
    if (!(await deps.admit(project.id, batch.batch.length))) throw captureError.rateLimited();

    const ip = deps.clientIp(req);
    const historical = batch.historical_migration === true;
    const topic = historical ? deps.topics.historical : deps.topics.events;
    const context = prepareContext({
      projectId: project.id,
      ip,
      now,
      // The event times are corrected here with the request's clock header; nothing more to correct later.
      sentAt: undefined,
      historical,
      engage: false,
      maxMessageBytes: deps.limits.eventBytes,
      // Every event has its own uuid here (one without is refused), so this is never asked.
      eventUuid: requestUuids(project.id, topic, bytes),
    });
    const results: Record<string, V1EventResult> = {};
    const messages: OutgoingMessage[] = [];
    batch.batch.forEach((event, i) => {
      const reason = invalidEvent(event);
      if (reason !== undefined) {
        results[event.uuid] = { result: 'drop', details: reason };
        return;
      }
      try {
        messages.push(toBusMessage(toRawEvent(event, headers, now), `batch__${i}__`, context));
        results[event.uuid] = { result: 'ok' };
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        results[event.uuid] = { result: 'drop', details: error.code };
      }
    });
    if (messages.length > 0) await deps.produce(topic, messages);
    return { results };
  };
}

/** PostHog checks every header before it reads the body, and names every missing one at once. */
function readHeaders(req: IncomingMessage): V1Headers {
  const missing = REQUIRED_HEADERS.filter((name) => req.headers[name] === undefined);
  if (missing.length > 0) throw captureError.missingHeaders(missing);
  const header = (name: string) => String(req.headers[name]);

  const authorization = header('authorization');
  if (!/^bearer /i.test(authorization) || authorization.length <= 7)
    throw captureError.invalidHeader('Authorization must use the Bearer scheme', 'authorization');
  const token = checkTokenShape(authorization.slice(7));

  const contentType = header('content-type');
  if (contentType.split(';', 1)[0]!.trim().toLowerCase() !== 'application/json') throw captureError.unsupportedContentType(contentType);
  if (!UUID.test(header('posthog-request-id'))) throw captureError.invalidHeader('PostHog-Request-Id is not a UUID', 'posthog-request-id');
  if (!/^[1-9]\d{0,8}$/.test(header('posthog-attempt'))) throw captureError.invalidHeader('PostHog-Attempt must be a positive integer', 'posthog-attempt');
  const clientTime = rfc3339(header('posthog-request-timestamp'));
  if (clientTime === undefined) throw captureError.invalidHeader('PostHog-Request-Timestamp is not RFC 3339', 'posthog-request-timestamp');

  const sdkInfo = header('posthog-sdk-info');
  const slash = sdkInfo.lastIndexOf('/');
  const sdk = slash > 0 ? { lib: sdkInfo.slice(0, slash), version: sdkInfo.slice(slash + 1) } : { lib: sdkInfo, version: undefined };
  return { token, sdk, clientTime };
}

/** A batch PostHog would deserialize and accept as a whole; anything else refuses the request (400). */
function parseBatch(bytes: Buffer): V1Batch {
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw captureError.parsing(error instanceof Error ? error.message : 'invalid JSON');
  }
  const validation = validateV1Batch(body);
  if (!validation.ok) throw captureError.parsing(`${validation.violation.attr ?? 'body'}: ${validation.violation.detail}`);
  const batch = validation.value;
  if (batch.batch.length === 0) throw captureError.emptyBatch();
  if (rfc3339(batch.created_at) === undefined) throw captureError.invalidBatch(`created_at is not valid RFC 3339: ${batch.created_at}`);
  const seen = new Set<string>();
  batch.batch.forEach((event, i) => {
    const uuid = event.uuid.trim().toLowerCase();
    if (!UUID.test(uuid)) throw captureError.missingEventUuid(`batch__${i}__uuid`);
    if (seen.has(uuid)) throw captureError.duplicateEventUuid(`batch__${i}__uuid`, event.uuid);
    seen.add(uuid);
  });
  return batch;
}

/** Why PostHog drops this one event and keeps the rest of the batch; undefined when it is kept. */
function invalidEvent(event: V1Event): string | undefined {
  if (event.event === '$performance_event') return 'dropped_performance_event';
  if (event.event === '') return 'missing_event_name';
  if (event.event.length > MAX_NAME_LENGTH) return 'event_name_too_long';
  if (event.distinct_id === '') return 'missing_distinct_id';
  if (event.distinct_id.length > MAX_DISTINCT_ID_LENGTH) return 'distinct_id_too_large';
  if (ILLEGAL_DISTINCT_IDS.has(event.distinct_id.trim().toLowerCase())) return 'invalid_distinct_id';
  if (rfc3339(event.timestamp) === undefined) return 'invalid_event_timestamp';
  if (event.properties !== undefined && (typeof event.properties !== 'object' || event.properties === null || Array.isArray(event.properties))) {
    return 'malformed_event_properties';
  }
  return undefined;
}

/**
 * The event in capture's raw shape: the typed options and session fields back as the `$` properties ingestion reads,
 * `$lib`/`$lib_version` from the SDK header, and the time corrected by the client's clock error (the request's
 * timestamp header against our clock) unless the event asks not to be; more than 23 h ahead becomes now.
 */
function toRawEvent(event: V1Event, headers: V1Headers, now: number): RawEvent {
  const properties = { ...(event.properties as Record<string, unknown> | undefined) };
  const { options } = event;
  const restore: [string, unknown][] = [
    ['$session_id', event.session_id],
    ['$window_id', event.window_id],
    ['$cookieless_mode', options.cookieless_mode],
    ['$ignore_sent_at', options.disable_skew_adjustment ?? options.disable_skew_correction],
    ['$product_tour_id', options.product_tour_id],
    ['$process_person_profile', options.process_person_profile],
    ['$lib', headers.sdk.lib],
    ['$lib_version', headers.sdk.version],
  ];
  for (const [key, value] of restore) if (value !== undefined && value !== null && properties[key] === undefined) properties[key] = value;

  const sent = rfc3339(event.timestamp)!;
  let time = properties.$ignore_sent_at === true ? sent : sent - (headers.clientTime - now);
  if (time - now > MAX_FUTURE_MS) time = now;
  return { event: event.event, distinct_id: event.distinct_id, uuid: event.uuid.trim(), properties, timestamp: isoTimestamp(time) };
}

/** Epoch ms of an RFC 3339 time (what PostHog's `parse_from_rfc3339` takes), else undefined. */
function rfc3339(value: string): number | undefined {
  if (!RFC3339.test(value)) return undefined;
  const ms = Date.parse(value.toUpperCase().replace(' ', 'T'));
  return Number.isNaN(ms) ? undefined : ms;
}
