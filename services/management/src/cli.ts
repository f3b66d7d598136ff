import { bootstrap } from '@plover/accounts';
import { HttpClickHouse } from '@plover/clickhouse';
import { loadConfigOrExit, sections } from '@plover/config';
import { createLogger } from '@plover/core';
import { PgSql } from '@plover/postgres';
import { migrateAll } from './admin';
import { runEventDeletions } from './deletions/job';

/**
 * Admin commands for distributed mode (the docker-compose `migrate` job runs the first):
 *   migrate    apply pending Postgres and ClickHouse migrations
 *   bootstrap  create the first organization, project, admin and keys if the database has none
 *   delete-events  run the queued person event deletions now (the job the schedule runs weekly)
 */
const USAGE = 'usage: cli.js migrate|bootstrap|delete-events';

async function run(command: string | undefined): Promise<void> {
  if (command === 'migrate') {
    const config = loadConfigOrExit(process.env, { logging: sections.logging, postgres: sections.postgres, clickhouse: sections.clickhouse });
    const logger = createLogger({ service: 'admin', level: config.logging.level, toStderr: true });
    const sql = PgSql.fromConfig(config.postgres);
    const clickhouse = new HttpClickHouse({ ...config.clickhouse, database: undefined });
    try {
      const applied = await migrateAll({ sql, clickhouse }, logger, config.clickhouse.database);
      process.stdout.write(`${JSON.stringify(applied)}\n`);
    } finally {
      await clickhouse.close();
      await sql.close();
    }
    return;
  }
  if (command === 'bootstrap') {
    const config = loadConfigOrExit(process.env, { postgres: sections.postgres, bootstrap: sections.bootstrap });
    const sql = PgSql.fromConfig(config.postgres);
    try {
      const credentials = await bootstrap(sql, config.bootstrap);
      process.stdout.write(credentials ? `${JSON.stringify(credentials, null, 2)}\n` : 'already bootstrapped; nothing created\n');
    } finally {
      await sql.close();
    }
    return;
  }
  if (command === 'delete-events') {
    const config = loadConfigOrExit(process.env, { logging: sections.logging, postgres: sections.postgres, clickhouse: sections.clickhouse });
    const logger = createLogger({ service: 'admin', level: config.logging.level, toStderr: true });
    const sql = PgSql.fromConfig(config.postgres);
    const clickhouse = new HttpClickHouse(config.clickhouse);
    try {
      const result = await runEventDeletions({ sql, clickhouse, logger });
      process.stdout.write(`${JSON.stringify(result)}\n`);
      if (!result.ran) process.stderr.write('another process is running the deletion job; nothing done\n');
    } finally {
      await clickhouse.close();
      await sql.close();
    }
    return;
  }
  process.stderr.write(`${USAGE}\n`);
  process.exitCode = 2;
}

run(process.argv[2]).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
