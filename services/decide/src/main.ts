import { loadConfigOrExit, sections } from '@plover/config';
import { createLogger, exitOnUncaughtErrors } from '@plover/core';
import { createMetricsRegistry, serve } from '@plover/http';
import { PgSql } from '@plover/postgres';
import { createApp, decideOptions } from './app';

const config = loadConfigOrExit(process.env, { logging: sections.logging, http: sections.http(8000), postgres: sections.postgres, decide: sections.decide });
const logger = createLogger({ service: 'decide', level: config.logging.level });
exitOnUncaughtErrors(logger);
const sql = PgSql.fromConfig(config.postgres);

serve(createApp({ logger, metrics: createMetricsRegistry('decide'), sql, trustProxy: config.http.trustProxy, decide: decideOptions(config.decide) }), {
  ...config.http,
  logger,
  closeResources: () => sql.close(),
}).catch((error: unknown) => {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
});
