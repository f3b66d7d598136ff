import fs from 'node:fs';
import path from 'node:path';
import { formatBytes, freeBytes, isDiskFull, lockDirectory, StorageError } from '@plover/core';

/** The lock file's name in the data dir. */
export const DATA_DIR_LOCK = 'plover.lock';

/**
 * Embedded mode keeps single-process stores (PGlite, chDB, the local log) under one directory, and two
 * processes on the same files would corrupt them: the lock (see lockDirectory) refuses the second process; a
 * lock left by a process that died (kill -9, a reboot) is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  makeDirectoryDurably(path.resolve(dataDir));
  try {
    return lockDirectory(dataDir, DATA_DIR_LOCK);
  } catch (error) {
    if (isDiskFull(error)) {
      // Any less full disk starts, read-only below the watermark; this one has no room for the lock's few bytes.
      const free = formatBytes(freeBytes(dataDir));
      throw new Error(`the disk holding ${dataDir} is full (${free} free), too full even for the data dir's lock file: free space on it and start again`, {
        cause: error,
      });
    }
    if (!(error instanceof StorageError) || error.code !== 'DATA_DIR_LOCKED') throw error;
    throw new Error(`${error.message}; stop it or set PLOVER_DATA_DIR to another directory`, { cause: error });
  }
}

/** Creates `dir` and its missing parents; each new directory survives power loss only once its parent is fsynced. */
function makeDirectoryDurably(dir: string): void {
  const first = fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (first === undefined) return;
  for (let created = dir; ; created = path.dirname(created)) {
    const handle = fs.openSync(path.dirname(created), 'r');
    try {
      fs.fsyncSync(handle);
    } finally {
      fs.closeSync(handle);
    }
    if (created === first) return;
  }
}

/** Credentials are secrets: the file is created readable by its owner only. */
export function writeCredentials(dataDir: string, credentials: unknown): string {
  const file = path.join(dataDir, 'credentials.json');
  fs.writeFileSync(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  return file;
}
