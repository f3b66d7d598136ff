import { ProjectTokenCache } from '@plover/accounts';
import { loadConfigOrExit, sections } from '@plover/config';
import { createLogger, exitOnUncaughtErrors } from '@plover/core';
import { createMetricsRegistry, serve } from '@plover/http';
import { PgSql } from '@plover/postgres';
import { createApp, decideSettings } from './app';
import { DefinitionsCache } from './definitions';

const config = loadConfigOrExit(process.env, { logging: sections.logging, http: sections.http(8000), postgres: sections.postgres, decide: sections.decide });
const logger = createLogger({ service: 'decide', level: config.logging.level });
exitOnUncaughtErrors(logger);
const sql = PgSql.fromConfig(config.postgres);
const definitions = new DefinitionsCache(sql, { logger, pollIntervalMs: config.decide.definitionsPollMs });

const app = createApp({
  logger,
  metrics: createMetricsRegistry('decide'),
  sql,
  trustProxy: config.http.trustProxy,
  projectTokens: new ProjectTokenCache(sql),
  definitions,
  settings: decideSettings(config.decide),
});

serve(app, {
  ...config.http,
  logger,
  closeResources: async () => {
    definitions.close();
    await sql.close();
  },
}).catch((error: unknown) => {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
});
