/**
 * Session replay capture (`/s/`): the `$snapshot` events posthog-js's recorder sends, decoded like every other
 * capture payload, validated whole, and produced one bus message per event (`SnapshotMessage`) to the replay
 * topic. The rules and PostHog's behaviour behind them: docs/capture.md#session-replay-s.
 */
import type { IncomingMessage } from 'node:http';
import type { ProjectByToken } from '@plover/accounts';
import type { OutgoingMessage } from '@plover/bus';
import { distinctIdOf, exceedsJsonDepth, REPLAY_ID_PATTERN, snapshotMessageKey, wellFormedJson, type RawEvent, type SnapshotMessage } from '@plover/contracts';
import { queryString, readBody, type DecompressionLease } from '@plover/http';
import { decodePayload } from './decode';
import { captureError } from './errors';
import { parseCaptureRequest, requestToken, type IndexedEvent } from './request';
import { parseIsoTimestamp, sentAtFromQuery } from './timestamp';
import { requestUuids } from './uuids';

export interface ReplayCaptureDeps {
  topic: string;
  limits: {
    /** The body as received. */
    bodyBytes: number;
    /** The payload after decompression. */
    decompressedBytes: number;
    /** One bus message, i.e. one `$snapshot` event. */
    messageBytes: number;
  };
  /** Epoch ms. */
  now: () => number;
  lookUpProject(token: string): Promise<ProjectByToken>;
  /** Resolves once the bus has the messages durably; rejects with capture's 503 otherwise. */
  produce(topic: string, messages: OutgoingMessage[]): Promise<void>;
}

/** What is the same for every event of one request. */
interface ReplayContext {
  projectId: number;
  now: number;
  nowIso: string;
  /** The request's `sent_at` (batch body, else query), epoch ms; an event's own `sent_at` wins over it. */
  sentAt: number | undefined;
  maxMessageBytes: number;
  /** The uuid of an event sent without one, by its place in the request (`requestUuids`). */
  eventUuid: (attrPrefix: string) => string;
}

/** A session id as posthog-js makes them (PostHog refuses anything else since 2025). */
const SESSION_ID = new RegExp(REPLAY_ID_PATTERN);
/** The bound the bus contract puts on a window id. */
const MAX_WINDOW_ID_CHARS = 200;

/**
 * Captures one `/s/` request whose decompressed payload is charged to `lease`. Resolves with the number of
 * messages once the bus has them durably; the caller then answers 200.
 */
export function replayCapture(deps: ReplayCaptureDeps): (req: IncomingMessage, lease: DecompressionLease) => Promise<number> {
  const { limits } = deps;
  return async (req, lease) => {
    const now = deps.now();
    const query = new URLSearchParams(queryString(req.url));
    const body = await readBody(req, limits.bodyBytes, captureError);
    const text = await decodePayload(
      { query, body, contentType: req.headers['content-type'], contentEncoding: req.headers['content-encoding'], legacyEndpoint: false },
      limits.decompressedBytes,
      lease,
    );
    const request = parseCaptureRequest(text);
    const project = await deps.lookUpProject(requestToken(request));
    const messages = snapshotMessages(request.events, {
      projectId: project.id,
      now,
      nowIso: new Date(now).toISOString(),
      sentAt: request.sentAt ?? sentAtFromQuery(query.get('sent_at') ?? query.get('_')),
      maxMessageBytes: limits.messageBytes,
      eventUuid: requestUuids(project.id, deps.topic, text),
    });
    await deps.produce(deps.topic, messages);
    return messages.length;
  };
}

/**
 * One message per event, every event checked before any message is kept: a request with one bad event yields
 * nothing. An event whose `$snapshot_data` is an empty list has nothing to replay and yields no message.
 */
export function snapshotMessages(events: readonly IndexedEvent[], context: ReplayContext): OutgoingMessage[] {
  const messages: OutgoingMessage[] = [];
  for (const { event, attrPrefix } of events) {
    const message = snapshotMessage(event, attrPrefix, context);
    if (message) messages.push(message);
  }
  return messages;
}

function snapshotMessage(raw: RawEvent, attrPrefix: string, context: ReplayContext): OutgoingMessage | undefined {
  const properties = raw.properties ?? {};
  const rawDistinctId = raw.distinct_id ?? raw.$distinct_id ?? properties.distinct_id;
  if (exceedsJsonDepth(rawDistinctId)) throw captureError.tooDeep(`${attrPrefix}distinct_id`);
  const distinctId = distinctIdOf(rawDistinctId);
  if (distinctId === undefined) throw captureError.missingDistinctId(`${attrPrefix}distinct_id`);

  const sessionAttr = `${attrPrefix}properties__$session_id`;
  const sessionId = properties.$session_id;
  if (sessionId === undefined || sessionId === null) throw captureError.missingSessionId(sessionAttr);
  if (typeof sessionId !== 'string' || !SESSION_ID.test(sessionId)) throw captureError.invalidSessionId(sessionAttr);

  const windowId = properties.$window_id ?? null;
  if (windowId !== null && (typeof windowId !== 'string' || windowId.length > MAX_WINDOW_ID_CHARS)) {
    throw captureError.invalidEvent(`$window_id must be a string of at most ${MAX_WINDOW_ID_CHARS} characters.`, `${attrPrefix}properties__$window_id`);
  }

  const events = snapshotItems(properties.$snapshot_data, `${attrPrefix}properties__$snapshot_data`);
  if (events.length === 0) return undefined;

  const uuid = raw.uuid ? raw.uuid.toLowerCase() : context.eventUuid(attrPrefix);
  const sentAt = eventSentAt(raw) ?? context.sentAt;
  const message: SnapshotMessage = {
    uuid,
    team_id: context.projectId,
    distinct_id: distinctId,
    session_id: sessionId,
    window_id: windowId,
    snapshot_source: stringOrNull(properties.$snapshot_source),
    snapshot_library: stringOrNull(properties.$lib),
    events,
    now: context.nowIso,
    sent_at: sentAt === undefined ? null : new Date(sentAt).toISOString(),
  };
  const value = Buffer.from(wellFormedJson(JSON.stringify(message)));
  if (value.length > context.maxMessageBytes) {
    const attr = attrPrefix === '' ? null : attrPrefix.slice(0, -2);
    const which = attr === null ? 'The snapshot event' : `Snapshot event ${attr}`;
    throw captureError.tooLarge(`${which} is ${value.length} bytes, above the limit of ${context.maxMessageBytes} bytes per event.`, attr);
  }
  return { key: snapshotMessageKey(context.projectId, sessionId), value };
}

/**
 * `$snapshot_data`: a list of rrweb events, or one object (the recorder of 2022 and before sent one chunk
 * object). Each item must be an object: storage reads every one as an rrweb event.
 */
function snapshotItems(data: unknown, attr: string): Record<string, unknown>[] {
  if (Array.isArray(data)) {
    data.forEach((item, i) => {
      if (typeof item !== 'object' || item === null || Array.isArray(item))
        throw captureError.invalidEvent('Each snapshot item must be an object.', `${attr}__${i}`);
    });
    if (exceedsJsonDepth(data)) throw captureError.tooDeep(attr);
    return data as Record<string, unknown>[];
  }
  if (typeof data === 'object' && data !== null) {
    if (exceedsJsonDepth(data)) throw captureError.tooDeep(attr);
    return [data as Record<string, unknown>];
  }
  throw captureError.missingSnapshotData(attr);
}

/** posthog-js 1.407.4 and later put `sent_at` (ISO 8601) on each event instead of the query. */
function eventSentAt(raw: RawEvent): number | undefined {
  const sentAt = (raw as { sent_at?: unknown }).sent_at;
  return typeof sentAt === 'string' ? parseIsoTimestamp(sentAt) : undefined;
}

function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}
