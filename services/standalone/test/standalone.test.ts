import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { countEvents } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';

const ROOT = path.resolve(__dirname, '../../..');

interface Started {
  child: ChildProcessWithoutNullStreams;
  port: number;
  output: () => string;
}

function spawnPlover(env: Record<string, string>): { child: ChildProcessWithoutNullStreams; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--conditions=plover-source', '--import', 'tsx', 'services/standalone/src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', HOST: '127.0.0.1', ...env },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function start(dataDir: string): Promise<Started> {
  const { child, output, exited } = spawnPlover({ PLOVER_DATA_DIR: dataDir });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in time:\n${output()}`)), 60_000);
    void exited.then((code) => reject(new Error(`exited with ${code}:\n${output()}`)));
    child.stdout.on('data', () => {
      const match = /"port":(\d+).*"msg":"listening"/.exec(output());
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
  });
  return { child, port, output };
}

async function stop(started: Started): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => started.child.on('exit', (code) => resolve(code)));
  started.child.kill('SIGTERM');
  return exited;
}

describe('npm start (embedded)', () => {
  let dataDir: string;

  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-standalone-'));
  });

  afterAll(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('bootstraps an empty data dir, prints the keys once and stores them readable by the owner only', async () => {
    const plover = await start(dataDir);
    try {
      const file = path.join(dataDir, 'credentials.json');
      const credentials = JSON.parse(fs.readFileSync(file, 'utf8'));
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(credentials.project.api_token).toMatch(/^phc_[0-9A-Za-z]{43}$/);
      expect(credentials.personal_api_key.value).toMatch(/^phx_[0-9A-Za-z]{43}$/);
      expect(credentials.personal_api_key.scopes).toEqual(['*']);
      expect(plover.output()).toContain(credentials.project.api_token);
      expect(plover.output()).toContain(credentials.personal_api_key.value);

      const health = await fetch(`http://127.0.0.1:${plover.port}/_health`);
      expect(health.status).toBe(200);
      const ready = await fetch(`http://127.0.0.1:${plover.port}/_ready`);
      expect(await ready.json()).toEqual({ status: 'ok', checks: { postgres: 'ok', clickhouse: 'ok', bus: 'ok', disk: 'ok' } });
    } finally {
      expect(await stop(plover)).toBe(0);
    }
  });

  it('restarts on the same data dir without bootstrapping again', async () => {
    const before = fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8');
    const plover = await start(dataDir);
    try {
      expect(plover.output()).not.toContain('Plover is set up');
      expect(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8')).toBe(before);
      expect((await fetch(`http://127.0.0.1:${plover.port}/_ready`)).status).toBe(200);
    } finally {
      expect(await stop(plover)).toBe(0);
    }
  });

  it('ingests captured events in the same process (capture, local bus, consumer on its own thread, chDB) and stops cleanly on SIGTERM', async () => {
    const credentials = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
    const projectId: number = credentials.project.id;
    const plover = await start(dataDir);
    try {
      const batch = Array.from({ length: 50 }, (_, i) => ({ event: 'clicked', distinct_id: `user-${i % 5}`, properties: { $set: { n: i } } }));
      const response = await fetch(`http://127.0.0.1:${plover.port}/batch/`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ api_key: credentials.project.api_token, batch }),
      });
      expect(response.status).toBe(200);
      // chDB belongs to the running process; its consumer's counter says when the events are stored.
      const deadline = Date.now() + 30_000;
      while (
        !/plover_ingestion_messages_total\{[^}]*outcome="ingested"[^}]*\} 50\b/.test(await (await fetch(`http://127.0.0.1:${plover.port}/metrics`)).text())
      ) {
        if (Date.now() > deadline) throw new Error('the events were not ingested in time');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // Ingestion runs on a thread of its own, which yields the cores to the thread serving requests (nice 10 vs 0),
      // and so do chDB's merge threads.
      const pid = plover.child.pid!;
      const threads = () =>
        fs.readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
          try {
            const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
            return [
              { tid, name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), nice: Number(stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[16]) },
            ];
          } catch {
            return []; // ended meanwhile
          }
        });
      const mergeThreadsLowered = () => {
        const merges = threads().filter((thread) => thread.name === 'MergeMutate');
        return merges.length > 0 && merges.every((thread) => thread.nice === 10);
      };
      for (const deadline = Date.now() + 10_000; !mergeThreadsLowered() && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(mergeThreadsLowered()).toBe(true);
      const all = threads();
      expect(all.find((thread) => thread.tid === String(pid))?.nice).toBe(0);
      expect(all.filter((thread) => thread.name === 'node' && thread.nice === 10)).toHaveLength(1);
    } finally {
      expect(await stop(plover)).toBe(0);
    }
    const clickhouse = await ChdbClickHouse.open({ dataDir: path.join(dataDir, 'clickhouse') });
    try {
      expect(await countEvents(clickhouse, projectId)).toBe(50);
    } finally {
      await clickhouse.close();
    }
  });

  it('refuses a second process on the same data dir', async () => {
    const first = await start(dataDir);
    try {
      const second = spawnPlover({ PLOVER_DATA_DIR: dataDir });
      expect(await second.exited).toBe(1);
      expect(second.output()).toContain(`is in use by process ${first.child.pid}`);
    } finally {
      await stop(first);
    }
  });

  it.each([
    [{ PORT: 'eighty' }, 'Invalid configuration: PORT must be integer (got "eighty")'],
    [{ PLOVER_TIMEZONE: 'Mars/Olympus' }, 'Invalid configuration: PLOVER_TIMEZONE is not an IANA timezone (got "Mars/Olympus")'],
  ])('refuses bad config %j with one clear message and exit code 1', async (env, message) => {
    const { output, exited } = spawnPlover({ PLOVER_DATA_DIR: dataDir, ...env });
    expect(await exited).toBe(1);
    expect(output().trim()).toBe(message);
  });
});
