/**
 * Browser console logs end to end: embedded Plover (`npm start`) in a child process, the project's logs setting
 * turned on through the management API, a site of the test's own loading the real posthog-js in headless Chromium,
 * and the lines its console printed read back through the query API's HogQL `logs` table.
 */
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { describeWithBrowser, launchBrowser } from './support/browser';
import { startEmbedded, type EmbeddedPlover } from './support/embedded';
import { SITE_USER, sitePage, startSite, type Site } from './support/site';

jest.setTimeout(240_000);

const DIST = path.dirname(require.resolve('posthog-js/dist/array.js'));

describeWithBrowser()('browser console logs end to end (embedded Plover, posthog-js 1.449.2, Chromium)', () => {
  let plover: EmbeddedPlover;
  let browser: Browser;
  let site: Site;
  let api: (route: string, init?: RequestInit) => Promise<Response>;

  beforeAll(async () => {
    plover = await startEmbedded();
    const base = `http://127.0.0.1:${plover.port}`;
    api = (route, init = {}) =>
      fetch(`${base}/api/projects/${plover.credentials.projectId}/${route}`, {
        ...init,
        headers: { Authorization: `Bearer ${plover.credentials.personalKey}`, 'Content-Type': 'application/json' },
      });
    browser = await launchBrowser();
    site = await startSite(sitePage('/posthog/array.js', base, plover.credentials.token), DIST);
  }, 120_000);

  afterAll(async () => {
    await site?.close();
    await browser?.close();
    await plover?.stop();
  });

  /** The project's log lines whose body contains `marker`, as HogQL reads them. */
  async function linesWith(marker: string): Promise<string[][]> {
    const response = await api('query/', {
      method: 'POST',
      body: JSON.stringify({
        query: {
          kind: 'HogQLQuery',
          query: 'SELECT body, level, session_id, distinct_id, service_name FROM logs WHERE body LIKE {pattern} ORDER BY timestamp',
          values: { pattern: `%${marker}%` },
        },
        refresh: 'force_blocking',
      }),
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { results: string[][] }).results;
  }

  /** Opens the site, prints three console lines with `marker`, and answers the page's session id. */
  async function printLines(marker: string): Promise<string> {
    const page = await browser.newPage();
    await page.goto(site.url);
    await page.waitForFunction('window.posthog && window.posthog.__loaded && window.posthog.get_session_id()', undefined, { timeout: 30_000 });
    // The remote config answered (whatever it said) once the flags request came back.
    await page.waitForFunction('window.posthog.featureFlags && window.posthog.featureFlags.hasLoadedFlags', undefined, { timeout: 30_000 });
    const sessionId = await page.evaluate<string>('window.posthog.get_session_id()');
    // Console capture starts once the lazily loaded logs script (from Plover's /static/) is in.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await page.evaluate(`console.log('${marker} info line'); console.warn('${marker} warn line'); console.error('${marker} error line')`);
    // Leaving the page flushes what posthog-js still holds.
    await page.waitForTimeout(6_000);
    await page.close({ runBeforeUnload: true });
    return sessionId;
  }

  it('stores nothing while the project has console-log capture off', async () => {
    await printLines('OFF-MARKER');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await linesWith('OFF-MARKER')).toEqual([]);
  });

  it('with the project setting on, posthog-js sends the console and HogQL reads each line with its level, session and person', async () => {
    const patched = await api('', { method: 'PATCH', body: JSON.stringify({ logs_settings: { capture_console_logs: true } }) });
    expect(patched.status).toBe(200);
    expect(((await patched.json()) as { logs_settings: unknown }).logs_settings).toEqual({ capture_console_logs: true });

    const sessionId = await printLines('ON-MARKER');
    const deadline = Date.now() + 60_000;
    let lines = await linesWith('ON-MARKER');
    while (lines.length < 3 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      lines = await linesWith('ON-MARKER');
    }
    // posthog-js's console capture sends each argument serialized as JSON (a string in quotes), kept as sent.
    expect(lines).toEqual([
      ['"ON-MARKER info line"', 'info', sessionId, SITE_USER, 'posthog-browser-logs'],
      ['"ON-MARKER warn line"', 'warn', sessionId, SITE_USER, 'posthog-browser-logs'],
      ['"ON-MARKER error line"', 'error', sessionId, SITE_USER, 'posthog-browser-logs'],
    ]);
  });
});
