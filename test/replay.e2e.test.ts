/**
 * Session replay end to end, as a person uses it: embedded Plover (`npm start`) in a child process, a site of
 * the test's own on another port that loads the real posthog-js with recording on, clicks and keypresses in
 * headless Chromium, then the recordings API and the player page read back exactly what happened.
 */
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { artifactPath, describeWithBrowser, launchBrowser } from './support/browser';
import { startEmbedded, type EmbeddedPlover } from './support/embedded';
import { SITE_HEADING, SITE_USER, sitePage, startSite, waitForRecording } from './support/site';

jest.setTimeout(240_000);

/** The SDKs, installed as devDependencies: each site page loads one of their browser bundles. */
const SDKS = [
  // The newest: its recorder is not in array.js, it loads lazy-recorder.js from Plover's /static/.
  { name: 'posthog-js 1.449.2', dist: path.dirname(require.resolve('posthog-js/dist/array.js')), bundle: 'array.js' },
  // Older, with the recorder bundled in (array.full.js), its config from /decide.
  { name: 'posthog-js 1.232.3', dist: path.dirname(require.resolve('posthog-js-1-232/dist/array.js')), bundle: 'array.full.js' },
];
const CLICKS_ON_BUTTON = 3;
const TYPED = 'hello';

/** Waits (polling, at most 30 s) until `check` holds. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
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

  it.each(SDKS)('$name: records clicks and keypresses that the API counts exactly and the player replays', async (sdk) => {
    const site = await startSite(sitePage(`/posthog/${sdk.bundle}`, `http://127.0.0.1:${plover.port}`, plover.credentials.token), sdk.dist);
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

    const recording = await waitForRecording(api, sessionId, { clicks: CLICKS_ON_BUTTON + 1, keypresses: TYPED.length }, () => plover.output().slice(-4000));
    expect(recording.click_count).toBe(CLICKS_ON_BUTTON + 1);
    expect(recording.keypress_count).toBe(TYPED.length);
    expect(recording.start_url).toBe(site.url);
    expect(recording.distinct_id).toBe(SITE_USER);
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
    await replayed.locator('h1', { hasText: SITE_HEADING }).waitFor({ timeout: 30_000 });
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
