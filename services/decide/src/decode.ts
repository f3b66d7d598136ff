/**
 * From a flag request's bytes to its JSON body, as PostHog's Django decide and Rust flags services accept it
 * (reference/posthog-flags.md §4.2; browsers per SPEC §2b): raw JSON or text/plain, form `data=`, GET `?data=`,
 * base64, gzip (by hint or by the magic bytes `1f 8b`), lz64 — the same decoding capture does.
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

const FLAG_PAYLOAD_ERRORS: PayloadErrors = {
  emptyPayload: () => malformed('no payload'),
  decoding: (detail) => malformed(detail),
  tooLarge: (detail) => malformed(detail),
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
    if (!/\b(NaN|-?Infinity)\b/.test(trimmed)) return undefined;
    try {
      return JSON.parse(trimmed.replace(/(?<=[:,[]\s*)(NaN|-?Infinity)(?=\s*[,}\]])/g, 'null'));
    } catch {
      return undefined;
    }
  }
}
