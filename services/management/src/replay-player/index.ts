/**
 * The session replay player: `/replay/<session id>` is a static page whose script fetches the recording through
 * the management API with the personal API key the viewer types in (kept in the tab's sessionStorage), so
 * the page itself needs no authentication and holds no data. `?project=<id>` picks the project (default: the
 * key's current project).
 */
import { Router, type RequestHandler } from 'express';
import helmet from 'helmet';
import { loadOnce } from '../http/load-once';
import { bundlePlayer, readBuiltPlayer, type PlayerAssets } from './assets';

/** The session ids capture accepts. */
const SESSION_ID = /^[A-Za-z0-9-]{1,70}$/;

const CONTENT_TYPES: Record<string, string> = { 'player.js': 'text/javascript; charset=utf-8', 'player.css': 'text/css; charset=utf-8' };

/** The page's markup; `assets/` and the API are addressed relative to it. */
const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Session replay · Plover</title>
    <link rel="icon" href="data:," />
    <link rel="stylesheet" href="assets/player.css" />
    <script src="assets/player.js" defer></script>
  </head>
  <body>
    <header><h1>Session replay</h1><span id="session-id"></span></header>
    <form id="key-form" hidden>
      <label for="key-input">Personal API key</label>
      <input id="key-input" type="password" autocomplete="off" spellcheck="false" required />
      <button type="submit">Open recording</button>
    </form>
    <p id="status" role="status" hidden></p>
    <main id="recording" hidden>
      <section id="player-column">
        <label id="window-choice" hidden>Window <select id="window-select"></select></label>
        <div id="player"></div>
      </section>
      <dl id="metadata"></dl>
    </main>
  </body>
</html>
`;

/**
 * A recording replays the recorded site's own styles, images and fonts inside the player's iframe (which
 * inherits this policy), so those may come from anywhere; scripts and API calls only from this origin, and the
 * rebuilt page gets no script at all (rrweb's iframe is sandboxed without scripts).
 */
const securityHeaders = helmet({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      connectSrc: ["'self'"],
      styleSrc: ["'self'", "'unsafe-inline'", '*'],
      imgSrc: ['*', 'data:', 'blob:'],
      fontSrc: ['*', 'data:'],
      mediaSrc: ['*', 'data:', 'blob:'],
      baseUri: ["'none'"],
      formAction: ["'none'"],
      frameAncestors: ["'none'"],
    },
  },
});

export function replayPlayerRoutes(load: () => Promise<PlayerAssets> = async () => (await readBuiltPlayer()) ?? bundlePlayer()): Router {
  // The built bundle when there is one, else built from the sources; loaded once.
  const assets = loadOnce(load);
  const router = Router();
  router.use('/replay', securityHeaders);

  const page: RequestHandler = (req, res, next) => {
    if (!SESSION_ID.test(String(req.params.session_id))) return next();
    res.type('html').set('Cache-Control', 'no-cache').send(PAGE);
  };
  const asset: RequestHandler = async (req, res, next) => {
    const name = String(req.params.name);
    const contents = CONTENT_TYPES[name] ? (await assets()).get(name) : undefined;
    if (!contents) return next();
    res.set('Content-Type', CONTENT_TYPES[name]).set('Cache-Control', 'no-cache').send(Buffer.from(contents));
  };
  router.get('/replay/assets/:name', asset);
  router.get('/replay/:session_id', page);
  return router;
}
