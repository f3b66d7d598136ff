/**
 * Embedded mode's Postgres in a thread of its own (sql-worker.ts). PGlite runs Postgres synchronously on the
 * thread that opened it — each statement, and each commit's WAL fsync — so on the main thread every statement of
 * ingestion's person writes would hold up the requests waiting there. In its own thread it holds up only other
 * statements, which queue for its one connection as they would anyway. The main thread and the ingestion thread
 * each reach it through a port of their own (packages/postgres `over-port`).
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { Logger } from '@plover/core';
import type { Sql } from '@plover/postgres';
import { PortSql } from '@plover/postgres/over-port';
import { PGliteSql } from '@plover/postgres/pglite';
import { startThread, type ThreadData } from './threads';

export interface SqlThreadData extends ThreadData {
  /** PGlite's data directory. */
  dataDir: string;
  /** Served besides the main thread's port: other threads' (the ingestion thread's). */
  clientPorts: MessagePort[];
}

export const SQL_CALLS = { open: 'sql.open' } as const;

export interface SqlThread {
  /** The database, for this thread; its close() ends the thread's handle only (the thread closes PGlite). */
  sql: Sql;
  /** Closes PGlite (a checkpoint first) and ends the thread, once every other thread is done with it. */
  close(): Promise<void>;
}

/** PGlite as embedded mode opens it, in whichever thread runs it. */
export function openEmbeddedPostgres(dataDir: string, logger: Logger): Promise<PGliteSql> {
  return PGliteSql.open({
    dataDir,
    // The transaction guard's async hooks cost every statement CPU; the code it guards is tested with it on.
    guardTransactions: false,
    onCheckpointError: (error) => logger.warn({ err: error }, 'periodic checkpoint of the embedded Postgres failed; retried at the next check'),
  });
}

/** A port another thread passes to `PortSql`, served by the thread `openSqlThread` will start. */
export function sqlClientPort(): { client: MessagePort; served: MessagePort } {
  const { port1, port2 } = new MessageChannel();
  return { client: port1, served: port2 };
}

export async function openSqlThread(data: Omit<SqlThreadData, 'port'>, logger: Logger): Promise<SqlThread> {
  const thread = startThread('sql', data, logger, data.clientPorts);
  await Promise.race([thread.rpc.call(SQL_CALLS.open), thread.failed]);
  thread.fatalFromNowOn();
  return { sql: new PortSql(thread.rpc), close: () => thread.stop() };
}
