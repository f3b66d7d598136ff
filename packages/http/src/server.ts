import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@plover/core';
import type { ServiceApp } from './app';

export interface RunningServer {
  server: http.Server;
  port: number;
  /** Stops accepting connections and waits for open requests to finish. */
  close(): Promise<void>;
}

export async function listen(app: ServiceApp, options: { port: number; host: string }): Promise<RunningServer> {
  const server = http.createServer(app);
  // Keep-alive longer than typical load balancers' idle timeout, so they never reuse a socket we closed.
  server.keepAliveTimeout = 65_000;
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
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      }),
  };
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
export async function serve(
  app: ServiceApp,
  options: { port: number; host: string; logger: Logger; closeResources: () => Promise<void> },
): Promise<RunningServer> {
  const running = await listen(app, options);
  options.logger.info({ port: running.port, host: options.host }, 'listening');
  onShutdown(options.logger, async () => {
    await running.close();
    await options.closeResources();
  });
  return running;
}
