/**
 * Web analytics end to end: posthog-js (the installed package's browser bundle) on a three-page site of the
 * test's own, in headless Chromium, sending to embedded Plover. One visitor reads three pages and leaves, a
 * second one lands and bounces; then `WebOverviewQuery` and the console's Web analytics screen both show two
 * visitors, four views, two sessions and a bounce rate of 50 %, and a value clicked in a table filters the screen.
 */
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { describeWithBrowser, launchBrowser } from '../../../test/support/browser';
import { startEmbedded } from '../../../test/support/embedded';
import { startSite, type Site } from '../../../test/support/site';
import { ConsoleTarget, screenshot, signIn, usePage } from './support/console';

const SITE_PATHS = ['/', '/pricing', '/about'];

/** A link to another site on the last page: its click is an outbound click (`$external_click_url`). */
const OUTBOUND = 'https://outbound.example/docs';

/**
 * A page of the site: posthog-js sending every event at once (no batching), pageviews and pageleaves; autocapture
 * only on the last page, which links to another site.
 */
function sitePage(title: string, apiHost: string, token: string, outbound: boolean): string {
  // Headless Chromium's user agent reads as a bot, whose events posthog-js drops unless told otherwise.
  const config = {
    api_host: apiHost,
    person_profiles: 'always',
    autocapture: outbound,
    capture_pageview: true,
    capture_pageleave: true,
    request_batching: false,
    opt_out_useragent_filter: true,
    disable_session_recording: true,
  };
  const links = [...SITE_PATHS, ...(outbound ? [`${OUTBOUND}?ref=site#intro`] : [])].map((href) => `<a href="${href}">${href}</a>`).join(' ');
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>${title}</title>
    <script src="/posthog/array.js"></script>
    <script>posthog.init(${JSON.stringify(token)}, ${JSON.stringify(config)});</script>
  </head>
  <body><h1>${title}</h1><nav>${links}</nav></body>
</html>`;
}

interface OverviewItem {
  key: string;
  value: number | null;
}

const target = {} as { console: ConsoleTarget; site: Site; browser: Browser };

beforeAll(async () => {
  target.console = new ConsoleTarget(await startEmbedded());
  const { plover } = target.console;
  const pages = Object.fromEntries(
    SITE_PATHS.map((at) => [at, sitePage(`Site ${at}`, target.console.base, plover.credentials.token, at === SITE_PATHS.at(-1))]),
  );
  target.site = await startSite(pages, path.dirname(require.resolve('posthog-js/dist/array.js')));
}, 180_000);

afterAll(async () => {
  await target.site?.close();
  await target.console?.plover.stop();
});

/** The overview's figures by key, computed afresh. */
async function overview(properties: unknown[] = []): Promise<Record<string, number | null>> {
  const { results } = await target.console.api<{ results: OverviewItem[] }>('POST', `/api/projects/${target.console.plover.credentials.projectId}/query/`, {
    query: { kind: 'WebOverviewQuery', dateRange: { date_from: '-7d' }, properties },
    refresh: 'force_blocking',
  });
  return Object.fromEntries(results.map((item) => [item.key, item.value]));
}

/** The outbound links' rows `[url, visitors, clicks]`, computed afresh. */
async function outboundClicks(): Promise<unknown[][]> {
  const { results } = await target.console.api<{ results: unknown[][] }>('POST', `/api/projects/${target.console.plover.credentials.projectId}/query/`, {
    query: { kind: 'WebExternalClicksTableQuery', dateRange: { date_from: '-7d' }, stripQueryParams: true },
    refresh: 'force_blocking',
  });
  return results;
}

/** Opens `url` and waits for posthog-js's pageview to be accepted by Plover. */
async function visit(page: Page, url: string): Promise<void> {
  const sent = page.waitForResponse(
    (response) => response.url().startsWith(target.console.base) && /\/(e|i\/v0\/e)\//.test(new URL(response.url()).pathname) && response.status() === 200,
  );
  await page.goto(url);
  await sent;
  await page.waitForLoadState('networkidle');
}

describeWithBrowser()('web analytics from posthog-js in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('counts a three-page visit and a bounce: 2 visitors, 4 views, 2 sessions, 50% bounce', async () => {
    // Each visitor is a browser context of its own: its own storage, so its own distinct id and session.
    const reader = await browser.newContext();
    const readerPage = await reader.newPage();
    for (const at of SITE_PATHS) await visit(readerPage, new URL(at, target.site.url).toString());
    // The last page's link to another site (answered here, never fetched): posthog-js sends the click first.
    await readerPage.route(`${OUTBOUND}**`, (route) => route.fulfill({ contentType: 'text/html', body: '<title>Elsewhere</title>' }));
    await readerPage.getByRole('link', { name: /outbound\.example/ }).click();
    await readerPage.waitForURL(`${OUTBOUND}**`);
    await readerPage.close({ runBeforeUnload: true });
    await reader.close();
    const bouncer = await browser.newContext();
    const bouncerPage = await bouncer.newPage();
    await visit(bouncerPage, new URL('/pricing', target.site.url).toString());
    await bouncerPage.close({ runBeforeUnload: true });
    await bouncer.close();

    const deadline = Date.now() + 60_000;
    let figures = await overview();
    while (figures.views !== 4 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      figures = await overview();
    }
    expect(figures).toMatchObject({ visitors: 2, views: 4, sessions: 2, 'bounce rate': 50 });
    // The reader's click on the link to another site, one row whatever its query string and fragment.
    let clicks = await outboundClicks();
    while (clicks.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      clicks = await outboundClicks();
    }
    expect(clicks).toEqual([[OUTBOUND, 1, 1]]);
  }, 180_000);

  describe('the Web analytics screen', () => {
    const view = usePage();

    /** The overview figures as the screen writes them, by key. */
    async function shownFigures(page: Page): Promise<Record<string, string | null>> {
      await page.locator('.web-overview').waitFor();
      const keys = ['visitors', 'views', 'sessions', 'bounce rate'];
      const shown = await Promise.all(keys.map(async (key) => [key, await page.locator(`[data-key="${key}"] .big-number`).textContent()] as const));
      return Object.fromEntries(shown);
    }

    it('shows the same figures, the tables and the live visitors, filters by a clicked page, at desktop and phone width', async () => {
      const { page, problems } = view;
      const { plover } = target.console;
      await signIn(page, target.console.base, plover.credentials.personalKey);
      await page.waitForURL(`**/project/${plover.credentials.projectId}`);
      await page.getByRole('link', { name: 'Web analytics' }).click();
      await page.waitForURL('**/web');
      await page.locator('.web-overview').waitFor();
      await expect(shownFigures(page)).resolves.toEqual({ visitors: '2', views: '4', sessions: '2', 'bounce rate': '50%' });
      await expect(page.getByTestId('live-visitors').textContent()).resolves.toBe('2');
      await page.locator('#web-visitors-title ~ figure canvas').waitFor();

      // Pages: /pricing was seen by both visitors; the bounce rate is that of the sessions that entered there.
      const pages = page.getByRole('region', { name: 'Path: visitors and views' });
      await pages.getByRole('row', { name: /^\/about/ }).waitFor();
      await expect(pages.getByRole('row').allTextContents()).resolves.toEqual(['PathVisitorsViewsBounce rate', '/pricing22100%', '/110%', '/about11—']);
      await page.getByRole('radio', { name: 'Entry path' }).check();
      const entries = page.getByRole('region', { name: 'Entry path: visitors and views' });
      await entries.getByRole('row', { name: /^\/pricing/ }).waitFor();
      await expect(entries.getByRole('row').allTextContents()).resolves.toEqual(['Entry pathVisitorsViewsBounce rate', '/130%', '/pricing11100%']);
      await page.getByRole('radio', { name: 'Outbound link' }).check();
      const outbound = page.getByRole('region', { name: 'Outbound link: visitors and clicks' });
      await expect(outbound.getByRole('link', { name: OUTBOUND }).getAttribute('href')).resolves.toBe(OUTBOUND);
      await expect(outbound.getByRole('row').allTextContents()).resolves.toEqual(['Outbound linkVisitorsClicks', `${OUTBOUND}11`]);
      await screenshot(page, 'web-analytics-outbound');
      await page.getByRole('radio', { name: 'Entry path' }).check();
      await entries.getByRole('row', { name: /^\/pricing/ }).waitFor();
      await screenshot(page, 'web-analytics');

      // Comparing: the previous week had nothing.
      await page.getByLabel('Compare to the previous period').check();
      await page.waitForURL('**/web?compare=1');
      await page.locator('[data-key="visitors"] .change', { hasText: /^— vs 0$/ }).waitFor();
      await expect(page.locator('[data-key="bounce rate"] .change').textContent()).resolves.toBe('— vs —');

      // A click on a page keeps only its pageviews: one in each session, one of which bounced.
      await page.getByLabel('Compare to the previous period').uncheck();
      await page.getByRole('radio', { name: 'Path', exact: true }).check();
      await pages.getByRole('button', { name: '/pricing' }).click();
      await page.getByRole('list', { name: 'Filters' }).waitFor();
      await page.locator('[data-key="views"] .big-number', { hasText: /^2$/ }).waitFor();
      const filtered = await overview([{ key: '$pathname', value: '/pricing', operator: 'exact', type: 'event' }]);
      expect(filtered).toMatchObject({ visitors: 2, views: 2, sessions: 2, 'bounce rate': 50 });
      await expect(shownFigures(page)).resolves.toEqual({ visitors: '2', views: '2', sessions: '2', 'bounce rate': '50%' });
      await pages.getByRole('row', { name: /^\/about/ }).waitFor({ state: 'detached' });
      await expect(pages.getByRole('row').allTextContents()).resolves.toEqual(['PathVisitorsViewsBounce rate', '/pricing22100%']);
      expect(new URL(page.url()).searchParams.get('filters')).toBe(JSON.stringify([{ key: '$pathname', value: '/pricing' }]));
      await page.getByRole('button', { name: 'Remove the filter $pathname = /pricing' }).click();
      await page.locator('[data-key="views"] .big-number', { hasText: /^4$/ }).waitFor();
      // Every table unfiltered again (the places table is asked last).
      await pages.getByRole('row', { name: /^\/about/ }).waitFor();
      await page
        .getByRole('region', { name: 'Country: visitors and views' })
        .locator('tr', { hasText: /^\(none\)24$/ })
        .waitFor();

      await page.setViewportSize({ width: 375, height: 812 });
      await page.waitForTimeout(300);
      const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow).toBe(0);
      await screenshot(page, 'web-analytics-phone');
      // The browser reports each query the server turned away while the project had three running (the overview's
      // queries, left when the test moved on, go on for a while): the screen waits and asks again.
      expect(problems.filter((text) => !text.includes('429 (Too Many Requests)'))).toEqual([]);
    }, 240_000);
  });
});
