/**
 * `plover import` and `plover export` against embedded Plover in a child process, as a user runs them: a
 * PostHog-export-shaped file (JSON lines, gzip, and the same rows as CSV) stores the same events, persons and
 * trend as the same events sent by an SDK to /batch/; a second run doubles nothing; a CLI killed with SIGKILL
 * and run again with --resume loses and doubles nothing; bad files say what and where; an export imported into
 * a fresh data dir, as JSON lines or as Parquet, gives the same trend; persons exported as Parquet read back in
 * ClickHouse as the listing has them; the progress display is a bar on a terminal and lines in a pipe.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { setTimeout as sleep } from 'node:timers/promises';
import { startEmbedded, type EmbeddedPlover } from '../../../test/support/embedded';
import { exportRows, sdkEvent, type ExportRow } from '../../../test/support/export-events';
import { CLI, Plover, ROOT, runCli, spawnCli } from './support/cli';

jest.setTimeout(300_000);

const EVENTS = 5000;

let embedded: EmbeddedPlover;
let plover: Plover;
let env: Record<string, string>;
let dir: string;
let rows: ExportRow[];

function csvCell(value: unknown): string {
  const text = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  return /[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const COLUMNS: Array<keyof ExportRow> = [
  'uuid',
  'event',
  'properties',
  'distinct_id',
  'timestamp',
  'team_id',
  'elements_chain',
  'created_at',
  'person_id',
  'set',
  'set_once',
];

function write(name: string, content: string | Buffer): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
}

interface Summary {
  accepted: number;
  rejected: number;
  files: Array<{ skipped: number; error?: string }>;
  firstRejections: Array<{ index: number; field?: string; reason: string }>;
  rejectedFile?: string;
}

async function importJson(args: string[], expectedCode = 0): Promise<Summary> {
  const run = await runCli(['import', ...args, '--json', '--no-progress', '--rejected', path.join(dir, 'rejected.jsonl')], env);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: expectedCode, stderr: expect.any(String) as string });
  return JSON.parse(run.stdout) as Summary;
}

const historical = () => plover.metric('plover_ingestion_messages_total', { topic: 'events_historical' });

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-cli-e2e-'));
  embedded = await startEmbedded();
  plover = new Plover(`http://127.0.0.1:${embedded.port}`, embedded.credentials.personalKey);
  env = { PLOVER_HOST: plover.host, PLOVER_API_KEY: embedded.credentials.personalKey };
  rows = exportRows({ count: EVENTS, seed: 7 });
  write('events.jsonl.gz', zlib.gzipSync(rows.map((row) => JSON.stringify(row)).join('\n') + '\n'));
  write('events.csv', [COLUMNS.join(','), ...rows.map((row) => COLUMNS.map((column) => csvCell(row[column])).join(','))].join('\r\n') + '\r\n');
});

afterAll(async () => {
  await embedded?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('an import', () => {
  let viaBatch: { id: number; token: string };
  let viaCsv: { id: number; token: string };

  it('stores the same events, persons and trend as the same events sent to /batch/, from JSON lines and from CSV', async () => {
    const project = embedded.credentials.projectId;
    viaBatch = await plover.project('through /batch/');
    viaCsv = await plover.project('from CSV');

    const fromJsonl = await importJson([path.join(dir, 'events.jsonl.gz'), '--project', String(project)]);
    expect({ accepted: fromJsonl.accepted, rejected: fromJsonl.rejected }).toEqual({ accepted: EVENTS, rejected: 0 });
    const fromCsv = await importJson([path.join(dir, 'events.csv'), '--project', String(viaCsv.id)]);
    expect({ accepted: fromCsv.accepted, rejected: fromCsv.rejected }).toEqual({ accepted: EVENTS, rejected: 0 });
    await plover.batch(viaBatch.token, rows.map(sdkEvent));

    for (const id of [project, viaBatch.id, viaCsv.id])
      await plover.until(
        () => plover.eventCount(id),
        (n) => n === EVENTS,
        `events of project ${id}`,
      );
    const expectedPersons = await plover.persons(viaBatch.id);
    expect(expectedPersons.length).toBeGreaterThan(500);
    expect(await plover.persons(project)).toEqual(expectedPersons);
    expect(await plover.persons(viaCsv.id)).toEqual(expectedPersons);
    const expectedTrend = await plover.trend(viaBatch.id);
    expect(await plover.trend(project)).toEqual(expectedTrend);
    expect(await plover.trend(viaCsv.id)).toEqual(expectedTrend);
  });

  it('run twice stores nothing twice, whether the rows carry uuids or get them from the file', async () => {
    const project = embedded.credentials.projectId;
    const trend = await plover.trend(project);
    const before = await historical();
    await importJson([path.join(dir, 'events.jsonl.gz'), '--project', String(project)]);
    await plover.until(historical, (n) => n >= before + EVENTS, 'the second import consumed');
    expect(await plover.eventCount(project)).toBe(EVENTS);
    expect(await plover.trend(project)).toEqual(trend);

    const noUuids = await plover.project('rows without uuids');
    const file = write(
      'no-uuids.jsonl',
      exportRows({ count: 300, seed: 9, withUuids: false })
        .map((row) => JSON.stringify(row))
        .join('\n'),
    );
    const start = await historical();
    for (let run = 0; run < 2; run++) expect((await importJson([file, '--project', String(noUuids.id)])).accepted).toBe(300);
    await plover.until(historical, (n) => n >= start + 600, 'both imports consumed');
    expect(await plover.eventCount(noUuids.id)).toBe(300);
  });

  it('killed with SIGKILL mid-import and run again with --resume: nothing lost, nothing doubled', async () => {
    const target = await plover.project('resumed');
    const file = path.join(dir, 'events.jsonl.gz');
    const stateFile = `${file}.plover-import.json`;
    fs.rmSync(stateFile, { force: true });
    const child = spawnCli(
      ['import', file, '--project', String(target.id), '--batch-size', '50', '--no-progress', '--rejected', path.join(dir, 'r.jsonl')],
      env,
    );
    const closed = new Promise((resolve) => child.on('close', resolve));
    const through = () => {
      try {
        return (JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { through: number; project: number }).project === target.id
          ? (JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { through: number }).through
          : 0;
      } catch {
        return 0;
      }
    };
    // Watched closely: the whole file can be acknowledged within a quarter of a second.
    for (const deadline = Date.now() + 120_000; through() < 1000; await sleep(2)) {
      if (Date.now() > deadline) throw new Error(`the first batches acknowledged: still ${through()} after 120 s`);
    }
    child.kill('SIGKILL');
    await closed;
    const acknowledged = through();
    expect(acknowledged).toBeLessThan(EVENTS);

    const resumed = await importJson([file, '--project', String(target.id), '--resume']);
    expect(resumed.files[0]!.skipped).toBeGreaterThanOrEqual(acknowledged);
    expect(resumed.accepted).toBe(EVENTS);
    await plover.until(
      () => plover.eventCount(target.id),
      (n) => n === EVENTS,
      'every event stored',
    );
    // What the killed run had sent past its last saved state was sent again: it must not count twice.
    await sleep(2000);
    expect(await plover.eventCount(target.id)).toBe(EVENTS);
    expect(await plover.trend(target.id)).toEqual(await plover.trend(viaBatch.id));
  });
});

describe('bad files', () => {
  it('name the line and field, import the rest and exit 2; with --strict send nothing and exit 1', async () => {
    const target = await plover.project('bad files');
    const gz = zlib.gzipSync(
      rows
        .slice(0, 2000)
        .map((row) => JSON.stringify(row))
        .join('\n'),
    );
    const truncated = write('truncated.jsonl.gz', gz.subarray(0, Math.floor(gz.length / 2)));
    const lines = [
      JSON.stringify({ event: 'fine', distinct_id: 'bad-files-1' }),
      JSON.stringify({ event: 'wrong column', distinct_id: 'bad-files-2', properties: ['not', 'an', 'object'] }),
      Buffer.concat([Buffer.from('{"event":"latin1","distinct_id":"bad-files-3","properties":{"city":"M'), Buffer.from([0xfc]), Buffer.from('nchen"}}')]),
      JSON.stringify({ event: 'fine', distinct_id: 'bad-files-4' }),
    ];
    const mixed = write('mixed.jsonl', Buffer.concat(lines.flatMap((line) => [Buffer.from(line), Buffer.from('\n')])));

    const captured = () => plover.metric('plover_capture_events_total');
    const before = await captured();
    const strict = await runCli(
      ['import', mixed, truncated, '--project', String(target.id), '--strict', '--no-progress', '--rejected', path.join(dir, 's.jsonl')],
      env,
    );
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain('plover: --strict: nothing was sent: 2 records cannot be imported, 1 files cannot be read to their end');
    expect(strict.stderr).toMatch(/truncated\.jsonl\.gz: the gzip data ends early \(truncated file\) \(after line \d+\)/);
    expect(await captured()).toBe(before);

    const summary = await importJson([mixed, truncated, '--project', String(target.id)], 2);
    expect(summary.firstRejections.map(({ index, field, reason }) => ({ index, field, reason }))).toEqual([
      { index: 2, field: 'properties', reason: 'must be a JSON object' },
      { index: 3, field: 'properties.city', reason: 'not valid UTF-8 (byte 0xfc at byte 70 of the line)' },
    ]);
    expect(summary.files[1]!.error).toMatch(/^the gzip data ends early/);
    expect(summary.accepted).toBeGreaterThan(2);
    const rejected = fs.readFileSync(summary.rejectedFile!, 'utf8').trim().split('\n');
    expect(rejected.map((line) => (JSON.parse(line) as { index: number }).index)).toEqual([2, 3]);
    await plover.until(
      () => plover.eventCount(target.id),
      (n) => n === summary.accepted,
      'the readable events stored',
    );

    const human = await runCli(['import', mixed, '--project', String(target.id), '--no-progress', '--rejected', path.join(dir, 'h.jsonl')], env);
    expect(human.code).toBe(2);
    expect(human.stdout).toContain('mixed.jsonl line 3, field properties.city: not valid UTF-8 (byte 0xfc at byte 70 of the line)');
    expect(human.stderr).not.toMatch(/\n\s+at /);
  });

  it('one line for a file that is not there, a key that is refused, a server that is not running', async () => {
    const missing = await runCli(['import', path.join(dir, 'nope.jsonl')], env);
    expect({ code: missing.code, stderr: missing.stderr }).toEqual({ code: 1, stderr: `plover: ${path.join(dir, 'nope.jsonl')}: no such file\n` });
    const refused = await runCli(['import', path.join(dir, 'mixed.jsonl'), '--api-key', 'phx_wrong'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^plover: GET \/api\/projects\/@current\/ answered 401 authentication_failed: .*\n$/);
    const down = await runCli(['import', path.join(dir, 'mixed.jsonl'), '--host', 'http://127.0.0.1:9'], env);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^plover: cannot reach Plover at http:\/\/127\.0\.0\.1:9 \(.+\); is it running\? \(plover start\)\n$/);
  });
});

describe('the progress display', () => {
  it('redraws a bar on a terminal and prints plain lines into a pipe', async () => {
    const target = await plover.project('progress');
    const file = write(
      'progress.jsonl',
      rows
        .slice(0, 2000)
        .map((row) => JSON.stringify(row))
        .join('\n'),
    );
    const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;
    const command = [process.execPath, ...CLI, 'import', file, '--project', String(target.id), '--batch-size', '200', '--rejected', path.join(dir, 'p.jsonl')]
      .map(quote)
      .join(' ');
    // util-linux's script gives the CLI a pseudo-terminal; its output is what the terminal received.
    const terminal = execFileSync('script', ['-q', '-e', '-c', command, '/dev/null'], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8' });
    expect(terminal).toMatch(/import \[[█░]+\] \d+% \| /);
    expect(terminal).toContain('\x1b[');
    expect(terminal).toContain('imported 2,000 events');

    const piped = await runCli(['import', file, '--project', String(target.id), '--rejected', path.join(dir, 'p.jsonl')], env);
    expect(piped.code).toBe(0);
    expect(piped.stderr).toMatch(/^import: 2,000 events \| [\d,]+ events\/s \| .* of .*\n$/m);
    expect(piped.stderr).not.toContain('\x1b');
  });
});

describe('an export', () => {
  // A second embedded Plover ingesting two imports of 5,000 events: longer than the suite's 5 minutes on a busy machine.
  it('as JSON lines or as Parquet, imported into a fresh data dir, gives the same counts, trend and persons', async () => {
    const project = embedded.credentials.projectId;
    const out = path.join(dir, 'exported.jsonl');
    const exported = await runCli(['export', 'events', '--project', String(project), '--out', out, '--json', '--no-progress'], env);
    expect(exported.code).toBe(0);
    expect(JSON.parse(exported.stdout)).toMatchObject({ kind: 'events', format: 'jsonl', rows: EVENTS, truncated: false });
    expect(fs.existsSync(`${out}.partial`)).toBe(false);
    // The format from the file's extension.
    const parquet = path.join(dir, 'exported.parquet');
    const asParquet = await runCli(['export', 'events', '--project', String(project), '--out', parquet, '--json', '--no-progress'], env);
    expect(asParquet.code).toBe(0);
    expect(JSON.parse(asParquet.stdout)).toMatchObject({ kind: 'events', format: 'parquet', rows: EVENTS, bytes: fs.statSync(parquet).size });
    expect(fs.existsSync(`${parquet}.partial`)).toBe(false);

    const fresh = await startEmbedded();
    try {
      const other = new Plover(`http://127.0.0.1:${fresh.port}`, fresh.credentials.personalKey);
      const otherEnv = { PLOVER_HOST: other.host, PLOVER_API_KEY: fresh.credentials.personalKey };
      const fromParquet = await other.project('from Parquet');
      for (const [file, target] of [
        [out, fresh.credentials.projectId],
        [parquet, fromParquet.id],
      ] as const) {
        const run = await runCli(['import', file, '--project', String(target), '--json', '--no-progress', '--rejected', path.join(dir, 'x.jsonl')], otherEnv);
        expect({ file, code: run.code }).toEqual({ file, code: 0 });
        expect(JSON.parse(run.stdout)).toMatchObject({ accepted: EVENTS, rejected: 0 });
      }
      const trend = await plover.trend(project);
      const persons = await plover.persons(project);
      for (const target of [fresh.credentials.projectId, fromParquet.id]) {
        await other.until(
          () => other.eventCount(target),
          (n) => n === EVENTS,
          `the exported events stored in project ${target}`,
        );
        expect(await other.trend(target)).toEqual(trend);
        expect(await other.persons(target)).toEqual(persons);
      }
    } finally {
      await fresh.stop();
    }
  }, 600_000);

  it('writes persons as Parquet that ClickHouse reads back as the listing’s persons, with each compression', async () => {
    const project = String(embedded.credentials.projectId);
    const listed = (await plover.text(`/api/projects/${project}/persons/?format=jsonl`))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .sort((a, b) => (a.id as number) - (b.id as number));
    expect(listed.length).toBeGreaterThan(500);
    const files: string[] = [];
    for (const compression of ['snappy', 'gzip', 'brotli', 'none']) {
      const file = path.join(dir, `persons-${compression}.parquet`);
      const run = await runCli(
        ['export', 'persons', '--project', project, '--format', 'parquet', '--compression', compression, '--out', file, '--json', '--no-progress'],
        env,
      );
      expect({ compression, code: run.code }).toEqual({ compression, code: 0 });
      expect(JSON.parse(run.stdout)).toMatchObject({ kind: 'persons', format: 'parquet', rows: listed.length });
      files.push(file);
    }
    // chDB in a child reads each file as ClickHouse (and so PostHog's tooling) would: the columns' types, then the rows.
    const read = `
      const { query } = require('chdb');
      const files = ${JSON.stringify(files)};
      const out = files.map((file) => ({
        types: query(\`DESCRIBE file('\${file}', Parquet)\`, 'JSONEachRow').trim().split('\\n').map((line) => JSON.parse(line)).map((c) => c.name + ' ' + c.type),
        rows: query(\`SELECT * FROM file('\${file}', Parquet) ORDER BY id\`, 'JSONEachRow').trim().split('\\n').map((line) => JSON.parse(line)),
      }));
      process.stdout.write(JSON.stringify(out));`;
    const fromClickHouse = JSON.parse(execFileSync(process.execPath, ['-e', read], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 })) as Array<{
      types: string[];
      rows: Array<Record<string, unknown>>;
    }>;
    const expected = listed.map((person) => ({
      ...person,
      // ClickHouse prints DateTime64(6) without the zone: UTC, to the microsecond.
      created_at: (person.created_at as string).replace('T', ' ').replace('Z', '000'),
    }));
    for (const { types, rows } of fromClickHouse) {
      expect(types).toEqual([
        'id Nullable(Int64)',
        'uuid Nullable(String)',
        'name Nullable(String)',
        'distinct_ids Array(String)',
        'properties Nullable(String)',
        "created_at Nullable(DateTime64(6, 'UTC'))",
        'is_identified Nullable(Bool)',
      ]);
      expect(rows.map((row) => ({ ...row, properties: JSON.parse(row.properties as string) as unknown }))).toEqual(expected);
    }
  });
});

describe('keys, status, CSV export and the data-dir commands', () => {
  it('creates a key shown once, lists it masked, and revokes it', async () => {
    const created = await runCli(
      [
        'keys',
        'create',
        '--scopes',
        'query:read,project:read',
        '--label',
        'cli test',
        '--limit-to-project',
        '--project',
        String(embedded.credentials.projectId),
        '--json',
      ],
      env,
    );
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout) as { id: string; value: string; scoped_teams: number[] };
    expect(key.value).toMatch(/^phx_/);
    expect(key.scoped_teams).toEqual([embedded.credentials.projectId]);

    const listed = await runCli(['keys', 'list'], env);
    expect(listed.stdout).toContain(`${key.id}  phx_...${key.value.slice(-4)}  "cli test"  query:read,project:read projects ${embedded.credentials.projectId}`);
    expect(listed.stdout).not.toContain(key.value);
    // The new key works, within its project.
    const status = await runCli(['status', '--json', '--project', String(embedded.credentials.projectId)], {
      PLOVER_HOST: plover.host,
      PLOVER_API_KEY: key.value,
    });
    expect(status.code).toBe(0);

    expect((await runCli(['keys', 'revoke', key.id], env)).stdout).toBe(`revoked ${key.id}\n`);
    expect((await runCli(['keys', 'list'], env)).stdout).not.toContain(key.id);
    const refused = await runCli(['keys', 'create', '--scopes', 'nope:read'], env);
    expect({ code: refused.code, stderr: refused.stderr }).toEqual({
      code: 1,
      stderr: 'plover: POST /api/personal_api_keys/ answered 400 invalid_input: Invalid scope: nope:read [scopes]\n',
    });
  });

  it('status: ready with each dependency, ingestion per topic, today’s events and the last hour’s warnings', async () => {
    const target = await plover.project('status');
    await plover.batch(target.token, [{ event: 'now', distinct_id: 'status-1', properties: {} }]);
    await plover.until(
      () => plover.eventCount(target.id),
      (n) => n === 1,
      'the event stored',
    );
    const run = await runCli(['status', '--json', '--project', String(target.id)], env);
    expect(run.code).toBe(0);
    const status = JSON.parse(run.stdout) as {
      ready: unknown;
      ingestion: Array<{ topic: string; messages: number }>;
      eventsToday: number;
      warningsLastHour: unknown;
      disk: { stores: Record<string, number>; freeBytes: number; minFreeBytes: number; lastsSeconds: number | null };
    };
    expect(status.ready).toEqual({ ok: true, status: 200, checks: { postgres: 'ok', clickhouse: 'ok', bus: 'ok', disk: 'ok' } });
    expect(status.ingestion.map((topic) => topic.topic)).toEqual(expect.arrayContaining(['events', 'events_historical']));
    expect(status.eventsToday).toBe(1);
    expect(status.warningsLastHour).toEqual({});
    // Each store's space (the log, PGlite and chDB hold data by now; replay none yet), and the disk's free space.
    expect(Object.keys(status.disk.stores).sort()).toEqual(['clickhouse', 'local_log', 'postgres', 'replay']);
    for (const store of ['clickhouse', 'local_log', 'postgres']) expect(status.disk.stores[store]).toBeGreaterThan(0);
    expect(status.disk.freeBytes).toBeGreaterThan(status.disk.minFreeBytes);
    const human = await runCli(['status', '--project', String(target.id)], env);
    expect(human.stdout).toMatch(/ready +ok — postgres ok, clickhouse ok, bus ok, disk ok\n/);
    expect(human.stdout).toContain('events      1 today');
    expect(human.stdout).toMatch(
      /\n {2}disk {8}local log [\d.]+ [kMG]?B, postgres [\d.]+ [kMG]?B, clickhouse [\d.]+ [kMG]?B \(replay [\d.]+ [kMG]?B of it\); [\d.]+ [kMGT]?B free, writes refused below [\d.]+ [kMG]?B: (lasts ~[\d.]+ (s|min|h|days) at [\d.]+ [kMG]?B\/s \(the last 15 min's rate\)|not shrinking over the last 15 min)\n/,
    );
  });

  it('exports CSV with formula cells neutralized, to stdout', async () => {
    const target = await plover.project('csv export');
    await plover.batch(target.token, [{ event: 'signup', distinct_id: 'csv-1', properties: { plan: '=HYPERLINK("http://evil")' } }]);
    await plover.until(
      () => plover.eventCount(target.id),
      (n) => n === 1,
      'the event stored',
    );
    const run = await runCli(
      ['export', 'events', '--format', 'csv', '--where', 'plan==HYPERLINK("http://evil")', '--project', String(target.id), '--no-progress'],
      env,
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`"'=HYPERLINK(""http://evil"")"`);
    expect(run.stderr).toContain('exported 1 events');
  });

  it('migrate on a new data dir prints the migrations; backup of the running server’s data dir is refused in one line', async () => {
    const fresh = path.join(dir, 'fresh-data');
    const migrated = await runCli(['migrate', '--data-dir', fresh]);
    expect(migrated.code).toBe(0);
    expect(JSON.parse(migrated.stdout.trim().split('\n').pop()!)).toMatchObject({ postgres: expect.arrayContaining(['001_accounts']) as string[] });
    const refused = await runCli(['backup', path.join(dir, 'backup'), '--data-dir', embedded.dataDir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/is in use by process \d+; stop it or set PLOVER_DATA_DIR to another directory\n$/);
  });
});
