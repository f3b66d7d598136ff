import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { ApiError, type Logger } from '@plover/core';
import type { ServiceApp } from './app';
import { connectionsCheckingInterval, DEFAULT_CONNECTION_LIMITS, limitConnections, type ConnectionLimits } from './connections';

export interface RunningServer {
  server: http.Server;
  port: number;
  /** Stops accepting connections, waits for open requests to finish, and closes each connection once idle. */
  close(): Promise<void>;
}

/** While closing, how often connections that finished their request are closed. */
const IDLE_SWEEP_MS = 100;

export interface ListenOptions {
  port: number;
  host: string;
  /** What clients may hold of the server; the defaults otherwise (the `http` config section has them). */
  connections?: ConnectionLimits;
}

export async function listen(app: ServiceApp, options: ListenOptions): Promise<RunningServer> {
  const limits = options.connections ?? DEFAULT_CONNECTION_LIMITS;
  const server = http.createServer({ connectionsCheckingInterval: connectionsCheckingInterval(limits) });
  server.on('request', limitConnections(server, app, limits));
  // Keep-alive longer than typical load balancers' idle timeout, so they never reuse a socket we closed.
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        // A keep-alive connection busy at close would otherwise stay open for keepAliveTimeout after its answer.
        const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
        server.close((error) => {
          clearInterval(sweep);
          if (error) reject(error);
          else resolve();
        });
        server.closeIdleConnections();
      }),
  };
}

/**
 * A request Node's parser refused (a request line and headers past 16 KiB, bytes that are not HTTP) gets the
 * JSON error shape every other answer has, instead of Node's bare status line; the connection is closed, since
 * the parser cannot find where the next request would start.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const [status, reason, code, detail] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'request_header_fields_too_large', 'The request line and headers exceed the limit of 16 KiB.']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'request_timeout', 'The request was not received in time.']
        : [400, 'Bad Request', 'parse_error', 'Malformed HTTP request.'];
  const body = JSON.stringify(new ApiError(status, 'validation_error', code, detail).toBody());
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * SIGTERM/SIGINT run `shutdown` once (stop accepting, drain, flush, commit), then exit.
 * A second signal exits at once, for an operator who does not want to wait.
 */
export function onShutdown(logger: Logger, shutdown: () => Promise<void>): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, 'shutting down');
    shutdown().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
}

/** Listens, logs where, and on SIGTERM stops accepting requests before closing the service's resources. */
export async function serve(app: ServiceApp, options: ListenOptions & { logger: Logger; closeResources: () => Promise<void> }): Promise<RunningServer> {
  const running = await listen(app, options);
  options.logger.info({ port: running.port, host: options.host, maxConnections: running.server.maxConnections }, 'listening');
  onShutdown(options.logger, async () => {
    await running.close();
    await options.closeResources();
  });
  return running;
}
