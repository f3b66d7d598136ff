/**
 * A website of the test's own, on its own port, that loads the real posthog-js in a browser (test/support/browser.ts)
 * and sends to a Plover: with session recording as the project's remote config says, a button that counts its
 * clicks and a text input.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

export const SITE_HEADING = 'Plover replay end to end';
/** Who the page identifies as, with the person property `email: e2e@example.com`. */
export const SITE_USER = 'e2e-user';

/** The page: loads posthog-js from `script` (a URL) and sends to `apiHost`. */
export function sitePage(script: string, apiHost: string, token: string): string {
  // Headless Chromium's user agent reads as a bot, whose events posthog-js drops unless told otherwise.
  const config = { api_host: apiHost, person_profiles: 'always', autocapture: false, opt_out_useragent_filter: true };
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Replay test site</title>
    <style>body { font-family: sans-serif; } h1 { color: rgb(20, 90, 160); }</style>
    <script src="${script}"></script>
    <script>posthog.init(${JSON.stringify(token)}, ${JSON.stringify(config)}); posthog.identify(${JSON.stringify(SITE_USER)}, { email: 'e2e@example.com' });</script>
  </head>
  <body>
    <h1>${SITE_HEADING}</h1>
    <button id="press" type="button">Press</button>
    <p id="presses">0</p>
    <input id="name" type="text" />
    <script>
      document.getElementById('press').addEventListener('click', () => {
        const presses = document.getElementById('presses');
        presses.textContent = String(Number(presses.textContent) + 1);
      });
    </script>
  </body>
</html>`;
}

export interface Site {
  url: string;
  close(): Promise<void>;
}

/**
 * Serves `page` at `/` (or each of `pages` at its path) and, when given, the files of the directory `dist` (an
 * SDK's bundles) under `/posthog/`.
 */
export async function startSite(pages: string | Readonly<Record<string, string>>, dist?: string): Promise<Site> {
  const byPath = new Map(Object.entries(typeof pages === 'string' ? { '/': pages } : pages));
  const server = http.createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://site').pathname;
    const page = byPath.get(pathname);
    if (page !== undefined) {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(page);
      return;
    }
    const name = /^\/posthog\/([a-z0-9.-]+\.js)$/.exec(pathname)?.[1];
    const file = dist && name && path.join(dist, name);
    if (!file || !fs.existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/javascript; charset=utf-8' }).end(fs.readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A recording as the recordings API lists it (the fields these suites check). */
export interface Recording {
  id: string;
  distinct_id: string;
  click_count: number;
  keypress_count: number;
  start_url: string;
  person: { distinct_ids: string[]; properties: Record<string, unknown> } | null;
}

/**
 * The recording of `sessionId` once ingestion has at least `clicks` clicks and `keypresses` keypresses and its
 * person (they arrive in several flushes), read with `api` (a project's management API, `route` under
 * `/api/projects/<id>/`); within 60 s, else an error with `context()` (say, the server's log).
 */
export async function waitForRecording(
  api: (route: string) => Promise<Response>,
  sessionId: string,
  expected: { clicks: number; keypresses: number },
  context: () => string,
): Promise<Recording> {
  const deadline = Date.now() + 60_000;
  let last: Recording | undefined;
  while (Date.now() < deadline) {
    const response = await api('session_recordings/?date_from=-1d');
    if (response.status !== 200) throw new Error(`the recordings API answered ${response.status}: ${await response.text()}`);
    const { results } = (await response.json()) as { results: Recording[] };
    last = results.find((recording) => recording.id === sessionId);
    if (last && last.click_count >= expected.clicks && last.keypress_count >= expected.keypresses && last.person?.properties.email !== undefined) return last;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`the recording did not arrive with its counts; last seen: ${JSON.stringify(last)}\n${context()}`);
}
