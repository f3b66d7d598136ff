import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ProjectTokenCache } from '@plover/accounts';
import type { EventBus, OutgoingMessage } from '@plover/bus';
import type { CaptureConfig } from '@plover/config';
import { CAPTURE_TOPICS, REPLAY_TOPIC } from '@plover/contracts';
import { ApiError, TokenBuckets, withTimeout, type Logger } from '@plover/core';
import { isoTimestamp } from '@plover/core/utc-text';
import {
  createServiceApp,
  decompressionBudget,
  queryString,
  readBody,
  requestAddress,
  routePath,
  sendError,
  setPermissiveCorsHeaders,
  type DecompressionBudget,
  type Admission,
  type DecompressionLease,
  type FastRoute,
  type MetricsRegistry,
  type ServiceApp,
  type WorkersView,
} from '@plover/http';
import type { Sql } from '@plover/postgres';
import { decodePayload } from './decode';
import { captureError } from './errors';
import { captureMetrics } from './metrics';
import { toBusMessage, type RequestContext } from './normalize';
import { replayCapture } from './replay';
import { parseCaptureRequest, requestToken } from './request';
import { sentAtFromQuery } from './timestamp';
import { requestUuids } from './uuids';

export interface CaptureSettings extends CaptureConfig {
  topics: { events: string; historical: string };
  limits: {
    /** Request body as received (PostHog: 20 MiB on every analytics route). */
    bodyBytes: number;
    /** After decompression (PostHog: 5 × the body limit). */
    decompressedBytes: number;
    /** One bus message (Kafka's default `message.max.bytes`, which PostHog's capture inherits). */
    eventBytes: number;
  };
  /** Session replay (`/s/`): its topic, and its body limit as received (PostHog: 25 MiB). */
  replay: { topic: string; bodyBytes: number };
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
  produceTimeoutMs: 5_000,
  rateLimit: undefined,
  topics: CAPTURE_TOPICS,
  limits: { bodyBytes: 20 * MIB, decompressedBytes: 100 * MIB, eventBytes: 1_000_000 },
  replay: { topic: REPLAY_TOPIC, bodyBytes: 25 * MIB },
  decompression: decompressionBudget,
  now: Date.now,
};

interface Route {
  /** The payload may carry PostHog's legacy second base64 layer (Rust `path_is_legacy_endpoint`). */
  legacy: boolean;
  engage?: boolean;
  /** Session replay `$snapshot` events (`replay.ts`). */
  replay?: boolean;
}

/**
 * The ingest routes by path, without the trailing slash and lowercased: the SDKs call `/e` and `/e/` alike, and
 * Express's default (non-strict, case-insensitive) routing, which these paths had before, accepts both.
 */
const ROUTES = new Map<string, Route>([
  ['/i/v0/e', { legacy: false }],
  ['/batch', { legacy: false }],
  ['/e', { legacy: true }],
  ['/capture', { legacy: true }],
  ['/track', { legacy: true }],
  ['/engage', { legacy: true, engage: true }],
  ['/s', { legacy: false, replay: true }],
]);

/** Exactly this, with status 200: posthog-js retries anything but 200, posthog-python accepts only 200. */
const OK_BODY = Buffer.from(JSON.stringify({ status: 1 }));

/**
 * The SDK ingest routes. Each request is decoded, validated whole, normalized, and produced to the bus in one
 * call; the answer is 200 only once the bus has every event durably (docs/capture.md#status-codes). Nothing of
 * a rejected request reaches the bus.
 */
export function captureRoutes(deps: CaptureDeps): FastRoute {
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
    const project = await lookUpProject(requestToken(request));
    if (rate && !(await rate.admit(project.id, request.events.length))) throw captureError.rateLimited();

    const topic = request.historical ? settings.topics.historical : settings.topics.events;
    const ip = clientIp(req, deps.trustProxy);
    const sentAt = request.sentAt ?? sentAtFromQuery(query.get('sent_at') ?? query.get('_'));
    const context: RequestContext = {
      projectId: project.id,
      ip,
      ipJson: JSON.stringify(ip),
      now,
      nowIso: isoTimestamp(now),
      sentAt,
      sentAtJson: sentAt === undefined ? 'null' : `"${isoTimestamp(sentAt)}"`,
      invalidSentAt: request.invalidSentAt,
      historical: request.historical,
      engage: route.engage === true,
      maxMessageBytes: settings.limits.eventBytes,
      eventUuid: requestUuids(project.id, topic, text),
    };
    const messages = request.events.map(({ event, attrPrefix }) => toBusMessage(event, attrPrefix, context));
    await produce(topic, messages);
    metrics.events.inc({ topic: request.historical ? 'historical' : 'events' }, messages.length);
    sendOk(res);
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

  return (req, res) => {
    const route = ROUTES.get(routePath(req.url));
    if (!route) return false;
    setPermissiveCorsHeaders(req, res);
    switch (req.method) {
      case 'GET':
      case 'HEAD':
      case 'POST':
        capture(req, res, route).catch((error: unknown) => {
          metrics.rejected.inc({ code: error instanceof ApiError ? error.code : 'error' });
          sendError(req, res, error, logger);
        });
        return true;
      case 'OPTIONS':
        // PostHog answers a preflight with the success body.
        sendOk(res);
        return true;
      default:
        // Other methods fall through to the 404 (with the CORS headers, as the route's CORS layer gave them).
        return false;
    }
  };
}

function sendOk(res: ServerResponse): void {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': OK_BODY.length });
  res.end(OK_BODY);
}

/** The client's address (`requestAddress`), IPv4-mapped IPv6 written as IPv4. */
function clientIp(req: IncomingMessage, trustProxy: boolean): string | null {
  const ip = requestAddress(req, trustProxy);
  if (!ip) return null;
  // Dual-stack sockets report IPv4 clients as IPv4-mapped IPv6; GeoIP and people want the IPv4 form.
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
}

export function createApp(deps: CaptureDeps): ServiceApp {
  return createServiceApp({
    ...deps,
    checks: { postgres: () => deps.sql.ping(), bus: () => deps.bus.ping() },
    fast: [captureRoutes(deps)],
  });
}
