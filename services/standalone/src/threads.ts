/**
 * Embedded mode's worker threads (sql-thread.ts, ingestion-thread.ts): how one is started, talked to and stopped.
 * Each runs a module beside this one and talks to the main thread through a PortRpc on a port of its own.
 */
import path from 'node:path';
import { MessageChannel, Worker, type MessagePort, type Transferable } from 'node:worker_threads';
import { PortRpc, type Logger } from '@plover/core';

/** What every thread is given: its port to the main thread, and how to log. */
export interface ThreadData {
  port: MessagePort;
  /** The main thread's choice between readable lines and JSON (it alone knows whether stdout is a terminal). */
  logging: { level: string; format: 'pretty' | 'json' };
}

/** Asked of every thread by the main thread when the process stops: end your work and close what you opened. */
export const STOP_CALL = 'thread.stop';

const STOP_TIMEOUT_MS = 30_000;

export interface Thread {
  rpc: PortRpc;
  /** Rejects when the thread fails or ends before stop(). */
  failed: Promise<never>;
  /** From now on a failure of the thread ends the process (logged as fatal). */
  fatalFromNowOn(): void;
  /** STOP_CALL, then the thread's end (terminated if it does not end in time). Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts `<name>-worker` beside this module, in this module's form: JavaScript when built, TypeScript under
 * `npm start`'s `--import tsx`, whose loader a worker does not inherit (there the worker registers tsx first).
 * `data` gets the thread's port; `transfer` lists other ports in `data`.
 */
export function startThread<D extends Omit<ThreadData, 'port'>>(name: string, data: D, logger: Logger, transfer: Transferable[] = []): Thread {
  const file = path.join(__dirname, `${name}-worker${path.extname(__filename)}`);
  const { port1, port2 } = new MessageChannel();
  const options = { workerData: { ...data, port: port2 }, transferList: [port2, ...transfer] };
  const worker = file.endsWith('.ts')
    ? new Worker(`require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(file)});`, { ...options, eval: true })
    : new Worker(file, options);
  const rpc = new PortRpc(port1);
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  let stopping = false;
  const failed = new Promise<never>((_resolve, reject) => {
    worker.once('error', reject);
    void exited.then((code) => reject(new Error(`the ${name} thread ended (exit code ${code})`)));
  });
  let fatal = false;
  failed.catch((error: unknown) => {
    if (!fatal || stopping) return;
    logger.fatal({ err: error }, `the ${name} thread failed; stopping`);
    process.exit(1);
  });
  let stopped: Promise<void> | undefined;
  return {
    rpc,
    failed,
    fatalFromNowOn: () => {
      fatal = true;
    },
    stop() {
      stopped ??= (async () => {
        stopping = true;
        const timer = setTimeout(() => void worker.terminate(), STOP_TIMEOUT_MS);
        try {
          await rpc.call(STOP_CALL);
        } finally {
          rpc.close();
          await exited;
          clearTimeout(timer);
        }
      })();
      return stopped;
    },
  };
}
