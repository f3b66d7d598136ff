/**
 * `plover export events` against ClickHouse writing the same rows itself, in one run: EXPORT_BENCH_EVENTS
 * (1,000,000) events of one project, generated inside chDB (`INSERT … SELECT … FROM numbers(N)`, deterministic
 * hashes of the row number) into an embedded Plover's data dir while it is stopped. Then, alternating over
 * EXPORT_BENCH_ROUNDS (2) rounds:
 *
 * - the baseline, with Plover stopped: chDB on the data dir runs `SELECT <the listing's columns> FROM events FINAL
 *   WHERE team_id = … ORDER BY timestamp DESC, uuid DESC INTO OUTFILE … FORMAT JSONEachRow`, the same rows in
 *   the same order as the listing, written by ClickHouse's own formatter;
 * - with Plover started on the same data dir: the CLI (a child process, as users run it) exports the events as
 *   JSON lines, as Parquet, and as CSV (which the server stops at 100,000 rows, so its rate is of those).
 *
 * For each export: rows per second and the CLI process's peak RSS (VmHWM, read from /proc while it runs) less
 * the peak of the same command exporting no row (`--event` of no event): what the rows cost in memory.
 * Prints one JSON line with the rates as ratios to ClickHouse's. `npm run bench:export`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChdbClickHouse } from '@plover/chdb';
import { startEmbedded, type EmbeddedPlover } from '../test/support/embedded';
import { spawnCli } from '../services/cli/test/support/cli';
import { procMemoryMiB } from './proc';

const EVENTS = Number(process.env.EXPORT_BENCH_EVENTS ?? 1_000_000);
const ROUNDS = Number(process.env.EXPORT_BENCH_ROUNDS ?? 2);
const DAYS = 30;
const FORMATS = ['jsonl', 'parquet', 'csv'] as const;

/** Events with the properties a web SDK sends (about 400 bytes of JSON), over the last DAYS days, 20,000 persons. */
function generateSql(projectId: number): string {
  const now = Date.now() * 1000;
  return `INSERT INTO events (uuid, event, properties, timestamp, team_id, distinct_id, person_id, created_at)
    WITH
      fromUnixTimestamp64Micro(toInt64(${now} - cityHash64(number, 1) % ${DAYS * 86_400_000_000}), 'UTC') AS ts,
      cityHash64(number, 2) % 20000 AS p,
      ['$pageview', '$pageview', '$pageview', '$autocapture', '$pageleave', 'signup', 'purchase'][1 + cityHash64(number, 3) % 7] AS name,
      ['/', '/pricing', '/docs/', '/blog/', '/cart', '/checkout'][1 + cityHash64(number, 4) % 6] AS pathname
    SELECT
      reinterpretAsUUID(concat(reinterpretAsString(cityHash64(number, 5)), reinterpretAsString(number))),
      name,
      concat('{"$browser":"', ['Chrome', 'Safari', 'Firefox', 'Microsoft Edge'][1 + p % 4], '","$browser_version":', toString(100 + p % 30),
        ',"$os":"', ['Windows', 'Mac OS X', 'iOS', 'Android'][1 + p % 4], '","$device_type":"Desktop",',
        '"$current_url":"https://shop.example.com', pathname, '?utm_source=newsletter","$host":"shop.example.com","$pathname":"', pathname,
        '","$referring_domain":"www.google.com","$lib":"web","$lib_version":"1.180.0","$session_id":"', lower(hex(cityHash64(p, 6))),
        '","$insert_id":"', lower(hex(cityHash64(number, 7))), '","price":', toString((cityHash64(number, 8) % 20000) / 100), '}'),
      ts, ${projectId}, concat('user-', toString(p)),
      toUUID(concat('01900000-0000-7000-8000-', leftPad(lower(hex(p)), 12, '0'))), ts
    FROM numbers(${EVENTS})`;
}

/** The events listing's columns, as `GET /api/projects/:id/events/?format=jsonl` writes them, by ClickHouse itself. */
function baselineSql(projectId: number, file: string): string {
  return `SELECT toString(uuid) AS id, toString(uuid) AS uuid, event, distinct_id, properties,
                 formatDateTime(timestamp, '%Y-%m-%dT%H:%i:%S.%fZ', 'UTC') AS timestamp, toString(person_id) AS person_id
            FROM events FINAL WHERE team_id = ${projectId} ORDER BY events.timestamp DESC, events.uuid DESC
            INTO OUTFILE '${file}' TRUNCATE FORMAT JSONEachRow`;
}

interface Measured {
  seconds: number;
  rows: number;
  peakRssMiB: number;
}

/** The peak resident memory of process `pid` so far (VmHWM), in MiB; 0 once it is gone. */
function peakRssMiB(pid: number): number {
  try {
    return procMemoryMiB(pid, 'VmHWM');
  } catch {
    return 0;
  }
}

async function cliExport(args: string[], env: Record<string, string>): Promise<Measured> {
  const started = performance.now();
  const child = spawnCli(['export', 'events', '--json', '--no-progress', ...args], env);
  let peak = 0;
  const poll = setInterval(() => (peak = Math.max(peak, peakRssMiB(child.pid!))), 20);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // Read the peak once more as the process ends: it is still there until it is reaped.
  child.on('exit', () => (peak = Math.max(peak, peakRssMiB(child.pid!))));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearInterval(poll);
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0 && code !== 2) throw new Error(`plover export ${args.join(' ')} exited ${code}: ${stderr}`);
  return { seconds, rows: (JSON.parse(stdout) as { rows: number }).rows, peakRssMiB: peak };
}

async function clickhouseExport(dataDir: string, projectId: number, file: string): Promise<Measured> {
  const ch = await ChdbClickHouse.open({ dataDir: path.join(dataDir, 'clickhouse') });
  try {
    const started = performance.now();
    await ch.command('bench.export', baselineSql(projectId, file));
    const seconds = (performance.now() - started) / 1000;
    const rows = fs.readFileSync(file).reduce((n, byte) => (byte === 0x0a ? n + 1 : n), 0);
    return { seconds, rows, peakRssMiB: 0 };
  } finally {
    await ch.close();
  }
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-bench-export-'));
  const dataDir = path.join(dir, 'data');
  let embedded: EmbeddedPlover | undefined = await startEmbedded({}, dataDir);
  const { projectId, personalKey } = embedded.credentials;
  const loads: string[] = [os.loadavg()[0]!.toFixed(1)];
  try {
    await embedded.kill('SIGTERM');
    embedded = undefined;
    const ch = await ChdbClickHouse.open({ dataDir: path.join(dataDir, 'clickhouse') });
    const generating = performance.now();
    try {
      await ch.command('bench.generate', generateSql(projectId));
      await ch.command('bench.optimize', 'OPTIMIZE TABLE events FINAL');
    } finally {
      await ch.close();
    }
    const generateSeconds = round((performance.now() - generating) / 1000, 1);

    const runs: Record<'clickhouse' | (typeof FORMATS)[number], Measured[]> = { clickhouse: [], jsonl: [], parquet: [], csv: [] };
    const empty: Record<string, number> = {};
    for (let r = 0; r < ROUNDS; r++) {
      const baseline = () => clickhouseExport(dataDir, projectId, path.join(dir, 'clickhouse.jsonl'));
      // The baseline first in even rounds, last in odd ones: neither side always runs on a machine just warmed up.
      if (r % 2 === 0) runs.clickhouse.push(await baseline());
      embedded = await startEmbedded({}, dataDir);
      const env = { PLOVER_HOST: `http://127.0.0.1:${embedded.port}`, PLOVER_API_KEY: personalKey };
      for (const format of FORMATS) {
        const out = path.join(dir, `export.${format}`);
        const measured = await cliExport(['--format', format, '--out', out], env);
        if (format !== 'csv' && measured.rows !== EVENTS) throw new Error(`${format}: ${measured.rows} rows exported, not ${EVENTS}`);
        runs[format].push(measured);
        fs.rmSync(out, { force: true });
        if (r === 0) empty[format] = (await cliExport(['--format', format, '--event', 'no such event', '--out', out], env)).peakRssMiB;
        loads.push(os.loadavg()[0]!.toFixed(1));
      }
      await embedded.kill('SIGTERM');
      embedded = undefined;
      if (r % 2 === 1) runs.clickhouse.push(await baseline());
    }
    const rate = (measured: Measured[]) => measured.reduce((sum, m) => sum + m.rows, 0) / measured.reduce((sum, m) => sum + m.seconds, 0);
    const clickhouse = rate(runs.clickhouse);
    const result = Object.fromEntries(
      FORMATS.map((format) => [
        format,
        {
          rowsPerSecond: Math.round(rate(runs[format])),
          ratio: round(rate(runs[format]) / clickhouse),
          rows: runs[format][0]!.rows,
          peakRssGrowthMiB: Math.round(Math.max(...runs[format].map((m) => m.peakRssMiB)) - empty[format]!),
        },
      ]),
    );
    process.stdout.write(
      `${JSON.stringify({
        bench: 'export',
        events: EVENTS,
        rounds: ROUNDS,
        generateSeconds,
        clickhouse: { rowsPerSecond: Math.round(clickhouse), seconds: runs.clickhouse.map((m) => round(m.seconds)) },
        ...result,
        seconds: Object.fromEntries(FORMATS.map((format) => [format, runs[format].map((m) => round(m.seconds))])),
        load: loads,
      })}\n`,
    );
  } finally {
    await embedded?.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
