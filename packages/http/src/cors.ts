import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';

/**
 * CORS for the routes the SDKs call from browsers (capture, decide): any origin, with credentials. The origin
 * and the requested headers are mirrored rather than `*`, because browsers refuse `*` on credentialed
 * requests. This is PostHog's policy (Rust capture's `rust/capture/src/router.rs`); the
 * management API must never get it.
 *
 * Preflights are not answered here: PostHog answers an OPTIONS with the route's own success body, so the
 * route decides what an OPTIONS returns.
 */
export function permissiveCors(): RequestHandler {
  return (req, res, next) => {
    setPermissiveCorsHeaders(req, res);
    next();
  };
}

/** What `permissiveCors` does, for a route that dispatches itself. */
export function setPermissiveCorsHeaders(req: IncomingMessage, res: ServerResponse): void {
  const origin = req.headers.origin;
  // Caches must not serve one origin's mirrored answer to another.
  res.setHeader('Vary', 'Origin, Access-Control-Request-Headers');
  res.setHeader('Access-Control-Allow-Origin', origin ?? '*');
  if (origin !== undefined) res.setHeader('Access-Control-Allow-Credentials', 'true');
  if (req.method === 'OPTIONS') {
    res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
    const requested = req.headers['access-control-request-headers'];
    if (requested) res.setHeader('Access-Control-Allow-Headers', requested);
    res.setHeader('Access-Control-Max-Age', '86400');
  }
}
