/**
 * OpenTelemetry logs and metrics (`/i/v1/logs`, `/i/v1/metrics`): what posthog-js (console-log capture, when remote
 * config turns it on), posthog-node's `captureLog`, posthog-python's metrics and any OTLP/HTTP log exporter post,
 * with the project token in `?token=` or `Authorization: Bearer`. Log records are produced to the logs topic, one
 * message each, and the answer is OTLP's empty success once they are durable; metrics are checked and acknowledged
 * as PostHog does for a project without that product, and not stored (docs/capture.md#logs-and-metrics).
 */
import type { IncomingMessage } from 'node:http';
import type { ProjectByToken } from '@plover/accounts';
import type { OutgoingMessage } from '@plover/bus';
import { logRecordMessageKey, type LogRecordMessage } from '@plover/contracts';
import { decodeContentEncoding, queryString, readBody, type DecompressionLease } from '@plover/http';
import { decodePayload } from './decode';
import { captureError } from './errors';
import { decodeLogsRequest, otlpFormat, SEVERITY_NAMES, type OtlpLogRecord } from './otlp-traces';
import { bearerToken, checkTokenShape, MAX_EVENTS_PER_REQUEST } from './request';
import { requestUuids } from './uuids';

export type OtlpSignal = 'logs' | 'metrics';

export interface OtlpCaptureDeps {
  /** The logs topic. */
  topic: string;
  limits: { bodyBytes: number; decompressedBytes: number; eventBytes: number };
  now: () => number;
  lookUpProject(token: string): Promise<ProjectByToken>;
  produce(topic: string, messages: OutgoingMessage[]): Promise<void>;
}

/** Where capture finds a record's session and person among its attributes (then its resource's), first found wins. */
const SESSION_KEYS = ['sessionId', '$session_id', 'session.id'];
const DISTINCT_ID_KEYS = ['posthogDistinctId', 'posthog.distinct_id', 'distinct_id', '$distinct_id'];
/** What the session, person and service columns keep of a longer value. */
const MAX_ID_LENGTH = 200;
const MAX_SERVICE_LENGTH = 1000;
/** Unset (0) or past the year 2299 (ClickHouse's DateTime64 range): the record's time is taken as capture's receive time. */
const MAX_NANOS = BigInt(Date.UTC(2299, 11, 31)) * 1_000_000n;

/** Resolves with the number of log records stored (0 for metrics) once they are durable; throws capture's errors otherwise. */
export function otlpCapture(deps: OtlpCaptureDeps): (req: IncomingMessage, signal: OtlpSignal, lease: DecompressionLease) => Promise<number> {
  return async (req, signal, lease) => {
    const now = deps.now();
    const query = new URLSearchParams(queryString(req.url));
    const token = query.get('token') ?? bearerToken(req.headers.authorization);
    if (!token) throw captureError.noToken();
    const project = await deps.lookUpProject(checkTokenShape(token));
    const protobuf = otlpFormat(req.headers['content-type']) === 'protobuf';
    if (protobuf && signal === 'metrics') throw captureError.unsupportedContentType(req.headers['content-type'] ?? 'none');
    const body = await readBody(req, deps.limits.bodyBytes, captureError);
    // Protobuf is compressed by Content-Encoding only; JSON as posthog-js sends it too (gzip as text/plain without a
    // hint, read by its magic bytes). Either way inflating stops at the limit.
    const bytes = protobuf
      ? await decodeContentEncoding(body, req.headers['content-encoding'], deps.limits.decompressedBytes, captureError, lease)
      : await decodePayload(
          { query, body, contentType: req.headers['content-type'], contentEncoding: req.headers['content-encoding'], legacyEndpoint: false },
          deps.limits.decompressedBytes,
          lease,
        );
    if (signal === 'metrics') {
      checkMetricsRequest(bytes as string);
      return 0;
    }
    const resources = decodeLogsRequest(bytes, protobuf ? 'protobuf' : 'json');
    const count = resources.reduce((sum, resource) => sum + resource.records.length, 0);
    if (count > MAX_EVENTS_PER_REQUEST) throw captureError.tooLarge(`The request holds more than ${MAX_EVENTS_PER_REQUEST} log records.`, 'resourceLogs');
    if (count === 0) return 0;
    // A retried export sends the same bytes: its records get the uuids they got the first time.
    const uuidOf = requestUuids(project.id, deps.topic, bytes);
    const messages: OutgoingMessage[] = [];
    resources.forEach(({ resource, records }, r) => {
      records.forEach((record, i) => {
        const message = logMessage(record, resource, project.id, uuidOf(`${r}__${i}`), now);
        const value = Buffer.from(JSON.stringify(message));
        if (value.length > deps.limits.eventBytes) {
          throw captureError.tooLarge(`A log record is larger than ${deps.limits.eventBytes} bytes.`, `resourceLogs__${r}__logRecords__${i}`);
        }
        messages.push({ key: logRecordMessageKey(project.id, message.session_id, message.uuid), value });
      });
    });
    await deps.produce(deps.topic, messages);
    return messages.length;
  };
}

/** A metrics export is an object with a `resourceMetrics` list; anything else is a 400. */
function checkMetricsRequest(text: string): void {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw captureError.parsing(error instanceof Error ? error.message : 'invalid JSON');
  }
  const resources =
    typeof document === 'object' && document !== null && !Array.isArray(document) ? (document as Record<string, unknown>).resourceMetrics : undefined;
  if (!Array.isArray(resources)) throw captureError.invalidEvent('An OTLP metrics export request has a resourceMetrics list.', 'resourceMetrics');
}

function logMessage(record: OtlpLogRecord, resource: Record<string, unknown>, projectId: number, uuid: string, now: number): LogRecordMessage {
  const received = BigInt(now) * 1_000_000n;
  const observed = inRange(record.observedNanos) ?? received;
  const timestamp = inRange(record.timeNanos) ?? observed;
  const lookUp = (keys: string[]) => {
    for (const source of [record.attributes, resource]) {
      for (const key of keys) {
        const value = source[key];
        if (typeof value === 'string' && value !== '') return value;
        if (typeof value === 'number') return String(value);
      }
    }
    return '';
  };
  const service = resource['service.name'];
  return {
    uuid,
    team_id: projectId,
    timestamp: isoMicros(timestamp),
    observed_timestamp: isoMicros(observed),
    severity_text: (record.severityText || levelOf(record.severityNumber)).slice(0, 200),
    severity_number: record.severityNumber,
    body: record.body === undefined ? '' : typeof record.body === 'string' ? record.body : JSON.stringify(record.body),
    trace_id: record.traceId.slice(0, 64),
    span_id: record.spanId.slice(0, 64),
    attributes: record.attributes,
    resource_attributes: resource,
    service_name: typeof service === 'string' ? service.slice(0, MAX_SERVICE_LENGTH) : '',
    session_id: [...lookUp(SESSION_KEYS)].slice(0, MAX_ID_LENGTH).join(''),
    distinct_id: [...lookUp(DISTINCT_ID_KEYS)].slice(0, MAX_ID_LENGTH).join(''),
  };
}

/** The level a severity number falls in (`WARN` for 13–16), as OTLP names the first of each range; empty when unspecified. */
function levelOf(severity: number): string {
  return severity === 0 ? '' : SEVERITY_NAMES[Math.floor((severity - 1) / 4) * 4 + 1]!;
}

function inRange(nanos: string): bigint | undefined {
  const value = BigInt(nanos);
  return value > 0n && value <= MAX_NANOS ? value : undefined;
}

/** Nanoseconds since the epoch as ISO 8601 in UTC with six decimals. */
function isoMicros(nanos: bigint): string {
  const ms = nanos / 1_000_000n;
  const micros = (nanos / 1000n) % 1000n;
  return `${new Date(Number(ms)).toISOString().slice(0, -1)}${String(micros).padStart(3, '0')}Z`;
}
