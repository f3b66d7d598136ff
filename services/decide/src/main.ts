import { ProjectTokenCache } from '@plover/accounts';
import { loadConfigOrExit, sections } from '@plover/config';
import { createLogger, exitOnUncaughtErrors } from '@plover/core';
import { runService } from '@plover/http';
import { PgSql } from '@plover/postgres';
import { createApp, decideSettings } from './app';
import { DefinitionsCache } from './definitions';
import { decideLimits } from './limits';

const config = loadConfigOrExit(process.env, {
  logging: sections.logging,
  http: sections.http(8000),
  postgres: sections.postgres,
  decide: sections.decide,
  workers: sections.decideWorkers,
});
const logger = createLogger({ service: 'decide', level: config.logging.level });
exitOnUncaughtErrors(logger);

runService({
  service: 'decide',
  workers: config.workers,
  http: config.http,
  logger,
  limits: () => decideLimits(config.decide),
  start({ logger, metrics, limits, workers }) {
    const sql = PgSql.fromConfig(config.postgres);
    const definitions = new DefinitionsCache(sql, { logger, pollIntervalMs: config.decide.definitionsPollMs });
    const app = createApp({
      logger,
      metrics,
      sql,
      trustProxy: config.http.trustProxy,
      projectTokens: new ProjectTokenCache(sql),
      definitions,
      settings: decideSettings(config.decide),
      limits,
      workers,
    });
    return {
      app,
      closeResources: async () => {
        definitions.close();
        await sql.close();
      },
    };
  },
});
