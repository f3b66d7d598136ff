import type { ErrorRequestHandler } from 'express';
import { ApiError, StorageError } from '@plover/core';

/**
 * The management API's errors, in PostHog's words (`posthog/auth.py`, `posthog/permissions.py`,
 * drf-exceptions-hog; docs/management.md#errors). They are plain ApiErrors, rendered by the one renderer in
 * packages/http.
 * PostHog renders 403 with type `authentication_error` and 404/405/415 with `invalid_request`.
 */
export const errors = {
  notAuthenticated: () => ApiError.unauthenticated('Authentication credentials were not provided.'),
  invalidKey: (source: string) => ApiError.unauthenticated(`Personal API key found in request ${source} is invalid.`, 'authentication_failed'),
  forbidden: (detail: string) => new ApiError(403, 'authentication_error', 'permission_denied', detail),
  missingScope: (scope: string) => errors.forbidden(`API key missing required scope '${scope}'`),
  notFound: (detail = 'Not found.') => ApiError.notFound(detail),
  methodNotAllowed: (method: string, detail?: string) =>
    new ApiError(405, 'invalid_request', 'method_not_allowed', detail ?? `Method "${method}" not allowed.`),
  unsupportedMediaType: (type: string) => new ApiError(415, 'invalid_request', 'unsupported_media_type', `Unsupported media type "${type}" in request.`),
  validation: (detail: string, attr: string | null = null, code = 'invalid_input') => ApiError.validation(detail, attr, code),
  required: (attr: string) => ApiError.validation('This field is required.', attr, 'required'),
};

/**
 * Postgres refusing a character of the client's text (22P05: `\u0000` in jsonb; 22021: a byte sequence invalid
 * in the encoding) is the client's input, not a server fault: a 400. Requests are checked for NUL before any
 * handler runs; this catches whatever reaches Postgres another way.
 */
export const unstorableInput: ErrorRequestHandler = (error: unknown, _req, _res, next) => {
  const cause = error instanceof StorageError ? error : (error as { cause?: unknown } | null)?.cause;
  if (cause instanceof StorageError && (cause.code === '22P05' || cause.code === '22021')) {
    next(errors.validation('The request holds characters that cannot be stored (such as NUL).', null, 'unstorable_characters'));
    return;
  }
  next(error);
};
