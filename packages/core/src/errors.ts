/**
 * Every HTTP error Plover answers has the PostHog/DRF shape `{type, code, detail, attr}`.
 * Errors carry their status so that one renderer (packages/http) turns any of them into a response.
 */
/** DRF's error types as PostHog renders them; 404, 405 and 415 are `invalid_request` there. */
export type ApiErrorType = 'validation_error' | 'authentication_error' | 'permission_denied' | 'invalid_request' | 'throttled' | 'server_error';

export interface ApiErrorBody {
  type: ApiErrorType;
  code: string;
  detail: string;
  attr: string | null;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: ApiErrorType,
    readonly code: string,
    readonly detail: string,
    readonly attr: string | null = null,
    /** Sent as `Retry-After`: when the failure is load the server sheds, SDKs back off by it. */
    readonly retryAfterSeconds?: number,
  ) {
    super(detail);
    this.name = 'ApiError';
  }

  toBody(): ApiErrorBody {
    return { type: this.type, code: this.code, detail: this.detail, attr: this.attr };
  }

  static validation(detail: string, attr: string | null = null, code = 'invalid_input'): ApiError {
    return new ApiError(400, 'validation_error', code, detail, attr);
  }

  static unauthenticated(detail: string, code = 'not_authenticated'): ApiError {
    return new ApiError(401, 'authentication_error', code, detail);
  }

  static forbidden(detail: string, code = 'permission_denied'): ApiError {
    return new ApiError(403, 'permission_denied', code, detail);
  }

  static notFound(detail = 'Not found.'): ApiError {
    return new ApiError(404, 'invalid_request', 'not_found', detail);
  }

  static unavailable(detail: string, retryAfterSeconds?: number): ApiError {
    return new ApiError(503, 'server_error', 'service_unavailable', detail, null, retryAfterSeconds);
  }
}

/**
 * Failures of storage or the bus say whether trying again can succeed. Adapters classify driver errors
 * by their codes (SQLSTATE, ClickHouse error codes, Kafka error types), never by message text.
 */
export class StorageError extends Error {
  constructor(
    message: string,
    readonly retriable: boolean,
    readonly code: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StorageError';
  }
}

export function isRetriable(error: unknown): boolean {
  return error instanceof StorageError && error.retriable;
}
