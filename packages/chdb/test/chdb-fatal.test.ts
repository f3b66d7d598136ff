/**
 * A fatal error in a process running chDB must end it, as it would without chDB: the engine's own crash
 * handlers used to keep such a process asleep for minutes (see the module comment of src/index.ts).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const CHILD = path.join(__dirname, 'support', 'fatal-child.ts');
/** Without chDB's handlers both faults end the child in about a second; with them, in five minutes. */
const EXIT_WITHIN_MS = 20_000;

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

/** Runs the child until it exits; if it is still alive EXIT_WITHIN_MS after opening chDB, kills it and fails. */
function runChild(dataDir: string, fault: 'oom' | 'abort'): Promise<Exit> {
  const child = spawn(process.execPath, ['--max-old-space-size=64', '--conditions=plover-source', '--import', 'tsx', CHILD, dataDir, fault], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    child.stdout.on('data', () => {
      if (timer || !output.includes('open\n')) return;
      timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the child was still running ${EXIT_WITHIN_MS} ms after its ${fault}:\n${output}`));
      }, EXIT_WITHIN_MS);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output });
    });
  });
}

describe('a fatal error with chDB open', () => {
  let dataDir: string;

  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-chdb-fatal-'));
  });

  afterEach(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('a V8 heap overflow ends the process with SIGABRT at once', async () => {
    const exit = await runChild(dataDir, 'oom');
    expect(exit.output).toContain('JavaScript heap out of memory');
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: null, signal: 'SIGABRT' });
  });

  it('a native abort ends the process with SIGABRT at once, also after the engine was closed and restarted', async () => {
    const exit = await runChild(dataDir, 'abort');
    expect(exit.output).toContain('open\n');
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: null, signal: 'SIGABRT' });
  });
});
