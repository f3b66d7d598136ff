import type { Request, RequestHandler, Response } from 'express';
import { errors } from './errors';

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

/** The absolute URL of this request with `limit`/`offset` replaced. */
export function pageUrl(req: Request, page: Page): string {
  const url = new URL(req.originalUrl, `${req.protocol}://${req.get('host') ?? 'localhost'}`);
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

/** One RFC 4180 field: quoted when it holds a comma, quote or line break, quotes doubled. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text =
    typeof value === 'string' ? value : value instanceof Date ? value.toISOString() : (JSON.stringify(value) ?? '');
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** RFC 4180: CRLF line ends, fields with a comma, quote or line break quoted, quotes doubled; header sorted. */
export function toCsv(rows: readonly unknown[]): string {
  const flat = rows.map((row) => flatten(row));
  const header = [...new Set(flat.flatMap((row) => Object.keys(row)))].sort();
  if (header.length === 0) return '';
  const lines = [header.map(csvCell).join(',')];
  for (const row of flat) lines.push(header.map((key) => csvCell(row[key])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

export type Format = 'json' | 'csv';

export function formatOf(req: Request): Format {
  const raw = queryValue(req, 'format');
  if (raw === undefined || raw === 'json') return 'json';
  if (raw === 'csv') return 'csv';
  throw errors.notFound(`Format "${raw}" is not supported; use json or csv.`);
}

/** Validates `format` before a handler does any work. */
export const checkFormat: RequestHandler = (req, _res, next) => {
  formatOf(req);
  next();
};

/**
 * Sends a body as JSON, or with `format=csv` as CSV: a paginated envelope renders only its `results`, an array
 * its items, an object one row.
 */
export function send(req: Request, res: Response, status: number, body: unknown, filename = 'export'): void {
  if (formatOf(req) === 'json') {
    res.status(status).json(body);
    return;
  }
  let rows: unknown[];
  if (Array.isArray(body)) rows = body;
  else if (typeof body === 'object' && body !== null && 'results' in body && Array.isArray(body.results)) rows = body.results;
  else rows = body === undefined || body === null ? [] : [body];
  res
    .status(status)
    .type('text/csv; charset=utf-8')
    .setHeader('Content-Disposition', `attachment; filename="${filename}.csv"`)
    .send(toCsv(rows));
}
