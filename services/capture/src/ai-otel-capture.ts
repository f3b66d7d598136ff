/**
 * `POST /i/v0/ai/otel`: OTLP/HTTP trace exports from posthog-python's `PostHogSpanProcessor`/`PostHogTraceExporter`
 * (protobuf) and @posthog/ai's (JSON), the project token in `Authorization: Bearer`. PostHog's checks and limits in
 * its order (`rust/capture/src/otel/mod.rs`); the AI spans become events (`ai-otel.ts`) produced to the events topic
 * like `/batch/`'s, and the answer is OTLP's empty success `{}` once they are durable. The rules:
 * docs/llm-analytics.md#opentelemetry.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { ProjectByToken } from '@plover/accounts';
import type { OutgoingMessage } from '@plover/bus';
import { decodeContentEncoding, readBody, type DecompressionLease } from '@plover/http';
import type { Logger } from '@plover/core';
import { spansToEvents } from './ai-otel';
import { captureError } from './errors';
import { prepareContext, toBusMessage } from './normalize';
import { countSpans, decodeTraceRequest, otlpFormat } from './otlp-traces';
import { bearerToken, checkTokenShape } from './request';
import { requestUuids } from './uuids';

const MIB = 1024 * 1024;

/** PostHog's limits on this route. */
export const AI_OTEL_LIMITS = {
  /** The body as received, and again after gzip. */
  bodyBytes: 4 * MIB,
  /** Spans in one request, AI or not, counted before any is converted: past it, 400. */
  rawSpans: 1000,
  /** AI spans (events) in one request: past it, 400. */
  aiSpans: 100,
  /** One span's event, its resource attributes included: a larger span is left out and the export still succeeds. */
  eventBytes: 900_000,
  /** The request's events together: past it, 413. */
  requestEventBytes: 8 * MIB,
};

export interface AiOtelCaptureDeps {
  topic: string;
  now: () => number;
  logger: Logger;
  lookUpProject(token: string): Promise<ProjectByToken>;
  admit(projectId: number, events: number): Promise<boolean>;
  clientIp(req: IncomingMessage): string | null;
  produce(topic: string, messages: OutgoingMessage[]): Promise<void>;
  /** Counts the spans left out for their size. */
  onShed(spans: number): void;
}

/** Resolves with the number of events produced once they are durable; throws capture's errors otherwise. */
export function aiOtelCapture(deps: AiOtelCaptureDeps): (req: IncomingMessage, lease: DecompressionLease) => Promise<number> {
  return async (req, lease) => {
    const now = deps.now();
    const body = await readBody(req, AI_OTEL_LIMITS.bodyBytes, captureError);
    if (body.length === 0) throw captureError.emptyPayload();
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) throw captureError.noToken();
    const project = await deps.lookUpProject(checkTokenShape(token));
    const format = otlpFormat(req.headers['content-type']);
    if (format === undefined) throw captureError.unsupportedContentType(req.headers['content-type'] ?? 'none');
    const bytes = await decodeContentEncoding(body, req.headers['content-encoding'], AI_OTEL_LIMITS.bodyBytes, captureError, lease);
    const request = decodeTraceRequest(bytes, format);

    const rawSpans = countSpans(request);
    if (rawSpans > AI_OTEL_LIMITS.rawSpans) throw captureError.parsing(`Too many spans: ${rawSpans} exceeds limit of ${AI_OTEL_LIMITS.rawSpans}`);
    const spans = spansToEvents(request, randomUUID());
    if (spans.length > AI_OTEL_LIMITS.aiSpans) throw captureError.parsing(`Too many AI spans: ${spans.length} exceeds limit of ${AI_OTEL_LIMITS.aiSpans}`);

    // Measured on the attributes, before any event is serialized, so a large resource is not written out once per span.
    let total = 0;
    const kept = spans.filter(({ at, bytes: size }) => {
      if (size > AI_OTEL_LIMITS.eventBytes) {
        deps.logger.warn({ projectId: project.id, span: at, bytes: size, limit: AI_OTEL_LIMITS.eventBytes }, 'OTel span left out: its event is too large');
        return false;
      }
      total += size;
      if (total > AI_OTEL_LIMITS.requestEventBytes) {
        throw captureError.tooLarge(`The request's AI events are more than ${AI_OTEL_LIMITS.requestEventBytes} bytes together.`);
      }
      return true;
    });
    if (kept.length < spans.length) deps.onShed(spans.length - kept.length);
    if (kept.length === 0) return 0;
    if (!(await deps.admit(project.id, kept.length))) throw captureError.rateLimited();

    const context = prepareContext({
      projectId: project.id,
      ip: deps.clientIp(req),
      now,
      sentAt: undefined,
      historical: false,
      engage: false,
      maxMessageBytes: AI_OTEL_LIMITS.eventBytes + 64 * 1024,
      // A retried export sends the same bytes: its events get the uuids they got the first time.
      eventUuid: requestUuids(project.id, deps.topic, bytes),
    });
    const messages = kept.map(({ raw, at }) => toBusMessage(raw, `${at}__`, context));
    await deps.produce(deps.topic, messages);
    return messages.length;
  };
}
