/**
 * Embedded mode runs ingestion in a worker thread (ingestion-worker.ts), so that its JavaScript (reading and
 * normalizing events, person rules, building rows) never holds up the event loop that answers capture, decide
 * and the management API. The local log capture appends to is owned by the main thread and served to the worker
 * over its port; PGlite runs in a thread of its own (sql-thread.ts), which the worker reaches over a port of
 * its own; the worker opens its own chDB connections (the engine is one per process, shared by the threads).
 *
 * Durability is unchanged: a batch's offsets are committed by the main thread's bus only once the worker's
 * handler resolved, which is after its rows are inserted and synced and its person writes committed. If the
 * worker fails, the process ends, as it would if ingestion failed on the main thread.
 */
import type { MessagePort } from 'node:worker_threads';
import type { EventBus } from '@plover/bus';
import { serveBus } from '@plover/bus/over-port';
import type { IngestionConfig } from '@plover/config';
import type { Logger } from '@plover/core';
import { startThread, type ThreadData } from './threads';

export interface IngestionThreadData extends ThreadData {
  dataDir: string;
  ingestion: IngestionConfig;
  /** Served by the Postgres thread (sql-thread.ts). */
  sqlPort: MessagePort;
}

/** The calls the main thread makes of the ingestion thread, besides STOP_CALL. */
export const INGESTION_CALLS = { start: 'ingestion.start', metrics: 'ingestion.metrics' } as const;

export interface IngestionThread {
  /** The worker's metrics in Prometheus text (its own metric names: nothing the main thread registers). */
  metrics(): Promise<string>;
  /** Finishes and commits the batches in flight, closes the worker's chDB connections and ends the thread. */
  stop(): Promise<void>;
}

/** A thread loading ingestion's modules, which are many: spawned first, it loads them while the stores open. */
export interface SpawnedIngestionThread {
  /** Serves `bus` to the thread and starts its consumers (once the stores are migrated); resolves once they consume. */
  start(bus: EventBus): Promise<IngestionThread>;
}

export function spawnIngestionThread(data: Omit<IngestionThreadData, 'port'>, logger: Logger): SpawnedIngestionThread {
  const thread = startThread('ingestion', data, logger, [data.sqlPort]);
  return {
    async start(bus) {
      serveBus(thread.rpc, bus);
      await Promise.race([thread.rpc.call(INGESTION_CALLS.start), thread.failed]);
      thread.fatalFromNowOn();
      return { metrics: () => thread.rpc.call<string>(INGESTION_CALLS.metrics), stop: () => thread.stop() };
    },
  };
}
