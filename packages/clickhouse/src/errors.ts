/**
 * One classification of ClickHouse failures for both adapters. Each adapter extracts the code its driver
 * reports (a ClickHouse error code, or a Node network error code); whether retrying can help is decided here,
 * from the code alone, never from message text.
 */
import { StorageError } from '@plover/core';

/**
 * ClickHouse error codes (src/Common/ErrorCodes.cpp) that describe a passing condition of the server or the
 * network, so the same statement can succeed later. Everything else (syntax, types, unknown identifiers,
 * bad data, missing tables, permissions) fails again the same way and is permanent.
 */
const RETRIABLE_CLICKHOUSE_CODES: ReadonlySet<number> = new Set([
  159, // TIMEOUT_EXCEEDED
  160, // TOO_SLOW
  202, // TOO_MANY_SIMULTANEOUS_QUERIES
  203, // NO_FREE_CONNECTION
  209, // SOCKET_TIMEOUT
  210, // NETWORK_ERROR
  225, // NO_ZOOKEEPER
  241, // MEMORY_LIMIT_EXCEEDED
  242, // TABLE_IS_READ_ONLY (e.g. a replica lost its Keeper session)
  252, // TOO_MANY_PARTS (inserts outpace merges)
  254, // NO_ACTIVE_REPLICAS
  279, // ALL_CONNECTION_TRIES_FAILED
  285, // TOO_FEW_LIVE_REPLICAS
  319, // UNKNOWN_STATUS_OF_INSERT
  439, // CANNOT_SCHEDULE_TASK (thread pool exhausted)
  999, // KEEPER_EXCEPTION
]);

/** Node socket/DNS error codes: the server was not reached or the connection broke, so trying again can work. */
const RETRIABLE_NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** A failure that ClickHouse reported with its numeric error code; `code` on the StorageError is that number. */
export function clickHouseFailure(operation: string, code: number, cause: unknown): StorageError {
  return new StorageError(`${operation} failed: ${messageOf(cause)}`, RETRIABLE_CLICKHOUSE_CODES.has(code), String(code), {
    cause,
  });
}

/** A failure Node reported with its `error.code`: retriable when the server was not reached or the connection broke. */
export function nodeFailure(operation: string, code: string, cause: unknown): StorageError {
  return new StorageError(`${operation} failed: ${messageOf(cause)}`, RETRIABLE_NETWORK_CODES.has(code), code, { cause });
}

/** The adapter's own deadline passed; the statement may well succeed when the server is less busy. */
export function timeoutFailure(operation: string, timeoutMs: number, cause: unknown): StorageError {
  return new StorageError(`${operation} timed out after ${timeoutMs} ms`, true, 'TIMEOUT', { cause });
}

/**
 * Anything without a ClickHouse or network code to go by (a driver's own error, e.g. chDB's CHDB_CONNECTION):
 * permanent, since blind retries of unknown failures only add load.
 */
export function unclassifiedFailure(operation: string, cause: unknown, code?: string): StorageError {
  return new StorageError(`${operation} failed: ${messageOf(cause)}`, false, code, { cause });
}

export function closedFailure(operation: string): StorageError {
  return new StorageError(`${operation} failed: the ClickHouse handle is closed`, false, 'CLOSED');
}

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
