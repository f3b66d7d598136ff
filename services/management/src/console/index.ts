/**
 * The web console at `/`: a single-page app whose script talks to the management API with the personal API key
 * the user signs in with (kept in the tab's sessionStorage, sent as a bearer token), so the pages themselves
 * need no authentication and hold no data. Only `/` and `/project/…` (the console's own client routes) answer
 * with the page; every other path keeps its own handler or 404.
 */
import { Router, type Request, type RequestHandler, type Response } from 'express';
import helmet from 'helmet';
import { loadOnce } from '../http/load-once';
import { loadConsole, type ConsoleAssets, type ConsoleFile } from './assets';

/** Scripts, styles and API calls from this origin only, nothing inline, no framing. */
const securityHeaders = helmet({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", 'data:'],
      fontSrc: ["'self'"],
      connectSrc: ["'self'"],
      manifestSrc: ["'self'"],
      baseUri: ["'none'"],
      formAction: ["'none'"],
      frameAncestors: ["'none'"],
    },
  },
});

/** Vite names every file under `assets/` by a hash of its contents: such a file never changes. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

function sendFile(req: Request, res: Response, file: ConsoleFile, cacheControl: string): void {
  res.set('Content-Type', file.type).set('Cache-Control', cacheControl).vary('Accept-Encoding');
  if (/\bgzip\b/.test(req.headers['accept-encoding'] ?? '')) res.set('Content-Encoding', 'gzip').send(file.gzip);
  else res.send(file.contents);
}

export function consoleRoutes(load: () => Promise<ConsoleAssets> = loadConsole): Router {
  const assets = loadOnce(load);
  const router = Router();
  const page: RequestHandler = async (req, res) => {
    const index = (await assets()).get('/index.html')!;
    sendFile(req, res, index, 'no-cache');
  };
  const asset: RequestHandler = async (req, res, next) => {
    const file = (await assets()).get(req.path);
    if (!file) return next();
    sendFile(req, res, file, IMMUTABLE);
  };
  router.get(['/', '/project', '/project/*path'], securityHeaders, page);
  router.get('/assets/*path', securityHeaders, asset);
  return router;
}
