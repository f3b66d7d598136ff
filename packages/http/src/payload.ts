/**
 * From request bytes to JSON text, the way PostHog's capture does it (and its flag services accept the same
 * encodings) (reference/posthog-capture-persons.md
 * §1.2–1.3; Rust `payload/common.rs`, `payload/decompression.rs`, `utils.rs`). Every SDK generation put its
 * payload somewhere else and encoded it differently, and several omit or misstate the hints, so the bytes
 * themselves are sniffed at each layer.
 */
import { isUtf8 } from 'node:buffer';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { decompressFromBase64 } from 'lz-string';

const gunzipAsync = promisify(gunzip);

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

/** The JSON text of the request's payload; undecodable input and output past `maxBytes` fail with `errors`. */
export async function decodePayload(request: EncodedRequest, maxBytes: number, errors: PayloadErrors): Promise<string> {
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
  if (compression === 'gzip' || startsWith(payload, GZIP_MAGIC)) decoded = await gunzipLimited(payload, maxBytes, errors);
  else if (compression === 'lz64') decoded = decompressLz64(payload, maxBytes, errors);
  else if (compression === 'base64') decoded = (isBase64(payload, false) && decodeBase64(payload)) || payload;
  else decoded = payload;

  if (request.legacyEndpoint && isBase64(decoded, false)) {
    const unwrapped = decodeBase64(decoded);
    // As in PostHog: a second base64 layer that does not decode to text is left as it was.
    if (unwrapped && isUtf8(unwrapped)) decoded = unwrapped;
  }
  if (decoded.length > maxBytes) throw errors.tooLarge(`Decompressed payload exceeds the limit of ${maxBytes} bytes.`);
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
      (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || byte === 0x2b || byte === 0x2f || byte === 0x3d || (loose && byte === 0x20);
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
 * zlib stops as soon as the output passes `maxOutputLength`, so a gzip bomb costs at most `maxBytes` of memory.
 * Decompression runs on libuv's thread pool, off the event loop.
 */
async function gunzipLimited(payload: Buffer, maxBytes: number, errors: PayloadErrors): Promise<Buffer> {
  try {
    return await gunzipAsync(payload, { maxOutputLength: maxBytes });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw errors.tooLarge(`Decompressed payload exceeds the limit of ${maxBytes} bytes.`);
    }
    throw errors.decoding('invalid gzip data');
  }
}

/**
 * lz-string's base64 form (posthog-js before 1.63, posthog-node 2–4 `captureMode: 'form'`). It decompresses
 * to UTF-16 in one go; a bomb is bounded by the 20 MiB body limit times lz-string's ratio, and checked after.
 */
function decompressLz64(payload: Buffer, maxBytes: number, errors: PayloadErrors): Buffer {
  const text = decompressFromBase64(payload.toString('latin1'));
  // lz-string answers garbage input with null or "" rather than an error. Lone surrogates in its output
  // become U+FFFD on the way to UTF-8 instead of failing the request.
  if (!text) throw errors.decoding('invalid lz64 data');
  if (text.length > maxBytes) throw errors.tooLarge(`Decompressed payload exceeds the limit of ${maxBytes} bytes.`);
  return Buffer.from(text, 'utf8');
}
