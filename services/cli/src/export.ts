import fs from 'node:fs';
import { Transform, Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { Option, type Command } from 'commander';
import { userErrorOf, ApiFailure, type Api } from './api';
import { action, apiOf, progressFactory, withConnection, type ConnectionOptions } from './command';
import { EXIT, UserError } from './errors';
import { formatOfName } from './import/records';
import { PARQUET_COMPRESSIONS, parquetStage, type ParquetCompression, type ParquetOutput } from './parquet';
import { formatBytes, type ProgressFactory } from './progress';

export type ExportKind = 'events' | 'persons';
export type ExportFormat = 'jsonl' | 'csv' | 'parquet';

export interface ExportOptions {
  kind: ExportKind;
  /** By `out`'s extension when not given (`.csv`, `.parquet`), else JSON lines. */
  format?: ExportFormat;
  /** Parquet's page compression: Snappy when not given. */
  compression?: ParquetCompression;
  /** A file, or `-` for stdout. */
  out: string;
  from?: string;
  to?: string;
  event?: string;
  distinctId?: string;
  where: string[];
}

export interface ExportSummary {
  kind: ExportKind;
  format: ExportFormat;
  out: string;
  rows: number;
  /** Bytes written: the body as it arrived (JSON lines, CSV), or the Parquet file. */
  bytes: number;
  /** CSV only: the server stops a CSV export at 100,000 rows; JSON lines have no cap. */
  truncated: boolean;
  exitCode: number;
}

const RELATIVE = /^-(\d+)([dhm])$/;

/** `--from`/`--to`: an ISO 8601 date or time, or `-7d`, `-12h`, `-30m` before now. */
export function timeOf(value: string, option: string, now = Date.now()): string {
  const relative = RELATIVE.exec(value);
  if (relative) return new Date(now - Number(relative[1]) * { d: 86_400_000, h: 3_600_000, m: 60_000 }[relative[2] as 'd' | 'h' | 'm']).toISOString();
  const time = new Date(value);
  if (Number.isNaN(time.getTime()))
    throw new UserError(`${option} ${JSON.stringify(value)} is neither a date (2024-05-01, 2024-05-01T12:00:00Z) nor -7d / -12h / -30m`);
  return time.toISOString();
}

/**
 * `--where`: property filters as the API takes them (a JSON list or group), or `key=value` pairs, each an exact
 * match on an event property (events) or a person property (persons); several are ANDed.
 */
export function propertiesOf(where: readonly string[], kind: ExportKind): string | undefined {
  if (where.length === 0) return undefined;
  if (where.length === 1 && /^\s*[[{]/.test(where[0]!)) {
    try {
      JSON.parse(where[0]!);
    } catch (error) {
      throw new UserError(`--where is not JSON: ${(error as Error).message}`);
    }
    return where[0];
  }
  return JSON.stringify(
    where.map((pair) => {
      const at = pair.indexOf('=');
      if (at <= 0) throw new UserError(`--where ${JSON.stringify(pair)}: use key=value, or a JSON list of property filters`);
      return { key: pair.slice(0, at), value: pair.slice(at + 1), operator: 'exact', type: kind === 'events' ? 'event' : 'person' };
    }),
  );
}

/** The listing's query string: its filters, and `format` when given. */
function query(options: ExportOptions, format?: string): string {
  const params = new URLSearchParams();
  if (format) params.set('format', format);
  if (options.kind === 'events') {
    if (options.from) params.set('after', timeOf(options.from, '--from'));
    if (options.to) params.set('before', timeOf(options.to, '--to'));
    if (options.event) params.set('event', options.event);
  } else if (options.from || options.to || options.event) {
    throw new UserError('--from, --to and --event filter events; persons take --where and --distinct-id');
  }
  if (options.distinctId) params.set('distinct_id', options.distinctId);
  const properties = propertiesOf(options.where, options.kind);
  if (properties) params.set('properties', properties);
  return params.toString();
}

/** Counts rows (line breaks) and bytes as they pass. */
class Counter extends Transform {
  lines = 0;
  bytes = 0;
  last = -1;
  constructor(private readonly onChunk: () => void) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: string, done: () => void): void {
    for (let at = chunk.indexOf(0x0a); at !== -1; at = chunk.indexOf(0x0a, at + 1)) this.lines++;
    this.bytes += chunk.length;
    this.last = chunk[chunk.length - 1] ?? this.last;
    this.push(chunk);
    this.onChunk();
    done();
  }
}

/**
 * `plover export`: the management API's streamed listing (`format=jsonl`: every row, no cap; `format=csv`: the
 * API's flattened CSV, formula-neutralized, at most 100,000 rows) copied to a file or stdout as it arrives, in
 * constant memory; Parquet is made from the JSON lines as they arrive, a row group at a time (src/parquet.ts). A
 * file is written as `FILE.partial` and renamed once the whole body arrived.
 */
export async function runExport(api: Api, options: ExportOptions, progressOf: ProgressFactory): Promise<ExportSummary> {
  const format = options.format ?? (options.out === '-' ? 'jsonl' : formatOfName(options.out));
  if (options.compression && format !== 'parquet') throw new UserError('--compression is for --format parquet');
  if (format === 'parquet' && options.out === '-' && process.stdout.isTTY) {
    throw new UserError('Parquet is binary: pass --out FILE, or send stdout to a pipe or a file');
  }
  const filters = query(options);
  const listing = api.projectPath(`${options.kind}/`);
  const total = (await api.json<{ count?: number }>(`${listing}?${filters}${filters ? '&' : ''}limit=1`)).count;
  let response: Response;
  try {
    response = await api.ok(`${listing}?${query(options, format === 'parquet' ? 'jsonl' : format)}`);
  } catch (error) {
    throw error instanceof ApiFailure ? userErrorOf(`GET /${listing}`, error) : error;
  }
  const truncated = response.headers.get('x-plover-export-truncated') === 'true';
  const progress = progressOf({ label: `export ${options.kind}`, unit: 'rows', measure: 'items' });
  const header = format === 'csv' ? 1 : 0;
  const counter = new Counter(() => progress.update({ done: Math.max(0, counter.lines - header), total, items: Math.max(0, counter.lines - header) }));
  const parquet: ParquetOutput | undefined = format === 'parquet' ? { rows: 0, bytes: 0 } : undefined;
  const encode = parquet ? await parquetStage(options.kind, options.compression ?? 'snappy', parquet) : undefined;
  const partial = options.out === '-' ? undefined : `${options.out}.partial`;
  const sink: Writable = partial ? fs.createWriteStream(partial) : process.stdout;
  const summary = (): ExportSummary => {
    const rows = Math.max(0, counter.lines - header);
    const bytes = parquet ? parquet.bytes : counter.bytes;
    return { kind: options.kind, format, out: options.out, rows, bytes, truncated, exitCode: truncated ? EXIT.partial : EXIT.ok };
  };
  try {
    // The body's last line is checked before Parquet's footer is written: a cut-off body makes no valid file.
    const checked = async function* (source: AsyncIterable<Buffer>) {
      yield* source;
      if (format !== 'csv' && counter.bytes > 0 && counter.last !== 0x0a) throw new Error('the last line is incomplete');
    };
    const body = Readable.fromWeb(response.body as WebReadableStream);
    const end = { end: partial !== undefined };
    await (encode ? pipeline(body, counter, checked, encode, sink, end) : pipeline(body, counter, checked, sink, end));
  } catch (error) {
    // stdout closed by its reader (`| head`): the reader has what it wanted.
    if ((error as NodeJS.ErrnoException).code === 'EPIPE' && !partial) return summary();
    throw new UserError(
      `the export was cut off after ${counter.lines - header} rows (${(error as Error).message})${partial ? `; what arrived is in ${partial}` : ''}`,
    );
  } finally {
    progress.stop();
  }
  if (partial) fs.renameSync(partial, options.out);
  return summary();
}

type ExportCommandOptions = ConnectionOptions & Omit<ExportOptions, 'kind'>;

const collect = (value: string, previous: string[]) => [...previous, value];
const count = new Intl.NumberFormat('en-US');

export function exportCommand(program: Command): void {
  withConnection(program.command('export'))
    .summary('export events or persons as JSON lines, CSV or Parquet')
    .description(
      'Streams the events or persons of a project from the management API to a file or stdout, in constant memory. ' +
        'JSON lines (the default) hold every matching row in the API’s JSON shape and import back with plover import; ' +
        'CSV is the API’s flattened CSV (cells that a spreadsheet would run as formulas are neutralized), at most 100,000 rows; ' +
        'Parquet holds every matching row, events with the columns of a PostHog batch export, and imports back with plover import.',
    )
    .argument('<what>', 'events or persons')
    .addOption(
      new Option('--format <format>', 'output format (default: by the --out file’s extension, .csv or .parquet, else jsonl)').choices([
        'jsonl',
        'csv',
        'parquet',
      ]),
    )
    .addOption(new Option('--compression <codec>', 'Parquet page compression (default: snappy)').choices(PARQUET_COMPRESSIONS))
    .option('--out <file>', 'where to write; - for stdout', '-')
    .option('--from <time>', 'events at or after this time: 2024-05-01, 2024-05-01T12:00:00Z, -7d, -12h')
    .option('--to <time>', 'events before this time (same forms)')
    .option('--event <name>', 'only events of this name')
    .option('--distinct-id <id>', 'only events of, or the person with, this distinct id')
    .option('--where <filter>', 'key=value (repeatable, ANDed), or a JSON list of property filters as the API takes them', collect, [])
    .option('--no-progress', 'no progress bar or progress lines')
    .addHelpText(
      'after',
      `
Examples:
  $ plover export events --from -7d --event '$pageview' --out pageviews.jsonl
  $ plover export events --where plan=pro --where '$browser=Chrome' --format csv --out pro.csv
  $ plover export persons --where '[{"key":"email","operator":"icontains","value":"@example.com","type":"person"}]'
  $ plover export events --out - | gzip > events.jsonl.gz
  $ plover export events --from 2024-05-01 --out may.parquet --compression gzip

Exit codes: 0 done; 1 bad arguments, unreachable server, refused key, or the stream was cut off; 2 the CSV stopped
at the server's 100,000-row cap (use --format jsonl for every row).`,
    )
    .action(
      action(async (what: string, options: ExportCommandOptions) => {
        if (what !== 'events' && what !== 'persons') throw new UserError(`export what? ${JSON.stringify(what)}: events or persons`);
        const summary = await runExport(apiOf(options), { ...options, kind: what }, progressFactory(options));
        const text = options.json
          ? `${JSON.stringify(summary, null, 2)}\n`
          : `exported ${count.format(summary.rows)} ${what} (${formatBytes(summary.bytes)}) to ${summary.out === '-' ? 'stdout' : summary.out}` +
            `${summary.truncated ? '; the server stopped the CSV at its 100,000-row cap: use --format jsonl for every row' : ''}\n`;
        // With the export on stdout, the summary goes to stderr.
        (summary.out === '-' ? process.stderr : process.stdout).write(text);
        return summary.exitCode;
      }),
    );
}
