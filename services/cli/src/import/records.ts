import { isUtf8 } from 'node:buffer';
import fs from 'node:fs';
import { parse } from 'csv-parse';
import { InputError, inputFailure, invalidUtf8At, linesOf, openInput, type OpenedInput } from './input';

/** Why a record cannot become an event: the field it is about (`properties.$browser`, a CSV column) and why. */
export interface Problem {
  field?: string;
  reason: string;
}

/** One record of an input file: a JSON line, a CSV row or a Parquet row, numbered from 1 as a user counts them. */
export interface SourceRecord {
  /** The line (JSON lines), the row after the header (CSV) or the row (Parquet). */
  index: number;
  /** The record's text as read, for the file of rejected records. */
  raw: string;
  fields?: Record<string, unknown>;
  problem?: Problem;
}

export type Format = 'jsonl' | 'csv' | 'parquet';

/** The records of one file, and how many of its bytes have been read (the progress bar's position). */
export interface RecordSource {
  records: AsyncIterable<SourceRecord>;
  bytesRead(): number;
  /** What `index` counts, for messages: `line` or `row`. */
  unit: 'line' | 'row';
}

/** Longest JSON line read whole; capture refuses any event above 1,000,000 bytes, so a longer line is rejected unparsed. */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;
const PREVIEW = 200;

/** The input format from a file name, ignoring a `.gz` suffix: `.csv`, `.parquet`, anything else JSON lines. */
export function formatOfName(file: string): Format {
  const name = file.toLowerCase().replace(/\.gz$/, '');
  if (name.endsWith('.csv')) return 'csv';
  if (name.endsWith('.parquet')) return 'parquet';
  return 'jsonl';
}

export function openRecords(file: string, format: Format, skipThrough: number): RecordSource {
  if (format === 'parquet') return parquetRows(file, skipThrough);
  const input = openInput(file);
  return {
    records: format === 'csv' ? csvRows(input, skipThrough) : jsonLines(input, skipThrough),
    bytesRead: () => input.bytesRead(),
    unit: format === 'csv' ? 'row' : 'line',
  };
}

function hex(byte: number | undefined): string {
  return `0x${(byte ?? 0).toString(16).padStart(2, '0')}`;
}

/** The first string (key or value) holding U+FFFD in `value`, as a dotted path: where a lossy decode put it. */
function replacedField(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return value.includes('\ufffd') ? path || undefined : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (key.includes('\ufffd')) return at;
    const found = replacedField(item, at);
    if (found) return found;
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function* jsonLines(input: OpenedInput, skipThrough: number): AsyncGenerator<SourceRecord> {
  for await (const line of linesOf(input, MAX_LINE_BYTES)) {
    if (line.number <= skipThrough) continue;
    const index = line.number;
    if (line.tooLong) {
      yield { index, raw: `${line.bytes.subarray(0, PREVIEW).toString('utf8')}…`, problem: { reason: `longer than ${MAX_LINE_BYTES} bytes` } };
      continue;
    }
    const raw = line.bytes.toString('utf8');
    if (raw.trim() === '') continue;
    const bad = isUtf8(line.bytes) ? -1 : invalidUtf8At(line.bytes);
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      const reason = bad >= 0 ? `not valid UTF-8 (byte ${hex(line.bytes[bad])} at byte ${bad + 1})` : `not JSON (${(error as Error).message})`;
      yield { index, raw, problem: { reason } };
      continue;
    }
    if (bad >= 0) {
      yield { index, raw, problem: { field: replacedField(value), reason: `not valid UTF-8 (byte ${hex(line.bytes[bad])} at byte ${bad + 1} of the line)` } };
    } else if (!isObject(value)) {
      yield { index, raw, problem: { reason: 'not a JSON object' } };
    } else {
      yield { index, raw, fields: value };
    }
  }
}

/**
 * CSV with a header row: each row becomes an object keyed by the header's names. The parser reads bytes as
 * latin1 (one character per byte; delimiters and quotes are ASCII, so the split is the same), so that each
 * cell can be checked as UTF-8 and a bad one named by row and column.
 */
async function* csvRows(input: OpenedInput, skipThrough: number): AsyncGenerator<SourceRecord> {
  const parser = parse({ encoding: 'latin1', raw: true, relax_column_count: true, skip_empty_lines: true, max_record_size: MAX_LINE_BYTES });
  input.stream.on('error', (error) => parser.destroy(inputFailure(error, input.gzip)));
  input.stream.pipe(parser);
  let header: string[] | undefined;
  let index = 0;
  try {
    for await (const { record, raw } of parser as AsyncIterable<{ record: string[]; raw: string }>) {
      const cells = record.map((cell) => Buffer.from(cell, 'latin1'));
      const rawText = Buffer.from(raw, 'latin1')
        .toString('utf8')
        .replace(/\r?\n$/, '');
      if (!header) {
        const bad = cells.findIndex((cell) => !isUtf8(cell));
        if (bad >= 0) throw new InputError(`the header is not valid UTF-8 (column ${bad + 1})`);
        header = cells.map((cell, i) => (i === 0 ? cell.toString('utf8').replace(/^\ufeff/, '') : cell.toString('utf8')).trim());
        continue;
      }
      index++;
      if (index <= skipThrough) continue;
      if (cells.length !== header.length) {
        yield { index, raw: rawText, problem: { reason: `has ${cells.length} cells; the header has ${header.length}` } };
        continue;
      }
      const bad = cells.findIndex((cell) => !isUtf8(cell));
      if (bad >= 0) {
        const at = invalidUtf8At(cells[bad]!);
        yield { index, raw: rawText, problem: { field: header[bad], reason: `not valid UTF-8 (byte ${hex(cells[bad]![at])} at byte ${at + 1} of the cell)` } };
        continue;
      }
      const fields: Record<string, unknown> = {};
      header.forEach((name, i) => {
        const text = cells[i]!.toString('utf8');
        if (text !== '') fields[name] = text;
      });
      yield { index, raw: rawText, fields };
    }
  } catch (error) {
    if (error instanceof InputError) throw error;
    const code = (error as { code?: string }).code;
    // The parser's own errors (an unclosed quote, a row past max_record_size) stop the file where they occur.
    if (code?.startsWith('CSV_')) throw new InputError(`row ${index + 1}: ${(error as Error).message}`);
    throw inputFailure(error, input.gzip);
  }
}

/** Parquet cells as JSON-able values: 64-bit integers as numbers when exact (else text), times as ISO 8601. */
function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(plain);
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, plain(item)]));
  return value;
}

/** A row group up to this size (uncompressed) is decoded once, whole; a larger one a slice at a time. */
const PARQUET_GROUP_BYTES = 64 * 1024 * 1024;
const PARQUET_ROWS_PER_SLICE = 2000;

/**
 * A Parquet file's footer (its schema and row groups): the file is not Parquet, or is cut short (the footer is at
 * its end), when this fails. Checked before an import sends anything, like a missing file.
 */
export async function parquetFooter(file: string) {
  const hyparquet = await import('hyparquet');
  const buffer = await hyparquet.asyncBufferFromFile(file);
  return { hyparquet, buffer, metadata: await hyparquet.parquetMetadataAsync(buffer) };
}

/**
 * Parquet rows through hyparquet, column by column: a row group of up to 64 MiB uncompressed is decoded once, a
 * larger one is decoded 2,000 rows at a time (which re-reads its pages unless the
 * file has page indexes), so memory holds at most one such group's columns, never the file. Pages compressed
 * with any codec but LZO are read: Snappy by hyparquet, the others (ZSTD, which PostHog's batch exports write,
 * GZIP, BROTLI, LZ4, LZ4_RAW) by hyparquet-compressors.
 */
function parquetRows(file: string, skipThrough: number): RecordSource {
  const size = fs.statSync(file).size;
  let done = 0;
  let total = 1;
  async function* rows(): AsyncGenerator<SourceRecord> {
    try {
      const { hyparquet, buffer, metadata } = await parquetFooter(file);
      const { compressors } = await import('hyparquet-compressors');
      const scan = await hyparquet.parquetScan({ file: buffer, metadata, compressors });
      const names = hyparquet.parquetSchema(metadata).children.map((child) => child.element.name);
      total = Math.max(1, Number(metadata.num_rows));
      let groupStart = 0;
      for (const group of metadata.row_groups) {
        const groupEnd = groupStart + Number(group.num_rows);
        const step = group.total_byte_size <= PARQUET_GROUP_BYTES ? groupEnd - groupStart : PARQUET_ROWS_PER_SLICE;
        for (let start = Math.max(groupStart, skipThrough); start < groupEnd; start += step) {
          const end = Math.min(groupEnd, start + step);
          const columns = await Promise.all(names.map((column) => scan.readColumn({ column, rowStart: start, rowEnd: end })));
          for (let at = start; at < end; at++) {
            const fields: Record<string, unknown> = {};
            names.forEach((name, i) => (fields[name] = plain(columns[i]![at - start])));
            done = at + 1;
            yield { index: at + 1, raw: JSON.stringify(fields), fields };
          }
        }
        groupStart = groupEnd;
      }
    } catch (error) {
      throw new InputError(`not readable as Parquet (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  return { records: rows(), bytesRead: () => Math.round((size * done) / total), unit: 'row' };
}
