/**
 * Embedded Plover as `npm start` runs it, in a child process on a fresh data dir and a free port: for suites
 * that must see the whole process (a stall, a crash, its memory) rather than an app inside jest.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bootstrap, type Credentials } from '@plover/accounts';
import { loadConfig, sections } from '@plover/config';
import { migrate, type Sql } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';
import { writeCredentials } from '../../services/standalone/src/data-dir';

const ROOT = path.resolve(__dirname, '../..');
/** How long a start may take: loading the modules through tsx alone takes a minute on a busy shared machine. */
const START_MS = 180_000;

/** The Node flags `npm start` gives Plover (its heap settings): services/standalone/node-flags.json, the one list of them. */
export const PLOVER_NODE_FLAGS: readonly string[] = JSON.parse(fs.readFileSync(path.join(ROOT, 'services/standalone/node-flags.json'), 'utf8')) as string[];

export interface EmbeddedPlover {
  port: number;
  pid: number;
  dataDir: string;
  credentials: { token: string; personalKey: string; projectId: number };
  output(): string;
  /** Resident memory of the process, in MiB, read from /proc. */
  rssMiB(): number;
  exited: Promise<number | null>;
  /** Sends `signal` and waits for the exit; the data dir stays, for a start on it again. */
  kill(signal: NodeJS.Signals): Promise<number | null>;
  /** SIGTERM, then the exit code; removes the data dir. */
  stop(): Promise<number | null>;
}

/**
 * A fresh data dir (a new temporary one unless given) as the first start leaves it (Postgres migrated, the bootstrap
 * organization, project and keys, credentials.json), changed by `seed` through the stores' own modules: for state no
 * API sets. Start on it with startEmbedded(env, dataDir); the rest of the stores are created then.
 */
export async function seededDataDir(
  seed: (sql: Sql, credentials: Credentials) => Promise<void>,
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-embedded-')),
): Promise<string> {
  const sql = await PGliteSql.open({ dataDir: path.join(dataDir, 'postgres') });
  try {
    await migrate(sql);
    const credentials = (await bootstrap(sql, loadConfig({}, { bootstrap: sections.bootstrap }).bootstrap)) as Credentials;
    writeCredentials(dataDir, credentials);
    await seed(sql, credentials);
  } finally {
    await sql.close();
  }
  return dataDir;
}

/** Starts on `dataDir`, a fresh directory unless given (stop() removes it either way). */
export async function startEmbedded(
  env: Record<string, string> = {},
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-embedded-')),
): Promise<EmbeddedPlover> {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    [...PLOVER_NODE_FLAGS, '--conditions=plover-source', '--import', 'tsx', 'services/standalone/src/main.ts'],
    { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', HOST: '127.0.0.1', PLOVER_DATA_DIR: dataDir, ...env } },
  );
  // The start and the last 256 KiB: a long run logs more than a test should hold.
  let output = '';
  const keep = (chunk: Buffer): void => {
    output += chunk.toString();
    if (output.length > 512 * 1024) output = output.slice(0, 16 * 1024) + '\n…\n' + output.slice(-256 * 1024);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left running behind the failed test.
      child.kill('SIGKILL');
      reject(new Error(`no listening line in time:\n${output}`));
    }, START_MS);
    void exited.then((code) => reject(new Error(`exited with ${code}:\n${output}`)));
    const check = (): void => {
      const match = /"port":(\d+)[^\n]*"msg":"listening"/.exec(output);
      if (!match) return;
      clearTimeout(timer);
      child.stdout.off('data', check);
      resolve(Number(match[1]));
    };
    child.stdout.on('data', check);
  });
  const stored = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8')) as {
    project: { id: number; api_token: string };
    personal_api_key: { value: string };
  };
  return {
    port,
    pid: child.pid!,
    dataDir,
    credentials: { token: stored.project.api_token, personalKey: stored.personal_api_key.value, projectId: stored.project.id },
    output: () => output,
    rssMiB: () => {
      const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
    },
    exited,
    kill: (signal) => {
      child.kill(signal);
      return exited;
    },
    stop: async () => {
      child.kill('SIGTERM');
      const code = await exited;
      fs.rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };
}
