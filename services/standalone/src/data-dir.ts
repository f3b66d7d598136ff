import fs from 'node:fs';
import path from 'node:path';

/**
 * Embedded mode keeps single-process stores (PGlite, chDB, the local log) under one directory, and two
 * processes on the same files would corrupt them. A pid lock file refuses the second process; a lock left
 * by a process that died (kill -9) is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const lockPath = path.join(dataDir, 'plover.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockPath, String(process.pid), { flag: 'wx' });
      return () => fs.rmSync(lockPath, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(fs.readFileSync(lockPath, 'utf8'));
      if (holder && holder !== process.pid && isAlive(holder)) {
        throw new Error(`${dataDir} is in use by process ${holder}; stop it or set PLOVER_DATA_DIR to another directory`, {
          cause: error,
        });
      }
      fs.rmSync(lockPath, { force: true });
    }
  }
  throw new Error(`could not lock ${dataDir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Credentials are secrets: the file is created readable by its owner only. */
export function writeCredentials(dataDir: string, credentials: unknown): string {
  const file = path.join(dataDir, 'credentials.json');
  fs.writeFileSync(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  return file;
}
