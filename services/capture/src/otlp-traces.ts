/**
 * An OTLP/HTTP trace or logs export request (`ExportTraceServiceRequest`, `ExportLogsServiceRequest`), as protobuf
 * or as OTLP JSON, read into plain spans or log records with their attributes as JSON values. Both encodings go through one walker that checks every field's type,
 * so a hostile body is a 400, never a crash: protobuf is decoded by protobufjs (whose reader stops at 100 nested
 * messages) with the message types below, JSON is parsed and then walked the same way. Attribute values nest at
 * most `MAX_ATTRIBUTE_DEPTH` arrays and key-value lists deep.
 */
import { Root, type Type } from 'protobufjs/light';
import { captureError } from './errors';

/** How deep an attribute value may nest (arrays and key-value lists), as PostHog bounds OTLP log bodies. */
export const MAX_ATTRIBUTE_DEPTH = 64;

export interface OtlpSpan {
  /** Lowercase hex; empty when the span has none. */
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** Nanoseconds since the epoch, as decimal text ("0" when unset). */
  startNanos: string;
  endNanos: string;
  attributes: Record<string, unknown>;
  /** `STATUS_CODE_ERROR` (2) marks a failed span. */
  statusCode: number;
  statusMessage: string;
  events: { name: string; attributes: Record<string, unknown> }[];
}

export interface OtlpScopeSpans {
  /** The instrumentation scope's version; empty when not sent. */
  scopeVersion: string;
  spans: OtlpSpan[];
}

export interface OtlpResourceSpans {
  resource: Record<string, unknown>;
  scopes: OtlpScopeSpans[];
}

/** The messages of opentelemetry-proto's trace export request that a span event is built from (unknown fields are skipped). */
const PROTO = Root.fromJSON({
  nested: {
    AnyValue: {
      oneofs: { value: { oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'] } },
      fields: {
        stringValue: { type: 'string', id: 1 },
        boolValue: { type: 'bool', id: 2 },
        intValue: { type: 'int64', id: 3 },
        doubleValue: { type: 'double', id: 4 },
        arrayValue: { type: 'ArrayValue', id: 5 },
        kvlistValue: { type: 'KeyValueList', id: 6 },
        bytesValue: { type: 'bytes', id: 7 },
      },
    },
    ArrayValue: { fields: { values: { rule: 'repeated', type: 'AnyValue', id: 1 } } },
    KeyValueList: { fields: { values: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
    KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
    Resource: { fields: { attributes: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
    InstrumentationScope: { fields: { name: { type: 'string', id: 1 }, version: { type: 'string', id: 2 } } },
    Status: { fields: { message: { type: 'string', id: 2 }, code: { type: 'int32', id: 3 } } },
    SpanEvent: { fields: { name: { type: 'string', id: 2 }, attributes: { rule: 'repeated', type: 'KeyValue', id: 3 } } },
    Span: {
      fields: {
        traceId: { type: 'bytes', id: 1 },
        spanId: { type: 'bytes', id: 2 },
        parentSpanId: { type: 'bytes', id: 4 },
        name: { type: 'string', id: 5 },
        startTimeUnixNano: { type: 'fixed64', id: 7 },
        endTimeUnixNano: { type: 'fixed64', id: 8 },
        attributes: { rule: 'repeated', type: 'KeyValue', id: 9 },
        events: { rule: 'repeated', type: 'SpanEvent', id: 11 },
        status: { type: 'Status', id: 15 },
      },
    },
    ScopeSpans: { fields: { scope: { type: 'InstrumentationScope', id: 1 }, spans: { rule: 'repeated', type: 'Span', id: 2 } } },
    ResourceSpans: { fields: { resource: { type: 'Resource', id: 1 }, scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 } } },
    ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } },
    LogRecord: {
      fields: {
        timeUnixNano: { type: 'fixed64', id: 1 },
        severityNumber: { type: 'int32', id: 2 },
        severityText: { type: 'string', id: 3 },
        body: { type: 'AnyValue', id: 5 },
        attributes: { rule: 'repeated', type: 'KeyValue', id: 6 },
        traceId: { type: 'bytes', id: 9 },
        spanId: { type: 'bytes', id: 10 },
        observedTimeUnixNano: { type: 'fixed64', id: 11 },
      },
    },
    ScopeLogs: { fields: { scope: { type: 'InstrumentationScope', id: 1 }, logRecords: { rule: 'repeated', type: 'LogRecord', id: 2 } } },
    ResourceLogs: { fields: { resource: { type: 'Resource', id: 1 }, scopeLogs: { rule: 'repeated', type: 'ScopeLogs', id: 2 } } },
    ExportLogsServiceRequest: { fields: { resourceLogs: { rule: 'repeated', type: 'ResourceLogs', id: 1 } } },
  },
});
const EXPORT_REQUEST: Type = PROTO.lookupType('ExportTraceServiceRequest');
const EXPORT_LOGS_REQUEST: Type = PROTO.lookupType('ExportLogsServiceRequest');

export interface OtlpLogRecord {
  /** Nanoseconds since the epoch, as decimal text ("0" when unset). */
  timeNanos: string;
  observedNanos: string;
  severityNumber: number;
  severityText: string;
  /** The body as JSON (undefined when unset). */
  body: unknown;
  traceId: string;
  spanId: string;
  attributes: Record<string, unknown>;
}

export interface OtlpResourceLogs {
  resource: Record<string, unknown>;
  records: OtlpLogRecord[];
}

export type OtlpFormat = 'protobuf' | 'json';

/** The encoding a `Content-Type` names; undefined for anything else (PostHog refuses it). */
export function otlpFormat(contentType: string | undefined): OtlpFormat | undefined {
  const type = contentType?.split(';', 1)[0]!.trim().toLowerCase();
  if (type === 'application/x-protobuf') return 'protobuf';
  if (type === 'application/json') return 'json';
  return undefined;
}

function decode(body: Buffer | string, format: OtlpFormat, type: Type): unknown {
  try {
    if (format === 'json') return JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
    return type.decode(typeof body === 'string' ? Buffer.from(body) : body);
  } catch (error) {
    throw captureError.parsing(`invalid ${format === 'protobuf' ? 'protobuf' : 'JSON'}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The request's log records by resource; throws capture's 400 when the body is not a logs export request. */
export function decodeLogsRequest(body: Buffer | string, format: OtlpFormat): OtlpResourceLogs[] {
  const document = decode(body, format, EXPORT_LOGS_REQUEST);
  if (typeof document !== 'object' || document === null || Array.isArray(document)) throw invalid('the request', 'an object');
  return list(field(document, 'resourceLogs', 'resource_logs'), 'resourceLogs').map((resourceLogs, r) => ({
    resource: attributes(field(field(resourceLogs, 'resource'), 'attributes'), `resourceLogs.${r}.resource`),
    records: list(field(resourceLogs, 'scopeLogs', 'scope_logs'), `resourceLogs.${r}.scopeLogs`).flatMap((scopeLogs, s) => {
      const at = `resourceLogs.${r}.scopeLogs.${s}.logRecords`;
      return list(field(scopeLogs, 'logRecords', 'log_records'), at).map((record, i) => readLogRecord(record, `${at}.${i}`));
    }),
  }));
}

function readLogRecord(record: unknown, at: string): OtlpLogRecord {
  return {
    timeNanos: nanos(field(record, 'timeUnixNano', 'time_unix_nano'), `${at}.timeUnixNano`),
    observedNanos: nanos(field(record, 'observedTimeUnixNano', 'observed_time_unix_nano'), `${at}.observedTimeUnixNano`),
    severityNumber: severityNumber(field(record, 'severityNumber', 'severity_number'), `${at}.severityNumber`),
    severityText: text(field(record, 'severityText', 'severity_text'), `${at}.severityText`),
    body: anyValue(field(record, 'body'), `${at}.body`, 0),
    traceId: id(field(record, 'traceId', 'trace_id'), `${at}.traceId`),
    spanId: id(field(record, 'spanId', 'span_id'), `${at}.spanId`),
    attributes: attributes(field(record, 'attributes'), at),
  };
}

/** OTLP's `SeverityNumber`: 0 (unspecified) to 24; proto3 JSON may name it (`SEVERITY_NUMBER_WARN`). */
function severityNumber(value: unknown, at: string): number {
  if (value === undefined) return 0;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 24) return value;
  if (typeof value === 'string') {
    const named = SEVERITY_NAMES.indexOf(value.replace(/^SEVERITY_NUMBER_/, ''));
    if (named >= 0) return named;
  }
  throw invalid(at, 'a severity number');
}

/** The names of OTLP's severity numbers, by number. */
export const SEVERITY_NAMES: readonly string[] = [
  'UNSPECIFIED',
  ...['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'].flatMap((level) => [level, `${level}2`, `${level}3`, `${level}4`]),
];

/** The request's spans; throws capture's 400 when the body is not an export request. */
export function decodeTraceRequest(body: Buffer, format: OtlpFormat): OtlpResourceSpans[] {
  const document = decode(body, format, EXPORT_REQUEST);
  return list(field(document, 'resourceSpans', 'resource_spans'), 'resourceSpans').map((resourceSpans, r) => ({
    resource: attributes(field(field(resourceSpans, 'resource'), 'attributes'), `resourceSpans.${r}.resource`),
    scopes: list(field(resourceSpans, 'scopeSpans', 'scope_spans'), `resourceSpans.${r}.scopeSpans`).map((scopeSpans, s) => {
      const at = `resourceSpans.${r}.scopeSpans.${s}`;
      return {
        scopeVersion: text(field(field(scopeSpans, 'scope'), 'version'), `${at}.scope.version`),
        spans: list(field(scopeSpans, 'spans'), `${at}.spans`).map((span, i) => readSpan(span, `${at}.spans.${i}`)),
      };
    }),
  }));
}

/** How many spans the request holds, counted before any attribute is converted. */
export function countSpans(request: OtlpResourceSpans[]): number {
  return request.reduce((sum, r) => sum + r.scopes.reduce((inner, s) => inner + s.spans.length, 0), 0);
}

function readSpan(span: unknown, at: string): OtlpSpan {
  const status = field(span, 'status');
  return {
    traceId: id(field(span, 'traceId', 'trace_id'), `${at}.traceId`),
    spanId: id(field(span, 'spanId', 'span_id'), `${at}.spanId`),
    parentSpanId: id(field(span, 'parentSpanId', 'parent_span_id'), `${at}.parentSpanId`),
    name: text(field(span, 'name'), `${at}.name`),
    startNanos: nanos(field(span, 'startTimeUnixNano', 'start_time_unix_nano'), `${at}.startTimeUnixNano`),
    endNanos: nanos(field(span, 'endTimeUnixNano', 'end_time_unix_nano'), `${at}.endTimeUnixNano`),
    attributes: attributes(field(span, 'attributes'), at),
    statusCode: statusCode(field(status, 'code'), `${at}.status.code`),
    statusMessage: text(field(status, 'message'), `${at}.status.message`),
    events: list(field(span, 'events'), `${at}.events`).map((event, e) => ({
      name: text(field(event, 'name'), `${at}.events.${e}.name`),
      attributes: attributes(field(event, 'attributes'), `${at}.events.${e}`),
    })),
  };
}

/** A field of a decoded message or JSON object, by its camelCase name or (JSON's alternative) its proto name. */
function field(value: unknown, name: string, protoName?: string): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const found = Object.hasOwn(record, name) ? record[name] : protoName !== undefined && Object.hasOwn(record, protoName) ? record[protoName] : undefined;
  return found ?? undefined;
}

function list(value: unknown, at: string): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw invalid(at, 'a list');
  return value;
}

function text(value: unknown, at: string): string {
  if (value === undefined) return '';
  if (typeof value !== 'string') throw invalid(at, 'a string');
  return value;
}

/** Protobuf: the id's bytes; OTLP JSON: hex (the encoding's one departure from proto3 JSON). */
function id(value: unknown, at: string): string {
  if (value === undefined) return '';
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex');
  if (typeof value === 'string' && /^(?:[0-9a-fA-F]{2})*$/.test(value)) return value.toLowerCase();
  throw invalid(at, 'a hex id');
}

/** fixed64 nanoseconds: a Long from protobuf, a decimal string or a number in JSON. */
function nanos(value: unknown, at: string): string {
  if (value === undefined) return '0';
  const digits = integerText(value);
  if (digits === undefined || digits.startsWith('-')) throw invalid(at, 'nanoseconds');
  return digits;
}

function statusCode(value: unknown, at: string): number {
  if (value === undefined) return 0;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  // proto3 JSON may name an enum value.
  if (value === 'STATUS_CODE_ERROR') return 2;
  if (typeof value === 'string') return 0;
  throw invalid(at, 'a status code');
}

/** An integer as decimal text: a protobufjs Long, a safe JS integer, or a decimal string (proto3 JSON's int64). */
function integerText(value: unknown): string | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? String(value) : undefined;
  if (typeof value === 'string') return /^-?\d{1,20}$/.test(value) ? value : undefined;
  // protobufjs's Long writes itself in decimal.
  if (typeof value === 'object' && value !== null && 'low' in value && 'high' in value) return (value as { toString(): string }).toString();
  return undefined;
}

/** A `KeyValue` list as a JSON object; a value that is unset is left out, as PostHog does. */
function attributes(value: unknown, at: string, depth = 0): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  list(value, `${at}.attributes`).forEach((pair, i) => {
    const key = text(field(pair, 'key'), `${at}.attributes.${i}.key`);
    const converted = anyValue(field(pair, 'value'), `${at}.attributes.${i}.value`, depth);
    if (converted !== undefined) result[key] = converted;
  });
  return result;
}

/** An `AnyValue` as JSON: bytes as hex, int64 as a number (PostHog's mapping). */
function anyValue(value: unknown, at: string, depth: number): unknown {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(at, 'an AnyValue');
  if (depth >= MAX_ATTRIBUTE_DEPTH) throw captureError.parsing(`${at} nests deeper than ${MAX_ATTRIBUTE_DEPTH} levels`);
  const string = field(value, 'stringValue', 'string_value');
  if (string !== undefined) return text(string, at);
  const bool = field(value, 'boolValue', 'bool_value');
  if (bool !== undefined) {
    if (typeof bool !== 'boolean') throw invalid(at, 'a boolean');
    return bool;
  }
  const int = field(value, 'intValue', 'int_value');
  if (int !== undefined) {
    const digits = integerText(int);
    if (digits === undefined) throw invalid(at, 'an integer');
    return Number(digits);
  }
  const double = field(value, 'doubleValue', 'double_value');
  if (double !== undefined) {
    if (typeof double !== 'number') throw invalid(at, 'a number');
    // JSON has no NaN or infinities; PostHog writes them as null.
    return Number.isFinite(double) ? double : null;
  }
  const array = field(value, 'arrayValue', 'array_value');
  if (array !== undefined) {
    return list(field(array, 'values'), `${at}.arrayValue.values`)
      .map((item, i) => anyValue(item, `${at}.arrayValue.values.${i}`, depth + 1))
      .filter((item) => item !== undefined);
  }
  const kvlist = field(value, 'kvlistValue', 'kvlist_value');
  if (kvlist !== undefined) return attributes(field(kvlist, 'values'), `${at}.kvlistValue`, depth + 1);
  const bytes = field(value, 'bytesValue', 'bytes_value');
  if (bytes instanceof Uint8Array) return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
  if (typeof bytes === 'string') return Buffer.from(bytes, 'base64').toString('hex');
  if (bytes !== undefined) throw invalid(at, 'bytes');
  return undefined;
}

function invalid(at: string, expected: string) {
  return captureError.parsing(`invalid OTLP export request: ${at} is not ${expected}`);
}
