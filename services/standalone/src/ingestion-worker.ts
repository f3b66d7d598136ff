/**
 * The ingestion thread of embedded mode (see ingestion-thread.ts): the events, replay and logs consumers, with their own
 * chDB connections on the data directory's engine, the Postgres thread's PGlite and the main thread's local log
 * used through ports (packages/postgres and packages/bus `over-port`). Its metrics go to a registry of its own,
 * which the main thread's `/metrics` appends.
 */
import path from 'node:path';
import { workerData } from 'node:worker_threads';
import { PortBus } from '@plover/bus/over-port';
import { ChdbClickHouse } from '@plover/chdb';
import { createLogger, PortRpc } from '@plover/core';
import { loadGeoIp } from '@plover/geoip';
import { createConsumer } from '@plover/ingestion/consumer';
import { createLogsConsumer, logsSettingsFrom } from '@plover/ingestion/logs';
import { createReplayConsumer, replaySettingsFrom } from '@plover/ingestion/replay';
import { PortSql } from '@plover/postgres/over-port';
import { Registry } from 'prom-client';
import { INGESTION_CALLS, type IngestionThreadData } from './ingestion-thread';
import { lowerEngineThreads, lowerThisThread } from './priorities';
import { prettyLogStream } from './terminal';
import { STOP_CALL } from './threads';

const data = workerData as IngestionThreadData;
const rpc = new PortRpc(data.port);

/** Called by the main thread once the stores are open and migrated (and its chDB engine started). */
async function start(): Promise<void> {
  const logger = createLogger({ service: 'plover', level: data.logging.level, stream: prettyLogStream(data.logging.format) });
  lowerThisThread(logger);
  const stopLowering = lowerEngineThreads(logger);
  const metrics = new Registry();
  metrics.setDefaultLabels({ service: 'plover' });
  const sqlRpc = new PortRpc(data.sqlPort);
  const sql = new PortSql(sqlRpc);
  const bus = new PortBus(rpc);
  const clickhouse = await ChdbClickHouse.open({ dataDir: path.join(data.dataDir, 'clickhouse') });
  const geoip = data.ingestion.geoip ? loadGeoIp() : undefined;
  const consumer = await createConsumer({ logger, metrics, sql, clickhouse, bus, settings: data.ingestion, geoip });
  const replay = await createReplayConsumer({ logger, metrics, sql, clickhouse, bus, settings: replaySettingsFrom(data.ingestion) });
  const logs = await createLogsConsumer({ logger, metrics, clickhouse, bus, settings: logsSettingsFrom(data.ingestion) });
  rpc.handle(INGESTION_CALLS.metrics, () => metrics.metrics());
  rpc.handle(STOP_CALL, async () => {
    // The consumers' last batches still need the stores, and they commit them through the bus.
    await Promise.all([consumer.stop(), replay.stop(), logs.stop()]);
    stopLowering();
    await clickhouse.close();
    // An open port keeps a thread alive.
    sqlRpc.close();
  });
}

rpc.handle(INGESTION_CALLS.start, start);
