/**
 * OpenTelemetry logs and metrics (`/i/v1/logs`, `/i/v1/metrics`): what posthog-js (console-log capture, when remote
 * config turns it on), posthog-node's `captureLog` and posthog-python's metrics post, OTLP/HTTP JSON with the
 * project token in `?token=`. Plover checks and acknowledges them as PostHog does for a project without the logs
 * product, and does not store them yet (docs/capture.md#logs-and-metrics-iv1logs-iv1metrics).
 */
import type { IncomingMessage } from 'node:http';
import type { ProjectByToken } from '@plover/accounts';
import { queryString, readBody, type DecompressionLease } from '@plover/http';
import { decodePayload } from './decode';
import { captureError } from './errors';
import { bearerToken, checkTokenShape } from './request';

export type OtlpSignal = 'logs' | 'metrics';

export interface OtlpCaptureDeps {
  limits: { bodyBytes: number; decompressedBytes: number };
  lookUpProject(token: string): Promise<ProjectByToken>;
}

/** The top-level list of an OTLP export request of each signal. */
const RESOURCE_LIST: Record<OtlpSignal, string> = { logs: 'resourceLogs', metrics: 'resourceMetrics' };

/** Resolves with the number of records the request held once it is checked; throws capture's errors otherwise. */
export function otlpCapture(deps: OtlpCaptureDeps): (req: IncomingMessage, signal: OtlpSignal, lease: DecompressionLease) => Promise<number> {
  return async (req, signal, lease) => {
    const query = new URLSearchParams(queryString(req.url));
    const token = query.get('token') ?? bearerToken(req.headers.authorization);
    if (!token) throw captureError.noToken();
    await deps.lookUpProject(checkTokenShape(token));
    if (req.headers['content-type']?.toLowerCase().startsWith('application/x-protobuf')) {
      throw captureError.unsupportedContentType(req.headers['content-type']);
    }
    const body = await readBody(req, deps.limits.bodyBytes, captureError);
    // posthog-js sends gzip as text/plain without a hint, posthog-node with Content-Encoding: gzip: both are read,
    // and inflating stops at the limit.
    const text = await decodePayload(
      { query, body, contentType: req.headers['content-type'], contentEncoding: req.headers['content-encoding'], legacyEndpoint: false },
      deps.limits.decompressedBytes,
      lease,
    );
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch (error) {
      throw captureError.parsing(error instanceof Error ? error.message : 'invalid JSON');
    }
    const list = RESOURCE_LIST[signal];
    const resources = typeof document === 'object' && document !== null && !Array.isArray(document) ? (document as Record<string, unknown>)[list] : undefined;
    if (!Array.isArray(resources)) throw captureError.invalidEvent(`An OTLP ${signal} export request has a ${list} list.`, list);
    return resources.length;
  };
}
