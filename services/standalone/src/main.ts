// First: sizes libuv's thread pool before anything starts it (see the module).
import '@plover/config/threadpool';
import { loadConfigOrExit, sections } from '@plover/config';
import { bootstrap, ProjectTokenCache } from '@plover/accounts';
import { createLogger, exitOnUncaughtErrors } from '@plover/core';
import { createMetricsRegistry, serve } from '@plover/http';
import { decideSettings, DefinitionsCache } from '@plover/decide/app';
import { createConsumer } from '@plover/ingestion/consumer';
import { createReplayConsumer } from '@plover/ingestion/replay';
import { startSchedules } from '@plover/management/schedule';
import { createApp } from './app';
import { lockDataDir, writeCredentials } from './data-dir';
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
  ingestion: sections.ingestion,
});
// On a terminal: readable log lines and a banner once ready (terminal.ts); elsewhere JSON lines.
const pretty = prettyLogStream(config.logging.format);
const logger = createLogger({ service: 'plover', level: config.logging.level, stream: pretty });
exitOnUncaughtErrors(logger);

async function main(): Promise<void> {
  const unlock = lockDataDir(config.data.dataDir);
  const stores = await openEmbeddedStores(config.data.dataDir, logger);
  const credentials = await bootstrap(stores.sql, config.bootstrap);
  if (credentials) {
    const file = writeCredentials(config.data.dataDir, credentials);
    // Printed once, on the first start only: the personal API key is not recoverable from the database.
    if (!pretty) process.stdout.write(firstStartText(credentials, file));
  }
  const metrics = createMetricsRegistry('plover');
  const definitions = new DefinitionsCache(stores.sql, { logger, pollIntervalMs: config.decide.definitionsPollMs });
  const app = createApp({
    logger,
    metrics,
    trustProxy: config.http.trustProxy,
    ...stores,
    projectTokens: new ProjectTokenCache(stores.sql),
    definitions,
    settings: { capture: config.capture, decide: decideSettings(config.decide) },
  });
  // Embedded mode ingests in this process: capture → local bus → consumer → PGlite and chDB.
  const consumer = await createConsumer({ logger, metrics, sql: stores.sql, clickhouse: stores.clickhouse, bus: stores.bus, settings: config.ingestion });
  const replay = await createReplayConsumer({
    logger,
    metrics,
    sql: stores.sql,
    clickhouse: stores.clickhouse,
    bus: stores.bus,
    settings: { retryBackoffMs: config.ingestion.retryBackoffMs },
  });
  const schedules = startSchedules({ sql: stores.sql, clickhouse: stores.clickhouse, logger }, { deletionCron: config.management.deletionJobSchedule });
  const running = await serve(app, {
    ...config.http,
    logger,
    closeResources: async () => {
      definitions.close();
      // The consumers' last batches still need the stores, and they commit them through the bus.
      await Promise.all([consumer.stop(), replay.stop()]);
      await schedules.stop();
      await stores.close();
      unlock();
    },
  });
  if (pretty) process.stdout.write(readyBanner({ host: config.http.host, port: running.port, dataDir: config.data.dataDir, created: credentials }));
}

main().catch((error: unknown) => {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
});
