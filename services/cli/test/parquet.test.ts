/**
 * Parquet input, checked with --dry-run (no server): a file hyparquet-writer wrote with a PostHog export's
 * columns (times as TIMESTAMP, team_id as INT64, properties as JSON text) is read in slices past the first, a row
 * with a bad column is rejected by its row number; files ClickHouse wrote with each of its codecs (zstd, PostHog's
 * default, among them) are read row for row; a file cut short (no footer) is refused in one line, exit 1, before
 * anything is read, and one corrupt past its footer ends that file with one message, exit 2.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, runCli } from './support/cli';

jest.setTimeout(120_000);

const ROWS = 4500;
const CH_ROWS = 3000;
const CODECS = ['zstd', 'lz4', 'gzip', 'brotli', 'snappy', 'none'];
let dir: string;
let file: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-cli-parquet-'));
  file = path.join(dir, 'export.parquet');
  // hyparquet-writer is an ES module: written by a child node, as a user's tool would write the file.
  const script = `
    import { parquetWriteFile } from 'hyparquet-writer';
    const n = ${ROWS};
    const rows = Array.from({ length: n }, (_, i) => i);
    parquetWriteFile({
      filename: ${JSON.stringify(file)},
      columnData: [
        { name: 'uuid', data: rows.map((i) => '0190a6c1-0000-4000-8000-' + String(i).padStart(12, '0')), type: 'STRING' },
        { name: 'event', data: rows.map((i) => (i % 2 ? '$pageview' : 'signup')), type: 'STRING' },
        { name: 'distinct_id', data: rows.map((i) => 'user-' + (i % 50)), type: 'STRING' },
        { name: 'timestamp', data: rows.map((i) => new Date(Date.UTC(2024, 4, 1) + i * 1000)), type: 'TIMESTAMP' },
        { name: 'team_id', data: rows.map(() => 2n), type: 'INT64' },
        { name: 'properties', data: rows.map((i) => (i === 2500 ? 'not json' : JSON.stringify({ n: i }))), type: 'STRING' },
      ],
    });`;
  execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: path.resolve(__dirname, '..') });
  // chDB in a child, as a ClickHouse server's `INTO OUTFILE` or PostHog's batch export (zstd) writes the file;
  // small row groups and pages, so that rows are read across several of each.
  const clickhouse = `
    const { query } = require('chdb');
    for (const codec of ${JSON.stringify(CODECS)}) query(\`
      SELECT toString(toUUID(concat('0190a6c1-0000-4000-8000-', leftPad(toString(number), 12, '0')))) AS uuid,
             if(number % 2 = 1, '$pageview', 'signup') AS event,
             if(number = 1234, 'not json', concat('{"n":', toString(number), ',"$browser":"Firefox"}')) AS properties,
             concat('user-', toString(number % 50)) AS distinct_id,
             toDateTime64('2024-05-01 00:00:00', 6, 'UTC') + toIntervalSecond(number) AS timestamp,
             toInt64(2) AS team_id
        FROM numbers(${CH_ROWS})
        INTO OUTFILE '${dir}/ch-\${codec}.parquet' TRUNCATE FORMAT Parquet
        SETTINGS output_format_parquet_compression_method = '\${codec}', output_format_parquet_row_group_size = 1000,
                 output_format_parquet_data_page_size = 4096\`, 'CSV');`;
  execFileSync(process.execPath, ['-e', clickhouse], { cwd: ROOT });
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

it('reads every row of a Parquet export, rejecting a bad one by its row number', async () => {
  const run = await runCli(['import', file, '--dry-run', '--json', '--no-progress', '--rejected', path.join(dir, 'rejected.jsonl')]);
  expect(run.code).toBe(2);
  const summary = JSON.parse(run.stdout) as { accepted: number; rejected: number; files: Array<{ format: string }>; firstRejections: unknown[] };
  expect(summary).toMatchObject({ accepted: ROWS - 1, rejected: 1, files: [{ format: 'parquet' }] });
  expect(summary.firstRejections).toEqual([{ file, unit: 'row', index: 2501, field: 'properties', reason: 'must be a JSON object' }]);
  const rejected = JSON.parse(fs.readFileSync(path.join(dir, 'rejected.jsonl'), 'utf8')) as { raw: string };
  expect(JSON.parse(rejected.raw)).toMatchObject({ timestamp: '2024-05-01T00:41:40.000Z', team_id: 2, properties: 'not json' });
});

it('reads Parquet as ClickHouse writes it with zstd, lz4, gzip, brotli, snappy or no compression', async () => {
  const files = CODECS.map((codec) => path.join(dir, `ch-${codec}.parquet`));
  const rejected = path.join(dir, 'rejected-codecs.jsonl');
  const run = await runCli(['import', ...files, '--dry-run', '--json', '--no-progress', '--rejected', rejected]);
  expect(run.code).toBe(2);
  const summary = JSON.parse(run.stdout) as { files: Array<{ file: string; accepted: number; rejected: number; error?: string }> };
  expect(summary.files).toEqual(files.map((file) => ({ file, format: 'parquet', accepted: CH_ROWS - 1, rejected: 1, skipped: 0 })));
  // The rejected row as each file holds it: every column decoded, the time as ClickHouse wrote it.
  const lines = fs.readFileSync(rejected, 'utf8').trim().split('\n');
  expect(
    lines
      .map((line) => JSON.parse(line) as { file: string; index: number; raw: string })
      .map(({ file, index, raw }) => ({ file, index, row: JSON.parse(raw) as unknown })),
  ).toEqual(
    files.map((file) => ({
      file,
      index: 1235,
      row: {
        uuid: '0190a6c1-0000-4000-8000-000000001234',
        event: 'signup',
        properties: 'not json',
        distinct_id: 'user-34',
        timestamp: '2024-05-01T00:20:34.000Z',
        team_id: 2,
      },
    })),
  );
});

it('reads a row group above 64 MiB 2,000 rows at a time, every row in its place', async () => {
  const big = path.join(dir, 'big-group.parquet');
  // 2,100 rows of 33 KB of properties: one 69 MB row group, read in two slices.
  const clickhouse = `
    require('chdb').query(\`
      SELECT concat('user-', toString(number)) AS distinct_id, 'big' AS event,
             if(number = 2050, 'not json', concat('{"n":', toString(number), ',"pad":"', repeat('x', 33000), '"}')) AS properties
        FROM numbers(2100)
        INTO OUTFILE '${big}' TRUNCATE FORMAT Parquet SETTINGS output_format_parquet_compression_method = 'zstd'\`, 'CSV');`;
  execFileSync(process.execPath, ['-e', clickhouse], { cwd: ROOT });
  const rejected = path.join(dir, 'rejected-big.jsonl');
  const run = await runCli(['import', big, '--dry-run', '--json', '--no-progress', '--rejected', rejected]);
  expect(JSON.parse(run.stdout)).toMatchObject({ accepted: 2099, rejected: 1, firstRejections: [{ index: 2051, field: 'properties' }] });
  expect(JSON.parse((JSON.parse(fs.readFileSync(rejected, 'utf8')) as { raw: string }).raw)).toEqual({
    distinct_id: 'user-2050',
    event: 'big',
    properties: 'not json',
  });
});

it('refuses a Parquet file cut short in one line, exit 1, before reading anything', async () => {
  const cut = path.join(dir, 'cut.parquet');
  fs.writeFileSync(cut, fs.readFileSync(file).subarray(0, 5000));
  const run = await runCli(['import', file, cut, '--dry-run', '--no-progress', '--rejected', path.join(dir, 'r2.jsonl')]);
  expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 1, stdout: '' });
  expect(run.stderr).toMatch(new RegExp(`^plover: ${cut}: not a Parquet file, or cut short \\(.+\\)\n$`));
});

it('ends a Parquet file whose pages are corrupt with one message, exit 2', async () => {
  const corrupt = path.join(dir, 'corrupt.parquet');
  const bytes = fs.readFileSync(path.join(dir, 'ch-zstd.parquet'));
  bytes.fill(0xab, 64, 4000);
  fs.writeFileSync(corrupt, bytes);
  const run = await runCli(['import', corrupt, '--dry-run', '--no-progress', '--rejected', path.join(dir, 'r3.jsonl')]);
  expect(run.code).toBe(2);
  expect(run.stdout).toMatch(/corrupt\.parquet \(parquet\): 0 accepted, 0 rejected\n +stopped early: not readable as Parquet \(.+\) \(after row 0\)\n/);
  expect(run.stderr).toMatch(/^.+corrupt\.parquet: not readable as Parquet \(.+\) \(after row 0\)\n/);
  expect(run.stderr).not.toMatch(/\n\s+at /);
});
