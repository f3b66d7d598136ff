/**
 * The console's data screens end to end (persons, events, feature flags, recordings, settings): embedded Plover as
 * `npm start` runs it, events sent through capture, and Debian's Chromium using each screen as a person would;
 * what a screen changes is then read back through the API or the SDK endpoints.
 */
import type { Page } from 'playwright-core';
import { describeWithBrowser } from '../../../test/support/browser';
import { startEmbedded } from '../../../test/support/embedded';
import { flushes, recordingEvents, SNAPSHOT_REQUEST_HEADERS, snapshotEvent, snapshotRequestBody, type RrwebEvent } from '../../../test/support/recording';
import { ConsoleTarget, screenshot, signIn, usePage, type CapturedEvent } from './support/console';

interface ApiPerson {
  uuid: string;
  properties: Record<string, unknown>;
  distinct_ids: string[];
}

const PEOPLE = [
  { id: 'alice-1', email: 'alice@example.com', plan: 'pro' },
  { id: 'bob-2', email: 'bob@example.com', plan: 'free' },
  { id: 'carol-3', email: 'carol@example.org', plan: 'pro' },
];

/** Each person: an `$identify` with their email and plan, then pageviews of two pages a minute apart, and Carol's signup. */
function dataset(now: number): CapturedEvent[] {
  const at = (minutesAgo: number) => new Date(now - minutesAgo * 60_000).toISOString();
  return [
    ...PEOPLE.flatMap((person, index): CapturedEvent[] => [
      { event: '$identify', distinct_id: person.id, timestamp: at(30 + index), properties: { $set: { email: person.email, plan: person.plan } } },
      { event: '$pageview', distinct_id: person.id, timestamp: at(20 + index), properties: { $current_url: 'https://shop.example/' } },
      { event: '$pageview', distinct_id: person.id, timestamp: at(10 + index), properties: { $current_url: 'https://shop.example/pricing' } },
    ]),
    { event: 'signup', distinct_id: 'carol-3', timestamp: at(5), properties: { source: 'ad' } },
  ];
}

const target = {} as { console: ConsoleTarget; projectId: number; events: number };

beforeAll(async () => {
  target.console = new ConsoleTarget(await startEmbedded());
  target.projectId = target.console.plover.credentials.projectId;
  const events = dataset(Date.now());
  target.events = events.length;
  await target.console.capture(events);
  await target.console.waitForEvents(events.length);
}, 180_000);

afterAll(async () => {
  await target.console?.plover.stop();
});

const projectApi = (path: string) => `/api/projects/${target.projectId}/${path}`;

interface FlagAnswer {
  enabled: boolean;
  metadata: { payload?: unknown };
}

/** What `/flags?v=2` answers for `distinctId` about flag `key`, once it is `enabled` (decide polls the definitions). */
async function flagOnceIt(key: string, distinctId: string, enabled: boolean): Promise<FlagAnswer> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const response = await fetch(`${target.console.base}/flags?v=2`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token: target.console.plover.credentials.token, distinct_id: distinctId }),
    });
    const answer = ((await response.json()) as { flags: Record<string, FlagAnswer> }).flags[key];
    if ((answer?.enabled ?? false) === enabled || Date.now() > deadline) return answer ?? { enabled: false, metadata: {} };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Whether an rrweb event is a console error (rrweb's console plugin, level `error`). */
const isConsoleError = (event: RrwebEvent) => event.type === 6 && (event.data as { payload?: { level?: string } }).payload?.level === 'error';

/**
 * Two recordings uploaded to `/s/` as posthog-js does, once the project records sessions: a minute of Alice's visit
 * without console errors and two minutes of Carol's with some. Resolves when the recordings API lists both.
 */
async function recordTwoSessions(): Promise<Array<{ sessionId: string; distinctId: string }>> {
  await target.console.api('PATCH', projectApi(''), { session_recording_opt_in: true });
  let seed = 7;
  const random = () => (seed = (seed * 16_807) % 2_147_483_647) / 2_147_483_647;
  const sessions = [
    { sessionId: '0190a1b2-c3d4-7e5f-8a9b-0000000000a1', distinctId: 'alice-1', minutes: 1, errors: false },
    { sessionId: '0190a1b2-c3d4-7e5f-8a9b-0000000000c3', distinctId: 'carol-3', minutes: 2, errors: true },
  ];
  const recorded = [];
  for (const session of sessions) {
    const start = Date.now() - 10 * 60_000;
    const events = recordingEvents({ random, start, durationMs: session.minutes * 60_000, sections: 6 }).filter(
      (event) => session.errors || !isConsoleError(event),
    );
    expect(events.some(isConsoleError)).toBe(session.errors);
    const snapshotTarget = {
      token: target.console.plover.credentials.token,
      distinctId: session.distinctId,
      sessionId: session.sessionId,
      windowId: session.sessionId,
    };
    for (const flush of flushes(events, start, 10_000)) {
      const response = await fetch(`${target.console.base}/s/`, {
        method: 'POST',
        headers: SNAPSHOT_REQUEST_HEADERS,
        body: snapshotRequestBody([snapshotEvent(snapshotTarget, flush)]),
      });
      if (!response.ok) throw new Error(`/s/: ${response.status} ${await response.text()}`);
    }
    recorded.push({ sessionId: session.sessionId, distinctId: session.distinctId });
  }
  const deadline = Date.now() + 60_000;
  while ((await target.console.api<{ results: unknown[] }>('GET', projectApi('session_recordings/'))).results.length < sessions.length) {
    if (Date.now() > deadline) throw new Error('the recordings were not listed in time');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return recorded;
}

describeWithBrowser()('the console’s data screens in Chromium', () => {
  const session = usePage();
  let page: Page;
  /** Console errors and Content-Security-Policy violations of the page: none are expected. */
  let problems: string[];

  beforeEach(async () => {
    ({ page, problems } = session);
    await signIn(page, target.console.base, target.console.plover.credentials.personalKey);
    await page.waitForURL(`**/project/${target.projectId}`);
  });

  /** The screen of a main navigation link. */
  const open = (name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();

  /** Screenshots of the current screen in light, dark and at phone width. */
  async function screenshots(name: string): Promise<void> {
    await screenshot(page, `${name}-light`);
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForTimeout(200);
    await screenshot(page, `${name}-dark`);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(200);
    await screenshot(page, `${name}-phone`);
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.emulateMedia({ colorScheme: 'light' });
  }

  it('finds a person by email and by property, and edits a property the API then shows', async () => {
    await open('Persons');
    const list = page.getByRole('region', { name: 'Persons', exact: true });
    await list.getByRole('link', { name: 'carol@example.org' }).waitFor();
    await expect(list.getByRole('link').allTextContents()).resolves.toEqual(expect.arrayContaining(PEOPLE.map((person) => person.email)));
    await screenshots('persons');

    await page.getByRole('button', { name: 'Add filter' }).click();
    await page.getByLabel('Person property').fill('plan');
    await page.getByLabel('Value').fill('pro');
    await page.getByRole('heading', { name: '2 persons', exact: true }).waitFor();
    await expect(list.getByRole('link').allTextContents()).resolves.toEqual(expect.arrayContaining(['alice@example.com', 'carol@example.org']));
    await page.getByRole('button', { name: 'Remove person filter 1' }).click();

    await page.getByLabel('Search').fill('carol@');
    await page.getByRole('heading', { name: '1 person', exact: true }).waitFor();
    await list.getByRole('link', { name: 'carol@example.org' }).click();
    await page.getByRole('heading', { level: 1, name: 'carol@example.org' }).waitFor();
    const properties = page.getByRole('region', { name: 'Properties of carol@example.org' });
    await expect(properties.getByRole('row', { name: /^plan/ }).textContent()).resolves.toContain('pro');

    await page.getByRole('button', { name: 'Edit plan' }).click();
    await page.getByLabel('Value of plan').fill('enterprise');
    await page.getByLabel('Value of plan').press('Enter');
    await page.getByRole('status').filter({ hasText: 'Saved plan.' }).waitFor();
    await page.getByRole('button', { name: 'Add property' }).click();
    await page.getByLabel('Property', { exact: true }).fill('seats');
    await page.getByLabel('Value', { exact: true }).fill('12');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved seats.' }).waitFor();
    await expect(properties.getByRole('row', { name: /^plan/ }).textContent()).resolves.toContain('enterprise');

    const found = await target.console.api<{ results: ApiPerson[] }>('GET', projectApi('persons/?email=carol@example.org'));
    expect(found.results.map((person) => [person.properties.plan, person.properties.seats])).toEqual([['enterprise', 12]]);
    const events = page.getByRole('region', { name: 'Events of carol@example.org, newest first' });
    await expect(events.getByRole('row').allTextContents()).resolves.toEqual([
      'EventURLTime',
      expect.stringMatching(/^signup—/),
      expect.stringMatching(/^\$pageviewhttps:\/\/shop\.example\/pricing/),
      expect.stringMatching(/^\$pageviewhttps:\/\/shop\.example\//),
      expect.stringMatching(/^\$identify—/),
    ]);
    await screenshots('person');
    expect(problems).toEqual([]);
  }, 240_000);

  it('deletes a person from their page', async () => {
    const [bob] = (await target.console.api<{ results: ApiPerson[] }>('GET', projectApi('persons/?email=bob@example.com'))).results;
    await page.goto(`${target.console.base}/project/${target.projectId}/persons/${bob!.uuid}`);
    await page.getByRole('button', { name: 'Delete person' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete bob@example.com?' });
    await dialog.getByLabel('Also delete their events').check();
    await screenshot(page, 'person-delete');
    await dialog.getByRole('button', { name: 'Delete person' }).click();
    await page.waitForURL(`**/project/${target.projectId}/persons`);
    await expect(target.console.api('GET', projectApi(`persons/${bob!.uuid}/`))).rejects.toThrow(/404/);
    expect(problems).toEqual([]);
  }, 240_000);

  it('lists events as they arrive, filters them, and shows one whole', async () => {
    await open('Events');
    const list = page.getByRole('region', { name: 'Events, newest first' });
    await page.getByRole('heading', { name: `${target.events} events`, exact: true }).waitFor();
    await expect(list.getByRole('row').nth(1).textContent()).resolves.toMatch(/^signupcarol-3—/);

    await target.console.capture([{ event: 'upgrade', distinct_id: 'alice-1', timestamp: new Date().toISOString(), properties: { tier: 'gold' } }]);
    await page.getByRole('heading', { name: `${target.events + 1} events`, exact: true }).waitFor({ timeout: 30_000 });
    await expect(list.getByRole('row').nth(1).textContent()).resolves.toMatch(/^upgradealice-1—/);
    await screenshots('events');

    await page.getByLabel('Event name').fill('$pageview');
    await page.getByRole('heading', { name: '6 events', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Add filter' }).click();
    await page.getByLabel('Filter on').selectOption('person');
    await page.getByLabel('Property', { exact: true }).fill('email');
    await page.getByLabel('Value').fill('alice@example.com');
    await page.getByRole('heading', { name: '2 events', exact: true }).waitFor();

    await list.getByRole('button', { name: '$pageview' }).first().click();
    const dialog = page.getByRole('dialog', { name: 'Event $pageview' });
    const json = JSON.parse((await dialog.locator('pre').textContent())!) as { distinct_id: string; properties: Record<string, unknown> };
    expect([json.distinct_id, json.properties.$current_url]).toEqual(['alice-1', 'https://shop.example/pricing']);
    await screenshot(page, 'event-json');
    await page.keyboard.press('Escape');
    await expect(dialog.isVisible()).resolves.toBe(false);
    expect(problems).toEqual([]);
  }, 240_000);

  it('creates a flag with a release condition and a payload, and switching it off turns it off', async () => {
    await open('Feature flags');
    await page.getByRole('heading', { name: 'No feature flags yet' }).waitFor();
    await screenshots('flags-empty');
    await page.getByRole('link', { name: 'New feature flag' }).first().click();
    await page.getByLabel('Key').fill('new-checkout');
    await page.getByLabel('Description').fill('The new checkout');
    await page.getByLabel('Payload when on (JSON, optional)').fill('{"color": "blue"}');
    const condition = page.getByRole('group', { name: 'Condition set 1', exact: true });
    await condition.getByRole('button', { name: 'Add filter' }).click();
    await condition.getByLabel('Property', { exact: true }).fill('email');
    await condition.getByLabel('Operator').selectOption('icontains');
    await condition.getByLabel('Value').fill('example.com');
    await screenshots('flag-editor');
    await page.getByRole('button', { name: 'Create flag' }).click();
    await page.waitForURL(/\/feature_flags\/\d+$/);
    await page.getByRole('heading', { level: 1, name: 'new-checkout' }).waitFor();

    // alice@example.com matches the condition; carol@example.org does not.
    await expect(flagOnceIt('new-checkout', 'alice-1', true)).resolves.toEqual(
      expect.objectContaining({ enabled: true, metadata: expect.objectContaining({ payload: '{"color": "blue"}' }) }),
    );
    await expect(flagOnceIt('new-checkout', 'carol-3', false)).resolves.toEqual(expect.objectContaining({ enabled: false }));

    await open('Feature flags');
    const flags = page.getByRole('region', { name: 'Feature flags' });
    await expect(flags.getByRole('row', { name: /new-checkout/ }).textContent()).resolves.toContain('100% of users matching 1 filter');
    await screenshots('flags');
    await flags.getByRole('switch', { name: 'Enable new-checkout' }).click();
    await expect(flagOnceIt('new-checkout', 'alice-1', false)).resolves.toEqual(expect.objectContaining({ enabled: false }));
    const [stored] = (await target.console.api<{ results: Array<{ key: string; active: boolean }> }>('GET', projectApi('feature_flags/'))).results;
    expect(stored).toEqual(expect.objectContaining({ key: 'new-checkout', active: false }));

    await page.getByRole('navigation', { name: 'Feature flag sections' }).getByRole('link', { name: 'Cohorts' }).click();
    await page.getByRole('heading', { name: 'No cohorts yet' }).waitFor();
    await screenshot(page, 'cohorts-empty');
    expect(problems).toEqual([]);
  }, 240_000);

  it('creates a cohort, an early access feature and a survey, each then listed; the API’s refusals show by their field', async () => {
    await open('Feature flags');
    const sections = page.getByRole('navigation', { name: 'Feature flag sections' });
    /** The message under field `label` of `form`, once the field is marked invalid. */
    const fieldMessage = async (form: ReturnType<Page['getByRole']>, label: string) => {
      const field = form.getByLabel(label, { exact: true });
      await form.locator(`[aria-invalid="true"]`).waitFor();
      expect(await field.getAttribute('aria-invalid')).toBe('true');
      return form.locator(`#${await field.getAttribute('aria-describedby')}`).textContent();
    };

    await sections.getByRole('link', { name: 'Cohorts' }).click();
    const cohort = page.getByRole('region', { name: 'New cohort' });
    await cohort.getByLabel('Name', { exact: true }).fill('x'.repeat(401));
    await cohort.getByLabel('Person property', { exact: true }).fill('plan');
    await cohort.getByLabel('Value', { exact: true }).fill('pro');
    await cohort.getByRole('button', { name: 'Create cohort' }).click();
    await expect(fieldMessage(cohort, 'Name')).resolves.toBe('Ensure this field has no more than 400 characters.');
    await screenshots('cohort-refused');
    await cohort.getByLabel('Name', { exact: true }).fill('Pro customers');
    await cohort.getByRole('button', { name: 'Create cohort' }).click();
    const cohorts = page.getByRole('region', { name: 'Cohorts' });
    await cohorts.getByRole('row', { name: /Pro customers/ }).waitFor();
    await expect(cohorts.getByRole('row', { name: /Pro customers/ }).textContent()).resolves.toContain('Dynamic');
    await expect(cohort.getByLabel('Name', { exact: true }).inputValue()).resolves.toBe('');
    const [stored] = (await target.console.api<{ results: Array<{ name: string; filters: unknown }> }>('GET', projectApi('cohorts/'))).results;
    expect(stored).toEqual(
      expect.objectContaining({
        name: 'Pro customers',
        filters: { properties: { type: 'AND', values: [{ type: 'person', key: 'plan', operator: 'exact', value: 'pro' }] } },
      }),
    );
    await screenshots('cohorts');

    // The builder: a person property and a behavior ("did not sign up in the last 7 days"); the server calculates it.
    await cohort.getByLabel('Name', { exact: true }).fill('Pro, no signup');
    await cohort.getByLabel('Person property', { exact: true }).fill('plan');
    await cohort.getByLabel('Value', { exact: true }).fill('pro');
    await cohort.getByRole('button', { name: 'Add behavior' }).click();
    const behavior = cohort.getByRole('group', { name: 'Behavior 1' });
    // (A control's accessible name includes its value: "Person did", "In the last 30".)
    await behavior.getByLabel('Person').selectOption('not');
    await behavior.getByLabel('What').selectOption('performed_event');
    await behavior.getByLabel('Event').fill('signup');
    await behavior.getByLabel('In the last').fill('7');
    await screenshots('cohort-builder');
    await cohort.getByRole('button', { name: 'Create cohort' }).click();
    const built = cohorts.getByRole('row', { name: /Pro, no signup/ });
    await built.waitFor();
    const builtStored = (
      await target.console.api<{ results: Array<{ id: number; name: string; filters: unknown }> }>('GET', projectApi('cohorts/'))
    ).results.find((row) => row.name === 'Pro, no signup');
    expect(builtStored?.filters).toEqual({
      properties: {
        type: 'AND',
        values: [
          { type: 'person', key: 'plan', operator: 'exact', value: 'pro' },
          { type: 'behavioral', key: 'signup', event_type: 'events', value: 'performed_event', time_value: 7, time_interval: 'day', negation: true },
        ],
      },
    });
    // Alice is pro and never signed up; Carol is pro but did. Revisit the list until the calculation shows.
    for (let tries = 0; tries < 100 && !/Dynamic\s*1(?![0-9,])/.test((await built.textContent()) ?? ''); tries++) {
      await sections.getByRole('link', { name: 'Early access' }).click();
      await sections.getByRole('link', { name: 'Cohorts' }).click();
      await built.waitFor();
    }
    expect(await built.textContent()).toMatch(/Dynamic\s*1(?![0-9,])/);
    const members = await target.console.api<{ results: Array<{ distinct_ids: string[] }> }>('GET', projectApi(`cohorts/${builtStored!.id}/persons/`));
    expect(members.results.map((person) => person.distinct_ids)).toEqual([['alice-1']]);
    await screenshots('cohorts-calculated');

    await sections.getByRole('link', { name: 'Early access' }).click();
    const feature = page.getByRole('region', { name: 'New early access feature' });
    await feature.getByLabel('Name', { exact: true }).fill('Dark mode');
    await feature.getByLabel('Stage').selectOption('alpha');
    await feature.getByLabel('Flag key (empty: made from the name)').fill('dark mode!');
    await feature.getByRole('button', { name: 'Create feature' }).click();
    await expect(fieldMessage(feature, 'Flag key (empty: made from the name)')).resolves.toBe(
      'Only letters, numbers, hyphens ("-") & underscores ("_") are allowed.',
    );
    await feature.getByLabel('Flag key (empty: made from the name)').fill('');
    await feature.getByRole('button', { name: 'Create feature' }).click();
    const features = page.getByRole('region', { name: 'Early access features' });
    await features.getByRole('row', { name: /Dark mode/ }).waitFor();
    await expect(features.getByRole('row', { name: /Dark mode/ }).textContent()).resolves.toMatch(/alpha\s*dark-mode/);
    await screenshots('early-access');

    await sections.getByRole('link', { name: 'Surveys' }).click();
    const survey = page.getByRole('region', { name: 'New survey' });
    await survey.getByLabel('Question (open answer)').fill('What almost stopped you from signing up?');
    await survey.getByLabel('Launch now (otherwise a draft)').check();
    await survey.getByRole('button', { name: 'Create survey' }).click();
    await expect(fieldMessage(survey, 'Name')).resolves.toBe('This field is required.');
    await survey.getByLabel('Name', { exact: true }).fill('Signup friction');
    await survey.getByRole('button', { name: 'Create survey' }).click();
    const surveys = page.getByRole('region', { name: 'Surveys' });
    await surveys.getByRole('row', { name: /Signup friction/ }).waitFor();
    await expect(surveys.getByRole('row', { name: /Signup friction/ }).textContent()).resolves.toMatch(/popover\s*Running\s*1/);
    await screenshots('surveys');
    // The browser reports the three refused requests itself; nothing else may go wrong.
    expect(problems.filter((text) => !text.includes('400'))).toEqual([]);
  }, 240_000);

  it('lists recordings with their filters, plays one, and keeps one in a playlist', async () => {
    const [, carol] = await recordTwoSessions();
    await open('Recordings');
    const list = page.getByRole('region', { name: 'Recordings', exact: true });
    await list.getByRole('link', { name: 'carol@example.org' }).waitFor();
    await expect(list.getByRole('row').count()).resolves.toBe(3);
    await screenshots('recordings');

    await page.getByLabel('Person (distinct ID)').fill('alice-1');
    await expect(list.getByRole('link', { name: 'carol@example.org' }).waitFor({ state: 'detached' })).resolves.toBeUndefined();
    await expect(list.getByRole('row').count()).resolves.toBe(2);
    await page.getByLabel('Person (distinct ID)').fill('');
    await page.getByLabel('At least (seconds)').fill('90');
    await list.getByRole('link', { name: 'alice@example.com' }).waitFor({ state: 'detached' });
    await expect(list.getByRole('link', { name: 'carol@example.org' }).isVisible()).resolves.toBe(true);
    await page.getByLabel('At least (seconds)').fill('');
    await page.getByLabel('With console errors').check();
    await page.waitForURL(/errors=1/);
    await list.getByRole('link', { name: 'alice@example.com' }).waitFor({ state: 'detached' });
    await expect(list.getByRole('link', { name: 'carol@example.org' }).isVisible()).resolves.toBe(true);
    await page.getByLabel('With console errors').uncheck();

    await list
      .getByRole('row', { name: /carol@example\.org/ })
      .getByRole('button', { name: /to a playlist$/ })
      .click();
    const dialog = page.getByRole('dialog', { name: 'Add to playlist' });
    await dialog.getByLabel('New playlist').fill('Checkout bugs');
    await dialog.getByRole('button', { name: 'Create and add' }).click();
    await dialog.getByRole('status').filter({ hasText: 'Added to Checkout bugs.' }).waitFor();
    await screenshot(page, 'recording-add-to-playlist');
    await page.keyboard.press('Escape');
    const playlists = await target.console.api<{ results: Array<{ short_id: string; name: string }> }>('GET', projectApi('session_recording_playlists/'));
    const [playlist] = playlists.results;
    const kept = await target.console.api<{ results: Array<{ id: string }> }>(
      'GET',
      projectApi(`session_recording_playlists/${playlist!.short_id}/recordings/`),
    );
    expect([playlist!.name, kept.results.map((recording) => recording.id)]).toEqual(['Checkout bugs', [carol!.sessionId]]);

    await page.getByRole('navigation', { name: 'Recording sections' }).getByRole('link', { name: 'Playlists' }).click();
    await page.getByRole('link', { name: 'Checkout bugs' }).click();
    await page.getByRole('heading', { level: 1, name: 'Checkout bugs' }).waitFor();
    await page.getByRole('button', { name: 'Pin' }).click();
    await page.getByRole('button', { name: 'Unpin' }).waitFor();
    await screenshots('playlist');
    await expect(target.console.api('GET', projectApi(`session_recording_playlists/${playlist!.short_id}/`))).resolves.toEqual(
      expect.objectContaining({ pinned: true }),
    );
    await page.getByRole('link', { name: /^Play the recording/ }).click();
    await page.waitForURL(`**/replay/${carol!.sessionId}?project=${target.projectId}`);
    // The replay page finds the console's key in the tab's sessionStorage: no second sign-in.
    await expect(page.locator('dd[data-field="distinct_id"]').textContent()).resolves.toBe('carol-3');
    await page.locator('.rr-player').waitFor();
    await screenshot(page, 'recording-player');
    expect(problems).toEqual([]);
  }, 240_000);

  it('says which scope a key lacks, panel by panel, instead of failing', async () => {
    const { value } = await target.console.newKey('persons only', ['person:read', 'project:read']);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, target.console.base, value);
    await open('Persons');
    await page.getByRole('region', { name: 'Persons', exact: true }).getByRole('link', { name: 'alice@example.com' }).click();
    await page.getByRole('heading', { level: 1, name: 'alice@example.com' }).waitFor();
    await expect(page.getByRole('region', { name: 'Events' }).getByRole('alert').textContent()).resolves.toContain('Missing scope: query:read');
    await expect(page.getByRole('region', { name: 'Recordings' }).getByRole('alert').textContent()).resolves.toContain('Missing scope: session_recording:read');
    await expect(
      page
        .getByRole('region', { name: 'Properties', exact: true })
        .getByRole('row', { name: /^email/ })
        .textContent(),
    ).resolves.toContain('alice@example.com');
    await screenshot(page, 'person-missing-scopes');
    await open('Feature flags');
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Missing scope: feature_flag:read');
    // The browser reports the refused requests themselves; nothing else may go wrong.
    expect(problems.filter((text) => !text.includes('403'))).toEqual([]);
  }, 240_000);

  it('changes the project and its replay settings, and creates a scoped key shown once, then revokes it', async () => {
    await open('Settings');
    const projectPanel = page.getByRole('region', { name: 'Project', exact: true });
    await projectPanel.getByLabel('Name', { exact: true }).fill('Shop');
    await projectPanel.getByLabel('Timezone').selectOption('Europe/Paris');
    await projectPanel.getByRole('button', { name: 'Save project' }).click();
    await projectPanel.getByRole('status').filter({ hasText: 'Europe/Paris' }).waitFor();

    const replay = page.getByRole('region', { name: 'Session replay' });
    await replay.getByLabel('Record sessions').uncheck();
    await replay.getByLabel('Sample rate (%)').fill('50');
    await replay.getByLabel('Minimum duration (s)').fill('2.5');
    await replay.getByLabel('Keep recordings for').selectOption('90d');
    await replay.getByLabel('Capture console logs').uncheck();
    await replay.getByRole('button', { name: 'Save replay settings' }).click();
    await replay.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await expect(target.console.api('GET', projectApi(''))).resolves.toEqual(
      expect.objectContaining({
        name: 'Shop',
        timezone: 'Europe/Paris',
        session_recording_opt_in: false,
        session_recording_sample_rate: 0.5,
        session_recording_minimum_duration_milliseconds: 2500,
        session_recording_retention_period: '90d',
        capture_console_log_opt_in: false,
      }),
    );

    const keys = page.getByRole('region', { name: 'Personal API keys' });
    await keys.getByLabel('Label', { exact: true }).fill('persons reader');
    await keys.getByRole('combobox', { name: 'Persons' }).selectOption('read');
    await keys.getByRole('button', { name: 'Create key' }).click();
    const created = page.getByRole('region', { name: 'New personal API key' });
    const value = (await created.locator('pre').textContent())!;
    expect(value).toMatch(/^phx_/);
    await expect(keys.getByRole('row', { name: /^persons reader/ }).textContent()).resolves.toContain('Persons: read');
    await screenshots('settings');
    await created.getByRole('button', { name: 'Done' }).click();
    await expect(created.count()).resolves.toBe(0);
    await expect(keys.getByText(value).count()).resolves.toBe(0);

    await expect(target.console.api('GET', projectApi('persons/'), undefined, value)).resolves.toEqual(expect.objectContaining({ results: expect.any(Array) }));
    await expect(target.console.api('GET', projectApi('feature_flags/'), undefined, value)).rejects.toThrow(/403/);
    await keys.getByRole('button', { name: 'Revoke persons reader' }).click();
    await page.getByRole('dialog', { name: 'Revoke persons reader?' }).getByRole('button', { name: 'Revoke key' }).click();
    await keys.getByRole('row', { name: /^persons reader/ }).waitFor({ state: 'detached' });
    await expect(target.console.api('GET', projectApi('persons/'), undefined, value)).rejects.toThrow(/401/);
    expect(problems).toEqual([]);
  }, 240_000);
});
