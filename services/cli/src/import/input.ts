import fs from 'node:fs';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';

/** A file that cannot be read to its end (truncated or corrupt gzip, an I/O error): what was read before still counts. */
export class InputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InputError';
  }
}

/** An input file as a byte stream, gunzipped when it starts with gzip's magic bytes, and how far it has been read. */
export interface OpenedInput {
  stream: Readable;
  gzip: boolean;
  /** Bytes of the file (compressed, for gzip) read so far: the progress bar's position. */
  bytesRead(): number;
}

export function openInput(file: string): OpenedInput {
  const magic = Buffer.alloc(2);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, magic, 0, 2, 0);
  } finally {
    fs.closeSync(fd);
  }
  const raw = fs.createReadStream(file, { highWaterMark: 1 << 20 });
  const gzip = magic[0] === 0x1f && magic[1] === 0x8b;
  if (!gzip) return { stream: raw, gzip, bytesRead: () => raw.bytesRead };
  const gunzip = zlib.createGunzip();
  raw.on('error', (error) => gunzip.destroy(error));
  return { stream: raw.pipe(gunzip), gzip, bytesRead: () => raw.bytesRead };
}

/** The reason a stream stopped early, in words that name the file's problem rather than zlib's. */
export function inputFailure(error: unknown, gzip: boolean): InputError {
  const code = (error as { code?: string }).code;
  const message = error instanceof Error ? error.message : String(error);
  if (gzip && code === 'Z_BUF_ERROR') return new InputError('the gzip data ends early (truncated file)');
  if (gzip && code?.startsWith('Z_')) return new InputError(`the gzip data is corrupt (${message})`);
  return new InputError(message);
}

/** One line of a text file: its 1-based number and bytes, without the line break. */
export interface Line {
  number: number;
  bytes: Buffer;
  /** Set, with `bytes` cut to the limit, when the line is longer than the limit. */
  tooLong?: true;
}

/**
 * The lines of a byte stream (LF or CRLF), in constant memory: a line longer than `maxBytes` is reported with
 * its first `maxBytes` and the rest skipped up to the next line break. A stream error becomes an InputError.
 */
export async function* linesOf(input: { stream: AsyncIterable<Buffer>; gzip: boolean }, maxBytes: number): AsyncGenerator<Line> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let tooLong = false;
  let number = 0;
  const finish = (tail: Buffer): Line => {
    let bytes = pending.length === 0 ? tail : Buffer.concat([...pending, tail]);
    if (bytes.length > 0 && bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, bytes.length - 1);
    const line: Line =
      tooLong || bytes.length > maxBytes ? { number: ++number, bytes: bytes.subarray(0, maxBytes), tooLong: true } : { number: ++number, bytes };
    pending = [];
    pendingBytes = 0;
    tooLong = false;
    return line;
  };
  try {
    for await (const chunk of input.stream) {
      let start = 0;
      for (let end = chunk.indexOf(0x0a); end !== -1; end = chunk.indexOf(0x0a, start)) {
        yield finish(tooLong ? Buffer.alloc(0) : chunk.subarray(start, end));
        start = end + 1;
      }
      if (start < chunk.length && !tooLong) {
        const rest = chunk.subarray(start);
        pending.push(rest);
        pendingBytes += rest.length;
        if (pendingBytes > maxBytes) tooLong = true;
      }
    }
  } catch (error) {
    throw inputFailure(error, input.gzip);
  }
  if (pendingBytes > 0 || tooLong) yield finish(Buffer.alloc(0));
}

/**
 * Where UTF-8 decoding of `bytes` fails: the index of the first byte that does not start or continue a valid
 * sequence (overlong forms, surrogates and code points past U+10FFFF included), or -1 when it is valid.
 */
export function invalidUtf8At(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let min: number;
    if (b >= 0xc2 && b <= 0xdf) [need, min] = [1, 0x80];
    else if (b >= 0xe0 && b <= 0xef) [need, min] = [2, 0x800];
    else if (b >= 0xf0 && b <= 0xf4) [need, min] = [3, 0x10000];
    else return i;
    let code = b & (0xff >> (need + 2));
    for (let k = 1; k <= need; k++) {
      const next = bytes[i + k];
      if (next === undefined || (next & 0xc0) !== 0x80) return i;
      code = (code << 6) | (next & 0x3f);
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return i;
    i += need + 1;
  }
  return -1;
}
