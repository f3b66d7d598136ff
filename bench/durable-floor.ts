/**
 * The latency floor of "answer only once the event is durable" on this machine: `/i/v0/e/`-sized requests at a fixed
 * rate, open loop (bench/paced.ts), against servers that do less and less than capture does. Each configuration runs
 * in a process of its own:
 *
 *   file                  node:http, JSON.parse, one file, writev + fdatasync shared by what queued meanwhile
 *   bus                   the same with LocalLogBus instead of the file (4 partitions, group commit)
 *   bus+consumer          … and a consumer in the process that reads and parses every record (as embedded runs)
 *   bus+consumer+pglite   … and an open PGlite in the process (as embedded runs; no query is made)
 *
 *   node --conditions=plover-source --import tsx bench/durable-floor.ts
 *
 * Prints one JSON line: per configuration, the p99 (ms) of each round. BENCH_FLOOR_RATE (default 3,000/s),
 * BENCH_FLOOR_ROUNDS (3) and BENCH_FLOOR_SECONDS (5) change the load.
 */
import '@plover/config/threadpool'; // as embedded mode starts
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { LocalLogBus } from '@plover/bus';
import { PGliteSql } from '@plover/postgres/pglite';
import { pacedLoad } from './paced';

const RATE = Number(process.env.BENCH_FLOOR_RATE ?? 3000);
const ROUNDS = Number(process.env.BENCH_FLOOR_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_FLOOR_SECONDS ?? 5);
const CONFIGURATIONS = ['file', 'bus', 'bus+consumer', 'bus+consumer+pglite'];
const OK = '{"status":1}';

/** Durable appends to one file: what is queued while a write + fdatasync runs goes in the next one. */
async function fileAppender(dir: string): Promise<(body: Buffer) => Promise<void>> {
  const handle = await open(path.join(dir, 'log'), 'w');
  let position = 0;
  let queued: Array<{ body: Buffer; done: () => void }> = [];
  let flushing = false;
  const flush = async () => {
    flushing = true;
    while (queued.length > 0) {
      const batch = queued;
      queued = [];
      position += (
        await handle.writev(
          batch.map((item) => item.body),
          position,
        )
      ).bytesWritten;
      await handle.datasync();
      for (const item of batch) item.done();
    }
    flushing = false;
  };
  return (body) =>
    new Promise((resolve) => {
      queued.push({ body, done: resolve });
      if (!flushing) setImmediate(() => void flush());
    });
}

async function busAppender(dir: string, configuration: string): Promise<(body: Buffer) => Promise<void>> {
  const bus = await LocalLogBus.open({ dataDir: dir });
  await bus.ensureTopics(['events']);
  if (configuration.includes('consumer')) {
    await bus.consume({
      groupId: 'floor',
      topics: ['events'],
      handleBatch: (batch) => {
        for (const message of batch.messages) JSON.parse(message.value.toString('utf8'));
        return Promise.resolve();
      },
    });
  }
  if (configuration.includes('pglite')) await PGliteSql.open({ guardTransactions: false });
  return (body) => {
    const event = JSON.parse(body.toString('utf8')) as { distinct_id: string };
    return bus.produce('events', [{ key: `1:${event.distinct_id}`, value: Buffer.from(JSON.stringify(event)) }]);
  };
}

async function serve(configuration: string): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'plover-floor-'));
  // The parent ends a server with SIGTERM once its rounds are done.
  process.on('SIGTERM', () => {
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
  const append = configuration === 'file' ? await fileAppender(dir) : await busAppender(dir, configuration);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (configuration === 'file') JSON.parse(body.toString('utf8'));
      append(body).then(
        () => res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': OK.length }).end(OK),
        () => res.writeHead(503, { 'Content-Length': 0 }).end(),
      );
    });
  });
  server.listen(0, '127.0.0.1', () => process.send!((server.address() as AddressInfo).port));
}

async function measure(configuration: string): Promise<number[]> {
  const child = spawn(process.execPath, ['--conditions=plover-source', '--import', 'tsx', __filename, 'server', configuration], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (message) => resolve(message as number));
      child.once('exit', (code) => reject(new Error(`the ${configuration} server exited with ${code}`)));
    });
    const body = JSON.stringify({
      event: '$pageview',
      distinct_id: 'user-1',
      properties: { $lib: 'web', token: 'phc_bench', $current_url: 'https://shop.example/' },
    });
    const p99s: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const result = await pacedLoad({
        url: `http://127.0.0.1:${port}/i/v0/e/`,
        headers: { 'content-type': 'application/json' },
        body: () => body,
        rate: RATE,
        warmupSeconds: 1,
        seconds: SECONDS,
        connections: 32,
      });
      if (result.errors + result.non2xx > 0) throw new Error(`${configuration}: ${result.errors} errors, ${result.non2xx} non-2xx answers`);
      p99s.push(result.latencyMs.p99);
    }
    return p99s;
  } finally {
    child.kill();
  }
}

async function main(): Promise<void> {
  const [role, configuration] = process.argv.slice(2);
  if (role === 'server') return serve(configuration as string);
  const p99Ms: Record<string, number[]> = {};
  for (const name of CONFIGURATIONS) p99Ms[name] = await measure(name);
  console.log(
    JSON.stringify({
      bench: 'durable-floor',
      cpus: os.cpus().length,
      loadAtStart: os.loadavg(),
      node: process.version,
      rate: RATE,
      seconds: SECONDS,
      connections: 32,
      p99Ms,
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
