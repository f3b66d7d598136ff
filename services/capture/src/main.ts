import { ProjectTokenCache } from '@plover/accounts';
import { KafkaBus } from '@plover/bus/kafka';
import { loadConfigOrExit, sections } from '@plover/config';
import { CAPTURE_TOPICS, REPLAY_TOPIC } from '@plover/contracts';
import { createLogger, exitOnUncaughtErrors } from '@plover/core';
import { createMetricsRegistry, serve } from '@plover/http';
import { PgSql } from '@plover/postgres';
import { createApp } from './app';

const config = loadConfigOrExit(process.env, {
  logging: sections.logging,
  http: sections.http(8000),
  postgres: sections.postgres,
  kafka: sections.kafka,
  capture: sections.capture,
});
const logger = createLogger({ service: 'capture', level: config.logging.level });
exitOnUncaughtErrors(logger);
const sql = PgSql.fromConfig(config.postgres);
const bus = new KafkaBus({ ...config.kafka, logger });

// Capture starts even while Kafka is down (it answers 503 until the broker is back), so a failed topic
// creation is a warning; produce fails loudly enough if the topics are still missing then.
bus
  .ensureTopics([...Object.values(CAPTURE_TOPICS), REPLAY_TOPIC])
  .catch((error: unknown) => logger.warn({ err: error }, 'could not create the capture topics'));

const app = createApp({
  logger,
  metrics: createMetricsRegistry('capture'),
  sql,
  bus,
  trustProxy: config.http.trustProxy,
  projectTokens: new ProjectTokenCache(sql),
  settings: config.capture,
});

serve(app, {
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
