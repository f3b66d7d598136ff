/**
 * OpenTelemetry spans to LLM analytics events, for `/i/v0/ai/otel` (posthog-python's and @posthog/ai's OTel
 * exporter and span processor). PostHog does this in two places — its capture fans a span out into an event with
 * the span's and resource's attributes (`rust/capture/src/otel/`), its ingestion then maps the GenAI semantic
 * conventions onto the `$ai_*` properties (`nodejs/src/ingestion/ai/otel/attribute-mapping.ts`) — and Plover does
 * both here, so the event on the bus is already the one stored. The rules: docs/llm-analytics.md#opentelemetry.
 */
import { uuidv5 } from '@plover/core';
import type { RawEvent } from '@plover/contracts';
import { isoTimestamp } from '@plover/core/utc-text';
import type { OtlpResourceSpans, OtlpSpan } from './otlp-traces';

/** Whose attributes mark a span as an AI span, and how its attributes name its event (PostHog's providers, first match wins). */
interface Provider {
  prefixes: string[];
  classify(attributes: Record<string, unknown>): string;
}

function byOperation(operation: unknown): string {
  if (operation === 'chat') return '$ai_generation';
  if (operation === 'embeddings') return '$ai_embedding';
  return '$ai_span';
}

const PROVIDERS: Provider[] = [
  // Vercel's AI SDK (`ai.*`) and Eve; AI SDK 7 spans carry the standard operation name and no `ai.operationId`.
  {
    prefixes: ['ai.', 'eve.'],
    classify: (a) => {
      const operationId = a['ai.operationId'];
      if (operationId === undefined && typeof a['gen_ai.operation.name'] === 'string') return byOperation(a['gen_ai.operation.name']);
      if (typeof operationId !== 'string') return '$ai_span';
      if (operationId.endsWith('.doGenerate') || operationId.endsWith('.doStream')) return '$ai_generation';
      if (operationId === 'ai.embed.doEmbed' || operationId === 'ai.embedMany.doEmbed') return '$ai_embedding';
      return '$ai_span';
    },
  },
  { prefixes: ['pydantic_ai.'], classify: () => '$ai_span' },
  // Traceloop (OpenLLMetry): its operation key does not share its prefix.
  { prefixes: ['traceloop.', 'llm.request.type'], classify: (a) => REQUEST_TYPE_EVENT[String(a['llm.request.type'])] ?? '$ai_span' },
  { prefixes: ['gen_ai.'], classify: (a) => byOperation(a['gen_ai.operation.name']) },
];

const REQUEST_TYPE_EVENT: Record<string, string> = {
  chat: '$ai_generation',
  completion: '$ai_generation',
  embedding: '$ai_embedding',
  embeddings: '$ai_embedding',
};

/** Resource attributes the OTel SDKs detect on their own, which say nothing about the AI call. */
const NOISY_RESOURCE_PREFIXES = ['host.', 'process.', 'os.', 'telemetry.'];

const SPAN_DISTINCT_ID_KEYS = ['ai.telemetry.metadata.posthog_distinct_id', 'ai.settings.context.posthog_distinct_id', 'posthog.distinct_id', 'user.id'];
const RESOURCE_DISTINCT_ID_KEYS = ['posthog.distinct_id', 'user.id'];
/** A session spans several traces, so an anonymous span's person is derived from its session before its trace. */
const SESSION_ID_KEYS = [
  '$ai_session_id',
  'ai.telemetry.metadata.$ai_session_id',
  'ai.settings.context.$ai_session_id',
  'eve.session.id',
  'anthropic.session.id',
  'gen_ai.conversation.id',
];
/** PostHog's namespace for these derived distinct ids, so a span gets the same anonymous person on either server. */
const DERIVED_DISTINCT_ID_NAMESPACE = '392e81d5-3d13-4a6f-b541-bdbf6c865e56';

/** GenAI semantic convention attributes and their `$ai_*` property (the attribute is removed). */
const ATTRIBUTE_MAP: [string, string][] = [
  ['gen_ai.input.messages', '$ai_input'],
  ['gen_ai.output.messages', '$ai_output_choices'],
  ['gen_ai.usage.input_tokens', '$ai_input_tokens'],
  ['gen_ai.usage.output_tokens', '$ai_output_tokens'],
  ['gen_ai.response.model', '$ai_model'],
  ['gen_ai.provider.name', '$ai_provider'],
  ['server.address', '$ai_base_url'],
  ['telemetry.sdk.name', '$ai_lib'],
  ['telemetry.sdk.version', '$ai_lib_version'],
  ['$otel_span_name', '$ai_span_name'],
];
/** Older names, used only where the newer one did not set the property (and removed either way). */
const FALLBACK_ATTRIBUTE_MAP: [string, string][] = [
  ['gen_ai.system', '$ai_provider'],
  ['gen_ai.request.model', '$ai_model'],
  ['gen_ai.usage.prompt_tokens', '$ai_input_tokens'],
  ['gen_ai.usage.completion_tokens', '$ai_output_tokens'],
];
const JSON_TEXT_PROPERTIES = new Set(['$ai_input', '$ai_output_choices']);
const STRIPPED_ATTRIBUTES = ['telemetry.sdk.language', 'gen_ai.operation.name', 'posthog.ai.debug', 'user.id', 'posthog.distinct_id', 'llm.request.type'];
/** The longest system instructions text that is parsed as JSON; a longer one is dropped, as PostHog does. */
const MAX_SYSTEM_INSTRUCTIONS_CHARS = 500_000;
const STATUS_CODE_ERROR = 2;
const HTTP_STATUS_KEYS = [
  '$ai_http_status',
  'http.response.status_code',
  'http.status_code',
  'http.status',
  'status_code',
  'error.status_code',
  'exception.status_code',
];

export interface SpanEvent {
  raw: RawEvent;
  /** Where it came from in the request, for error messages (`resourceSpans.0.scopeSpans.1.spans.3`). */
  at: string;
  /** The JSON size of the attributes it was built from, the resource's included: what its event is measured by. */
  bytes: number;
}

/**
 * The request's AI spans as events, in request order; a span no provider recognises is left out. `requestFallback`
 * is the distinct id of a span that names no person and has neither a session nor a trace id.
 */
export function spansToEvents(request: OtlpResourceSpans[], requestFallback: string): SpanEvent[] {
  const events: SpanEvent[] = [];
  request.forEach((resourceSpans, r) => {
    const resource = Object.fromEntries(Object.entries(resourceSpans.resource).filter(([key]) => !NOISY_RESOURCE_PREFIXES.some((p) => key.startsWith(p))));
    // Once per resource: its attributes are copied onto each of its spans.
    const resourceBytes = jsonBytes(resource);
    resourceSpans.scopes.forEach((scope, s) => {
      scope.spans.forEach((span, i) => {
        const provider = PROVIDERS.find((p) => Object.keys(span.attributes).some((key) => p.prefixes.some((prefix) => key.startsWith(prefix))));
        if (!provider) return;
        const raw: RawEvent = {
          event: provider.classify(span.attributes),
          distinct_id: distinctId(span, resourceSpans.resource, requestFallback),
          properties: spanProperties(span, resource, scope.scopeVersion),
        };
        const start = nanosToMs(span.startNanos);
        if (start !== undefined) raw.timestamp = isoTimestamp(start);
        mapGenAiAttributes(raw);
        events.push({ raw, at: `resourceSpans.${r}.scopeSpans.${s}.spans.${i}`, bytes: resourceBytes + jsonBytes(span.attributes) });
      });
    });
  });
  return events;
}

/** What PostHog's capture puts on a span's event: resource then span attributes, ids, times, `$lib`. */
function spanProperties(span: OtlpSpan, resource: Record<string, unknown>, scopeVersion: string): Record<string, unknown> {
  const properties: Record<string, unknown> = { ...resource, ...span.attributes };
  // OTel events carry no client address worth locating: GeoIP is off unless the sender asked for it.
  const geoipAlias = properties['posthog.geoip_disable'];
  delete properties['posthog.geoip_disable'];
  if (properties.$geoip_disable === undefined) properties.$geoip_disable = geoipAlias ?? true;
  properties.$ai_trace_id = span.traceId;
  properties.$ai_span_id = span.spanId;
  if (span.parentSpanId !== '') properties.$ai_parent_id = span.parentSpanId;
  properties.$ai_ingestion_source = 'otel';
  properties.$lib ??= 'posthog-otel';
  if (scopeVersion !== '') properties.$lib_version ??= scopeVersion;
  if (span.name !== '') properties.$otel_span_name = span.name;
  properties.$otel_start_time_unix_nano = span.startNanos;
  properties.$otel_end_time_unix_nano = span.endNanos;
  if (span.statusCode === STATUS_CODE_ERROR) markError(span, properties);
  return properties;
}

/** A failed span: `$ai_is_error`, and unless the span set them, `$ai_error` and `$ai_http_status`. */
function markError(span: OtlpSpan, properties: Record<string, unknown>): void {
  properties.$ai_is_error = true;
  const exception = span.events.findLast(
    (event) => event.name === 'exception' || 'exception.message' in event.attributes || 'exception.type' in event.attributes,
  );
  if (properties.$ai_error === undefined) {
    const type = nonEmpty(exception?.attributes['exception.type']);
    const message = nonEmpty(exception?.attributes['exception.message']);
    properties.$ai_error = type && message ? `${type}: ${message}` : (message ?? type ?? nonEmpty(span.statusMessage) ?? 'OpenTelemetry span status error');
  }
  if (properties.$ai_http_status === undefined) {
    properties.$ai_http_status = (exception && httpStatus(exception.attributes)) ?? httpStatus(properties) ?? 500;
  }
}

function httpStatus(attributes: Record<string, unknown>): number | undefined {
  for (const key of HTTP_STATUS_KEYS) {
    const value = attributes[key];
    const status = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : undefined;
    if (status !== undefined && Number.isInteger(status) && status >= 100 && status <= 599) return status;
  }
  return undefined;
}

function distinctId(span: OtlpSpan, resource: Record<string, unknown>, requestFallback: string): string {
  const named = firstString(span.attributes, SPAN_DISTINCT_ID_KEYS) ?? firstString(resource, RESOURCE_DISTINCT_ID_KEYS);
  if (named !== undefined) return named;
  for (const key of SESSION_ID_KEYS) {
    const session = firstString(span.attributes, [key]) ?? firstString(resource, [key]);
    if (session !== undefined) return uuidv5(`session:${session}`, DERIVED_DISTINCT_ID_NAMESPACE);
  }
  if (/[1-9a-f]/.test(span.traceId)) return uuidv5(`trace:${span.traceId}`, DERIVED_DISTINCT_ID_NAMESPACE);
  return requestFallback;
}

/** PostHog's ingestion mapping of the GenAI semantic conventions onto the `$ai_*` properties. */
function mapGenAiAttributes(event: RawEvent): void {
  const properties = event.properties!;
  if (event.event === '$ai_span') {
    const reclassified = REQUEST_TYPE_EVENT[String(properties['llm.request.type'])];
    if (reclassified) event.event = reclassified;
  }
  for (const [from, to] of ATTRIBUTE_MAP) {
    if (properties[from] === undefined) continue;
    properties[to] = JSON_TEXT_PROPERTIES.has(to) ? parsedJsonText(properties[from]) : properties[from];
    delete properties[from];
  }
  for (const [from, to] of FALLBACK_ATTRIBUTE_MAP) {
    if (properties[from] !== undefined && properties[to] === undefined) properties[to] = properties[from];
    delete properties[from];
  }
  addSystemInstructions(properties);
  const start = bigint(properties.$otel_start_time_unix_nano);
  const end = bigint(properties.$otel_end_time_unix_nano);
  if (start !== undefined && end !== undefined && end > start) properties.$ai_latency = Number(end - start) / 1e9;
  delete properties.$otel_start_time_unix_nano;
  delete properties.$otel_end_time_unix_nano;
  // A root span is the trace itself.
  if (event.event === '$ai_span' && !properties.$ai_parent_id) event.event = '$ai_trace';
  for (const key of STRIPPED_ATTRIBUTES) delete properties[key];
  const conversation = properties['gen_ai.conversation.id'];
  if (properties.$ai_session_id === undefined && typeof conversation === 'string' && conversation !== '') properties.$ai_session_id = conversation;
}

/** `gen_ai.system_instructions` (a text, or text parts) as a leading system message of `$ai_input`. */
function addSystemInstructions(properties: Record<string, unknown>): void {
  const raw = properties['gen_ai.system_instructions'];
  delete properties['gen_ai.system_instructions'];
  if (raw === undefined || raw === null) return;
  if (typeof raw === 'string' && raw.length > MAX_SYSTEM_INSTRUCTIONS_CHARS) return;
  const value = parsedJsonText(raw);
  let text: string;
  if (typeof value === 'string') text = value;
  else if (Array.isArray(value)) {
    text = value
      .filter((part): part is { type: string; content: unknown } => typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'text')
      .map((part) => (typeof part.content === 'string' ? part.content : ''))
      .filter((part) => part !== '')
      .join('\n\n');
  } else text = JSON.stringify(value);
  if (!text) return;
  const system = { role: 'system', content: text };
  const input = properties.$ai_input;
  if (input === undefined) properties.$ai_input = [system];
  else if (Array.isArray(input) && (input[0] as { role?: unknown } | undefined)?.role !== 'system') properties.$ai_input = [system, ...(input as unknown[])];
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

/** A JSON text parsed, or the value as it was when it is not one. */
function parsedJsonText(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

function firstString(attributes: Record<string, unknown>, keys: string[]): string | undefined {
  for (const key of keys) {
    const value = attributes[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function bigint(value: unknown): bigint | undefined {
  return typeof value === 'string' && /^\d+$/.test(value) ? BigInt(value) : undefined;
}

/** Epoch ms of a nanosecond time; undefined for 0 (unset). */
function nanosToMs(nanos: string): number | undefined {
  const value = BigInt(nanos);
  return value === 0n ? undefined : Number(value / 1_000_000n);
}
