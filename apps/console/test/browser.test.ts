/**
 * The console end to end: embedded Plover as `npm start` runs it (which builds the console from its sources),
 * events sent through capture, and Debian's Chromium signing in and using the screens as a person would. Also
 * checks the client's operations against the OpenAPI document the same server publishes.
 */
import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { operations } from '../src/api/operations';
import { describeWithBrowser } from '../../../test/support/browser';
import { startEmbedded } from '../../../test/support/embedded';
import { ConsoleTarget, screenshot, signIn, usePage, type CapturedEvent } from './support/console';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * Pageviews over the last 14 days: on day d before today (d = 0 … 13) d + 1 of them, the even ones from Chrome on
 * `/`, the odd ones from Firefox on `/pricing` (105 in all: 56 and 49), three users; plus 3 signups in the last hour,
 * 1,000 autocaptures 3 to 6 hours ago and one invitation 5 days ago (older than the latest 1,000 events).
 */
function dataset(now: number): CapturedEvent[] {
  const events: CapturedEvent[] = [];
  const today = now - (now % DAY); // 00:00 UTC, the project's timezone
  for (let d = 0; d < 14; d++) {
    for (let i = 0; i <= d; i++) {
      events.push({
        event: '$pageview',
        distinct_id: `user-${i % 3}`,
        // Never in the last hour, which holds the signups only (soon after midnight, today's move to yesterday).
        timestamp: new Date(Math.min(now - 2 * HOUR, today - d * DAY + i * 1000)).toISOString(),
        properties: { $browser: i % 2 === 0 ? 'Chrome' : 'Firefox', $pathname: i % 2 === 0 ? '/' : '/pricing' },
      });
    }
  }
  for (let i = 0; i < 3; i++)
    events.push({ event: 'signup', distinct_id: `user-${i}`, timestamp: new Date(now - (i + 1) * 60_000).toISOString(), properties: {} });
  for (let i = 0; i < 1000; i++)
    events.push({ event: '$autocapture', distinct_id: `user-${i % 3}`, timestamp: new Date(now - 3 * HOUR - i * 10_000).toISOString(), properties: {} });
  events.push({ event: 'invited', distinct_id: 'user-0', timestamp: new Date(now - 5 * DAY).toISOString(), properties: {} });
  return events;
}

const target = {} as { console: ConsoleTarget; events: number };

beforeAll(async () => {
  target.console = new ConsoleTarget(await startEmbedded());
  const events = dataset(Date.now());
  target.events = events.length;
  await target.console.capture(events);
  await target.console.waitForEvents(events.length);
}, 180_000);

afterAll(async () => {
  await target.console?.plover.stop();
});

describe('the console’s API client', () => {
  it('calls only operations the served OpenAPI document has, with the scope it names', async () => {
    const response = await fetch(`${target.console.base}/api/schema/`);
    const document = (await response.json()) as { paths: Record<string, Record<string, { 'x-required-scope'?: string }>> };
    for (const [name, operation] of Object.entries(operations)) {
      const served = document.paths[operation.path]?.[operation.method.toLowerCase()];
      expect({ name, scope: served?.['x-required-scope'] }).toEqual({ name, scope: operation.scope });
    }
  });
});

describeWithBrowser()('the console in Chromium', () => {
  const view = usePage();
  let page: Page;
  /** Console errors and Content-Security-Policy violations of the page: none are expected. */
  let problems: string[];
  beforeEach(() => {
    ({ page, problems } = view);
  });
  afterEach(() => {
    // The key never travels in a URL, and the server never logs it (the first start prints it once, before listening).
    const key = target.console.plover.credentials.personalKey;
    const output = target.console.plover.output();
    expect(page.url()).not.toContain(key);
    expect(output.slice(output.indexOf('"msg":"listening"'))).not.toContain(key);
  });

  it('refuses a wrong key on the sign-in form', async () => {
    await signIn(page, target.console.base, 'phx_this_key_does_not_exist_0000000000000000');
    await expect(page.getByRole('alert').textContent()).resolves.toContain('unknown or was revoked');
    await expect(page.getByLabel('Personal API key').isVisible()).resolves.toBe(true);
    await screenshot(page, 'sign-in-wrong-key');
    // The browser reports the refused request itself; nothing else may go wrong.
    expect(problems.filter((text) => !text.includes('401'))).toEqual([]);
  }, 240_000);

  it('signs in and shows the events just sent on the overview, in light, dark and at phone width', async () => {
    const { plover } = target.console;
    await signIn(page, target.console.base, plover.credentials.personalKey);
    await page.waitForURL(`**/project/${plover.credentials.projectId}`);
    await page.locator('#events-per-day-title ~ figure canvas').waitFor();
    await expect(page.locator('#events-14-days-title ~ .big-number').textContent()).resolves.toBe(target.events.toLocaleString('en-US'));
    await expect(page.getByTestId('live-count').textContent()).resolves.toBe('3');
    await expect(page.locator('#events-per-day-title ~ figure .legend').textContent()).resolves.toBe(`Events${target.events.toLocaleString('en-US')}`);
    const pages = page.getByRole('region', { name: 'Top pages by pageviews, last 14 days' });
    // Each table is its own request: wait for its last row before reading them all.
    await pages.getByRole('row', { name: '/pricing' }).waitFor();
    await expect(pages.getByRole('row').allTextContents()).resolves.toEqual(['PathEvents', '/56', '/pricing49']);
    // Every event name of the range, counted over all of it: also one that none of the latest 1,000 events has.
    const topEvents = page.getByRole('region', { name: 'Top events, last 14 days' });
    await topEvents.getByRole('row', { name: 'invited' }).waitFor();
    await expect(topEvents.getByRole('row').allTextContents()).resolves.toEqual(['EventEvents', '$autocapture1,000', '$pageview105', 'signup3', 'invited1']);
    await screenshot(page, 'overview-light');
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForTimeout(300);
    await screenshot(page, 'overview-dark');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    await screenshot(page, 'overview-phone');
    expect(problems).toEqual([]);
  }, 240_000);

  it('builds a trend with a breakdown, saves it, and reopens it from the list', async () => {
    const { plover } = target.console;
    await signIn(page, target.console.base, plover.credentials.personalKey);
    await page.getByRole('link', { name: 'Insights', exact: true }).click();
    await page.getByRole('link', { name: 'New insight' }).click();
    await page.waitForURL('**/insights/new');
    await page.getByLabel('Date range').selectOption('-14d');
    await page.getByLabel('Property', { exact: true }).fill('$browser');
    const legend = page.locator('.result .legend');
    await expect(legend.getByText('Firefox').waitFor()).resolves.toBeUndefined();
    await expect(legend.textContent()).resolves.toBe('Chrome56Firefox49');
    // A filter on the path leaves the Firefox pageviews (all on /pricing); removing it brings Chrome back.
    await page.getByRole('button', { name: 'Add filter' }).click();
    const filter = page.getByRole('group', { name: 'Filter 1' });
    await filter.getByLabel('Property', { exact: true }).fill('$pathname');
    await filter.getByLabel('Value', { exact: true }).fill('/pricing');
    await legend.filter({ hasText: /^Firefox49$/ }).waitFor();
    await screenshot(page, 'insight-builder');
    await page.getByRole('button', { name: 'Remove filter 1' }).click();
    await legend.filter({ hasText: /^Chrome56Firefox49$/ }).waitFor();
    // An incomplete form says what it lacks and asks nothing (a refused request would be a console error).
    const measure = page.getByRole('group', { name: 'Series A' }).getByLabel('Measure');
    await measure.selectOption('avg');
    await page.getByText('Series A: choose the property to aggregate.').waitFor();
    await page.waitForTimeout(1000); // past the builder's 400 ms recompute delay
    await measure.selectOption('total');
    await legend.filter({ hasText: /^Chrome56Firefox49$/ }).waitFor();
    await page.getByRole('radio', { name: 'Table' }).check();
    await page.getByRole('region', { name: 'Trend totals' }).waitFor();
    await expect(page.getByRole('region', { name: 'Trend totals' }).getByRole('row').allTextContents()).resolves.toEqual([
      'SeriesValue',
      'Chrome56',
      'Firefox49',
    ]);
    const [csv] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
    expect(csv.suggestedFilename()).toMatch(/^trends \(\d{4}-\d{2}-\d{2} \d{4}-\d{2}-\d{2}\)\.csv$/);
    const rows = fs
      .readFileSync(await csv.path(), 'utf8')
      .trim()
      .split('\r\n');
    expect(rows.map((row) => row.split(',')[0])).toEqual(['series', 'Chrome', 'Firefox']);
    await page.getByLabel('Name').fill('Pageviews by browser');
    await page.getByRole('button', { name: 'Save insight' }).click();
    await page.waitForURL(/\/insights\/(?!new)[A-Za-z0-9]+$/);
    await page.getByRole('heading', { level: 1, name: 'Pageviews by browser' }).waitFor();
    type Source = { kind: string; breakdownFilter?: { breakdown?: string }; trendsFilter?: { display?: string } };
    const saved = await target.console.api<{ results: Array<{ name: string; query: { kind: string; source: Source } }> }>(
      'GET',
      `/api/projects/${plover.credentials.projectId}/insights/?saved=true`,
    );
    expect(
      saved.results.map(({ name, query }) => [
        name,
        query.kind,
        query.source.kind,
        query.source.breakdownFilter?.breakdown,
        query.source.trendsFilter?.display,
      ]),
    ).toEqual([['Pageviews by browser', 'InsightVizNode', 'TrendsQuery', '$browser', 'ActionsTable']]);

    await page.getByRole('link', { name: 'Insights', exact: true }).click();
    const recent = page.getByRole('region', { name: 'Recently viewed' });
    await recent.getByRole('link', { name: 'Pageviews by browser' }).click();
    await expect(page.getByLabel('Property', { exact: true }).inputValue()).resolves.toBe('$browser');
    await expect(page.getByRole('radio', { name: 'Table' }).isChecked()).resolves.toBe(true);
    await page.getByRole('region', { name: 'Trend totals' }).waitFor();
    await expect(page.getByRole('region', { name: 'Trend totals' }).getByRole('row').allTextContents()).resolves.toEqual([
      'SeriesValue',
      'Chrome56',
      'Firefox49',
    ]);
    await page.getByRole('radio', { name: 'Bar' }).check();
    await page.locator('.result canvas').waitFor();
    await screenshot(page, 'insight-reopened');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'insight-phone');
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole('link', { name: 'Insights', exact: true }).click();
    await page.getByRole('region', { name: 'Saved insights' }).getByRole('link', { name: 'Pageviews by browser' }).waitFor();
    await screenshot(page, 'insights-list');
    expect(problems).toEqual([]);
  }, 240_000);

  it('correlates a two-step funnel', async () => {
    await signIn(page, target.console.base, target.console.plover.credentials.personalKey);
    await page.getByRole('link', { name: 'Insights', exact: true }).click();
    await page.getByRole('link', { name: 'Funnel correlation' }).click();
    await page.getByRole('group', { name: 'Step 2' }).getByLabel('Event').fill('signup');
    await page.getByRole('button', { name: 'Correlate' }).click();
    // Every one of the three users who viewed a page signed up afterwards: nothing to compare.
    await expect(page.getByText('Every person converted, or none did').waitFor()).resolves.toBeUndefined();
    await screenshot(page, 'funnel-correlation');
    expect(problems).toEqual([]);
  }, 240_000);

  it('says which scope a key lacks instead of failing', async () => {
    const key = await target.console.newKey('no insights', ['project:read']);
    await signIn(page, target.console.base, key.value);
    await page.waitForURL(`**/project/${target.console.plover.credentials.projectId}`);
    const alert = page.getByRole('alert').first();
    await expect(alert.textContent()).resolves.toContain('Missing scope: insight:read');
    await screenshot(page, 'missing-scope');
  }, 240_000);

  it('says when the key may not see the project in the address', async () => {
    const { plover } = target.console;
    const other = await target.console.api<{ id: number }>('POST', '/api/projects/', { name: 'Other project' });
    const key = await target.console.newKey('first project only', ['*'], [plover.credentials.projectId]);
    await signIn(page, target.console.base, key.value);
    await page.waitForURL(`**/project/${plover.credentials.projectId}`);
    await page.goto(`${target.console.base}/project/${other.id}/insights`);
    const alert = page.getByRole('alert');
    await expect(alert.textContent()).resolves.toContain(`API key does not have access to the requested project: ID ${other.id}.`);
    await expect(alert.textContent()).resolves.toContain('No access');
    await screenshot(page, 'project-out-of-reach');
  }, 240_000);

  it('switches to another project, which shows how to send it events', async () => {
    const { plover } = target.console;
    const empty = await target.console.api<{ id: number; api_token: string }>('POST', '/api/projects/', { name: 'Empty project' });
    await signIn(page, target.console.base, plover.credentials.personalKey);
    await page.waitForURL(`**/project/${plover.credentials.projectId}`);
    await page.getByLabel('Project', { exact: true }).selectOption({ label: 'Empty project' });
    await page.waitForURL(`**/project/${empty.id}`);
    await page.getByText('No events yet').waitFor();
    const snippet = await page.getByLabel('posthog-js snippet').textContent();
    expect(snippet).toContain(`posthog.init('${empty.api_token}'`);
    expect(snippet).toContain(`api_host: '${target.console.base}'`);
    await screenshot(page, 'overview-empty');
    expect(problems).toEqual([]);
  }, 240_000);

  it('sends a key revoked while in use back to the sign-in form', async () => {
    const key = await target.console.newKey('revoked soon', ['*']);
    await signIn(page, target.console.base, key.value);
    // Signed in once the navigation shows; the overview's charts need not have arrived (their queries may wait
    // for the project's analysis slots behind earlier tests' on a busy machine), any request of the key will do.
    await page.getByRole('link', { name: 'Insights', exact: true }).waitFor();
    await target.console.api('DELETE', `/api/personal_api_keys/${key.id}/`);
    // The next request made with the key signs out: the click's, or one of a panel still loading (on a slow
    // machine the overview may not be done), whichever comes first; the click is moot once the nav is gone.
    await page
      .getByRole('link', { name: 'Insights', exact: true })
      .click({ timeout: 5_000 })
      .catch(() => undefined);
    await page.getByRole('alert').filter({ hasText: 'no longer accepts this key' }).waitFor({ timeout: 60_000 });
    await expect(page.getByLabel('Personal API key').inputValue()).resolves.toBe('');
    await expect(page.evaluate('sessionStorage.length')).resolves.toBe(0);
  }, 240_000);
});
