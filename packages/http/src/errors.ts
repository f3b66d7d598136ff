import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ApiError, type Logger } from '@plover/core';

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

function toApiError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
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

/** The one place where an error becomes a response: `{type, code, detail, attr}` with its status. */
export function errorRenderer(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const apiError = toApiError(error);
    if (apiError) {
      res.status(apiError.status).json(apiError.toBody());
      return;
    }
    logger.error({ err: error, method: req.method, url: req.originalUrl }, 'unhandled error');
    res.status(500).json({ type: 'server_error', code: 'error', detail: 'A server error occurred.', attr: null });
  };
}
