import path from 'node:path';
import { repairLocalLog } from '@plover/bus';
import { loadConfigOrExit, sections } from '@plover/config';
import { createLogger } from '@plover/core';
import { runEventDeletions } from '@plover/management/deletions';
import { backupDataDir, restoreDataDir } from './backup';
import { lockDataDir } from './data-dir';
import { openEmbeddedStores } from './stores';

/**
 * `npm run migrate`: brings the embedded data dir to the current schema without starting the server.
 * `cli.ts delete-events`: runs the queued person event deletions now (the server must be stopped: it holds the data dir).
 * `npm run repair-log [-- --cut] [--json]`: shows, and with --cut repairs, damage that keeps the local log from opening
 * (see repairLocalLog; the server must be stopped); --json prints what was found as JSON.
 * `npm run backup -- <dir>` / `npm run restore -- <dir>`: copies the data dir into an empty <dir>, or a backup
 * into an empty data dir (see backup.ts; the server must be stopped).
 */
async function run(command: string | undefined): Promise<void> {
  if (command === 'backup' || command === 'restore') {
    const config = loadConfigOrExit(process.env, { data: sections.dataDir });
    const dir = process.argv[3];
    if (!dir) {
      process.stderr.write(`usage: npm run ${command} -- <backup dir>\n`);
      process.exitCode = 2;
      return;
    }
    const unlock = lockDataDir(config.data.dataDir);
    try {
      const manifest = command === 'backup' ? await backupDataDir(config.data.dataDir, dir) : await restoreDataDir(dir, config.data.dataDir);
      process.stdout.write(`${JSON.stringify({ [command === 'backup' ? 'backedUp' : 'restored']: path.resolve(dir), ...manifest })}\n`);
    } finally {
      unlock();
    }
    return;
  }
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
  if (command === 'repair-log') {
    const config = loadConfigOrExit(process.env, { data: sections.dataDir });
    const cut = process.argv.slice(3).includes('--cut');
    const unlock = lockDataDir(config.data.dataDir);
    try {
      const damaged = await repairLocalLog(path.join(config.data.dataDir, 'bus'), { cut });
      if (process.argv.slice(3).includes('--json')) {
        process.stdout.write(`${JSON.stringify({ cut, damaged })}\n`);
        return;
      }
      for (const found of damaged) {
        process.stdout.write(
          `${found.file}: damaged record at byte ${found.byte} (offset ${found.offset}); ${cut ? 'dropped' : 'a cut drops'} ${found.droppedBytes} bytes` +
            ` (${found.droppedSegments.length} later segments); groups ${cut ? 'moved back' : 'to move back'}: ${found.groupsMovedBack.join(', ') || 'none'}\n`,
        );
      }
      if (damaged.length === 0) process.stdout.write('the local log has no damaged record\n');
      else if (!cut) process.stdout.write('nothing changed; run `npm run repair-log -- --cut` to cut the log at these records\n');
    } finally {
      unlock();
    }
    return;
  }
  if (command !== 'migrate') {
    process.stderr.write('usage: cli.ts migrate|delete-events|repair-log [--cut] [--json]|backup <dir>|restore <dir>\n');
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
