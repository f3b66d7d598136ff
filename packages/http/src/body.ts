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
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const onData = (chunk: Buffer) => {
      length += chunk.length;
      if (length > limit) {
        cleanup();
        req.resume();
        reject(tooLarge(limit, errors));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length));
    };
    // A client that disconnects mid-body: nobody reads the answer, but the handler must not hang.
    const onAbort = () => {
      cleanup();
      reject(errors.decoding('the client closed the connection before the body was complete'));
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAbort);
      req.off('close', onAbort);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAbort);
    req.on('close', onAbort);
  });
}

function tooLarge(limit: number, errors: Pick<PayloadErrors, 'tooLarge'>): Error {
  return errors.tooLarge(`Request body exceeds the limit of ${limit} bytes.`);
}
