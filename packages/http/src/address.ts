import type { IncomingMessage } from 'node:http';

/**
 * Where a request says it came from: the first `X-Forwarded-For` entry when forwarded addresses are trusted
 * (the client as the first proxy saw it, what Express's `req.ip` gives with `trust proxy` on), else the socket's
 * address. Raw: callers normalize and validate it for their own use.
 */
export function requestAddress(req: IncomingMessage, trustForwarded: boolean): string | undefined {
  const header = trustForwarded ? req.headers['x-forwarded-for'] : undefined;
  const forwarded = (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim();
  return forwarded || req.socket.remoteAddress;
}
