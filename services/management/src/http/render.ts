import type { Request, RequestHandler, Response } from 'express';
import { errors } from '../shared/errors';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

export interface Page {
  limit: number;
  offset: number;
}

export interface Envelope<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

/** A single query-string value; repeated parameters take the last, as Django's QueryDict.get does. */
export function queryValue(req: Request, name: string): string | undefined {
  const value = (req.query as Record<string, unknown>)[name];
  if (Array.isArray(value)) {
    const last: unknown = value[value.length - 1];
    return typeof last === 'string' ? last : undefined;
  }
  return typeof value === 'string' ? value : undefined;
}

function nonNegativeInteger(req: Request, name: string): number | undefined {
  const raw = queryValue(req, name);
  if (raw === undefined || raw === '') return undefined;
  if (!/^[0-9]{1,9}$/.test(raw)) throw errors.validation('A valid non-negative integer is required.', name, 'invalid');
  return Number(raw);
}

/** `limit` (default 100, 1…1000) and `offset` (≥ 0); anything else is a 400 naming the parameter. */
export function pageOf(req: Request): Page {
  const limit = nonNegativeInteger(req, 'limit') ?? DEFAULT_LIMIT;
  if (limit < 1) throw errors.validation('Ensure this value is greater than or equal to 1.', 'limit', 'min_value');
  if (limit > MAX_LIMIT) throw errors.validation(`Ensure this value is less than or equal to ${MAX_LIMIT}.`, 'limit', 'max_value');
  return { limit, offset: nonNegativeInteger(req, 'offset') ?? 0 };
}

/**
 * The absolute URL of this request with `limit`/`offset` replaced, under SITE_URL (set on `res.locals` by app.ts):
 * the Host header is the client's to choose, so a link built from it could point anywhere.
 */
export function pageUrl(req: Request, page: Page): string {
  const url = new URL(req.originalUrl, String(req.res!.locals.siteUrl));
  url.searchParams.set('limit', String(page.limit));
  if (page.offset > 0) url.searchParams.set('offset', String(page.offset));
  else url.searchParams.delete('offset');
  return url.toString();
}

/** `{count, next, previous, results}`; `hasMore` says whether rows exist past this page (independent of count). */
export function envelope<T>(req: Request, page: Page, results: T[], count: number, hasMore: boolean): Envelope<T> {
  return {
    count,
    next: hasMore ? pageUrl(req, { limit: page.limit, offset: page.offset + page.limit }) : null,
    previous: page.offset > 0 ? pageUrl(req, { limit: page.limit, offset: Math.max(0, page.offset - page.limit) }) : null,
    results,
  };
}

/** Nested objects become dotted columns, arrays index columns; empty objects and arrays produce none. */
export function flatten(value: unknown, prefix = '', out: Record<string, unknown> = {}): Record<string, unknown> {
  if (Array.isArray(value)) {
    value.forEach((item, index) => flatten(item, prefix ? `${prefix}.${index}` : String(index), out));
  } else if (typeof value === 'object' && value !== null && !(value instanceof Date)) {
    for (const [key, item] of Object.entries(value)) flatten(item, prefix ? `${prefix}.${key}` : key, out);
  } else if (prefix) {
    out[prefix] = value;
  }
  return out;
}

/**
 * Text a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, a leading tab or carriage return): OWASP's
 * CSV injection list. Such a cell gets a leading `'`, which spreadsheets read as "this is text".
 */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One RFC 4180 field: quoted when it holds a comma, quote or line break, quotes doubled; text that a spreadsheet
 * would evaluate is neutralized (numbers stay as they are, so `-5` is still a number). Every CSV the API writes,
 * header cells included, goes through here.
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'string' ? value : value instanceof Date ? value.toISOString() : (JSON.stringify(value) ?? '');
  if (typeof value === 'string' && FORMULA_START.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function csvLine(header: readonly string[], row: Record<string, unknown>): string {
  return `${header.map((key) => csvCell(row[key])).join(',')}\r\n`;
}

/** RFC 4180: CRLF line ends, fields with a comma, quote or line break quoted, quotes doubled; header sorted. */
export function toCsv(rows: readonly unknown[]): string {
  const flat = rows.map((row) => flatten(row));
  const header = [...new Set(flat.flatMap((row) => Object.keys(row)))].sort();
  if (header.length === 0) return '';
  return `${header.map(csvCell).join(',')}\r\n${flat.map((row) => csvLine(header, row)).join('')}`;
}

/** `jsonl` is served only by the streamed listings (persons, events): every matching row, one JSON object a line. */
export type Format = 'json' | 'csv' | 'jsonl';

export function formatOf(req: Request): Format {
  const raw = queryValue(req, 'format');
  if (raw === undefined || raw === 'json') return 'json';
  if (raw === 'csv' || raw === 'jsonl') return raw;
  throw errors.notFound(`Format "${raw}" is not supported; use json or csv.`);
}

/** Validates `format` before a handler does any work. */
export const checkFormat: RequestHandler = (req, _res, next) => {
  formatOf(req);
  next();
};

/** Starts a CSV download named `file`.csv. */
export function csvResponse(res: Response, status: number, file: string): Response {
  return res.status(status).type('text/csv; charset=utf-8').setHeader('Content-Disposition', `attachment; filename="${file}.csv"`);
}

/** Rows as a CSV download named `file`.csv. */
export function sendCsv(res: Response, status: number, rows: readonly unknown[], file: string): void {
  csvResponse(res, status, file).send(toCsv(rows));
}

/** Rows a streamed CSV export writes at most. */
export const CSV_EXPORT_MAX_ROWS = 100_000;
/** Set to `true` on a streamed CSV export that CSV_EXPORT_MAX_ROWS cut short. */
export const CSV_EXPORT_TRUNCATED_HEADER = 'X-Plover-Export-Truncated';
/** Rows of a streamed export read at once when they are parsed and serialized here. */
const EXPORT_BATCH = 5000;

/**
 * The next rows of a listing in its order, at most `size`, after the row whose cursor is `after` (undefined:
 * from the start of the listing, after the request's `offset`). Each row comes with its own cursor.
 */
export type ExportBatch<C> = (after: C | undefined, size: number) => Promise<Array<{ row: unknown; cursor: C }>>;

/**
 * The JSON lines of a listing (UTF-8), from the request's `offset` on, in the listing's order, each ended by a line
 * break, in chunks however they come (a chunk may end inside a line); read until the export has what it needs.
 */
export type JsonlSource = () => AsyncIterable<Uint8Array>;

/** A listing's rows from the request's `offset` on, a batch at a time, until `max` rows or the end. */
export type RowSource = (max: number) => AsyncIterable<unknown[]>;

/** An {@link ExportBatch}'s rows, a batch at a time. */
export const rowsOf =
  <C>(batch: ExportBatch<C>): RowSource =>
  (max) =>
    exportRows(batch, max);

/**
 * The rows of a {@link JsonlSource}, parsed here EXPORT_BATCH lines at a time (a line cut by a chunk's end is joined
 * with the rest of it from the next chunk, as bytes: a chunk may end inside a character too).
 */
export function rowsOfLines(source: JsonlSource): RowSource {
  return async function* (max) {
    let rest = Buffer.alloc(0);
    for await (const chunk of lineRange(source(), 0, max)) {
      const bytes = Buffer.concat([rest, chunk]);
      const end = bytes.lastIndexOf(0x0a);
      rest = bytes.subarray(end + 1);
      if (end === -1) continue;
      const lines = bytes.toString('utf8', 0, end).split('\n');
      for (let start = 0; start < lines.length; start += EXPORT_BATCH)
        yield lines.slice(start, start + EXPORT_BATCH).map((line) => JSON.parse(line) as unknown);
    }
  };
}

/** An {@link ExportBatch}'s rows as JSON lines, serialized here a batch at a time. */
export function jsonlOf<C>(batch: ExportBatch<C>): JsonlSource {
  return async function* () {
    for await (const rows of exportRows(batch, Number.MAX_SAFE_INTEGER)) yield Buffer.from(rows.map((row) => `${JSON.stringify(row)}\n`).join(''));
  };
}

/**
 * `chunks` of lines (each ended by a line break, however the chunks cut them) without their first `skip` lines and
 * ending after `max` more; stops reading `chunks` there. Only line breaks are looked for: the bytes pass unread.
 */
export async function* lineRange(chunks: AsyncIterable<Uint8Array>, skip: number, max = Number.MAX_SAFE_INTEGER): AsyncGenerator<Uint8Array> {
  if (max <= 0) return;
  let line = 0;
  const end = Math.min(skip + max, Number.MAX_SAFE_INTEGER);
  for await (const chunk of chunks) {
    let start = 0;
    let at = -1;
    while (line < skip && (at = chunk.indexOf(0x0a, at + 1)) !== -1) {
      line++;
      start = at + 1;
    }
    if (line < skip) continue;
    if (end === Number.MAX_SAFE_INTEGER) {
      if (start < chunk.length) yield chunk.subarray(start);
      continue;
    }
    at = start - 1;
    while (line < end && (at = chunk.indexOf(0x0a, at + 1)) !== -1) line++;
    if (line === end) {
      yield chunk.subarray(start, at + 1);
      return;
    }
    if (start < chunk.length) yield chunk.subarray(start);
  }
}

/** A listing's rows a batch at a time, each batch after the previous one's last row, until `max` rows or the end. */
async function* exportRows<C>(batch: ExportBatch<C>, max: number): AsyncGenerator<unknown[]> {
  let after: C | undefined;
  for (let written = 0; written < max;) {
    const size = Math.min(EXPORT_BATCH, max - written);
    const rows = await batch(after, size);
    if (rows.length > 0) yield rows.map(({ row }) => row);
    written += rows.length;
    if (rows.length < size) return;
    after = rows.at(-1)!.cursor;
  }
}

/** Writes `text`, then waits until the client drained it (or went away): memory holds one batch, never the export. */
async function writeDrained(res: Response, text: string | Uint8Array): Promise<void> {
  if (res.write(text)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}

/** The column of a CSV export that holds, as one JSON object, the flattened fields past its column cap. */
export const CSV_OTHER_COLUMN = 'other_properties';
/** Rows formatted between two turns of the event loop while an export is written. */
const CSV_ROWS_PER_TURN = 200;

/**
 * `format=csv` of a listing: every matching row (from `offset`; `limit` rows when the request names a limit),
 * at most CSV_EXPORT_MAX_ROWS, with CSV_EXPORT_TRUNCATED_HEADER `true` when rows were left out. The listing is
 * read twice from `source`, a batch at a time: once for the columns (the sorted union of every row's
 * flattened keys, which the header needs before the first row), then to write the rows as they come, waiting
 * for the client to drain. Memory holds one batch and the column names, never the export. A row that appears
 * between the two reads with a column the first did not see loses that column.
 * The first `maxColumns` flattened keys met become columns; when rows have more (properties are sent by anyone
 * holding the public token), the rest of each row goes into one CSV_OTHER_COLUMN JSON column, so the file grows
 * with the data, not with rows × every key ever seen. Rows are formatted a few hundred at a time, yielding the
 * event loop between them.
 */
export async function streamCsv(req: Request, res: Response, filename: string, source: RowSource, maxColumns: number): Promise<void> {
  const max = queryValue(req, 'limit') ? pageOf(req).limit : CSV_EXPORT_MAX_ROWS;
  const columns = new Set<string>();
  let overflow = false;
  let seen = 0;
  for await (const rows of source(max + 1)) {
    for (const row of rows.slice(0, max - seen)) {
      for (const key of Object.keys(flatten(row))) {
        if (columns.size < maxColumns) columns.add(key);
        else overflow ||= !columns.has(key);
      }
    }
    seen += rows.length;
  }
  const header = [...columns].sort();
  if (overflow) header.push(CSV_OTHER_COLUMN);
  csvResponse(res, 200, filename).setHeader(CSV_EXPORT_TRUNCATED_HEADER, String(seen > max));
  if (header.length === 0) {
    res.end();
    return;
  }
  res.write(`${header.map(csvCell).join(',')}\r\n`);
  const line = (row: unknown): string => {
    const flat = flatten(row);
    if (overflow) {
      const other = Object.fromEntries(Object.entries(flat).filter(([key]) => !columns.has(key)));
      flat[CSV_OTHER_COLUMN] = Object.keys(other).length > 0 ? other : undefined;
    }
    return csvLine(header, flat);
  };
  for await (const rows of source(max)) {
    for (let start = 0; start < rows.length; start += CSV_ROWS_PER_TURN) {
      if (res.destroyed) return;
      await writeDrained(
        res,
        rows
          .slice(start, start + CSV_ROWS_PER_TURN)
          .map(line)
          .join(''),
      );
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  res.end();
}

/**
 * `format=jsonl` of a listing: every matching row as one JSON object a line (`application/jsonl`), from `offset`
 * (which `source` starts at), `limit` rows when the request names a limit and without a cap otherwise. The chunks
 * are written as the client drains them, so an export of any size holds one chunk in memory. A failure after the
 * first row ends the response early; the client sees the body cut off, not a 200 that looks whole.
 */
export async function streamJsonl(req: Request, res: Response, filename: string, source: JsonlSource): Promise<void> {
  const max = queryValue(req, 'limit') ? pageOf(req).limit : Number.MAX_SAFE_INTEGER;
  res.status(200).type('application/jsonl; charset=utf-8').setHeader('Content-Disposition', `attachment; filename="${filename}.jsonl"`);
  try {
    for await (const chunk of lineRange(source(), 0, max)) {
      if (res.destroyed) return;
      await writeDrained(res, chunk);
    }
  } catch (error) {
    if (!res.headersSent) throw error;
    res.destroy(error as Error);
    return;
  }
  res.end();
}
