import { StorageError } from '@plover/core';

/** Socket failures: the server was unreachable or the connection broke, so a new attempt can succeed. */
const NETWORK_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ECONNABORTED', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * SQLSTATEs worth retrying: connection exceptions (class 08), serialization failures and deadlocks (the
 * transaction lost a race and can be replayed), insufficient resources (class 53) and the server shutting
 * down or starting up (57P01–57P03). Constraint violations, syntax errors, bad data: trying again cannot help.
 */
export function isRetriableSqlState(state: string): boolean {
  const errorClass = state.slice(0, 2);
  return errorClass === '08' || errorClass === '53' || state === '40001' || state === '40P01' || state === '57P01' || state === '57P02' || state === '57P03';
}

function codeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

/**
 * Wraps a driver error (pg or PGlite, both carry the SQLSTATE in `code`) into a StorageError, classified by
 * code, never by message text. `connectionFailed` is the adapter's own observation that the connection could
 * not be opened or broke under this query: pg reports some of those (connection timeout, unexpected
 * termination) without any code. A SQLSTATE still decides when there is one — a wrong password fails
 * while connecting, and retrying it cannot help.
 */
export function toStorageError(error: unknown, queryName: string, connectionFailed = false): StorageError {
  if (error instanceof StorageError) return error;
  const code = codeOf(error);
  let retriable: boolean;
  if (code !== undefined && NETWORK_ERRNOS.has(code)) retriable = true;
  else if (code !== undefined && SQLSTATE.test(code)) retriable = isRetriableSqlState(code);
  else retriable = connectionFailed;
  const detail = error instanceof Error ? error.message : String(error);
  return new StorageError(`${queryName}: ${detail}`, retriable, code, { cause: error });
}

/** A unique index refused the write (SQLSTATE 23505): a driver error or the StorageError wrapping one. */
export function isUniqueViolation(error: unknown): boolean {
  return codeOf(error) === '23505' || (error instanceof Error && codeOf(error.cause) === '23505');
}

/** Using a closed handle is a bug in the caller, not an outage: never retriable. */
export function closedError(queryName: string): StorageError {
  return new StorageError(`${queryName}: the database handle is closed`, false, undefined);
}
