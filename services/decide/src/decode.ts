/**
 * From a flag request's bytes to its JSON body, as PostHog's Django decide and Rust flags services accept it
 * (browsers included): raw JSON or text/plain, form `data=`, GET `?data=`, base64, gzip (by hint or by the
 * magic bytes `1f 8b`), lz64 — the same decoding capture does.
 */
import { ApiError } from '@plover/core';
import { decodePayload, type PayloadErrors } from '@plover/http';

export interface EncodedFlagsRequest {
  query: URLSearchParams;
  contentType: string | undefined;
  contentEncoding: string | undefined;
  body: Buffer;
}

const MAX_DECOMPRESSED = 20 * 1024 * 1024;

export function malformed(detail: string): ApiError {
  return ApiError.validation(`Malformed request data: ${detail}`, null, 'malformed_data');
}

export function tooLarge(detail: string): ApiError {
  return new ApiError(413, 'validation_error', 'payload_too_large', detail);
}

const FLAG_PAYLOAD_ERRORS: PayloadErrors = {
  emptyPayload: () => malformed('no payload'),
  decoding: (detail) => malformed(detail),
  tooLarge,
};

/** The request's JSON object, or `undefined` when it carries no payload at all (a bare GET). */
export async function decodeFlagsBody(request: EncodedFlagsRequest): Promise<Record<string, unknown> | undefined> {
  if (request.body.length === 0 && !request.query.get('data')) return undefined;
  // Django's decide also unwraps a payload that is still base64 after decompression, like capture's legacy routes.
  const text = await decodePayload({ ...request, legacyEndpoint: true }, MAX_DECOMPRESSED, FLAG_PAYLOAD_ERRORS);
  const parsed = parseJson(text);
  if (parsed === undefined) throw malformed('the body is not valid JSON');
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw malformed('expected a JSON object');
  return parsed as Record<string, unknown>;
}

function parseJson(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    // Python's json writes NaN and Infinity; PostHog reads them as null.
    const rewritten = nullNonFiniteNumbers(trimmed);
    if (rewritten === trimmed) return undefined;
    try {
      return JSON.parse(rewritten);
    } catch {
      return undefined;
    }
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
// The first characters of the tokens below.
const LETTER_N = 0x4e;
const LETTER_I = 0x49;
const MINUS = 0x2d;
const NON_FINITE = ['NaN', 'Infinity', '-Infinity'] as const;

/**
 * `text` with each `NaN`, `Infinity` and `-Infinity` outside JSON strings replaced by `null`. One pass, each
 * character read once: the body is unauthenticated and up to 20 MiB, so no step may look back or ahead
 * further than the token it is on. A token glued to other characters (`NaNx`, `1NaN`) becomes as invalid
 * after the rewrite as before, so JSON.parse still refuses it.
 */
export function nullNonFiniteNumbers(text: string): string {
  let result = '';
  let copiedTo = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === BACKSLASH) i += 1;
      else if (code === QUOTE) inString = false;
      continue;
    }
    if (code === QUOTE) {
      inString = true;
      continue;
    }
    const token = code === LETTER_N || code === LETTER_I || code === MINUS ? NON_FINITE.find((name) => text.startsWith(name, i)) : undefined;
    if (token === undefined) continue;
    result += `${text.slice(copiedTo, i)}null`;
    i += token.length - 1;
    copiedTo = i + 1;
  }
  return copiedTo === 0 ? text : result + text.slice(copiedTo);
}
