/**
 * A small disk of its own for a test that fills it: a tmpfs mounted on a fresh directory (mounting needs root,
 * which CI has). Outside CI a test file without root skips; under CI=true it fails, as a missing service does.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freeBytes } from '@plover/core';

export function canMountTmpfs(): boolean {
  const root = process.getuid?.() === 0;
  if (!root && process.env.CI === 'true') throw new Error('mounting a tmpfs needs root: under CI=true the disk-full suites must run');
  return root;
}

export interface Tmpfs {
  dir: string;
  /** Fills the disk until `leaveBytes` are free (a file of its own; `release` deletes it). */
  fill(leaveBytes: number): void;
  /** Deletes what fill() wrote. */
  release(): void;
  unmount(): void;
}

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')}: ${result.stderr || result.error?.message}`);
}

export function mountTmpfs(sizeMb: number): Tmpfs {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'plover-tmpfs-'));
  run('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', dir]);
  const filler = path.join(dir, 'filler');
  return {
    dir,
    fill(leaveBytes) {
      const fd = openSync(filler, 'a');
      try {
        const chunk = Buffer.alloc(1 << 20, 1);
        for (let free = freeBytes(dir); free > leaveBytes; free = freeBytes(dir)) writeSync(fd, chunk, 0, Math.min(chunk.length, free - leaveBytes));
      } finally {
        closeSync(fd);
      }
    },
    release() {
      rmSync(filler, { force: true });
    },
    unmount() {
      run('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
