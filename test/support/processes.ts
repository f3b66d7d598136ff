/**
 * Distributed mode's processes as a deployment runs them: a service's `main.ts` (or a CLI) in a Node process of
 * its own, from the repository root on the sources (tsx), with only the environment it is given.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

export interface Run {
  code: number | null;
  stdout: string;
  output: string;
}

export type RunningScript = Promise<Run> & {
  /** SIGTERM unless told otherwise. */
  kill(signal?: NodeJS.Signals): void;
  output(): string;
  pid: number | undefined;
};

/** Runs `script` (a path from the repository root) with `args`; resolves with its exit code and what it printed. */
export function run(script: string, args: string[], env: Record<string, string>): RunningScript {
  const child = spawn(process.execPath, ['--conditions=plover-source', '--import', 'tsx', script, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
  let output = '';
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const done = new Promise<Run>((resolve) => child.on('close', (code) => resolve({ code, stdout, output })));
  return Object.assign(done, { kill: (signal: NodeJS.Signals = 'SIGTERM') => child.kill(signal), output: () => output, pid: child.pid });
}

/** The port a service logged as listening on (it starts with PORT=0), within 60 s. */
export async function waitForPort(output: () => string): Promise<number> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const match = /"port":(\d+).*"msg":"listening"/.exec(output());
    if (match) return Number(match[1]);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`service did not listen in time:\n${output()}`);
}

export interface RunningService {
  port: number;
  pid: number | undefined;
  output(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL (no shutdown at all, as a crash or the OOM killer), then the process is gone. */
  crash(): Promise<void>;
}

/** Starts `services/<name>/src/main.ts` on `env` and waits until it listens. */
export async function startService(name: string, env: Record<string, string>): Promise<RunningService> {
  const child = run(`services/${name}/src/main.ts`, [], env);
  try {
    const port = await waitForPort(() => child.output());
    return {
      port,
      pid: child.pid,
      output: () => child.output(),
      stop: async () => {
        child.kill();
        return (await child).code;
      },
      crash: async () => {
        child.kill('SIGKILL');
        await child;
      },
    };
  } catch (error) {
    child.kill();
    await child;
    throw error;
  }
}
