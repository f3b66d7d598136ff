import type { IncomingMessage } from 'node:http';
import type { PayloadErrors } from './payload';

/**
 * The raw request body, at most `limit` bytes. The SDK routes decode the bytes themselves (`decodePayload`: gzip
 * by magic bytes, base64 sniffing, form fields) rather than trusting Content-Type and Content-Encoding, which
 * SDKs get wrong.
 *
 * Over the limit: 413 at once. What the client still sends is read and discarded by Node (the request is
 * resumed), so the client gets to read the 413 and the connection stays usable.
 */
export function readBody(req: IncomingMessage, limit: number, errors: Pick<PayloadErrors, 'tooLarge' | 'decoding'>): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) {
    req.resume();
    return Promise.reject(tooLarge(limit, errors));
  }
  return new Promise((resolve, reject) => new BodyReader(req, limit, errors, resolve, reject));
}

/**
 * One body being read. Its listeners are bound methods rather than closures named by `const`: under tsx, which
 * `npm start` runs, esbuild's keepNames gives every such closure an `Object.defineProperty` of its name as it is
 * created, and the four of them took about 5 % of `/i/v0/e/`'s CPU.
 */
class BodyReader {
  private readonly chunks: Buffer[] = [];
  private length = 0;
  private readonly onData = this.data.bind(this);
  private readonly onEnd = this.end.bind(this);
  private readonly onAbort = this.abort.bind(this);

  constructor(
    private readonly req: IncomingMessage,
    private readonly limit: number,
    private readonly errors: Pick<PayloadErrors, 'tooLarge' | 'decoding'>,
    private readonly resolve: (body: Buffer) => void,
    private readonly reject: (error: Error) => void,
  ) {
    req.on('data', this.onData);
    req.on('end', this.onEnd);
    req.on('error', this.onAbort);
    req.on('close', this.onAbort);
  }

  private data(chunk: Buffer): void {
    this.length += chunk.length;
    if (this.length > this.limit) {
      this.cleanup();
      this.req.resume();
      this.reject(tooLarge(this.limit, this.errors));
      return;
    }
    this.chunks.push(chunk);
  }

  private end(): void {
    this.cleanup();
    this.resolve(this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.length));
  }

  /** A client that disconnects mid-body: nobody reads the answer, but the handler must not hang. */
  private abort(): void {
    this.cleanup();
    this.reject(this.errors.decoding('the client closed the connection before the body was complete'));
  }

  private cleanup(): void {
    this.req.off('data', this.onData);
    this.req.off('end', this.onEnd);
    this.req.off('error', this.onAbort);
    this.req.off('close', this.onAbort);
  }
}

function tooLarge(limit: number, errors: Pick<PayloadErrors, 'tooLarge'>): Error {
  return errors.tooLarge(`Request body exceeds the limit of ${limit} bytes.`);
}
