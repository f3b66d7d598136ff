/**
 * Session replay end to end, as a person uses it: embedded Plover (`npm start`) in a child process, a site of
 * the test's own on another port that loads the real posthog-js with recording on, clicks and keypresses in
 * headless Chromium, then the recordings API and the player page read back exactly what happened.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { artifactPath, describeWithBrowser, launchBrowser } from './support/browser';
import { startEmbedded, type EmbeddedPlover } from './support/embedded';

jest.setTimeout(240_000);

/** The SDKs, installed as devDependencies: each site page loads one of their browser bundles. */
const SDKS = [
  // The newest: its recorder is not in array.js, it loads lazy-recorder.js from Plover's /static/.
  { name: 'posthog-js 1.449.2', dist: path.dirname(require.resolve('posthog-js/dist/array.js')), bundle: 'array.js' },
  // Older, with the recorder bundled in (array.full.js), its config from /decide.
  { name: 'posthog-js 1.232.3', dist: path.dirname(require.resolve('posthog-js-1-232/dist/array.js')), bundle: 'array.full.js' },
];
const HEADING = 'Plover replay end to end';
const CLICKS_ON_BUTTON = 3;
const TYPED = 'hello';

/** The test site's page: loads posthog-js from `script` and records to `apiHost`. */
function sitePage(script: string, apiHost: string, token: string): string {
  // Headless Chromium's user agent reads as a bot, whose events posthog-js drops unless told otherwise.
  const config = { api_host: apiHost, person_profiles: 'always', autocapture: false, opt_out_useragent_filter: true };
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Replay test site</title>
    <style>body { font-family: sans-serif; } h1 { color: rgb(20, 90, 160); }</style>
    <script src="/posthog/${script}"></script>
    <script>posthog.init(${JSON.stringify(token)}, ${JSON.stringify(config)}); posthog.identify('e2e-user', { email: 'e2e@example.com' });</script>
  </head>
  <body>
    <h1>${HEADING}</h1>
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

/** Serves `page` at `/` and the dist files of the SDK in `dist` under `/posthog/`. */
async function startSite(page: string, dist: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://site').pathname;
    if (pathname === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(page);
      return;
    }
    const name = /^\/posthog\/([a-z0-9.-]+\.js)$/.exec(pathname)?.[1];
    const file = name && path.join(dist, name);
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

/** Waits (polling, at most 30 s) until `check` holds. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

interface Recording {
  id: string;
  distinct_id: string;
  click_count: number;
  keypress_count: number;
  start_url: string;
  person: { distinct_ids: string[]; properties: Record<string, unknown> } | null;
}

describeWithBrowser()('session replay end to end (embedded Plover, posthog-js, Chromium)', () => {
  let plover: EmbeddedPlover;
  let browser: Browser;
  let api: (path: string, init?: RequestInit) => Promise<Response>;

  beforeAll(async () => {
    plover = await startEmbedded();
    const base = `http://127.0.0.1:${plover.port}`;
    api = (route, init = {}) =>
      fetch(`${base}/api/projects/${plover.credentials.projectId}/${route}`, {
        ...init,
        headers: { Authorization: `Bearer ${plover.credentials.personalKey}`, 'Content-Type': 'application/json' },
      });
    const enabled = await api('', { method: 'PATCH', body: JSON.stringify({ session_recording_opt_in: true }) });
    expect(enabled.status).toBe(200);
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await plover?.stop();
  });

  /** The recording once ingestion has its expected counts and its person (they arrive in several flushes). */
  async function recordingOf(sessionId: string, clicks: number, keypresses: number): Promise<Recording> {
    const deadline = Date.now() + 60_000;
    let last: Recording | undefined;
    while (Date.now() < deadline) {
      const response = await api('session_recordings/?date_from=-1d');
      expect(response.status).toBe(200);
      const { results } = (await response.json()) as { results: Recording[] };
      last = results.find((recording) => recording.id === sessionId);
      if (last && last.click_count >= clicks && last.keypress_count >= keypresses && last.person?.properties.email !== undefined) return last;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    throw new Error(`the recording did not arrive with its counts; last seen: ${JSON.stringify(last)}\n${plover.output().slice(-4000)}`);
  }

  it.each(SDKS)('$name: records clicks and keypresses that the API counts exactly and the player replays', async (sdk) => {
    const site = await startSite(sitePage(sdk.bundle, `http://127.0.0.1:${plover.port}`, plover.credentials.token), sdk.dist);
    const page = await browser.newPage({ viewport: { width: 1100, height: 700 } });
    await page.goto(site.url);
    // posthog-js starts recording once the remote config says the project records.
    await page.waitForFunction('window.posthog && window.posthog.sessionRecordingStarted && window.posthog.sessionRecordingStarted()', undefined, {
      timeout: 30_000,
    });
    const sessionId = await page.evaluate<string>('window.posthog.get_session_id()');

    for (let i = 0; i < CLICKS_ON_BUTTON; i++) await page.click('#press');
    await page.click('#name');
    await page.keyboard.type(TYPED, { delay: 50 });
    expect(await page.textContent('#presses')).toBe(String(CLICKS_ON_BUTTON));

    const recording = await recordingOf(sessionId, CLICKS_ON_BUTTON + 1, TYPED.length);
    expect(recording.click_count).toBe(CLICKS_ON_BUTTON + 1);
    expect(recording.keypress_count).toBe(TYPED.length);
    expect(recording.start_url).toBe(site.url);
    expect(recording.distinct_id).toBe('e2e-user');
    expect(recording.person?.properties.email).toBe('e2e@example.com');

    const sources = (await (await api(`session_recordings/${sessionId}/snapshots`)).json()) as { sources: Array<{ source: string; blob_key: string }> };
    expect(sources.sources.length).toBeGreaterThan(0);
    const lines = await (
      await api(`session_recordings/${sessionId}/snapshots?source=blob_v2&start_blob_key=0&end_blob_key=${Math.min(sources.sources.length, 20) - 1}`)
    ).text();
    const types = new Set(lines.split('\n').map((line) => (JSON.parse(line) as [string, { type: number }])[1].type));
    expect(types).toContain(4);
    expect(types).toContain(2);
    await page.close();
    await site.close();

    const viewer = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    await viewer.addInitScript(`sessionStorage.setItem('plover.apiKey', ${JSON.stringify(plover.credentials.personalKey)})`);
    await viewer.goto(`http://127.0.0.1:${plover.port}/replay/${sessionId}?project=${plover.credentials.projectId}`);
    const replayed = viewer.frameLocator('.replayer-wrapper iframe');
    await replayed.locator('h1', { hasText: HEADING }).waitFor({ timeout: 30_000 });
    expect(await viewer.textContent('#metadata [data-field="click_count"]')).toBe(String(CLICKS_ON_BUTTON + 1));
    expect(await viewer.textContent('#metadata [data-field="keypress_count"]')).toBe(String(TYPED.length));
    // Played to its end, the replay shows what the clicks and keystrokes did (the recorder's compressed mutations).
    await viewer.click('.rr-controller__btns button:first-child');
    await replayed.locator('#presses', { hasText: String(CLICKS_ON_BUTTON) }).waitFor({ timeout: 30_000 });
    // posthog-js masks every input by default: the replay types as many stars.
    const masked = '*'.repeat(TYPED.length);
    await until(async () => (await replayed.locator('#name').inputValue()) === masked, 'the replayed input to hold the masked text');
    await viewer.screenshot({ path: artifactPath(`replay-e2e-${sdk.name.replace(/[^a-z0-9.]+/gi, '-')}.png`) });
    await viewer.close();
  });
});
