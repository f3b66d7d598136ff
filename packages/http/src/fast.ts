import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * A route answered from node:http's request event, ahead of Express. The SDK routes (capture, flags) carry
 * nearly all of a deployment's requests, and Express's dispatch for each (prototype swaps, the router walk over
 * every mounted layer, query parsing) was a tenth or more of their CPU (bench/capture.ts, bench/decide.ts).
 * Returns false for a request that is not its own; renders its own answers and errors (`sendJson`, `sendError`).
 */
export type FastRoute = (req: IncomingMessage, res: ServerResponse) => boolean;

/** The request path as the fast routes key it: no query, no trailing slash, lowercase (Express's default matching). */
export function routePath(url: string | undefined): string {
  const query = url?.indexOf('?') ?? -1;
  const path = query === -1 ? (url ?? '') : url!.slice(0, query);
  return (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path).toLowerCase();
}

/** The raw query string of a request URL (without `?`). */
export function queryString(url: string | undefined): string {
  const at = url?.indexOf('?') ?? -1;
  return at === -1 ? '' : url!.slice(at + 1);
}

/** A JSON answer written without Express (`body` already serialized — text or UTF-8 bytes — or serialized here). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  // One Buffer: node:http then writes headers and body in one `writev` instead of encoding a string into it.
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': bytes.length });
  res.end(bytes);
}
