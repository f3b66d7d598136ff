import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type http from 'node:http';
import type { Socket } from 'node:net';
import type { ServiceApp } from './app';

/** What one HTTP server lets its clients hold (`HttpConfig.connections`). */
export interface ConnectionLimits {
  /** Open connections at most; `auto` derives it from the process's file descriptor limit (see connectionCap). */
  max: number | 'auto';
  /** A connection that has not sent a whole request line and headers this long after it opened (or after its
   * previous request) is answered 408 and closed: also one that never sends a byte. */
  headersTimeoutMs: number;
  /** The same for the whole request, body included. */
  requestTimeoutMs: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = { max: 'auto', headersTimeoutMs: 10_000, requestTimeoutMs: 60_000 };

/**
 * Requests one connection may have waiting for their answers (pipelined, or answered but not yet taken by the
 * client). A request that arrives while this many are unanswered closes the connection without being handled: no
 * SDK pipelines, and a client that does not read its answers must not make the server work on (and buffer) more.
 */
export const MAX_UNANSWERED_PER_CONNECTION = 16;

/** Connections `auto` never exceeds however many descriptors there are (each costs memory in Node and the kernel). */
const AUTO_CEILING = 16_384;

/**
 * Open files the process may have (RLIMIT_NOFILE's soft limit, which Node raises to the hard limit at start), or
 * undefined when unlimited or unknown. Linux says it in /proc/self/limits; elsewhere a shell started from this
 * process inherits the limit and reports it.
 */
export function fileDescriptorLimit(): number | undefined {
  let text: string;
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((candidate) => candidate.startsWith('Max open files'));
    text = line?.split(/\s{2,}/)[1] ?? '';
  } catch {
    try {
      text = execFileSync('/bin/sh', ['-c', 'ulimit -n'], { encoding: 'utf8', timeout: 2_000 }).trim();
    } catch {
      return undefined;
    }
  }
  const limit = Number(text);
  return Number.isSafeInteger(limit) && limit > 0 ? limit : undefined;
}

/**
 * The most connections a server accepts. `auto` keeps a quarter of the descriptors (at least 256) for everything
 * else the process opens — the local log's segments, chDB's parts, PGlite's files, sockets to Postgres, Kafka and
 * ClickHouse — so that clients can never take the last descriptor a store needs; and never more than 16,384.
 */
export function connectionCap(max: number | 'auto', fdLimit: number | undefined): number {
  if (max !== 'auto') return max;
  if (fdLimit === undefined) return AUTO_CEILING;
  return Math.max(1, Math.min(AUTO_CEILING, fdLimit - Math.max(256, Math.ceil(fdLimit / 4))));
}

/**
 * Applies `limits` to `server`: the connection cap (a connection past it is closed by Node as it is accepted, and
 * the keep-alive connections idle at that moment are closed to make room, since an idle one is cheapest to open
 * again), the header and request timeouts, checked every second (Node's default is every 30 s), and the limit of
 * unanswered requests per connection around `app`.
 */
export function limitConnections(server: http.Server, app: ServiceApp, limits: ConnectionLimits): ServiceApp {
  server.maxConnections = connectionCap(limits.max, limits.max === 'auto' ? fileDescriptorLimit() : undefined);
  server.on('drop', () => server.closeIdleConnections());
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  const unanswered = new WeakMap<Socket, number>();
  return (req, res) => {
    const socket = req.socket;
    if (socket.destroyed) return;
    const count = (unanswered.get(socket) ?? 0) + 1;
    if (count > MAX_UNANSWERED_PER_CONNECTION) {
      socket.destroy();
      return;
    }
    unanswered.set(socket, count);
    // 'close' follows the answer's last byte reaching the kernel, or the connection's end.
    res.once('close', () => unanswered.set(socket, (unanswered.get(socket) ?? 1) - 1));
    app(req, res);
  };
}

/** How often Node looks for connections past their header or request timeout (its option; default 30 s). */
export function connectionsCheckingInterval(limits: ConnectionLimits): number {
  return Math.max(50, Math.min(1_000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)));
}
