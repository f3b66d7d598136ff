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
const logger = createLogger({ service: 'plover', level: config.logging.level });
exitOnUncaughtErrors(logger);

async function main(): Promise<void> {
  const unlock = lockDataDir(config.data.dataDir);
  const stores = await openEmbeddedStores(config.data.dataDir, logger);
  const credentials = await bootstrap(stores.sql, config.bootstrap);
  if (credentials) {
    const file = writeCredentials(config.data.dataDir, credentials);
    // Printed once, on the first start only: the personal API key is not recoverable from the database.
    process.stdout.write(
      [
        '',
        'Plover is set up. Keep these; they are also in ' + file + ' (readable by you only):',
        `  project API key (SDKs):        ${credentials.project.api_token}`,
        `  personal API key (management): ${credentials.personal_api_key.value}`,
        `  admin user:                    ${credentials.user.email}`,
        '',
      ].join('\n'),
    );
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
  await serve(app, {
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
}

main().catch((error: unknown) => {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
});
