/**
 * Parquet input, checked with --dry-run (no server): a file hyparquet-writer wrote with a PostHog export's
 * columns (times as TIMESTAMP, team_id as INT64, properties as JSON text) is read in slices past the first, a row
 * with a bad column is rejected by its row number, and a file cut short is one message with exit code 2.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from './support/cli';

jest.setTimeout(120_000);

const ROWS = 4500;
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

it('reports a Parquet file cut short as one message, exit 2', async () => {
  const cut = path.join(dir, 'cut.parquet');
  fs.writeFileSync(cut, fs.readFileSync(file).subarray(0, 5000));
  const run = await runCli(['import', cut, '--dry-run', '--json', '--no-progress', '--rejected', path.join(dir, 'r2.jsonl')]);
  expect(run.code).toBe(2);
  expect((JSON.parse(run.stdout) as { files: Array<{ error: string }> }).files[0]!.error).toMatch(/^not readable as Parquet \(.+\) \(after row 0\)$/);
});
