import { KafkaBus } from '@plover/bus/kafka';
import { HttpClickHouse } from '@plover/clickhouse';
import { loadConfigOrExit, sections } from '@plover/config';
import { createLogger, exitOnUncaughtErrors } from '@plover/core';
import { loadGeoIp } from '@plover/geoip';
import { createMetricsRegistry, serve } from '@plover/http';
import { PgSql } from '@plover/postgres';
import { createApp } from './app';
import { createConsumer } from './consumer';
import { createLogsConsumer, logsSettingsFrom } from './logs';
import { createReplayConsumer, replaySettingsFrom } from './replay/consumer';

const config = loadConfigOrExit(process.env, {
  logging: sections.logging,
  http: sections.http(8000),
  postgres: sections.postgres,
  clickhouse: sections.clickhouse,
  kafka: sections.kafka,
  ingestion: sections.ingestion,
});
const logger = createLogger({ service: 'ingestion', level: config.logging.level });
exitOnUncaughtErrors(logger);
const sql = PgSql.fromConfig(config.postgres, logger);
const clickhouse = new HttpClickHouse(config.clickhouse);
const bus = new KafkaBus({ ...config.kafka, logger });
const metrics = createMetricsRegistry('ingestion');

async function main(): Promise<void> {
  const geoip = config.ingestion.geoip ? loadGeoIp() : undefined;
  const consumer = await createConsumer({ logger, metrics, sql, clickhouse, bus, settings: config.ingestion, geoip });
  const replay = await createReplayConsumer({ logger, metrics, sql, clickhouse, bus, settings: replaySettingsFrom(config.ingestion) });
  const logs = await createLogsConsumer({ logger, metrics, clickhouse, bus, settings: logsSettingsFrom(config.ingestion) });
  await serve(createApp({ logger, metrics, sql, clickhouse, bus }), {
    ...config.http,
    logger,
    closeResources: async () => {
      // The consumers first: their last batches still need Postgres and ClickHouse, and commit through the bus.
      await Promise.all([consumer.stop(), replay.stop(), logs.stop()]);
      await bus.close();
      await clickhouse.close();
      await sql.close();
    },
  });
}

main().catch((error: unknown) => {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
});
