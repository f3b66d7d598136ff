import { ProjectTokenCache } from '@plover/accounts';
import { KafkaBus } from '@plover/bus/kafka';
import { loadConfigOrExit, sections } from '@plover/config';
import { CAPTURE_TOPICS, LOGS_TOPIC, REPLAY_TOPIC } from '@plover/contracts';
import { createLogger, exitOnUncaughtErrors } from '@plover/core';
import { runService } from '@plover/http';
import { PgSql } from '@plover/postgres';
import { captureLimits, createApp } from './app';

const config = loadConfigOrExit(process.env, {
  logging: sections.logging,
  http: sections.http(8000),
  postgres: sections.postgres,
  kafka: sections.kafka,
  capture: sections.capture,
  workers: sections.captureWorkers,
});
const logger = createLogger({ service: 'capture', level: config.logging.level });
exitOnUncaughtErrors(logger);

runService({
  service: 'capture',
  workers: config.workers,
  http: config.http,
  logger,
  limits: () => captureLimits(config.capture),
  start({ logger, metrics, limits, workers }) {
    const sql = PgSql.fromConfig(config.postgres);
    const bus = new KafkaBus({ ...config.kafka, logger });

    // Capture starts even while Kafka is down (it answers 503 until the broker is back), so a failed topic
    // creation is a warning; produce fails loudly enough if the topics are still missing then. Workers that
    // create the same topic at once are fine: the broker creates it once.
    bus
      .ensureTopics([...Object.values(CAPTURE_TOPICS), REPLAY_TOPIC, LOGS_TOPIC])
      .catch((error: unknown) => logger.warn({ err: error }, 'could not create the capture topics'));

    const app = createApp({
      logger,
      metrics,
      sql,
      bus,
      trustProxy: config.http.trustProxy,
      projectTokens: new ProjectTokenCache(sql),
      settings: config.capture,
      limits,
      workers,
    });
    return {
      app,
      closeResources: async () => {
        await bus.close();
        await sql.close();
      },
    };
  },
});
