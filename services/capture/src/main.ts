import { KafkaBus } from '@plover/bus/kafka';
import { loadConfigOrExit, sections } from '@plover/config';
import { createLogger } from '@plover/core';
import { createMetricsRegistry, serve } from '@plover/http';
import { PgSql } from '@plover/postgres';
import { createApp } from './app';

const config = loadConfigOrExit(process.env, {
  logging: sections.logging,
  http: sections.http(8000),
  postgres: sections.postgres,
  kafka: sections.kafka,
});
const logger = createLogger({ service: 'capture', level: config.logging.level });
const sql = PgSql.fromConfig(config.postgres);
const bus = new KafkaBus({ ...config.kafka, logger });

serve(createApp({ logger, metrics: createMetricsRegistry('capture'), sql, bus, trustProxy: config.http.trustProxy }), {
  ...config.http,
  logger,
  closeResources: async () => {
    await bus.close();
    await sql.close();
  },
}).catch((error: unknown) => {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
});
