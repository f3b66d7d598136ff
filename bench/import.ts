/**
 * `plover import` against sending the same events to `/batch/` yourself, on one embedded Plover, in one run: N
 * PostHog-export-shaped events each way (default 200,000; IMPORT_BENCH_EVENTS to change) in ROUNDS rounds: from a
 * gzip JSON lines file through the CLI (a child process, as users run it) into one project, and the same events as
 * an SDK sends them, 1,000 per request in order, into another, the order alternating between rounds. For each:
 * the rate until the last request was acknowledged (durable on the bus) and until ingestion stored the last event.
 * Prints one JSON line with the ratios import / batch.
 * `npm run test:import-200k`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { startEmbedded } from '../test/support/embedded';
import { exportRows, sdkEvent } from '../test/support/export-events';
import { Plover, runCli } from '../services/cli/test/support/cli';

const EVENTS = Number(process.env.IMPORT_BENCH_EVENTS ?? 200_000);
const BATCH = 1000;
/** Rounds of EVENTS / ROUNDS events each way, the order alternating. */
const ROUNDS = Number(process.env.IMPORT_BENCH_ROUNDS ?? 4);
const WARM_UP = 5000;

interface Timing {
  ackedSeconds: number;
  storedSeconds: number;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-bench-import-'));
  const embedded = await startEmbedded();
  try {
    const plover = new Plover(`http://127.0.0.1:${embedded.port}`, embedded.credentials.personalKey);
    const env = { PLOVER_HOST: plover.host, PLOVER_API_KEY: embedded.credentials.personalKey };
    const perRound = EVENTS / ROUNDS;
    const timed = async (project: number, count: number, send: () => Promise<void>): Promise<Timing> => {
      const started = performance.now();
      await send();
      const ackedSeconds = (performance.now() - started) / 1000;
      await plover.until(
        () => plover.eventCount(project),
        (n) => n === count,
        `project ${project} stored`,
        3_600_000,
      );
      return { ackedSeconds, storedSeconds: (performance.now() - started) / 1000 };
    };
    const totals = { import: { ackedSeconds: 0, storedSeconds: 0 }, batch: { ackedSeconds: 0, storedSeconds: 0 } };
    const rounds = [];
    // Round -1 warms the server up (JIT, the topics' first segments, the tables' first parts) and is not counted.
    for (let round = -1; round < ROUNDS; round++) {
      // Each round has events of its own (new persons), the same for both ways; the order alternates, so that
      // neither always runs on a server that has just warmed up or onto a machine that just got busier.
      const count = round < 0 ? WARM_UP : perRound;
      const rows = exportRows({ count, seed: 11 + round, days: 14 });
      const file = path.join(dir, `round-${round}.jsonl.gz`);
      fs.writeFileSync(file, zlib.gzipSync(rows.map((row) => JSON.stringify(row)).join('\n') + '\n'));
      const viaImport = await plover.project(`import ${round}`);
      const viaBatch = await plover.project(`batch ${round}`);
      const runImport = () =>
        timed(viaImport.id, count, async () => {
          const run = await runCli(
            [
              'import',
              file,
              '--project',
              String(viaImport.id),
              '--batch-size',
              String(BATCH),
              '--json',
              '--no-progress',
              '--rejected',
              path.join(dir, 'r.jsonl'),
            ],
            env,
          );
          if (run.code !== 0) throw new Error(`import exited ${run.code}: ${run.stderr}`);
        });
      const runBatch = () => timed(viaBatch.id, count, () => plover.batch(viaBatch.token, rows.map(sdkEvent), BATCH));
      const first = round % 2 === 0 ? 'import' : 'batch';
      const result: Record<string, Timing> = {};
      for (const way of first === 'import' ? (['import', 'batch'] as const) : (['batch', 'import'] as const)) {
        result[way] = await (way === 'import' ? runImport() : runBatch());
      }
      if (round < 0) continue;
      for (const way of ['import', 'batch'] as const) {
        totals[way].ackedSeconds += result[way]!.ackedSeconds;
        totals[way].storedSeconds += result[way]!.storedSeconds;
      }
      rounds.push({
        first,
        importAckedPerSecond: Math.round(perRound / result.import!.ackedSeconds),
        batchAckedPerSecond: Math.round(perRound / result.batch!.ackedSeconds),
        load: os.loadavg()[0]!.toFixed(1),
      });
    }
    const rate = (seconds: number) => Math.round(EVENTS / seconds);
    process.stdout.write(
      `${JSON.stringify({
        bench: 'import',
        events: EVENTS,
        rounds,
        import: { ackedPerSecond: rate(totals.import.ackedSeconds), storedPerSecond: rate(totals.import.storedSeconds) },
        batch: { ackedPerSecond: rate(totals.batch.ackedSeconds), storedPerSecond: rate(totals.batch.storedSeconds) },
        ratio: {
          acked: +(totals.batch.ackedSeconds / totals.import.ackedSeconds).toFixed(2),
          stored: +(totals.batch.storedSeconds / totals.import.storedSeconds).toFixed(2),
        },
      })}\n`,
    );
  } finally {
    await embedded.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
