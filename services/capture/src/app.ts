import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ProjectTokenCache } from '@plover/accounts';
import type { EventBus, OutgoingMessage } from '@plover/bus';
import { sectionDefaults, sections, type CaptureConfig } from '@plover/config';
import { batchBodySchema, CAPTURE_TOPICS, eventArraySchema, LOGS_TOPIC, rawEventSchema, REPLAY_TOPIC, v1BatchSchema } from '@plover/contracts';
import { ApiError, TokenBuckets, withTimeout, type Logger } from '@plover/core';
import {
  createServiceApp,
  decompressionBudget,
  queryString,
  readBody,
  requestAddress,
  sdkRouters,
  sdkSchemaRouter,
  type DecompressionBudget,
  type Admission,
  type DecompressionLease,
  type MetricsRegistry,
  type SdkRoute,
  type SdkRouters,
  type ServiceApp,
  type WorkersView,
} from '@plover/http';
import type { Sql } from '@plover/postgres';
import { aiOtelCapture } from './ai-otel-capture';
import { decodePayload } from './decode';
import { captureError } from './errors';
import { captureMetrics } from './metrics';
import { prepareContext, toBusMessage } from './normalize';
import { replayCapture } from './replay';
import { parseCaptureRequest, requestToken, type CaptureRequest } from './request';
import { sentAtFromQuery } from './timestamp';
import { otlpCapture, type OtlpSignal } from './otlp';
import { requestUuids } from './uuids';
import { v1Capture } from './v1';

export interface CaptureSettings extends CaptureConfig {
  topics: { events: string; historical: string };
  limits: {
    /** Request body as received (PostHog: 20 MiB on every analytics route). */
    bodyBytes: number;
    /** After decompression (PostHog: 5 × the body limit). */
    decompressedBytes: number;
    /** One bus message (Kafka's default `message.max.bytes`, which PostHog's capture inherits). */
    eventBytes: number;
    /** One event on `/i/v0/ai/batch/`, as the client serialized it (PostHog's `AI_MAX_EVENT_BYTES`, 8 MiB). */
    aiEventBytes: number;
  };
  /** Session replay (`/s/`): its topic, and its body limit as received (PostHog: 25 MiB). */
  replay: { topic: string; bodyBytes: number };
  /** OpenTelemetry logs (`/i/v1/logs`): their topic. */
  logsTopic: string;
  /** What decompressed payloads may hold at once; the process's own budget unless a test gives another. */
  decompression: DecompressionBudget;
  /** Epoch ms; tests fix it to check timestamps. */
  now: () => number;
}

export interface CaptureDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  sql: Sql;
  bus: EventBus;
  trustProxy: boolean;
  /** Project tokens, shared with decide when both run in one process. */
  projectTokens: ProjectTokenCache;
  /** The `capture` config section, and in tests other topics, limits or a fixed clock; defaults otherwise. */
  settings?: Partial<CaptureSettings>;
  /** The rate limit counted elsewhere (a cluster's primary); counted in this process from `settings` otherwise. */
  limits?: CaptureLimits;
  /** In a cluster worker: the primary's view of the workers (`/_health`, `/_ready`). */
  workers?: WorkersView | undefined;
}

/** Capture's limits; undefined while off. */
export interface CaptureLimits {
  /** Events per project (a request costs its event count); refused requests are answered 429. */
  rate?: Admission<number> | undefined;
}

/** The limits counted in this process: a token bucket of events per project, on the given clock (epoch ms). */
export function captureLimits(settings: { rateLimit?: { perSecond: number; burst: number } | undefined; now?: () => number }): CaptureLimits {
  const buckets = settings.rateLimit ? new TokenBuckets<number>(settings.rateLimit.perSecond, settings.rateLimit.burst) : undefined;
  const now = settings.now ?? Date.now;
  return { rate: buckets && { admit: (projectId, events) => buckets.take(projectId, now(), events) } };
}

const MIB = 1024 * 1024;
export const DEFAULT_CAPTURE_SETTINGS: CaptureSettings = {
  ...sectionDefaults(sections.capture),
  topics: CAPTURE_TOPICS,
  limits: { bodyBytes: 20 * MIB, decompressedBytes: 100 * MIB, eventBytes: 1_000_000, aiEventBytes: 8 * MIB },
  replay: { topic: REPLAY_TOPIC, bodyBytes: 25 * MIB },
  logsTopic: LOGS_TOPIC,
  decompression: decompressionBudget,
  now: Date.now,
};

interface Route {
  /** The payload may carry PostHog's legacy second base64 layer (Rust `path_is_legacy_endpoint`). */
  legacy: boolean;
  engage?: boolean;
  /** Session replay `$snapshot` events (`replay.ts`). */
  replay?: boolean;
  /** LLM analytics (`$ai_*` events, posthog-node's `captureAi`): single events up to `limits.aiEventBytes`. */
  ai?: boolean;
}

/** The body of a capture v1 request as received (PostHog's v1 limit). */
const V1_BODY_BYTES = 10 * MIB;

/**
 * What a bus message adds to an event on the AI route: the envelope (ids, address, times) and `$ip`. Distinct ids
 * are cut to 200 code points, so 64 KiB is far more than any envelope needs.
 */
const AI_ENVELOPE_BYTES = 64 * 1024;

/** One group of ingest paths of capture's table, served alike. */
interface IngestPaths extends Route {
  paths: [string, ...string[]];
  summary: string;
}

/**
 * The ingest paths, in the SDKs' spelling: they are served with or without the trailing slash, in any case
 * (Express's default routing, which these paths had before).
 */
const INGEST: IngestPaths[] = [
  { paths: ['/i/v0/e/', '/batch/'], legacy: false, summary: 'Events: one, an array, or a `{batch}` (`historical_migration` for imports).' },
  { paths: ['/e/', '/capture/', '/track/'], legacy: true, summary: 'Events, on the legacy paths (a second base64 layer allowed).' },
  { paths: ['/engage/'], legacy: true, engage: true, summary: 'Person updates (`$set`, `$set_once`) as `$identify`-less events, legacy encoding.' },
  { paths: ['/s/'], legacy: false, replay: true, summary: 'Session recording `$snapshot` events.' },
  {
    paths: ['/i/v0/ai/batch/'],
    legacy: false,
    ai: true,
    summary: "LLM analytics `$ai_*` events (posthog-node's and posthog-python's `captureAi`), `/batch/`'s shapes, one event up to 8 MiB.",
  },
];

const CAPTURE_QUERY = { data: { type: 'string' }, compression: { type: 'string' }, sent_at: { type: 'string' }, _: { type: 'string' } };
const CAPTURE_BODY = { oneOf: [rawEventSchema, eventArraySchema, batchBodySchema] };
const OK = { status: 200, type: 'application/json', schema: { type: 'object', required: ['status'], properties: { status: { const: 1 } } } };
const V1_RESULT = { type: 'object', required: ['result'], properties: { result: { enum: ['ok', 'drop'] }, details: { type: 'string' } } };
const V1_OK = {
  status: 200,
  type: 'application/json',
  schema: { type: 'object', required: ['results'], properties: { results: { type: 'object', additionalProperties: V1_RESULT } } },
};

/** OTLP/HTTP's answer to an export it took whole: an empty `Export…ServiceResponse`. */
const OTLP_OK_BODY = Buffer.from('{}');
const OTLP_OK = { status: 200, type: 'application/json', schema: { type: 'object' } };

/** Exactly this, with status 200: posthog-js retries anything but 200, posthog-python accepts only 200. */
const OK_BODY = Buffer.from(JSON.stringify({ status: 1 }));

/**
 * The SDK ingest routes. Each request is decoded, validated whole, normalized, and produced to the bus in one
 * call; the answer is 200 only once the bus has every event durably (docs/capture.md#status-codes). Nothing of
 * a rejected request reaches the bus.
 */
export function captureRoutes(deps: CaptureDeps): SdkRouters & { table: SdkRoute[] } {
  const settings: CaptureSettings = { ...DEFAULT_CAPTURE_SETTINGS, ...deps.settings };
  const { rate } = deps.limits ?? captureLimits(settings);
  const metrics = captureMetrics(deps.metrics);
  const logger = deps.logger.child({ component: 'capture' });

  /** The decompressed payload stays charged to the budget until its events are produced: they are built from it. */
  async function capture(req: IncomingMessage, res: ServerResponse, route: Route): Promise<void> {
    const lease = settings.decompression.lease();
    try {
      if (route.replay) {
        metrics.events.inc({ topic: 'replay' }, await replay(req, lease));
        sendOk(res);
      } else {
        await captureWithin(req, res, route, lease);
      }
    } finally {
      lease.release();
    }
  }

  async function captureV1(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const lease = settings.decompression.lease();
    try {
      const response = await v1(req, lease);
      metrics.events.inc({ topic: 'events' }, Object.values(response.results).filter((r) => r.result === 'ok').length);
      sendJson(res, Buffer.from(JSON.stringify(response)));
    } finally {
      lease.release();
    }
  }

  async function captureOtlp(req: IncomingMessage, res: ServerResponse, signal: OtlpSignal): Promise<void> {
    const lease = settings.decompression.lease();
    try {
      const records = await otlp(req, signal, lease);
      if (records > 0) metrics.events.inc({ topic: settings.logsTopic }, records);
      sendJson(res, OTLP_OK_BODY);
    } finally {
      lease.release();
    }
  }

  async function captureAiOtel(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const lease = settings.decompression.lease();
    try {
      metrics.events.inc({ topic: 'events' }, await aiOtel(req, lease));
      sendJson(res, OTLP_OK_BODY);
    } finally {
      lease.release();
    }
  }

  async function captureWithin(req: IncomingMessage, res: ServerResponse, route: Route, lease: DecompressionLease): Promise<void> {
    const now = settings.now();
    const query = new URLSearchParams(queryString(req.url));
    const body = await readBody(req, settings.limits.bodyBytes, captureError);
    const text = await decodePayload(
      { query, body, contentType: req.headers['content-type'], contentEncoding: req.headers['content-encoding'], legacyEndpoint: route.legacy },
      settings.limits.decompressedBytes,
      lease,
    );
    const request = parseCaptureRequest(text);
    if (route.ai) checkAiEventSizes(request, settings.limits.aiEventBytes);
    const project = await lookUpProject(requestToken(request));
    if (!(await admit(project.id, request.events.length))) throw captureError.rateLimited();

    const topic = request.historical ? settings.topics.historical : settings.topics.events;
    const ip = clientIp(req, deps.trustProxy);
    const sentAt = request.sentAt ?? sentAtFromQuery(query.get('sent_at') ?? query.get('_'));
    const context = prepareContext({
      projectId: project.id,
      ip,
      now,
      sentAt,
      invalidSentAt: request.invalidSentAt,
      historical: request.historical,
      engage: route.engage === true,
      maxMessageBytes: route.ai ? settings.limits.aiEventBytes + AI_ENVELOPE_BYTES : settings.limits.eventBytes,
      eventUuid: requestUuids(project.id, topic, text),
    });
    const messages = request.events.map(({ event, attrPrefix }) => toBusMessage(event, attrPrefix, context));
    await produce(topic, messages);
    metrics.events.inc({ topic: request.historical ? 'historical' : 'events' }, messages.length);
    sendOk(res);
  }

  async function admit(projectId: number, events: number): Promise<boolean> {
    return !rate || rate.admit(projectId, events);
  }

  async function lookUpProject(token: string) {
    let project;
    try {
      project = await deps.projectTokens.get(token);
    } catch (error) {
      logger.warn({ err: error }, 'project lookup failed');
      throw captureError.unavailable();
    }
    if (!project) throw captureError.unknownToken();
    return project;
  }

  /** Resolves when the bus has the messages durably; 503 when it fails or takes longer than the timeout. */
  async function produce(topic: string, messages: OutgoingMessage[]): Promise<void> {
    const stopTimer = metrics.produceSeconds.startTimer();
    const produced = deps.bus.produce(topic, messages);
    try {
      await withTimeout(produced, settings.produceTimeoutMs, () => {
        // A produce that times out may still land later: the client retries and the event uuids dedupe the copy.
        produced.catch((error: unknown) => logger.warn({ err: error, topic }, 'produce failed after its request had timed out'));
        logger.warn({ topic, timeoutMs: settings.produceTimeoutMs, events: messages.length }, 'produce timed out');
        return captureError.unavailable();
      });
    } catch (error) {
      if (error instanceof ApiError) throw error;
      logger.warn({ err: error, topic, events: messages.length }, 'produce failed');
      throw captureError.unavailable();
    } finally {
      stopTimer();
    }
  }

  const replay = replayCapture({
    topic: settings.replay.topic,
    limits: { bodyBytes: settings.replay.bodyBytes, decompressedBytes: settings.limits.decompressedBytes, messageBytes: settings.limits.eventBytes },
    now: settings.now,
    lookUpProject,
    produce,
  });

  const otlp = otlpCapture({ topic: settings.logsTopic, limits: settings.limits, now: settings.now, lookUpProject, produce });

  const aiOtel = aiOtelCapture({
    topic: settings.topics.events,
    now: settings.now,
    logger,
    lookUpProject,
    admit,
    clientIp: (req) => clientIp(req, deps.trustProxy),
    produce,
    onShed: (spans) => metrics.otelSpansShed.inc(spans),
  });

  const v1 = v1Capture({
    topics: settings.topics,
    limits: { bodyBytes: V1_BODY_BYTES, decompressedBytes: settings.limits.decompressedBytes, eventBytes: settings.limits.eventBytes },
    now: settings.now,
    lookUpProject,
    admit,
    clientIp: (req) => clientIp(req, deps.trustProxy),
    produce,
  });

  const table = INGEST.flatMap(({ paths: [path, ...aliases], summary, ...route }): SdkRoute[] => [
    {
      methods: ['get', 'head', 'post'],
      path,
      aliases,
      summary,
      query: CAPTURE_QUERY,
      body: CAPTURE_BODY,
      response: OK,
      fast: (req, res) => capture(req, res, route),
    },
    // PostHog answers a preflight with the success body.
    { methods: ['options'], path, aliases, summary: 'A preflight, answered with the success body.', response: OK, fast: (_req, res) => sendOk(res) },
  ]);
  table.push(
    {
      methods: ['post'],
      path: '/i/v1/analytics/events',
      summary: 'Capture v1 (`POSTHOG_CAPTURE_MODE=v1`): Bearer token, PostHog-* headers, a typed batch; one result per event.',
      body: v1BatchSchema,
      response: V1_OK,
      fast: captureV1,
    },
    { methods: ['options'], path: '/i/v1/analytics/events', summary: 'A preflight.', response: OK, fast: (_req, res) => sendOk(res) },
    {
      methods: ['post'],
      path: '/i/v0/ai/otel',
      summary:
        "LLM analytics over OpenTelemetry (posthog-python's and @posthog/ai's OTel exporter): OTLP/HTTP traces, protobuf or JSON, Bearer token; AI spans become `$ai_*` events.",
      response: OTLP_OK,
      fast: captureAiOtel,
    },
    { methods: ['options'], path: '/i/v0/ai/otel', summary: 'A preflight.', response: OK, fast: (_req, res) => sendOk(res) },
    ...(['logs', 'metrics'] as const).flatMap((signal): SdkRoute[] => [
      {
        methods: ['post'],
        path: `/i/v1/${signal}`,
        summary:
          signal === 'logs'
            ? 'OpenTelemetry logs (OTLP/HTTP JSON or protobuf, token in `?token=` or Bearer): each record stored in the logs table.'
            : 'OpenTelemetry metrics (OTLP/HTTP JSON, token in `?token=` or Bearer): checked and acknowledged, not stored.',
        query: { token: { type: 'string' } },
        response: OTLP_OK,
        fast: (req, res) => captureOtlp(req, res, signal),
      },
      { methods: ['options'], path: `/i/v1/${signal}`, summary: 'A preflight.', response: OK, fast: (_req, res) => sendOk(res) },
    ]),
  );
  // Other methods fall through to the 404 (with the CORS headers, as the route's CORS layer gave them).
  const routers = sdkRouters(table, {
    logger,
    otherMethods: 'not_found',
    onError: (error) => metrics.rejected.inc({ code: error instanceof ApiError ? error.code : 'error' }),
  });
  return { ...routers, table };
}

/**
 * PostHog measures an AI event as the client serialized it and refuses the whole request (413) when one is larger,
 * so that posthog-node halves its batch and, for a lone event, drops it with a log line.
 */
function checkAiEventSizes(request: CaptureRequest, limit: number): void {
  for (const { event, attrPrefix } of request.events) {
    const bytes = Buffer.byteLength(JSON.stringify(event));
    if (bytes > limit) {
      const attr = attrPrefix === '' ? null : attrPrefix.slice(0, -2);
      throw captureError.tooLarge(`${attr === null ? 'The event' : `Event ${attr}`} is ${bytes} bytes, above the limit of ${limit} bytes per AI event.`, attr);
    }
  }
}

function sendOk(res: ServerResponse): void {
  sendJson(res, OK_BODY);
}

function sendJson(res: ServerResponse, body: Buffer): void {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
  res.end(body);
}

/** The client's address (`requestAddress`), IPv4-mapped IPv6 written as IPv4. */
function clientIp(req: IncomingMessage, trustProxy: boolean): string | null {
  const ip = requestAddress(req, trustProxy);
  if (!ip) return null;
  // Dual-stack sockets report IPv4 clients as IPv4-mapped IPv6; GeoIP and people want the IPv4 form.
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
}

export function createApp(deps: CaptureDeps): ServiceApp {
  const routes = captureRoutes(deps);
  return createServiceApp({
    ...deps,
    checks: { postgres: () => deps.sql.ping(), bus: () => deps.bus.ping() },
    fast: [routes.fast],
    mount: (app) => app.use(routes.router, sdkSchemaRouter(routes.table)),
  });
}
