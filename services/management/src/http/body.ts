import { promisify } from 'node:util';
import { gunzip, inflate, type InputType, type ZlibOptions } from 'node:zlib';
import type { Request, RequestHandler } from 'express';
import { ApiError } from '@plover/core';
import { readBody } from '@plover/http';
import { errors } from '../shared/errors';

/** A JSON body's bytes, both as sent and once inflated (a gzip bomb stops here with a 413). */
export const MAX_BODY_BYTES = 5 * 1024 * 1024;
/**
 * How deeply arrays and objects may nest in a JSON body or a JSON query parameter (`properties=`): serde_json's
 * recursion limit, so anything PostHog's Rust services parse fits. Real payloads (flag and cohort filters,
 * insight queries, person properties) stay far below it; deeper input would reach recursive code further on.
 */
export const MAX_JSON_DEPTH = 128;

const NUL_DETAIL = 'Null characters are not allowed.';
const NUL_CODE = 'null_characters_not_allowed';
const SURROGATE_DETAIL = 'Unpaired UTF-16 surrogates are not allowed.';
const SURROGATE_CODE = 'invalid_unicode';

const gunzipAsync = promisify<InputType, ZlibOptions, Buffer>(gunzip);
const inflateAsync = promisify<InputType, ZlibOptions, Buffer>(inflate);
const INFLATE: Record<string, typeof gunzipAsync> = { gzip: gunzipAsync, 'x-gzip': gunzipAsync, deflate: inflateAsync };

const tooLarge = () => new ApiError(413, 'validation_error', 'payload_too_large', `Request body is too large (limit ${MAX_BODY_BYTES} bytes).`);
const malformed = (detail = 'Malformed JSON in request body.') => errors.validation(detail, null, 'parse_error');
const unsupportedEncoding = () => new ApiError(415, 'validation_error', 'unsupported_media_type', 'Unsupported content encoding.');
const bodyErrors = { tooLarge, decoding: () => malformed('The request body could not be read.') };

/**
 * Whether JSON text nests arrays and objects deeper than `max`: one pass over the characters, brackets inside
 * strings ignored, so it holds for any input and needs no stack of its own.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** Why Postgres would refuse a string as text or JSON: a NUL, or half of a surrogate pair. */
function unstorable(text: string): [detail: string, code: string] | undefined {
  if (text.includes('\0')) return [NUL_DETAIL, NUL_CODE];
  if (!text.isWellFormed()) return [SURROGATE_DETAIL, SURROGATE_CODE];
  return undefined;
}

/** Only `\u` escapes put a NUL or an unpaired surrogate into parsed JSON (raw control characters are invalid JSON, and UTF-8 decoding replaces broken sequences). */
const UNSTORABLE_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;

/**
 * The first key or string of a parsed JSON value that Postgres cannot store, as a 400 naming its path (DRF's
 * `a__0__b` form), skipping the top-level field `tolerated`; iterative, so depth cannot overflow it.
 */
function unstorableField(value: unknown, tolerated?: string): ApiError | undefined {
  const stack: Array<[unknown, string | null]> = [[value, null]];
  while (stack.length > 0) {
    const [item, path] = stack.pop()!;
    if (typeof item === 'string') {
      const problem = unstorable(item);
      if (problem) return errors.validation(problem[0], path, problem[1]);
    } else if (Array.isArray(item)) {
      item.forEach((child, index) => stack.push([child, path === null ? String(index) : `${path}__${index}`]));
    } else if (typeof item === 'object' && item !== null) {
      for (const [key, child] of Object.entries(item)) {
        const childPath = path === null ? key : `${path}__${key}`;
        const problem = unstorable(key);
        if (problem) return errors.validation(problem[0], childPath, problem[1]);
        if (!(path === null && key === tolerated)) stack.push([child, childPath]);
      }
    }
  }
  return undefined;
}

/**
 * The one body field whose NULs are stored rather than refused: a person's `properties` in PATCH/PUT, which
 * the person store writes with NUL replaced by U+FFFD exactly as ingestion writes the same `$set`, so a
 * property reads the same whichever way it was set.
 */
function toleratedField(req: Request): string | undefined {
  return (req.method === 'PATCH' || req.method === 'PUT') && /\/persons\/[^/]+\/?$/.test(req.path) ? 'properties' : undefined;
}

/** The body's bytes, inflated per Content-Encoding; both the sent and the inflated size are bounded. */
async function bodyBytes(req: Request): Promise<Buffer> {
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  const decode = INFLATE[encoding];
  if (!decode && encoding !== 'identity') throw unsupportedEncoding();
  const raw = await readBody(req, MAX_BODY_BYTES, bodyErrors);
  if (!decode) return raw;
  try {
    return await decode(raw, { maxOutputLength: MAX_BODY_BYTES });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge();
    throw malformed(`The request body is not valid ${encoding} data.`);
  }
}

/**
 * JSON bodies only (PostHog's person and playlist viewsets parse JSON only): a request that carries a body with
 * another content type gets 415. The body must be an object or array in UTF-8, at most MAX_BODY_BYTES sent
 * and inflated (gzip or deflate), nested at most MAX_JSON_DEPTH deep (400 otherwise), and hold no NUL in any
 * key or string (Postgres stores none): 400 naming the field.
 */
export const jsonBody: RequestHandler = async (req, _res, next) => {
  const hasBody = (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') || req.headers['transfer-encoding'] !== undefined;
  if (!hasBody) {
    req.body = {};
    next();
    return;
  }
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/(.+\+)?json\b/i.test(type)) throw errors.unsupportedMediaType(type.split(';')[0] ?? type);
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(type)?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset))
    throw new ApiError(415, 'validation_error', 'unsupported_media_type', `Unsupported charset "${charset}".`);
  const text = (await bodyBytes(req)).toString('utf8');
  if (text.length === 0) {
    req.body = {};
    next();
    return;
  }
  // Objects and arrays only, as body-parser's strict mode.
  if (!/^[\s\ufeff]*[[{]/.test(text)) throw malformed();
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw errors.validation(`JSON nests deeper than ${MAX_JSON_DEPTH} levels.`, null, 'max_depth');
  let body: unknown;
  try {
    body = JSON.parse(text.replace(/^\ufeff/, ''));
  } catch {
    throw malformed();
  }
  if (UNSTORABLE_ESCAPE.test(text)) {
    const error = unstorableField(body, toleratedField(req));
    if (error) throw error;
  }
  req.body = body;
  next();
};

/** What Postgres could not store in a query parameter holding JSON (`properties=[…]`), escaped in its text. */
function unstorableJson(value: string, name: string): ApiError | undefined {
  if (!UNSTORABLE_ESCAPE.test(value)) return undefined;
  try {
    const error = unstorableField(JSON.parse(value));
    return error && errors.validation(error.detail, name, error.code);
  } catch {
    return undefined;
  }
}

/**
 * Query parameters and the path, before any handler: a NUL anywhere (Postgres refuses it in text), also one
 * escaped inside a JSON-valued parameter, is a 400 naming the parameter, and a JSON-valued parameter may nest
 * at most MAX_JSON_DEPTH deep.
 */
export const checkQuery: RequestHandler = (req, _res, next) => {
  if (/%00/.test(req.originalUrl.split('?')[0] ?? '')) throw errors.validation('Null characters are not allowed in the path.', null, NUL_CODE);
  for (const [name, raw] of Object.entries(req.query as Record<string, unknown>)) {
    const problem = unstorable(name);
    if (problem) throw errors.validation(problem[0], name, problem[1]);
    for (const value of Array.isArray(raw) ? raw : [raw]) {
      if (typeof value !== 'string') continue;
      const problem = unstorable(value);
      if (problem) throw errors.validation(problem[0], name, problem[1]);
      if (!/^\s*[[{]/.test(value)) continue;
      if (nestsDeeperThan(value, MAX_JSON_DEPTH)) throw errors.validation(`JSON nests deeper than ${MAX_JSON_DEPTH} levels.`, name, 'max_depth');
      const error = unstorableJson(value, name);
      if (error) throw error;
    }
  }
  next();
};

export type Body = Record<string, unknown>;

/** The body as an object; arrays or scalars at the top level are a 400. */
export function bodyOf(req: Request): Body {
  const body: unknown = req.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw errors.validation('Invalid data. Expected a dictionary, but got ' + (Array.isArray(body) ? 'list' : typeof body) + '.', null, 'invalid_input');
  }
  return body as Body;
}
