/**
 * For browser suites of the console: embedded Plover with events captured through `/batch/` (as an SDK sends
 * them), calls to its management API as a script would make them, signing in as a person does, and
 * screenshots in test-artifacts/console/.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ARTIFACTS_DIR, launchBrowser } from '../../../../test/support/browser';
import type { EmbeddedPlover } from '../../../../test/support/embedded';

export interface CapturedEvent {
  event: string;
  distinct_id: string;
  timestamp: string;
  properties: Record<string, unknown>;
}

export class ConsoleTarget {
  readonly base: string;

  constructor(readonly plover: EmbeddedPlover) {
    this.base = `http://127.0.0.1:${plover.port}`;
  }

  /** A management API call with `key` (the admin's key by default); answers the parsed body, throws on an error status. */
  async api<T>(method: string, url: string, body?: unknown, key = this.plover.credentials.personalKey): Promise<T> {
    const response = await fetch(`${this.base}${url}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${text}`);
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }

  /** A new personal API key of the admin with `scopes` (and optional project limits): its id and full value. */
  async newKey(label: string, scopes: string[], scopedTeams?: number[]): Promise<{ id: string; value: string }> {
    return this.api<{ id: string; value: string }>('POST', '/api/personal_api_keys/', { label, scopes, ...(scopedTeams ? { scoped_teams: scopedTeams } : {}) });
  }

  /** Sends `events` to capture's `/batch/` with the project token, as posthog-node does. */
  async capture(events: CapturedEvent[]): Promise<void> {
    const response = await fetch(`${this.base}/batch/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ api_key: this.plover.credentials.token, batch: events }),
    });
    if (!response.ok) throw new Error(`/batch/: ${response.status} ${await response.text()}`);
  }

  /** Waits until the trend endpoint counts `count` events over the last 14 days in the admin's project. */
  async waitForEvents(count: number, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let seen = -1;
    while (Date.now() < deadline) {
      const { result } = await this.api<{ result: Array<{ aggregated_value: number }> }>(
        'POST',
        `/api/projects/${this.plover.credentials.projectId}/insights/trend/`,
        { events: [{ id: null, math: 'total' }], date_from: '-13d', display: 'BoldNumber', refresh: true },
      );
      seen = result[0]?.aggregated_value ?? 0;
      if (seen === count) return;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error(`ingestion counted ${seen} of ${count} events in time`);
  }
}

/** Signs in on the console's form by keyboard: the field, the key, Enter. */
export async function signIn(page: Page, base: string, key: string): Promise<void> {
  await page.goto(`${base}/`, { timeout: 180_000 });
  await page.getByLabel('Personal API key').fill(key);
  await page.getByLabel('Personal API key').press('Enter');
}

/** Saves a full-page screenshot as test-artifacts/console/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = path.join(ARTIFACTS_DIR, 'console');
  fs.mkdirSync(dir, { recursive: true });
  // From the top: a full-page shot of a scrolled page draws the sticky top bar where the viewport was.
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
}

/**
 * One Chromium for the calling describe block and a fresh context and page for each of its tests (1280×800, 90 s
 * waits: a loaded 2-core machine may take a while to compute a trend), collecting the page's console errors and
 * uncaught exceptions — Content-Security-Policy violations among them — in `problems`.
 */
export function usePage(): { readonly page: Page; readonly problems: string[] } {
  const state = {} as { browser: Browser; context: BrowserContext; page: Page; problems: string[] };
  beforeAll(async () => {
    state.browser = await launchBrowser();
  });
  afterAll(async () => {
    await state.browser?.close();
  });
  beforeEach(async () => {
    state.problems = [];
    state.context = await state.browser.newContext({ viewport: { width: 1280, height: 800 } });
    state.context.setDefaultTimeout(90_000);
    state.page = await state.context.newPage();
    state.page.on('console', (message) => message.type() === 'error' && state.problems.push(message.text()));
    state.page.on('pageerror', (error) => state.problems.push(error.message));
  });
  afterEach(async () => {
    await state.context.close();
  });
  return {
    get page() {
      return state.page;
    },
    get problems() {
      return state.problems;
    },
  };
}
