import { HttpClickHouse } from '@plover/clickhouse';
import { loadConfigOrExit, sections } from '@plover/config';
import { createLogger, exitOnUncaughtErrors } from '@plover/core';
import { createMetricsRegistry, serve } from '@plover/http';
import { PgSql } from '@plover/postgres';
import { createApp } from './app';
import { startSchedules } from './deletions/schedule';

const config = loadConfigOrExit(process.env, {
  logging: sections.logging,
  http: sections.http(8000),
  postgres: sections.postgres,
  clickhouse: sections.clickhouse,
  management: sections.management,
  analysis: sections.analysis(false),
});
const logger = createLogger({ service: 'management', level: config.logging.level });
exitOnUncaughtErrors(logger);
const sql = PgSql.fromConfig(config.postgres);
const clickhouse = new HttpClickHouse(config.clickhouse);
const schedules = startSchedules({ sql, clickhouse, logger }, { deletionCron: config.management.deletionJobSchedule });

serve(
  createApp({
    logger,
    metrics: createMetricsRegistry('management'),
    sql,
    clickhouse,
    analysis: config.analysis,
    siteUrl: config.management.siteUrl,
    trustProxy: config.http.trustProxy,
  }),
  {
    ...config.http,
    logger,
    closeResources: async () => {
      await schedules.stop();
      await clickhouse.close();
      await sql.close();
    },
  },
).catch((error: unknown) => {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
});
