import fs from 'node:fs';
import path from 'node:path';
import type { Api } from '../api';
import { EXIT, UserError } from '../errors';
import type { ProgressFactory } from '../progress';
import { toEvent } from './event';
import { InputError } from './input';
import { formatOfName, openRecords, parquetFooter, type Format, type SourceRecord } from './records';
import { BatchSender, type Outgoing, type Rejection } from './sender';
import { readState, statePath, writeState, type ImportState } from './state';

export type FormatOption = 'auto' | 'posthog' | 'jsonl' | 'csv' | 'parquet';

export interface ImportOptions {
  files: string[];
  format: FormatOption;
  dryRun: boolean;
  resume: boolean;
  strict: boolean;
  /** Most events per `/batch/` request. */
  batchSize: number;
  /** Where state files go; beside each input when not given. */
  stateDir?: string;
  /** The file of rejected records (JSON lines), created at the first rejection. */
  rejectedFile: string;
}

/** A rejected record as the summary and the rejected file name it. */
export interface RejectedRecord {
  file: string;
  /** `line` (JSON lines) or `row` (CSV after the header, Parquet). */
  unit: 'line' | 'row';
  index: number;
  field?: string;
  reason: string;
}

export interface FileSummary {
  file: string;
  format: Format;
  accepted: number;
  rejected: number;
  /** Records skipped by --resume: acknowledged by an earlier run. */
  skipped: number;
  /** Why the file could not be read to its end (truncated gzip, …); what was read before is imported. */
  error?: string;
}

export interface ImportSummary {
  dryRun: boolean;
  project?: number;
  files: FileSummary[];
  accepted: number;
  rejected: number;
  /** The first rejections, for the summary; all of them are in `rejectedFile`. */
  firstRejections: RejectedRecord[];
  rejectedFile?: string;
  exitCode: number;
}

const FIRST_REJECTIONS = 5;
/** capture takes 20 MiB per request; batches stay well below it. */
const MAX_BATCH_BYTES = 8 * 1024 * 1024;
const STATE_EVERY_MS = 250;

export function describeRejection(rejected: RejectedRecord): string {
  return `${rejected.file} ${rejected.unit} ${rejected.index}${rejected.field ? `, field ${rejected.field}` : ''}: ${rejected.reason}`;
}

function formatOf(file: string, option: FormatOption): Format {
  if (option === 'auto') return formatOfName(file);
  return option === 'posthog' ? 'jsonl' : option;
}

interface Batch {
  events: Outgoing[];
  bytes: number;
  /** Every record up to this one is in this batch or an earlier one, or was rejected while reading. */
  through: number;
}

/** Writes rejected records, as JSON lines, to a file opened at the first one. */
class RejectedFile {
  private fd: number | undefined;
  constructor(readonly path: string) {}

  get used(): boolean {
    return this.fd !== undefined;
  }

  write(records: ReadonlyArray<RejectedRecord & { raw: string }>): void {
    if (records.length === 0) return;
    try {
      this.fd ??= fs.openSync(this.path, 'a');
    } catch (error) {
      throw new UserError(
        `cannot write rejected records to ${this.path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); pass --rejected FILE`,
      );
    }
    fs.writeSync(this.fd, records.map((record) => `${JSON.stringify(record)}\n`).join(''));
  }

  close(): void {
    if (this.fd !== undefined) fs.closeSync(this.fd);
  }
}

/**
 * `plover import`: reads each file as a stream (gzip by its magic bytes), turns its records into events and sends
 * them in order, one request in flight while the next batch is read, through capture's historical path. Records
 * that cannot be events are rejected with their line (or row) and field and written to the rejected file; the
 * rest goes on. --strict reads every file first and sends nothing if any record would be rejected. A state file
 * per input records what was acknowledged, for --resume.
 */
export async function runImport(api: Api | undefined, options: ImportOptions, progressOf: ProgressFactory): Promise<ImportSummary> {
  for (const file of options.files) {
    let stat: fs.Stats;
    try {
      stat = fs.statSync(file);
    } catch (error) {
      throw new UserError(`${file}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
    }
    if (!stat.isFile()) throw new UserError(`${file}: not a file`);
    // A Parquet file is read from its footer, at its end: without one nothing of it can be read.
    if (formatOf(file, options.format) === 'parquet') {
      try {
        await parquetFooter(file);
      } catch (error) {
        throw new UserError(`${file}: not a Parquet file, or cut short (${(error as Error).message})`);
      }
    }
  }
  // The project first: a refused key or an unknown project is said before any file is read.
  const target = api && !options.dryRun ? { api, project: await api.projectToken() } : undefined;
  if (options.strict && target) {
    const checked = await importFiles(undefined, { ...options, resume: false }, progressOf, 'check');
    if (checked.rejected > 0 || checked.files.some((file) => file.error)) {
      const first = checked.firstRejections.map(describeRejection);
      const errors = checked.files.filter((file) => file.error).map((file) => `${file.file}: ${file.error!}`);
      const all = checked.rejectedFile ? `\n  (every rejected record is in ${checked.rejectedFile})` : '';
      throw new UserError(
        `--strict: nothing was sent: ${checked.rejected} records cannot be imported, ${errors.length} files cannot be read to their end:\n  ${[...errors, ...first].join('\n  ')}${all}`,
      );
    }
  }
  return importFiles(target, options, progressOf, target ? 'import' : 'check');
}

interface Target {
  api: Api;
  project: { id: number; token: string };
}

async function importFiles(target: Target | undefined, options: ImportOptions, progressOf: ProgressFactory, mode: 'check' | 'import'): Promise<ImportSummary> {
  const project = target?.project;
  const sizes = options.files.map((file) => fs.statSync(file).size);
  const total = sizes.reduce((a, b) => a + b, 0);
  const progress = progressOf({ label: mode === 'check' ? 'check' : 'import', unit: 'events', measure: 'bytes' });
  const retry = {
    retryForMs: 120_000,
    requestTimeoutMs: 60_000,
    onRetry: (reason: string, waitMs: number) => progress.log(`retrying in ${waitMs} ms: ${reason}`),
  };
  const sender = target ? new BatchSender(target.api, target.project.token, retry) : undefined;
  const rejectedFile = new RejectedFile(path.resolve(options.rejectedFile));
  const summary: ImportSummary = {
    dryRun: mode === 'check',
    project: project?.id,
    files: [],
    accepted: 0,
    rejected: 0,
    firstRejections: [],
    exitCode: EXIT.ok,
  };
  let before = 0;
  let events = 0;
  try {
    for (const [i, file] of options.files.entries()) {
      const fileSummary = await importFile(file, formatOf(file, options.format), {
        options,
        sender,
        project: project?.id,
        host: target?.api.base.origin ?? '',
        reject: (records) => {
          rejectedFile.write(records);
          for (const record of records) {
            if (summary.firstRejections.length >= FIRST_REJECTIONS) break;
            const { raw: _raw, ...described } = record;
            summary.firstRejections.push(described);
          }
        },
        progress: (done, accepted) => progress.update({ done: before + done, total, items: events + accepted }),
        log: (message) => progress.log(message),
      });
      before += sizes[i]!;
      events += fileSummary.accepted;
      summary.files.push(fileSummary);
      summary.accepted += fileSummary.accepted;
      summary.rejected += fileSummary.rejected;
      progress.update({ done: before, total, items: events });
    }
  } finally {
    progress.stop();
    rejectedFile.close();
  }
  if (rejectedFile.used) summary.rejectedFile = rejectedFile.path;
  if (summary.rejected > 0 || summary.files.some((file) => file.error)) summary.exitCode = EXIT.partial;
  return summary;
}

interface FileContext {
  options: ImportOptions;
  sender: BatchSender | undefined;
  project: number | undefined;
  host: string;
  reject(records: Array<RejectedRecord & { raw: string }>): void;
  progress(done: number, accepted: number): void;
  log(message: string): void;
}

async function importFile(file: string, format: Format, ctx: FileContext): Promise<FileSummary> {
  const absolute = path.resolve(file);
  const stat = fs.statSync(file);
  const stateFile = ctx.sender ? statePath(file, ctx.options.stateDir) : undefined;
  const identity = { file: absolute, size: stat.size, mtimeMs: stat.mtimeMs, host: ctx.host, project: ctx.project ?? 0 };
  const resumed = stateFile && ctx.options.resume ? readState(stateFile, identity) : undefined;
  const summary: FileSummary = { file, format, accepted: resumed?.accepted ?? 0, rejected: resumed?.rejected ?? 0, skipped: resumed?.through ?? 0 };
  if (resumed?.complete) {
    ctx.log(`${file}: already imported (${stateFile}); skipped`);
    return summary;
  }
  const state: ImportState = {
    version: 1,
    ...identity,
    through: resumed?.through ?? 0,
    accepted: summary.accepted,
    rejected: summary.rejected,
    complete: false,
  };
  let stateWritten = 0;
  const saveState = (force: boolean) => {
    if (!stateFile || (!force && Date.now() - stateWritten < STATE_EVERY_MS)) return;
    writeState(stateFile, state);
    stateWritten = Date.now();
  };
  saveState(true);

  const source = openRecords(file, format, state.through);
  const name = path.basename(file);
  const rejectionsOf = (rejections: Array<Rejection>) =>
    rejections.map((r) => ({ file, unit: source.unit, index: r.index, ...(r.field ? { field: r.field } : {}), reason: r.reason, raw: r.raw }));

  let inFlight: Promise<void> = Promise.resolve();
  const send = (batch: Batch): Promise<void> => {
    const previous = inFlight;
    inFlight = (async () => {
      await previous;
      const rejections = ctx.sender ? await ctx.sender.send(batch.events) : [];
      ctx.reject(rejectionsOf(rejections));
      summary.accepted += batch.events.length - rejections.length;
      summary.rejected += rejections.length;
      Object.assign(state, { through: batch.through, accepted: summary.accepted, rejected: summary.rejected });
      saveState(false);
      ctx.progress(source.bytesRead(), summary.accepted);
    })();
    return previous;
  };

  let batch: Batch = { events: [], bytes: 0, through: state.through };
  const local = (record: SourceRecord, problem: { field?: string; reason: string }) => {
    summary.rejected++;
    ctx.reject(rejectionsOf([{ index: record.index, raw: record.raw, ...problem }]));
  };
  try {
    for await (const record of source.records) {
      if (record.problem) {
        local(record, record.problem);
      } else {
        const made = toEvent(record.fields!, { file: name, index: record.index, raw: record.raw });
        if ('problem' in made) {
          local(record, made.problem);
        } else {
          if (batch.events.length >= ctx.options.batchSize || batch.bytes + made.json.length > MAX_BATCH_BYTES) {
            // Waits for the batch before the one just closed: one request in flight while the next is read.
            await send(batch);
            batch = { events: [], bytes: 0, through: batch.through };
          }
          batch.events.push({ index: record.index, json: made.json, raw: record.raw });
          batch.bytes += made.json.length + 1;
        }
      }
      batch.through = record.index;
    }
  } catch (error) {
    if (!(error instanceof InputError)) {
      await inFlight.catch(() => undefined);
      throw error;
    }
    summary.error = `${error.message} (after ${source.unit} ${batch.through})`;
    ctx.log(`${file}: ${summary.error}`);
  }
  await send(batch);
  await inFlight;
  state.complete = summary.error === undefined;
  saveState(true);
  return summary;
}
