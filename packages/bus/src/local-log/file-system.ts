/**
 * Every file-system call LocalLogBus makes, behind an interface: the bus runs on node:fs, and its power-loss
 * tests run it on a simulated disk that keeps only what was synced.
 */
import { mkdir, open, readdir, readFile, rename, rm, unlink } from 'node:fs/promises';
import { fsyncPath, lockDirectory } from '@plover/core';

/** The subset of node's FileHandle the log uses (a FileHandle is one). */
export interface LogFile {
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  writev(buffers: readonly Buffer[], position: number): Promise<{ bytesWritten: number }>;
  write(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesWritten: number }>;
  datasync(): Promise<void>;
  truncate(length: number): Promise<void>;
  stat(): Promise<{ size: number }>;
  close(): Promise<void>;
}

export interface LogDirEntry {
  name: string;
  isDirectory(): boolean;
}

/** Paths are absolute. Failures are errors with node's errno `code` (ENOENT, EEXIST, EIO, …). */
export interface LogFileSystem {
  /** `r+`: an existing file; `wx+`: a new file, EEXIST if there is one; `w`: created or emptied. */
  open(file: string, flags: 'r+' | 'wx+' | 'w'): Promise<LogFile>;
  readdir(dir: string): Promise<LogDirEntry[]>;
  readFile(file: string): Promise<string>;
  /** One level: the parent must exist, EEXIST if `dir` does. */
  mkdir(dir: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(file: string): Promise<void>;
  /** Removes `target` and all below it; nothing there is no error. */
  removeTree(target: string): Promise<void>;
  /** Makes the entries of `dir` (creations, renames, deletions) durable. */
  fsyncDir(dir: string): Promise<void>;
  /** Makes `dir` this process's own until the returned function runs (or the process ends). */
  lock(dir: string): Promise<() => Promise<void>>;
}

export const nodeFileSystem: LogFileSystem = {
  open: (file, flags) => open(file, flags),
  readdir: (dir) => readdir(dir, { withFileTypes: true }),
  readFile: (file) => readFile(file, 'utf8'),
  mkdir: async (dir) => {
    await mkdir(dir);
  },
  rename,
  unlink,
  removeTree: (target) => rm(target, { recursive: true, force: true }),
  fsyncDir: fsyncPath,
  lock(dir) {
    // Two processes appending to one partition would hand out the same offsets.
    const unlock = lockDirectory(dir, 'LOCK');
    return Promise.resolve(() => Promise.resolve(unlock()));
  },
};
