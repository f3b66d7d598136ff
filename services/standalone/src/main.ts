// First: sizes libuv's thread pool before anything starts it (see the module).
import '@plover/config/threadpool';
import { loadConfigOrExit, sections } from '@plover/config';
import { bootstrap, ProjectTokenCache } from '@plover/accounts';
import { createLogger, exitOnUncaughtErrors } from '@plover/core';
import { createMetricsRegistry, serve } from '@plover/http';
import { decideSettings, DefinitionsCache } from '@plover/decide/app';
import { startSchedules } from '@plover/management/schedule';
import { Registry } from 'prom-client';
import { createApp } from './app';
import { lockDataDir, writeCredentials } from './data-dir';
import { exposeDiskUse, refusingWrites, watchDisk } from './disk';
import { spawnIngestionThread, type IngestionThread } from './ingestion-thread';
import { sqlClientPort } from './sql-thread';
import { openEmbeddedStores } from './stores';
import { firstStartText, prettyLogStream, readyBanner } from './terminal';

const config = loadConfigOrExit(process.env, {
  logging: sections.logging,
  http: sections.http(8000),
  data: sections.dataDir,
  bootstrap: sections.bootstrap,
  capture: sections.capture,
  decide: sections.decide,
  management: sections.management,
  // One engine thread per analysis statement: the cores are shared with capture and ingestion.
  analysis: sections.analysis(true),
  ingestion: sections.ingestion,
});
// On a terminal: readable log lines and a banner once ready (terminal.ts); elsewhere JSON lines.
const pretty = prettyLogStream(config.logging.format);
const logger = createLogger({ service: 'plover', level: config.logging.level, stream: pretty });
exitOnUncaughtErrors(logger);

/** `/metrics` of the whole process: this thread's registry, then the ingestion thread's metrics. */
class ProcessMetrics extends Registry {
  ingestion: IngestionThread | undefined;

  override async metrics(): Promise<string> {
    const [own, ingestion] = await Promise.all([super.metrics(), this.ingestion?.metrics() ?? '']);
    return own + ingestion;
  }
}

async function main(): Promise<void> {
  const unlock = lockDataDir(config.data.dataDir);
  const disk = watchDisk(config.data.dataDir, config.data.diskMinFreeBytes, logger);
  // Embedded mode ingests in this process, on a thread of its own (ingestion-thread.ts): capture → local bus →
  // consumers → PGlite (in a thread of its own too, sql-thread.ts) and chDB. Spawned first, the ingestion thread
  // loads its modules while this thread opens the stores.
  const logging = { level: config.logging.level, format: pretty ? 'pretty' : 'json' } as const;
  const ingestionSql = sqlClientPort();
  const ingestionThread = spawnIngestionThread({ dataDir: config.data.dataDir, ingestion: config.ingestion, logging, sqlPort: ingestionSql.client }, logger);
  const stores = await openEmbeddedStores(config.data.dataDir, logger, { sqlThread: { clientPorts: [ingestionSql.served], logging } });
  const credentials = await bootstrap(stores.sql, config.bootstrap);
  if (credentials) {
    const file = writeCredentials(config.data.dataDir, credentials);
    // Printed once, on the first start only: the personal API key is not recoverable from the database.
    if (!pretty) process.stdout.write(firstStartText(credentials, file));
  }
  const metrics = new ProcessMetrics();
  createMetricsRegistry('plover', metrics);
  exposeDiskUse(metrics, config.data.dataDir, disk, stores.clickhouse);
  const definitions = new DefinitionsCache(stores.sql, { logger, pollIntervalMs: config.decide.definitionsPollMs });
  // Capture, management and the schedules write through these: refused while the disk is below the watermark.
  const writers = refusingWrites(stores, disk);
  const app = createApp({
    logger,
    metrics,
    trustProxy: config.http.trustProxy,
    analysis: config.analysis,
    siteUrl: config.management.siteUrl,
    ...writers,
    disk,
    projectTokens: new ProjectTokenCache(stores.sql),
    definitions,
    settings: { capture: config.capture, decide: decideSettings(config.decide) },
  });
  const ingestion = await ingestionThread.start(stores.bus);
  metrics.ingestion = ingestion;
  const schedules = startSchedules({ sql: writers.sql, clickhouse: writers.clickhouse, logger }, { deletionCron: config.management.deletionJobSchedule });
  const running = await serve(app, {
    ...config.http,
    logger,
    closeResources: async () => {
      definitions.close();
      // The consumers' last batches still need the stores, and they commit them through the bus.
      await ingestion.stop();
      await schedules.stop();
      await stores.close();
      disk.stop();
      unlock();
    },
  });
  if (pretty)
    process.stdout.write(
      readyBanner({ host: config.http.host, port: running.port, dataDir: config.data.dataDir, created: credentials, lowDisk: disk.lowCause() }),
    );
}

main().catch((error: unknown) => {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
});
