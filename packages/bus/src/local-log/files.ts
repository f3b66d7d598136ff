/** File-system steps LocalLogBus needs to be crash-safe, each with the reason it takes that form. */
import { link, open, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { StorageError } from '@plover/core';

/** A new or renamed directory entry survives power loss only once its directory is fsynced. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Replaces `file` so that a crash leaves either the old or the new content, never a mix or an empty file:
 * write a temporary file, fsync it, rename it over the target, fsync the directory.
 */
export async function writeFileAtomic(file: string, content: string): Promise<void> {
  const temporary = `${file}.tmp`;
  const handle = await open(temporary, 'w');
  try {
    await handle.writeFile(content);
    await handle.datasync();
  } finally {
    await handle.close();
  }
  await rename(temporary, file);
  await fsyncDir(path.dirname(file));
}

/** Writes all of `buffers` at `position` (writev may write less than asked, e.g. on a nearly full disk). */
export async function writeFully(handle: FileHandle, buffers: readonly Buffer[], position: number): Promise<number> {
  let total = 0;
  for (const buffer of buffers) total += buffer.length;
  let written = (await handle.writev(buffers, position)).bytesWritten;
  if (written === total) return total;
  const rest = Buffer.concat(buffers);
  while (written < total) {
    const { bytesWritten } = await handle.write(rest, written, total - written, position + written);
    if (bytesWritten === 0) throw new StorageError(`short write at ${position + written}`, false, 'SHORT_WRITE');
    written += bytesWritten;
  }
  return total;
}

/**
 * Makes `dir` this process's own: two processes appending to the same partition would hand out the same offsets.
 * The lock file holds the owner's pid; a lock whose owner is gone (kill -9) is taken over. Two processes taking
 * over the same stale lock at the very same moment could both win; this guards against operator mistakes, not
 * against that race. Resolves to the function that releases the lock.
 */
export async function lockDirectory(dir: string): Promise<() => Promise<void>> {
  const lockFile = path.join(dir, 'LOCK');
  // Written under a private name first and then hard-linked into place, so LOCK never exists without a pid in it.
  const candidate = path.join(dir, `LOCK.${process.pid}`);
  await writeFile(candidate, String(process.pid));
  try {
    for (;;) {
      try {
        await link(candidate, lockFile);
        return () => unlink(lockFile);
      } catch (error) {
        if (errorCode(error) !== 'EEXIST') throw error;
      }
      const owner = Number(await readFile(lockFile, 'utf8').catch(() => ''));
      if (isRunning(owner)) {
        throw new StorageError(`LocalLogBus: ${dir} is in use by process ${owner}`, false, 'DATA_DIR_LOCKED');
      }
      await unlink(lockFile).catch((error: unknown) => {
        if (errorCode(error) !== 'ENOENT') throw error;
      });
    }
  } finally {
    await unlink(candidate);
  }
}

function isRunning(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  // Our own pid means another LocalLogBus of this process holds the directory.
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) === 'EPERM';
  }
}

export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A file-system failure as the port reports it: the errno code (ENOSPC, EIO, …) and the original error as cause. */
export function storageError(message: string, error: unknown, retriable: boolean): StorageError {
  if (error instanceof StorageError) return error;
  const detail = error instanceof Error ? error.message : String(error);
  return new StorageError(`${message}: ${detail}`, retriable, errorCode(error), { cause: error });
}

export function busClosedError(): StorageError {
  return new StorageError('LocalLogBus is closed', false, 'BUS_CLOSED');
}
