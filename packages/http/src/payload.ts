/**
 * From request bytes to JSON text, the way PostHog's capture does it (and its flag services accept the same
 * encodings). Every SDK generation put its payload somewhere else and encoded it differently, and several omit
 * or misstate the hints, so the bytes themselves are sniffed at each layer.
 *
 * Decompression is bounded while it runs: gzip and lz64 stop as soon as their output passes the limit, and
 * the output counts against the process's `DecompressionBudget` chunk by chunk.
 */
import { isUtf8 } from 'node:buffer';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { createGunzip, createInflate, type Gunzip, type Inflate } from 'node:zlib';
import { decompressionBudget, type DecompressionLease } from './budget';
import { Lz64Decoder } from './lz64';

export interface EncodedRequest {
  query: URLSearchParams;
  contentType: string | undefined;
  contentEncoding: string | undefined;
  body: Buffer;
  /** `/e`, `/capture`, `/track`, `/engage`: a payload still base64 after decompression is decoded once more. */
  legacyEndpoint: boolean;
}

/** How a service words each failure (capture and decide answer with different codes and texts). */
export interface PayloadErrors {
  emptyPayload(): Error;
  decoding(detail: string): Error;
  tooLarge(detail: string): Error;
}

type Compression = 'gzip' | 'lz64' | 'base64';

const FORM_MIME_TYPE = 'application/x-www-form-urlencoded';
/** PostHog inspects only this many leading bytes when guessing an encoding. */
const SNIFF_BYTES = 128;
const FORM_KEYS = ['data=', '_=', 'ip=', 'compression='].map((key) => Buffer.from(key));
const GZIP_MAGIC = [0x1f, 0x8b, 0x08];
/** Fewer chunks (each one a turn of the stream and a budget check) for large payloads. */
const GZIP_CHUNK_BYTES = 64 * 1024;
/**
 * lz64 is what SDKs from before 2023 send, in small batches. Its decoder holds UTF-16 (two bytes a unit), so
 * a lower cap than gzip's keeps the largest lz64 payload well inside the budget.
 */
const LZ64_MAX_BYTES = 32 * 1024 * 1024;
/** The longest the lz64 decoder runs before it lets other requests have the event loop. */
const LZ64_SLICE_MS = 10;

/**
 * The JSON text of the request's payload; undecodable input and output past `maxBytes` fail with `errors`.
 * Decompressed output is charged to `lease`, which the caller releases once it no longer holds the payload;
 * without one, a lease of the process's budget covers the decoding alone.
 */
export async function decodePayload(request: EncodedRequest, maxBytes: number, errors: PayloadErrors, lease?: DecompressionLease): Promise<string> {
  if (lease) return decodeWithin(request, maxBytes, errors, lease);
  const own = decompressionBudget.lease();
  try {
    return await decodeWithin(request, maxBytes, errors, own);
  } finally {
    own.release();
  }
}

async function decodeWithin(request: EncodedRequest, maxBytes: number, errors: PayloadErrors, lease: DecompressionLease): Promise<string> {
  // A GET carries the payload in `?data=`; it wins over a body when not empty.
  const queryData = request.query.get('data');
  let payload: Buffer;
  if (queryData) payload = Buffer.from(restorePlus(queryData), 'latin1');
  else if (request.body.length > 0) payload = request.body;
  else throw errors.emptyPayload();

  if (isBase64(payload, false) && !looksLikeForm(payload)) payload = decodeBase64(payload) ?? payload;

  let formCompression: string | null = null;
  if (mediaType(request.contentType) === FORM_MIME_TYPE) {
    if (!looksLikeForm(payload)) throw errors.decoding('expected form data in POST request payload');
    const form = new URLSearchParams(payload.toString('latin1'));
    formCompression = form.get('compression');
    const data = form.get('data');
    if (data === null) throw errors.decoding('the form has no data field');
    // Forms decode `+` as a space; in a base64 `data` value the spaces were pluses.
    payload = Buffer.from(restorePlus(data), 'latin1');
  }

  const compression = compressionHint(request.query.get('compression'), formCompression, request.contentEncoding);
  let decoded: Buffer;
  if (compression === 'gzip' || startsWith(payload, GZIP_MAGIC))
    decoded = await inflateLimited(createGunzip({ chunkSize: GZIP_CHUNK_BYTES }), 'gzip', payload, maxBytes, errors, lease);
  else if (compression === 'lz64') decoded = await decompressLz64(payload, Math.min(maxBytes, LZ64_MAX_BYTES), errors, lease);
  else if (compression === 'base64') decoded = (isBase64(payload, false) && decodeBase64(payload)) || payload;
  else decoded = payload;

  if (request.legacyEndpoint && isBase64(decoded, false)) {
    const unwrapped = decodeBase64(decoded);
    // As in PostHog: a second base64 layer that does not decode to text is left as it was.
    if (unwrapped && isUtf8(unwrapped)) decoded = unwrapped;
  }
  if (decoded.length > maxBytes) throw decompressedTooLarge(maxBytes, errors);
  if (!isUtf8(decoded)) throw errors.decoding('invalid UTF-8 in request payload');
  return decoded.toString('utf8');
}

function compressionHint(query: string | null, form: string | null, header: string | undefined): Compression | undefined {
  // Query and form values are matched case-insensitively, the header exactly (PostHog `extract_compression`).
  return hintOf(query?.toLowerCase()) ?? hintOf(form?.toLowerCase()) ?? hintOf(header);
}

function hintOf(value: string | undefined): Compression | undefined {
  switch (value) {
    case 'gzip':
    case 'gzip-js':
      return 'gzip';
    case 'lz64':
    case 'lz-string':
      return 'lz64';
    case 'base64':
    case 'b64':
      return 'base64';
    default:
      // Unknown hints (`deflate`, `br`, …) are ignored like PostHog does; the bytes are still sniffed for gzip.
      return undefined;
  }
}

function mediaType(contentType: string | undefined): string | undefined {
  return contentType?.split(';', 1)[0]?.trim().toLowerCase();
}

function startsWith(buffer: Buffer, prefix: readonly number[]): boolean {
  return prefix.every((byte, i) => buffer[i] === byte);
}

/** A urlencoded form with one of the fields SDKs send, at its start or after a `&` (within the sniffed prefix). */
function looksLikeForm(payload: Buffer): boolean {
  const prefix = payload.subarray(0, SNIFF_BYTES);
  return FORM_KEYS.some((key) => {
    if (prefix.subarray(0, key.length).equals(key)) return true;
    for (let at = prefix.indexOf(0x26); at !== -1; at = prefix.indexOf(0x26, at + 1)) {
      if (prefix.subarray(at + 1, at + 1 + key.length).equals(key)) return true;
    }
    return false;
  });
}

/**
 * PostHog's cheap base64 test: the first 128 bytes are in the standard alphabet (and, loosely, spaces that
 * urldecoding made of `+`) and the length is a multiple of 4.
 */
function isBase64(payload: Buffer, loose: boolean): boolean {
  if (payload.length === 0 || payload.length % 4 !== 0) return false;
  const end = Math.min(payload.length, SNIFF_BYTES);
  for (let i = 0; i < end; i++) {
    const byte = payload[i]!;
    const ok =
      (byte >= 0x41 && byte <= 0x5a) ||
      (byte >= 0x61 && byte <= 0x7a) ||
      (byte >= 0x30 && byte <= 0x39) ||
      byte === 0x2b ||
      byte === 0x2f ||
      byte === 0x3d ||
      (loose && byte === 0x20);
    if (!ok) return false;
  }
  return true;
}

const STRICT_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Standard base64 with padding, or undefined: Node's own decoder would silently skip invalid characters. */
function decodeBase64(payload: Buffer): Buffer | undefined {
  const text = payload.toString('latin1');
  if (text.length % 4 !== 0 || !STRICT_BASE64.test(text)) return undefined;
  return Buffer.from(text, 'base64');
}

function restorePlus(value: string): string {
  return value.includes(' ') && isBase64(Buffer.from(value, 'latin1'), true) ? value.replace(/ /g, '+') : value;
}

/**
 * A body in one declared `Content-Encoding` (`gzip`, `deflate`, none or `identity`), for the routes that take only
 * that (capture v1, OTLP): its bytes, decompressed within `maxBytes` and charged to `lease`. Another encoding is
 * `errors.unsupportedEncoding`.
 */
export async function decodeContentEncoding(
  body: Buffer,
  contentEncoding: string | undefined,
  maxBytes: number,
  errors: Pick<PayloadErrors, 'decoding' | 'tooLarge'> & { unsupportedEncoding(encoding: string): Error },
  lease: DecompressionLease,
): Promise<Buffer> {
  const encoding = contentEncoding?.trim().toLowerCase();
  switch (encoding) {
    case undefined:
    case '':
    case 'identity':
      if (body.length > maxBytes) throw decompressedTooLarge(maxBytes, errors);
      return body;
    case 'gzip':
      return inflateLimited(createGunzip({ chunkSize: GZIP_CHUNK_BYTES }), 'gzip', body, maxBytes, errors, lease);
    case 'deflate':
      return inflateLimited(createInflate({ chunkSize: GZIP_CHUNK_BYTES }), 'deflate', body, maxBytes, errors, lease);
    default:
      throw errors.unsupportedEncoding(encoding);
  }
}

/**
 * zlib runs on libuv's thread pool, off the event loop, and produces a chunk only when the previous one was
 * taken, so a bomb stops at the limit and holds no more than its lease grants.
 */
async function inflateLimited(
  inflater: Gunzip | Inflate,
  format: string,
  payload: Buffer,
  maxBytes: number,
  errors: Pick<PayloadErrors, 'decoding' | 'tooLarge'>,
  lease: DecompressionLease,
): Promise<Buffer> {
  const chunks = inflater[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  inflater.end(payload);
  const output: Buffer[] = [];
  let length = 0;
  try {
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = await chunks.next();
      } catch {
        // Truncated input, a bad header or checksum: the client's bytes, never a server error.
        throw errors.decoding(`invalid ${format} data`);
      }
      if (next.done) break;
      if (length + next.value.length > maxBytes) throw decompressedTooLarge(maxBytes, errors);
      await lease.reserve(next.value.length);
      output.push(next.value);
      length += next.value.length;
    }
  } catch (error) {
    lease.free(length);
    throw error;
  } finally {
    inflater.destroy();
  }
  return output.length === 1 ? output[0]! : Buffer.concat(output, length);
}

/**
 * lz-string's base64 form (posthog-js before 1.63, posthog-node 2–4 `captureMode: 'form'`), decoded in slices
 * of at most `LZ64_SLICE_MS` with the buffer it grows into charged to the lease. Lone surrogates in the output
 * become U+FFFD on the way to UTF-8 instead of failing the request, as they did with lz-string.
 */
async function decompressLz64(payload: Buffer, maxBytes: number, errors: PayloadErrors, lease: DecompressionLease): Promise<Buffer> {
  const decoder = new Lz64Decoder(payload, maxBytes);
  try {
    for (;;) {
      switch (decoder.run(performance.now() + LZ64_SLICE_MS)) {
        case 'done': {
          await lease.reserve(decoder.utf8Bytes);
          const text = Buffer.allocUnsafe(decoder.utf8Bytes);
          while (!decoder.encode(text, performance.now() + LZ64_SLICE_MS)) await nextTurn();
          return text;
        }
        case 'grow':
          await lease.reserve(decoder.growthBytes);
          lease.free(decoder.grow());
          break;
        case 'pause':
          await nextTurn();
          break;
        case 'invalid':
          throw errors.decoding('invalid lz64 data');
        case 'too-large':
          throw decompressedTooLarge(maxBytes, errors);
      }
    }
  } finally {
    lease.free(decoder.bufferBytes);
  }
}

function decompressedTooLarge(maxBytes: number, errors: Pick<PayloadErrors, 'tooLarge'>): Error {
  return errors.tooLarge(`Decompressed payload exceeds the limit of ${maxBytes} bytes.`);
}
