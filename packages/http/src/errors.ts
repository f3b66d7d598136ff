import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ApiError, isDiskFull, type Logger } from '@plover/core';
import { sendJson } from './fast';

/** Unknown routes answer in the same error shape as everything else. */
export const notFound: RequestHandler = (_req, _res, next) => {
  next(ApiError.notFound());
};

interface BodyParserError {
  type: string;
  status: number;
}

function isBodyParserError(error: unknown): error is BodyParserError {
  return typeof error === 'object' && error !== null && 'type' in error && 'status' in error;
}

/** How long a client is asked to wait after a write refused for want of disk space. */
const DISK_FULL_RETRY_AFTER_SECONDS = 60;

function toApiError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  // A full disk (or one below the watermark) is a condition of the server, said as such: 507, never a bare 500.
  if (isDiskFull(error)) {
    const detail = `Not enough disk space to store this; try again once space is freed (${error instanceof Error ? error.message : 'disk full'}).`;
    return new ApiError(507, 'server_error', 'insufficient_storage', detail, null, DISK_FULL_RETRY_AFTER_SECONDS);
  }
  // Express's router could not percent-decode a path parameter (invalid UTF-8 such as `%ED%A0%80`).
  if (error instanceof URIError && (error as URIError & { status?: number }).status === 400) {
    return ApiError.validation('The URL path is not valid percent-encoded UTF-8.', null, 'parse_error');
  }
  // body-parser tags its failures with a `type`; they are the client's fault, not ours.
  if (isBodyParserError(error)) {
    if (error.type === 'entity.too.large') return new ApiError(413, 'validation_error', 'payload_too_large', 'Request body is too large.');
    if (error.type === 'entity.parse.failed') return ApiError.validation('Malformed JSON in request body.', null, 'parse_error');
    if (error.type === 'encoding.unsupported' || error.type === 'charset.unsupported') {
      return new ApiError(415, 'validation_error', 'unsupported_media_type', 'Unsupported content encoding.');
    }
    if (error.status >= 400 && error.status < 500) return ApiError.validation('Malformed request body.', null, 'parse_error');
  }
  return undefined;
}

const SERVER_ERROR = { type: 'server_error', code: 'error', detail: 'A server error occurred.', attr: null } as const;

/**
 * The one place where an error becomes an answer: `{type, code, detail, attr}` with its status. Anything that is
 * not a client error is logged and hidden behind a generic 500.
 */
function errorAnswer(error: unknown, logger: Logger, req: IncomingMessage): { status: number; body: object; retryAfter?: number } {
  const apiError = toApiError(error);
  if (apiError) return { status: apiError.status, body: apiError.toBody(), retryAfter: apiError.retryAfterSeconds };
  logger.error({ err: error, method: req.method, url: (req as { originalUrl?: string }).originalUrl ?? req.url }, 'unhandled error');
  return { status: 500, body: SERVER_ERROR };
}

/** Express's error handler: the same answer as a fast route's (sendError). */
export function errorRenderer(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => sendError(req, res, error, logger);
}

/** An error's answer, from a fast route or Express. A response already under way (a streamed export) can only be cut off. */
export function sendError(req: IncomingMessage, res: ServerResponse, error: unknown, logger: Logger): void {
  const { status, body, retryAfter } = errorAnswer(error, logger, req);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
  sendJson(res, status, body);
}
