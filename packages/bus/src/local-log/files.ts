/** File-system steps LocalLogBus needs to be crash-safe, each with the reason it takes that form. */
import path from 'node:path';
import { StorageError } from '@plover/core';
import type { LogFile, LogFileSystem } from './file-system';

/**
 * Replaces `file` so that a crash leaves either the old or the new content, never a mix or an empty file:
 * write a temporary file, fsync it, rename it over the target, fsync the directory.
 */
export async function writeFileAtomic(fs: LogFileSystem, file: string, content: string): Promise<void> {
  const temporary = `${file}.tmp`;
  const handle = await fs.open(temporary, 'w');
  try {
    await writeFully(handle, [Buffer.from(content)], 0);
    await handle.datasync();
  } finally {
    await handle.close();
  }
  await fs.rename(temporary, file);
  await fs.fsyncDir(path.dirname(file));
}

/**
 * Creates `dir` and its missing parents. A new directory survives power loss only once its parent is fsynced,
 * and so does everything below it. The parent is fsynced when `dir` exists too: a process killed before that
 * fsync leaves a directory that is there but not yet durable.
 */
export async function makeDirectory(fs: LogFileSystem, dir: string): Promise<void> {
  try {
    await fs.mkdir(dir);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT') {
      await makeDirectory(fs, path.dirname(dir));
      await fs.mkdir(dir);
    } else if (code !== 'EEXIST') throw error;
  }
  await fs.fsyncDir(path.dirname(dir));
}

/** Writes all of `buffers` at `position` (writev may write less than asked, e.g. on a nearly full disk). */
export async function writeFully(handle: LogFile, buffers: readonly Buffer[], position: number): Promise<number> {
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
