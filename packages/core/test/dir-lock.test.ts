import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { lockDirectory } from '../src/dir-lock';

const LOCK = 'LOCK';

describe('lockDirectory', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'plover-dir-lock-'));
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const owner = () => JSON.parse(readFileSync(path.join(dir, LOCK), 'utf8')) as { pid: number; start: string; boot: string };

  it('refuses a second lock in the same process, and allows one once released', () => {
    const unlock = lockDirectory(dir, LOCK);
    expect(() => lockDirectory(dir, LOCK)).toThrow(expect.objectContaining({ code: 'DATA_DIR_LOCKED', message: `${dir} is in use by process ${process.pid}` }));
    unlock();
    lockDirectory(dir, LOCK)();
  });

  it('takes over a lock whose pid is running again but as another process, or was written before a reboot', () => {
    lockDirectory(dir, LOCK);
    const mine = owner();
    // PID 1 always runs: a crashed container's PID 1 comes back as PID 1.
    for (const stale of [{ ...mine, start: '1' }, { ...mine, pid: 1 }, { ...mine, boot: 'another-boot' }, process.pid]) {
      writeFileSync(path.join(dir, LOCK), JSON.stringify(stale));
      lockDirectory(dir, LOCK);
      expect(owner()).toEqual(mine);
    }
  });

  it('refuses a lock held by another live process and takes it over once that process is killed', async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `require(${JSON.stringify(require.resolve('../src/dir-lock'))}).lockDirectory(${JSON.stringify(dir)}, 'LOCK'); console.log('locked'); setInterval(() => {}, 1e6);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      await new Promise((resolve) => child.stdout.once('data', resolve));
      expect(() => lockDirectory(dir, LOCK)).toThrow(`${dir} is in use by process ${child.pid}`);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    lockDirectory(dir, LOCK);
    expect(owner().pid).toBe(process.pid);
  });
});
