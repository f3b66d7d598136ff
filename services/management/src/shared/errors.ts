import { ApiError } from '@plover/core';

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
