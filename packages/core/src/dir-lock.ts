/**
 * One process at a time in a directory (embedded mode's data dir, the local log's dir): a lock file naming its
 * owner, taken over once that owner is gone.
 *
 * Node has no flock or fcntl lock in core, and the packages that add one are native builds. A lock on a socket
 * would need an asynchronous probe, and the data dir is locked synchronously at startup. So the owner is named
 * precisely instead: pid, the process's start time (field 22 of /proc/<pid>/stat) and the boot id. A pid alone
 * is reused, most often by a container whose PID 1 crashed and came back as PID 1 again; with the start time a
 * reused pid does not match, and after a reboot the boot id does not. Where /proc is missing (macOS) only the
 * pid is checked. The check cannot see processes of another pid namespace: two containers must not share a
 * data dir. Two processes taking over the same stale lock at the very same moment could both win; this guards
 * against operator mistakes, not that race.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { StorageError } from './errors';

interface Owner {
  pid: number;
  /** Start time in clock ticks after boot; absent where /proc is missing and in files of older releases. */
  start?: string;
  boot?: string;
}

/**
 * Takes `dir/name` (dir must exist) or throws a StorageError with code DATA_DIR_LOCKED naming the owner.
 * Returns the function that releases the lock.
 */
export function lockDirectory(dir: string, name: string): () => void {
  const lockFile = path.join(dir, name);
  // Written under a private name and hard-linked into place, so the lock never exists without its owner in it.
  // Random, not the pid: a process of another pid namespace may have the same one.
  const candidate = path.join(dir, `${name}.${randomBytes(6).toString('hex')}`);
  writeFileSync(candidate, JSON.stringify(ownerOf(process.pid)));
  try {
    for (;;) {
      try {
        linkSync(candidate, lockFile);
        return () => rmSync(lockFile, { force: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const owner = readOwner(lockFile);
      if (owner && isRunning(owner)) {
        throw new StorageError(`${dir} is in use by process ${owner.pid}`, false, 'DATA_DIR_LOCKED');
      }
      rmSync(lockFile, { force: true });
    }
  } finally {
    unlinkSync(candidate);
  }
}

function readOwner(file: string): Owner | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined; // gone meanwhile, or not a lock this code wrote: nobody holds it
  }
  // Older releases wrote the bare pid.
  if (typeof parsed === 'number') return { pid: parsed };
  const owner = parsed as Partial<Owner> | null;
  return typeof owner?.pid === 'number' ? (owner as Owner) : undefined;
}

function isRunning(owner: Owner): boolean {
  if (!Number.isInteger(owner.pid) || owner.pid <= 0) return false;
  const now = ownerOf(owner.pid);
  if (owner.start === undefined) {
    // A bare pid equal to ours was written by an earlier process: this one writes its start time.
    if (owner.pid === process.pid) return now.start === undefined;
    return pidExists(owner.pid);
  }
  // Also false when the pid runs no process now (no start time to read).
  return owner.boot === now.boot && owner.start === now.start;
}

function ownerOf(pid: number): Owner {
  return { pid, start: startTime(pid), boot: BOOT_ID };
}

const BOOT_ID = readProc('/proc/sys/kernel/random/boot_id')?.trim();

function startTime(pid: number): string | undefined {
  const stat = readProc(`/proc/${pid}/stat`);
  // Field 2 is the command name in parentheses, which may itself hold spaces and parentheses; field 22 is the
  // 20th after the last ')'.
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

function readProc(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
