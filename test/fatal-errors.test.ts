/**
 * A fatal error ends every service's process with a non-zero status, promptly, for its supervisor to restart
 * it: uncaught exceptions and unhandled rejections are logged as fatal and exit 1, and a V8 heap overflow in
 * embedded mode (chDB in the process) aborts instead of leaving the process hanging with its port open.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describeWith, realService } from './support/services';

const ROOT = path.resolve(__dirname, '..');
const TRIGGER = path.join(__dirname, 'support', 'fatal-trigger.ts');
/** Each fault ends a process in a few seconds; chDB's crash handlers used to hold one for five minutes. */
const EXIT_WITHIN_MS = 30_000;

const postgres = realService('TEST_DATABASE_URL');
const kafka = realService('TEST_KAFKA_BROKERS');

type Fault = 'throw' | 'reject' | 'oom';

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  port: number;
}

/**
 * Starts `script` with the trigger preloaded, waits until it listens, writes `fault` to its stdin and waits for it
 * to exit; a process still running EXIT_WITHIN_MS later is killed and the test fails.
 */
function crash(script: string, env: Record<string, string>, fault: Fault, nodeOptions: string[] = []): Promise<Exit> {
  const child = spawn(process.execPath, [...nodeOptions, '--conditions=plover-source', '--import', 'tsx', '--import', TRIGGER, script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', HOST: '127.0.0.1', ...env },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    let port = 0;
    let timer: NodeJS.Timeout | undefined;
    const startup = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} did not listen in time:\n${output}`));
    }, 60_000);
    child.stdout.on('data', () => {
      const match = /"port":(\d+).*"msg":"listening"/.exec(output);
      if (port || !match) return;
      port = Number(match[1]);
      clearTimeout(startup);
      child.stdin.write(`${fault}\n`);
      timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`${script} was still running ${EXIT_WITHIN_MS} ms after '${fault}':\n${output}`));
      }, EXIT_WITHIN_MS);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(startup);
      clearTimeout(timer);
      resolve({ code, signal, output, port });
    });
  });
}

/** The fatal record the process logged last, or undefined. */
function fatalRecord(output: string): Record<string, unknown> | undefined {
  const records = output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return records.filter((record) => record.level === 60).at(-1);
}

const EXPECTED_RECORD: Record<'throw' | 'reject', Record<string, unknown>> = {
  throw: { msg: 'uncaught error, exiting', origin: 'uncaughtException', err: expect.objectContaining({ message: 'test: uncaught exception' }) },
  reject: { msg: 'uncaught error, exiting', origin: 'unhandledRejection', err: expect.objectContaining({ message: 'test: unhandled rejection' }) },
};

describe('embedded mode (npm start)', () => {
  let dataDir: string;

  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-fatal-'));
  });

  afterEach(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('a V8 heap overflow aborts the process within seconds, and its port closes', async () => {
    const exit = await crash('services/standalone/src/main.ts', { PLOVER_DATA_DIR: dataDir }, 'oom', ['--max-old-space-size=192']);
    expect(exit.output).toContain('JavaScript heap out of memory');
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: null, signal: 'SIGABRT' });
    await expect(fetch(`http://127.0.0.1:${exit.port}/_health`)).rejects.toThrow();
  });

  it.each(['throw', 'reject'] as const)("'%s': the error is logged as fatal and the process exits 1", async (fault) => {
    const exit = await crash('services/standalone/src/main.ts', { PLOVER_DATA_DIR: dataDir }, fault);
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 1, signal: null });
    expect(fatalRecord(exit.output)).toMatchObject(EXPECTED_RECORD[fault]);
  });
});

describeWith({ url: postgres.url && kafka.url })('distributed mode', () => {
  const env = () => ({
    DATABASE_URL: postgres.url!,
    KAFKA_BROKERS: kafka.url!,
    // Nothing reaches ClickHouse before the fault: the services only connect to it for a request or a batch.
    CLICKHOUSE_URL: 'http://127.0.0.1:9',
  });

  it.each([
    ['capture', 'throw'],
    ['decide', 'throw'],
    ['decide', 'reject'],
    ['management', 'throw'],
    ['ingestion', 'throw'],
  ] as const)("%s, '%s': the error is logged as fatal and the process exits 1", async (service, fault) => {
    const exit = await crash(`services/${service}/src/main.ts`, env(), fault);
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 1, signal: null });
    expect(fatalRecord(exit.output)).toMatchObject({ name: service, ...EXPECTED_RECORD[fault] });
  });
});
