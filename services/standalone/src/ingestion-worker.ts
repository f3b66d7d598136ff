/**
 * The ingestion thread of embedded mode (see ingestion-thread.ts): the events and replay consumers, with their own
 * chDB connections on the data directory's engine, the Postgres thread's PGlite and the main thread's local log
 * used through ports (packages/postgres and packages/bus `over-port`). Its metrics go to a registry of its own,
 * which the main thread's `/metrics` appends.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import path from 'node:path';
import { workerData } from 'node:worker_threads';
import { PortBus } from '@plover/bus/over-port';
import { ChdbClickHouse } from '@plover/chdb';
import { createLogger, PortRpc, type Logger } from '@plover/core';
import { createConsumer } from '@plover/ingestion/consumer';
import { createReplayConsumer } from '@plover/ingestion/replay';
import { PortSql } from '@plover/postgres/over-port';
import { Registry } from 'prom-client';
import { INGESTION_CALLS, type IngestionThreadData } from './ingestion-thread';
import { prettyLogStream } from './terminal';
import { STOP_CALL } from './threads';

const data = workerData as IngestionThreadData;
const rpc = new PortRpc(data.port);

/** The nice value of this thread: above the main thread's, below nothing else of the process. */
const INGESTION_NICE = 10;

/**
 * On Linux a thread has a nice value of its own. Ingestion's drain wants every core; the requests served by the
 * main thread must not wait behind it for CPU. At nice 10 the main thread wins a contended core (a tenth of the
 * weight for this thread), while ingestion still takes whatever the request path leaves idle.
 */
function yieldCoresToRequests(logger: Logger): void {
  try {
    setPriority(Number(path.basename(readlinkSync('/proc/thread-self'))), INGESTION_NICE);
  } catch (error) {
    logger.info({ err: error }, "the ingestion thread runs at the main thread's priority (it could not be lowered here)");
  }
}

/** Called by the main thread once the stores are open and migrated (and its chDB engine started). */
async function start(): Promise<void> {
  const logger = createLogger({ service: 'plover', level: data.logging.level, stream: prettyLogStream(data.logging.format) });
  yieldCoresToRequests(logger);
  const metrics = new Registry();
  metrics.setDefaultLabels({ service: 'plover' });
  const sqlRpc = new PortRpc(data.sqlPort);
  const sql = new PortSql(sqlRpc);
  const bus = new PortBus(rpc);
  const clickhouse = await ChdbClickHouse.open({ dataDir: path.join(data.dataDir, 'clickhouse') });
  const consumer = await createConsumer({ logger, metrics, sql, clickhouse, bus, settings: data.ingestion });
  const replay = await createReplayConsumer({ logger, metrics, sql, clickhouse, bus, settings: { retryBackoffMs: data.ingestion.retryBackoffMs } });
  rpc.handle(INGESTION_CALLS.metrics, () => metrics.metrics());
  rpc.handle(STOP_CALL, async () => {
    // The consumers' last batches still need the stores, and they commit them through the bus.
    await Promise.all([consumer.stop(), replay.stop()]);
    await clickhouse.close();
    // An open port keeps a thread alive.
    sqlRpc.close();
  });
}

rpc.handle(INGESTION_CALLS.start, start);
