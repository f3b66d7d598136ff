import { loadConfigOrExit, sections } from '@plover/config';
import { createLogger } from '@plover/core';
import { lockDataDir } from './data-dir';
import { openEmbeddedStores } from './stores';

/** `npm run migrate`: brings the embedded data dir to the current schema without starting the server. */
async function run(command: string | undefined): Promise<void> {
  if (command !== 'migrate') {
    process.stderr.write('usage: cli.ts migrate\n');
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
