/**
 * The bus message capture produces for every OpenTelemetry log record it accepts on `/i/v1/logs`, and the logs
 * consumer reads: one record, its resource's attributes and what capture read out of them (service, session,
 * person) beside it, so that storage does no OTLP parsing.
 *
 * Logs have their own topic and consumer group, so a flood of console lines never delays analytics events; the key
 * is `team_id:session_id` (the record's uuid when it names no session).
 */
import { exceedsJsonDepth, MAX_JSON_DEPTH } from './json-depth';
import { ajv, schemaValidator, type Validation } from './validate';

export const LOGS_TOPIC = 'logs';

/** A record's times on the bus: UTC, to the microsecond (what the table keeps). */
const TIMESTAMP_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{6}Z$';

export interface LogRecordMessage {
  /** Derived from the request's bytes and the record's place in it: a retried export stores nothing twice. */
  uuid: string;
  team_id: number;
  /** The record's time (OTLP `timeUnixNano`, else its observed time, else capture's receive time), ISO 8601 with microseconds. */
  timestamp: string;
  /** OTLP `observedTimeUnixNano`, else the timestamp. */
  observed_timestamp: string;
  /** OTLP `severityText`, else the name of the severity number's range (`INFO`, `WARN`, …). */
  severity_text: string;
  /** 0 (unspecified) to 24. */
  severity_number: number;
  /** The body as text: a string body as it is, any other value as JSON. */
  body: string;
  /** Lowercase hex; empty when none. */
  trace_id: string;
  span_id: string;
  attributes: Record<string, unknown>;
  resource_attributes: Record<string, unknown>;
  /** The resource's `service.name`; empty when none. */
  service_name: string;
  /** posthog-js's `sessionId` attribute (or `$session_id`, `session.id`); empty when none. */
  session_id: string;
  /** posthog-js's `posthogDistinctId` attribute (or `posthog.distinct_id`, `distinct_id`); empty when none. */
  distinct_id: string;
}

export const logRecordMessageSchema = {
  $id: 'https://plover.dev/schemas/bus/log-record-message.json',
  type: 'object',
  required: [
    'uuid',
    'team_id',
    'timestamp',
    'observed_timestamp',
    'severity_text',
    'severity_number',
    'body',
    'trace_id',
    'span_id',
    'attributes',
    'resource_attributes',
    'service_name',
    'session_id',
    'distinct_id',
  ],
  properties: {
    uuid: { type: 'string', format: 'uuid' },
    team_id: { type: 'integer' },
    timestamp: { type: 'string', pattern: TIMESTAMP_PATTERN },
    observed_timestamp: { type: 'string', pattern: TIMESTAMP_PATTERN },
    severity_text: { type: 'string', maxLength: 200 },
    severity_number: { type: 'integer', minimum: 0, maximum: 24 },
    body: { type: 'string' },
    trace_id: { type: 'string', pattern: '^[0-9a-f]{0,64}$' },
    span_id: { type: 'string', pattern: '^[0-9a-f]{0,64}$' },
    attributes: { type: 'object' },
    resource_attributes: { type: 'object' },
    service_name: { type: 'string', maxLength: 1000 },
    session_id: { type: 'string', maxLength: 200 },
    distinct_id: { type: 'string', maxLength: 200 },
  },
} as const;

ajv.addSchema(logRecordMessageSchema);

export const validateLogRecordMessage = schemaValidator<LogRecordMessage>(logRecordMessageSchema.$id);

/**
 * Reads one message value from the logs topic, checked against the schema and MAX_JSON_DEPTH. Never throws: a
 * message that fails is for the dead-letter store, with the violation as reason.
 */
export function parseLogRecordMessage(value: Buffer | string): Validation<LogRecordMessage> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof value === 'string' ? value : value.toString('utf8'));
  } catch {
    return { ok: false, violation: { attr: null, detail: 'The message is not valid JSON.' } };
  }
  const message = validateLogRecordMessage(parsed);
  if (!message.ok) return message;
  if (exceedsJsonDepth(message.value.attributes) || exceedsJsonDepth(message.value.resource_attributes)) {
    return { ok: false, violation: { attr: 'attributes', detail: `attributes nest deeper than ${MAX_JSON_DEPTH} levels.` } };
  }
  return message;
}

/** The bus key: one session's lines land in one partition, in order. */
export function logRecordMessageKey(projectId: number, sessionId: string, uuid: string): string {
  return `${projectId}:${sessionId === '' ? uuid : sessionId}`;
}
