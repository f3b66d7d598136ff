import { loadConfigOrExit, sections } from '@plover/config';
import { createLogger } from '@plover/core';
import { runEventDeletions } from '@plover/management/deletions';
import { lockDataDir } from './data-dir';
import { openEmbeddedStores } from './stores';

/**
 * `npm run migrate`: brings the embedded data dir to the current schema without starting the server.
 * `cli.ts delete-events`: runs the queued person event deletions now (the server must be stopped: it holds the data dir).
 */
async function run(command: string | undefined): Promise<void> {
  if (command === 'delete-events') {
    const config = loadConfigOrExit(process.env, { logging: sections.logging, data: sections.dataDir });
    const logger = createLogger({ service: 'admin', level: config.logging.level, toStderr: true });
    const unlock = lockDataDir(config.data.dataDir);
    try {
      const stores = await openEmbeddedStores(config.data.dataDir, logger);
      try {
        process.stdout.write(`${JSON.stringify(await runEventDeletions({ sql: stores.sql, clickhouse: stores.clickhouse, logger }))}\n`);
      } finally {
        await stores.close();
      }
    } finally {
      unlock();
    }
    return;
  }
  if (command !== 'migrate') {
    process.stderr.write('usage: cli.ts migrate|delete-events\n');
    process.exitCode = 2;
    return;
  }
  const config = loadConfigOrExit(process.env, { logging: sections.logging, data: sections.dataDir });
  const logger = createLogger({ service: 'admin', level: config.logging.level, toStderr: true });
  const unlock = lockDataDir(config.data.dataDir);
  try {
    const stores = await openEmbeddedStores(config.data.dataDir, logger);
    await stores.close();
    process.stdout.write(`${JSON.stringify(stores.migrations)}\n`);
  } finally {
    unlock();
  }
}

run(process.argv[2]).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
