/**
 * The console's analysis screens in Chromium against embedded Plover, on events sent through `/batch/`: the SQL
 * editor (run, an error at its position, chart, CSV, save and reopen), and the funnel, retention and paths
 * screens, whose numbers must be the ones the query API answers for the same node.
 */
import fs from 'node:fs';
import type { Locator, Page } from 'playwright-core';
import { describeWithBrowser } from '../../../test/support/browser';
import { startEmbedded } from '../../../test/support/embedded';
import { ConsoleTarget, screenshot, signIn, usePage, type CapturedEvent } from './support/console';

const DAY = 86_400_000;

/**
 * Ten users view a page at noon (UTC, the project's timezone) six days ago; the first six sign up a minute later and
 * the first three of those buy a minute after that. The first five come back for a pageview five days ago, the
 * first two four days ago. Chrome for the even users, Firefox for the odd ones. The first pageview is of
 * https://shop.test/landing/ for the even users and https://shop.test/pricing for the odd ones, the later ones of
 * https://shop.test/blog.
 */
function dataset(now: number): CapturedEvent[] {
  const noon = now - (now % DAY) - 6 * DAY + DAY / 2;
  const events: CapturedEvent[] = [];
  const add = (user: number, event: string, at: number, url?: string) =>
    events.push({
      event,
      distinct_id: `user-${user}`,
      timestamp: new Date(at).toISOString(),
      properties: { $browser: user % 2 === 0 ? 'Chrome' : 'Firefox', ...(url && { $current_url: url }) },
    });
  for (let user = 0; user < 10; user++) {
    add(user, '$pageview', noon, user % 2 === 0 ? 'https://shop.test/landing/' : 'https://shop.test/pricing');
    if (user < 6) add(user, 'signup', noon + 60_000);
    if (user < 3) add(user, 'purchase', noon + 120_000);
    if (user < 5) add(user, '$pageview', noon + DAY, 'https://shop.test/blog');
    if (user < 2) add(user, '$pageview', noon + 2 * DAY, 'https://shop.test/blog');
  }
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

/** The query API's answer for `query`, as a script would ask it. */
function query<T>(node: Record<string, unknown>): Promise<T> {
  return target.console.api<T>('POST', `/api/projects/${target.console.plover.credentials.projectId}/query/`, { query: node });
}

/** Waits until the texts of what `locator` finds are `expected` (a screen recomputes shortly after an edit). */
async function texts(locator: Locator, expected: string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let seen: string[] = [];
  while (Date.now() < deadline) {
    seen = await locator.allTextContents();
    if (JSON.stringify(seen) === JSON.stringify(expected)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`expected ${JSON.stringify(expected)}, saw ${JSON.stringify(seen)}`);
}

async function open(page: Page, screen: string): Promise<void> {
  const { plover } = target.console;
  await signIn(page, target.console.base, plover.credentials.personalKey);
  await page.waitForURL(`**/project/${plover.credentials.projectId}`);
  await page.getByRole('link', { name: 'Insights', exact: true }).click();
  await page.getByRole('link', { name: screen, exact: true }).click();
}

describeWithBrowser()('the analysis screens in Chromium', () => {
  const view = usePage();

  it('runs HogQL, marks an error where it is, draws, exports and saves the query', async () => {
    const { page, problems } = view;
    await open(page, 'SQL');
    const editor = page.getByRole('textbox', { name: 'Query' });
    const sql = 'select event, count() as n, uniq(distinct_id) as users\nfrom events\ngroup by event\norder by n desc, event';
    await editor.fill(sql);
    await editor.press('Control+Enter');
    const rows = page.getByRole('region', { name: 'Query result' }).getByRole('row');
    await rows.nth(3).waitFor();
    const api = await query<{ results: unknown[][] }>({ kind: 'HogQLQuery', query: sql });
    expect(api.results.map((row) => row.map(String))).toEqual([
      ['$pageview', '17', '10'],
      ['signup', '6', '6'],
      ['purchase', '3', '3'],
    ]);
    await expect(rows.allTextContents()).resolves.toEqual(['eventnusers', ...api.results.map((row) => row.join(''))]);
    await expect(page.getByText('3 rows', { exact: true }).isVisible()).resolves.toBe(true);

    // The table's CSV holds the rows shown.
    const [csv] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
    expect(fs.readFileSync(await csv.path(), 'utf8')).toBe(`event,n,users\r\n${api.results.map((row) => row.join(',')).join('\r\n')}\r\n`);

    // A bar chart of the counts by event; users unticked.
    await page.getByRole('radio', { name: 'Bar' }).check();
    await page.getByRole('checkbox', { name: 'users' }).uncheck();
    await expect(page.locator('.result-panel .legend').textContent()).resolves.toBe('n');
    await page.locator('.result-panel canvas').waitFor();
    await screenshot(page, 'sql-chart');

    // A misspelt column: marked where it is, and described with its line and column.
    await editor.fill('select event,\n  evnt\nfrom events');
    const alert = page.locator('#hogql-problem');
    await alert.filter({ hasText: 'Line 2, column 3' }).waitFor();
    await expect(page.locator('.code-input .tok-error').allTextContents()).resolves.toEqual(['evnt']);
    await expect(editor.getAttribute('aria-invalid')).resolves.toBe('true');
    await screenshot(page, 'sql-error');
    // Running it anyway shows the server's refusal.
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.locator('.result-panel .problem').waitFor();

    await editor.fill(sql);
    await alert.waitFor({ state: 'hidden' });
    await editor.press('Control+Enter');
    await page.getByText('3 rows', { exact: true }).waitFor();
    await page.getByLabel('Name').fill('Events by name');
    await page.getByRole('button', { name: 'Save insight' }).click();
    await page.waitForURL(/\/insights\/(?!sql)[A-Za-z0-9]+$/);
    const shortId = page.url().split('/').pop();
    const saved = await target.console.api<{ results: Array<{ name: string; query: Record<string, unknown> }> }>(
      'GET',
      `/api/projects/${target.console.plover.credentials.projectId}/insights/?short_id=${shortId}`,
    );
    expect(saved.results[0]).toMatchObject({
      name: 'Events by name',
      query: {
        kind: 'DataVisualizationNode',
        source: { kind: 'HogQLQuery', query: sql },
        display: 'ActionsBar',
        chartSettings: { xAxis: { column: 'event' }, yAxis: [{ column: 'n' }] },
      },
    });
    // Reopened: the query, its display and columns as saved, run at once.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Events by name' }).waitFor();
    await expect(page.getByRole('textbox', { name: 'Query' }).inputValue()).resolves.toBe(sql);
    await expect(page.getByRole('radio', { name: 'Bar' }).isChecked()).resolves.toBe(true);
    await expect(page.locator('.result-panel .legend').textContent()).resolves.toBe('n');
    expect(problems.filter((text) => !text.includes('400'))).toEqual([]);
  }, 240_000);

  it('builds a funnel with the query API’s numbers, broken down, as time to convert and trend, saved and reopened', async () => {
    const { page, problems } = view;
    await open(page, 'New funnel');
    await page.getByRole('group', { name: 'Step 2' }).getByLabel('Event').fill('signup');
    await page.getByRole('button', { name: 'Add step' }).click();
    await page.getByRole('group', { name: 'Step 3' }).getByLabel('Event').fill('purchase');
    const steps = (event: string) => ({ kind: 'EventsNode', event });
    const api = await query<{ results: Array<{ name: string; count: number }> }>({
      kind: 'FunnelsQuery',
      series: [steps('$pageview'), steps('signup'), steps('purchase')],
      dateRange: { date_from: '-14d' },
    });
    expect(api.results.map((step) => [step.name, step.count])).toEqual([
      ['$pageview', 10],
      ['signup', 6],
      ['purchase', 3],
    ]);
    const table = page.getByRole('region', { name: 'Funnel steps', exact: true });
    await table.getByRole('row', { name: /purchase/ }).waitFor();
    const cells = async () => (await table.getByRole('row').all()).slice(1).map((row) => row.locator('td').allTextContents());
    const rows = await Promise.all(await cells());
    expect(rows.map((row) => row.slice(0, 5))).toEqual([
      ['$pageview', '10', '100%', '100%', '0'],
      ['signup', '6', '60%', '60%', '4'],
      ['purchase', '3', '30%', '50%', '3'],
    ]);
    await expect(page.getByTestId('step-drop-off').allTextContents()).resolves.toEqual(['4 dropped off (40%)', '3 dropped off (50%)']);
    await screenshot(page, 'funnel-steps');

    // A step's own filter: only Chrome signups (users 0, 2, 4 of the six).
    const step2 = page.getByRole('group', { name: 'Step 2' });
    await step2.getByRole('button', { name: 'Add filter' }).click();
    const filter = page.getByRole('group', { name: 'Step 2 filter 1' });
    await filter.getByLabel('Property', { exact: true }).fill('$browser');
    await filter.getByLabel('Value', { exact: true }).fill('Chrome');
    const persons = table.locator('tbody td:nth-child(2)');
    await texts(persons, ['10', '3', '2']);
    await page.getByRole('button', { name: 'Remove step 2 filter 1' }).click();
    await texts(persons, ['10', '6', '3']);

    // Broken down by browser: one bar per browser in each step, a row per browser.
    await page.getByLabel('Property', { exact: true }).last().fill('$browser');
    const byBrowser = page.getByRole('region', { name: 'Funnel steps by breakdown' });
    await byBrowser.getByRole('row', { name: /Firefox/ }).waitFor();
    await expect(byBrowser.getByRole('row').allTextContents()).resolves.toEqual([
      'Breakdown1. $pageview2. signup3. purchaseConversion',
      'Chrome53240%',
      'Firefox53120%',
    ]);
    await screenshot(page, 'funnel-breakdown');
    await page.getByLabel('Property', { exact: true }).last().fill('');

    await page.getByRole('radio', { name: 'Time to convert' }).check();
    await page.getByText('Average time to convert: 2m 00s').waitFor();
    await page.locator('.result canvas').waitFor();
    await screenshot(page, 'funnel-time-to-convert');
    await page.getByRole('radio', { name: 'Trend' }).check();
    await page.locator('.result .legend').filter({ hasText: 'Conversion rate (%)' }).waitFor();
    await screenshot(page, 'funnel-trend');

    await page.getByRole('radio', { name: 'Steps' }).check();
    await table.getByRole('row', { name: /purchase/ }).waitFor();
    await page.getByRole('button', { name: 'Save insight' }).click();
    await page.waitForURL(/\/insights\/(?!funnel)[A-Za-z0-9]+$/);
    await page.reload();
    await page.getByRole('heading', { level: 1, name: '$pageview → signup → purchase' }).waitFor();
    await expect(page.getByRole('group', { name: 'Step 3' }).getByLabel('Event').inputValue()).resolves.toBe('purchase');
    await texts(persons, ['10', '6', '3']);
    expect(problems).toEqual([]);
  }, 240_000);

  it('shows the retention grid the query API computes, with its mean line, saved and reopened', async () => {
    const { page, problems } = view;
    await open(page, 'New retention');
    const node = (retentionType: string) => ({
      kind: 'RetentionQuery',
      retentionFilter: {
        targetEntity: { id: '$pageview', type: 'events' },
        returningEntity: { id: '$pageview', type: 'events' },
        retentionType,
        period: 'Day',
        totalIntervals: 7,
      },
    });
    const grid = page.getByRole('region', { name: 'Retention by cohort' });
    const rowTexts = grid.locator('tbody tr');
    // Today's period is in progress (`*`); the cells of periods yet to come are empty.
    // First time: everyone's first pageview is six days ago, five come back the next day and two the day after.
    const firstTime = await query<{ results: Array<{ values: Array<{ count: number }> }> }>(node('retention_first_time'));
    expect(firstTime.results.map((row) => row.values.map((value) => value.count))[0]).toEqual([10, 5, 2, 0, 0, 0, 0]);
    await texts(rowTexts.first().locator('td'), ['', '100.0%', '50.0%', '20.0%', '0.0%', '0.0%', '0.0%', '0.0%']);
    await expect(rowTexts.nth(1).locator('td').allTextContents()).resolves.toEqual(['10', '100.0%', '50.0%', '20.0%', '0.0%', '0.0%', '0.0%', '0.0%*']);
    await screenshot(page, 'retention-first-time');
    // The cohort's size opens its persons.
    await rowTexts
      .nth(1)
      .getByRole('button', { name: /^Persons of the .* cohort: 10$/ })
      .click();
    const cohortPersons = page
      .getByRole('dialog', { name: /^Persons · Cohort of / })
      .getByRole('list', { name: 'Persons' })
      .getByRole('link');
    await cohortPersons.nth(9).waitFor();
    expect(await cohortPersons.count()).toBe(10);
    await screenshot(page, 'retention-cohort-persons');
    await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();

    // Recurring: the five who came back start a cohort of their own the next day, of whom two come back again.
    await page.getByRole('radio', { name: 'Recurring' }).check();
    const recurring = await query<{ results: Array<{ values: Array<{ count: number }> }> }>(node('retention_recurring'));
    const sizes = recurring.results.map((row) => row.values[0]!.count);
    expect(sizes).toEqual([10, 5, 2, 0, 0, 0, 0]);
    await texts(grid.locator('tbody tr td:nth-child(2)'), ['', ...sizes.map(String)]);
    await expect(rowTexts.nth(2).locator('td').allTextContents()).resolves.toEqual(['5', '100.0%', '40.0%', '0.0%', '0.0%', '0.0%', '0.0%*', '']);
    // The mean of each period over the cohorts that had returns in it: (50 + 40) / 2, then 20 alone.
    await expect(rowTexts.first().locator('td').allTextContents()).resolves.toEqual(['', '100.0%', '45.0%', '20.0%', '0.0%', '0.0%', '0.0%', '0.0%']);
    await screenshot(page, 'retention-recurring');

    // In 24-hour windows from each person's first pageview, everyone has one cohort: the first day's.
    await page.getByRole('checkbox', { name: /24-hour windows/ }).check();
    const rolling = await query<{ results: Array<{ values: Array<{ count: number }> }> }>({
      ...node('retention_recurring'),
      retentionFilter: { ...node('retention_recurring').retentionFilter, timeWindowMode: '24_hour_windows' },
    });
    const rollingSizes = rolling.results.map((row) => row.values[0]!.count);
    expect(rollingSizes).toEqual([10, 0, 0, 0, 0, 0, 0]);
    await texts(grid.locator('tbody tr td:nth-child(2)'), ['', ...rollingSizes.map(String)]);
    await page.getByRole('checkbox', { name: /24-hour windows/ }).uncheck();
    await texts(grid.locator('tbody tr td:nth-child(2)'), ['', ...sizes.map(String)]);

    await page.getByRole('button', { name: 'Save insight' }).click();
    await page.waitForURL(/\/insights\/(?!retention)[A-Za-z0-9]+$/);
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Retention of $pageview' }).waitFor();
    await expect(page.getByRole('radio', { name: 'Recurring' }).isChecked()).resolves.toBe(true);
    await texts(grid.locator('tbody tr td:nth-child(2)'), ['', ...sizes.map(String)]);
    expect(problems).toEqual([]);
  }, 240_000);

  it('draws the paths the query API computes as a Sankey diagram, cleaned and from a start point, saved and reopened', async () => {
    const { page, problems } = view;
    await open(page, 'New paths');
    const node = (pathsFilter: Record<string, unknown>) => ({
      kind: 'PathsQuery',
      pathsFilter: { includeEventTypes: [], stepLimit: 5, edgeLimit: 50, ...pathsFilter },
      dateRange: { date_from: '-7d' },
    });
    type Edge = { source: string; target: string; value: number };
    const edgesOf = async (pathsFilter: Record<string, unknown>) =>
      (await query<{ results: Edge[] }>(node(pathsFilter))).results.map((edge) => [edge.source, edge.target, edge.value]);
    const links = page.getByRole('region', { name: 'Path links' }).locator('tbody tr');
    // A row per link: step, from, to, count (the average time, 1m 00s for every link here, last).
    const rowsOf = (edges: Array<[string, string, number]>) =>
      edges.map(([source, target, value]) => {
        const cut = (name: string) => name.slice(name.indexOf('_') + 1);
        return `${source.split('_')[0]}${cut(source)}${cut(target)}${value}1m 00s`;
      });

    // Page views alone make no path (each session has one); with every event, a session is a page, signup, purchase.
    await page.getByRole('checkbox', { name: 'Page views (by URL)' }).uncheck();
    const every = await edgesOf({});
    expect(every).toEqual([
      ['1_https://shop.test/landing', '2_signup', 3],
      ['1_https://shop.test/pricing', '2_signup', 3],
      ['2_signup', '3_purchase', 3],
    ]);
    await texts(links, rowsOf(every as Array<[string, string, number]>));
    const diagram = page.getByRole('region', { name: 'Paths diagram' });
    const nodes = await Promise.all((await diagram.locator('[data-node]').all()).map((each) => each.getAttribute('data-node')));
    expect(nodes.sort()).toEqual(['1_https://shop.test/landing', '1_https://shop.test/pricing', '2_signup', '3_purchase']);
    await expect(diagram.locator('path').count()).resolves.toBe(3);
    await screenshot(page, 'paths');

    // A cleaning rule with a group: each page by its first path segment.
    await page.getByRole('button', { name: 'Add cleaning rule' }).click();
    const rule = page.getByRole('group', { name: 'Cleaning rule 1' });
    await rule.getByLabel('Pattern').fill('https://shop\\.test/(\\w+).*');
    await rule.getByLabel('Replace with').fill('/\\1');
    const cleaning = [{ regex: 'https://shop\\.test/(\\w+).*', alias: '/\\1' }];
    const cleaned = await edgesOf({ localPathCleaningFilters: cleaning });
    expect(cleaned).toEqual([
      ['1_/landing', '2_signup', 3],
      ['1_/pricing', '2_signup', 3],
      ['2_signup', '3_purchase', 3],
    ]);
    await texts(links, rowsOf(cleaned as Array<[string, string, number]>));

    // From signup on: one link.
    await page.getByLabel('Start point').fill('signup');
    const fromSignup = await edgesOf({ localPathCleaningFilters: cleaning, startPoint: 'signup' });
    expect(fromSignup).toEqual([['1_signup', '2_purchase', 3]]);
    await texts(links, rowsOf(fromSignup as Array<[string, string, number]>));

    await page.getByRole('button', { name: 'Save insight' }).click();
    await page.waitForURL(/\/insights\/(?!paths)[A-Za-z0-9]+$/);
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Paths from signup' }).waitFor();
    await expect(page.getByLabel('Start point').inputValue()).resolves.toBe('signup');
    await expect(page.getByRole('group', { name: 'Cleaning rule 1' }).getByLabel('Pattern').inputValue()).resolves.toBe(cleaning[0]!.regex);
    await expect(page.getByRole('checkbox', { name: 'Page views (by URL)' }).isChecked()).resolves.toBe(false);
    await texts(links, rowsOf(fromSignup as Array<[string, string, number]>));

    // On a phone the builder stacks above the diagram, which scrolls sideways instead of squeezing its columns.
    await page.getByLabel('Start point').fill('');
    await texts(links, rowsOf(cleaned as Array<[string, string, number]>));
    await page.setViewportSize({ width: 390, height: 844 });
    await diagram.scrollIntoViewIfNeeded();
    await screenshot(page, 'paths-phone');
    expect(problems).toEqual([]);
  }, 240_000);

  it('opens the persons behind a trend point and a funnel drop-off, and saves them as a static cohort', async () => {
    const { page, problems } = view;
    // The builder's request (the overview, shown first, asks for other trends).
    const asked = page.waitForRequest(
      (each) => each.url().includes('/insights/trend/') && (JSON.parse(each.postData() ?? '{}') as { date_from?: string }).date_from === '-7d',
    );
    await open(page, 'New insight');
    const projectId = target.console.plover.credentials.projectId;
    // The default trend: pageviews per day over the last 7 days; ten viewers six days ago.
    const request = await asked;
    const trend = await target.console.api<{ result: Array<{ data: number[] }> }>(
      'POST',
      `/api/projects/${projectId}/insights/trend/`,
      JSON.parse(request.postData()!),
    );
    const data = trend.result[0]!.data;
    const busiest = data.indexOf(10);
    expect(busiest).toBeGreaterThanOrEqual(0);
    const plot = page.locator('.result .chart .u-over');
    await plot.waitFor();
    const box = (await plot.boundingBox())!;
    await plot.click({ position: { x: ((busiest + 0.5) / data.length) * box.width, y: box.height / 2 } });
    const dialog = page.getByRole('dialog', { name: /^Persons · / });
    const listed = dialog.getByRole('list', { name: 'Persons' }).getByRole('link');
    await listed.nth(9).waitFor();
    expect((await listed.allTextContents()).sort()).toEqual(Array.from({ length: 10 }, (_, user) => `user-${user}`).sort());
    await screenshot(page, 'trend-point-persons');
    await dialog.getByRole('button', { name: 'Save as static cohort' }).click();
    await expect(dialog.getByRole('status').textContent()).resolves.toMatch(/^Saved as Persons of .*: 10 persons\.$/);
    await dialog.getByRole('button', { name: 'Close' }).click();

    // A funnel's drop-off: the four viewers who did not sign up, each a link to the person.
    await page.getByRole('link', { name: 'Insights', exact: true }).click();
    await page.getByRole('link', { name: 'New funnel', exact: true }).click();
    await page.getByRole('group', { name: 'Step 2' }).getByLabel('Event').fill('signup');
    const dropOff = page.getByTestId('step-drop-off');
    await texts(dropOff, ['4 dropped off (40%)']);
    await dropOff.click();
    const dropped = page.getByRole('dialog', { name: 'Persons · Dropped off before signup' }).getByRole('list', { name: 'Persons' }).getByRole('link');
    await dropped.nth(3).waitFor();
    expect((await dropped.allTextContents()).sort()).toEqual(['user-6', 'user-7', 'user-8', 'user-9']);
    await screenshot(page, 'funnel-drop-off-persons');
    await page.getByRole('dialog').getByRole('button', { name: 'Save as static cohort' }).click();
    await expect(page.getByRole('dialog').getByRole('status').textContent()).resolves.toMatch(/: 4 persons\.$/);
    await dropped.first().click();
    await page.waitForURL(/\/persons\/[0-9a-f-]{36}$/);
    expect(problems).toEqual([]);
  }, 240_000);

  it('shows stickiness and lifecycle as the trend endpoint computes them, saved and reopened', async () => {
    const { page, problems } = view;
    await open(page, 'New insight');
    const projectId = target.console.plover.credentials.projectId;
    type Answer = { result: Array<{ label: string; data: number[]; labels: string[]; count: number; status?: string }> };
    /** Waits for the screen to ask for `insight`, and answers what the API answers a script for the same body. */
    const asked = async (insight: string, change: () => Promise<void>) => {
      const [request] = await Promise.all([
        page.waitForRequest(
          (each) => each.url().includes('/insights/trend/') && (JSON.parse(each.postData() ?? '{}') as { insight?: string }).insight === insight,
        ),
        change(),
      ]);
      return target.console.api<Answer>('POST', `/api/projects/${projectId}/insights/trend/`, JSON.parse(request.postData()!));
    };
    const legend = page.locator('.result .legend li');

    // Stickiness: of the ten viewers, five viewed on one day, three on two, two on three.
    const sticky = await asked('STICKINESS', () => page.getByRole('radio', { name: 'Stickiness' }).check());
    expect(sticky.result.map((series) => [series.label, series.data.slice(0, 4), series.labels.slice(0, 2)])).toEqual([
      ['$pageview', [5, 3, 2, 0], ['1 day', '2 days']],
    ]);
    await texts(legend, ['$pageview10']);
    await expect(page.getByRole('img', { name: 'Stickiness. $pageview: 10' }).isVisible()).resolves.toBe(true);
    // What stickiness does not take is not offered.
    await expect(page.getByLabel('Formula').count()).resolves.toBe(0);
    await expect(page.getByRole('radio', { name: 'Number' }).count()).resolves.toBe(0);
    await screenshot(page, 'stickiness');

    // Lifecycle: one series, stacked bars of new, returning, resurrecting and dormant persons.
    const lifecycle = await asked('LIFECYCLE', () => page.getByRole('radio', { name: 'Lifecycle' }).check());
    const byStatus = new Map(lifecycle.result.map((series) => [series.status, series.count]));
    const expected = ['New', 'Returning', 'Resurrecting', 'Dormant'].map((label) => `${label}${byStatus.get(label.toLowerCase())!.toLocaleString('en-US')}`);
    expect(byStatus.get('new')).toBe(10);
    expect(byStatus.get('dormant')).toBe(-10);
    await texts(legend, expected);
    await expect(page.getByRole('button', { name: 'Add series' }).count()).resolves.toBe(0);
    await screenshot(page, 'lifecycle');

    await page.getByRole('button', { name: 'Save insight' }).click();
    await page.waitForURL(/\/insights\/(?!new)[A-Za-z0-9]+$/);
    await page.reload();
    await page.getByRole('heading', { level: 1, name: '$pageview lifecycle' }).waitFor();
    await expect(page.getByRole('radio', { name: 'Lifecycle' }).isChecked()).resolves.toBe(true);
    await texts(legend, expected);
    expect(problems).toEqual([]);
  }, 240_000);

  it('arranges a dashboard of a trend saved from the builder and a text card, with a date range and a share link', async () => {
    const { page, problems } = view;
    const { plover } = target.console;
    const projectId = plover.credentials.projectId;

    // The builder's default trend (pageviews per day, last 7 days), saved as a query node dashboards compute.
    await open(page, 'New insight');
    await page.locator('.result .legend').filter({ hasText: '$pageview17' }).waitFor();
    await page.getByLabel('Name').fill('Pageviews');
    await page.getByRole('button', { name: 'Save insight' }).click();
    await page.waitForURL(/\/insights\/(?!new)[A-Za-z0-9]+$/);
    const shortId = page.url().split('/').pop()!;
    type Saved = { results: Array<{ query: { kind: string; source: Record<string, unknown> } | null }> };
    const saved = await target.console.api<Saved>('GET', `/api/projects/${projectId}/insights/?short_id=${shortId}`);
    const node = saved.results[0]!.query!;
    expect([node.kind, node.source.kind]).toEqual(['InsightVizNode', 'TrendsQuery']);
    const trend = await query<{ results: Array<{ count: number }> }>(node.source);
    expect(trend.results[0]!.count).toBe(17);

    await page.getByRole('link', { name: 'Dashboards', exact: true }).click();
    await page.getByLabel('Name').fill('Team');
    await page.getByRole('button', { name: 'Create dashboard' }).click();
    await page.waitForURL(/\/dashboards\/\d+$/);
    const dashboardId = Number(page.url().split('/').pop());
    await page.getByText('No tiles yet').waitFor();

    // Added from the insight's page.
    await page.goto(`${target.console.base}/project/${projectId}/insights/${shortId}`);
    await page.getByRole('button', { name: 'Add to dashboard' }).click();
    await page.getByRole('form', { name: 'Dashboards' }).getByRole('link', { name: 'Team' }).click();
    const tiles = page.getByRole('list', { name: 'Tiles' }).getByRole('listitem');
    const insightTile = tiles.filter({ hasText: 'Pageviews' });
    await page.getByRole('button', { name: 'Refresh' }).click();
    await insightTile.locator('.legend').filter({ hasText: '$pageview17' }).waitFor();

    await page.getByLabel('Text card').fill('Read me first');
    await page.getByRole('button', { name: 'Add text card' }).click();
    const textTile = tiles.filter({ hasText: 'Read me first' });
    await textTile.waitFor();
    await texts(tiles.locator('h2'), ['Pageviews', 'Text']);

    // Dragged before the insight: every tile's layout is saved in the new order.
    await textTile.dragTo(insightTile);
    await texts(tiles.locator('h2'), ['Text', 'Pageviews']);
    type Stored = { filters: Record<string, unknown>; tiles: Array<{ text: unknown; layouts: { sm?: unknown } }> };
    const stored = await target.console.api<Stored>('GET', `/api/projects/${projectId}/dashboards/${dashboardId}/`);
    expect(stored.tiles.map((tile) => [tile.text === null ? 'insight' : 'text', tile.layouts.sm])).toEqual([
      ['text', { x: 0, y: 0, w: 6, h: 5 }],
      ['insight', { x: 6, y: 0, w: 6, h: 5 }],
    ]);

    // The dashboard's date range over the insight's own.
    const picked = page.waitForResponse((response) => response.request().method() === 'PATCH' && /\/dashboards\/\d+\/$/.test(new URL(response.url()).pathname));
    await page.getByLabel('Date range').selectOption('-30d');
    // The pick shows at once, and stays while it is saved and the dashboard reloads.
    await expect(page.getByLabel('Date range').inputValue()).resolves.toBe('-30d');
    expect((await picked).ok()).toBe(true);
    const after = await target.console.api<Stored>('GET', `/api/projects/${projectId}/dashboards/${dashboardId}/`);
    expect(after.filters).toMatchObject({ date_from: '-30d' });
    await insightTile.locator('.legend').filter({ hasText: '$pageview17' }).waitFor();
    await page.getByText('refreshing…').waitFor({ state: 'hidden' });
    await expect(page.getByLabel('Date range').inputValue()).resolves.toBe('-30d');
    await screenshot(page, 'dashboard');

    // A share link anyone can open, until it is revoked.
    await page.getByRole('button', { name: 'Create share link' }).click();
    const link = page.getByLabel('Share link (anyone with it can see this dashboard)');
    const url = await link.inputValue();
    const shared = await fetch(url);
    expect(shared.status).toBe(200);
    expect(((await shared.json()) as { dashboard: { name: string } }).dashboard.name).toBe('Team');
    await page.getByRole('button', { name: 'Revoke share link' }).click();
    await page.getByRole('button', { name: 'Create share link' }).waitFor();
    expect((await fetch(url)).status).toBe(404);

    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'dashboard-phone');
    expect(problems).toEqual([]);
  }, 240_000);
});
