/**
 * Time to interactive of the console's overview on the insights dataset: BENCH_CONSOLE_TTI_EVENTS (10,000,000)
 * events of BENCH_CONSOLE_TTI_PERSONS (100,000) persons over the 30 days before the run (bench/insights-dataset.ts)
 * in the chDB of an embedded Plover data dir, served by `npm start` in a child process. Debian's Chromium
 * (playwright-core) signs in with the bootstrap key; then each of BENCH_CONSOLE_TTI_RUNS (5) rounds restarts the
 * server (an empty results cache, the OS's page cache warm) and opens the overview, then opens it again (results
 * cached). Prints one JSON line: per visit, milliseconds from the navigation's start to the first chart drawn and
 * to every panel filled (measured in the page), and each API request's span (a trend's also its server time).
 *
 *   node --conditions=plover-source --import tsx bench/console-tti.ts
 *
 * The data dir is temporary unless BENCH_CONSOLE_TTI_DIR names one: it is then kept, and a later run within a
 * day reuses its dataset (the overview reads the last 14 days of it, so an older one would show less).
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Page, Response } from 'playwright-core';
import { launchBrowser } from '../test/support/browser';
import { seededDataDir, startEmbedded, type EmbeddedPlover } from '../test/support/embedded';
import { keptDataset, openDataset } from './insights-dataset';

const EVENTS = Number(process.env.BENCH_CONSOLE_TTI_EVENTS ?? 10_000_000);
const PERSONS = Number(process.env.BENCH_CONSOLE_TTI_PERSONS ?? 100_000);
const RUNS = Number(process.env.BENCH_CONSOLE_TTI_RUNS ?? 5);
const KEPT_DIR = process.env.BENCH_CONSOLE_TTI_DIR;
const DAYS = 30;
const DAY_MS = 86_400_000;
/** The goal for the first chart, in milliseconds. */
const GOAL_FIRST_CHART_MS = 1500;

/**
 * Runs in every document before the console's script: notes (performance.now(), from the navigation's start) the
 * frame after the events chart's canvas appears, and the frame after every panel holds its figures — both charts,
 * the live count, both tables and no loading placeholder left.
 */
const MEASURE = `(() => {
  const marks = (window.__overview = {});
  const has = (selector) => document.querySelector(selector) !== null;
  const observer = new MutationObserver(() => {
    if (marks.canvas === undefined && has('#events-per-day-title ~ figure canvas')) {
      marks.canvas = performance.now();
      requestAnimationFrame(() => (marks.firstChart = performance.now()));
    }
    const filled = ['#events-per-day-title ~ figure canvas', '#users-per-day-title ~ figure canvas', '[data-testid="live-count"]',
      '[aria-labelledby="top-events-title"] table', '[aria-labelledby="top-pages-title"] table'].every(has) && !has('main .loading');
    if (filled) {
      observer.disconnect();
      requestAnimationFrame(() => (marks.allPanels = performance.now()));
    }
    const problem = document.querySelector('main .problem');
    if (problem !== null) marks.problem = problem.textContent;
  });
  observer.observe(document, { childList: true, subtree: true, attributes: true, characterData: true });
})();`;

interface Marks {
  firstChart?: number;
  allPanels?: number;
  /** The text of a panel that shows a failure instead of its figures. */
  problem?: string;
}

interface ApiCall {
  /** The path; for a trend what it asks: its series' maths, the breakdown, the range. */
  name: string;
  startMs: number;
  endMs: number;
  /** A trend's own time on the server (the answer's `timings`), and whether it came from the results cache. */
  serverMs?: number;
  cached?: boolean;
}

interface Visit {
  firstChartMs: number;
  allPanelsMs: number;
  /** The API requests the visit made, in the order they started. */
  calls: ApiCall[];
}

const round1 = (n: number): number => Math.round(n * 10) / 10;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** A trend request body as a short name: `total+dau -13d day`, `total by event -13d`. */
function trendName(body: string | null): string {
  const request = JSON.parse(body ?? '{}') as { events?: { math?: string }[]; breakdown?: string; date_from?: string; interval?: string };
  const maths = (request.events ?? []).map((entity) => entity.math ?? 'total').join('+');
  return [maths, request.breakdown === undefined ? '' : `by ${request.breakdown}`, request.date_from, request.interval].filter(Boolean).join(' ');
}

/**
 * The page's marks once every panel is filled. Polled from here: Playwright's waitForFunction evaluates its
 * predicate with `eval`, which the console's Content-Security-Policy forbids.
 */
async function filledMarks(page: Page): Promise<Marks> {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const marks = await page.evaluate<Marks>('window.__overview');
    if (marks.allPanels !== undefined) return marks;
    if (marks.problem !== undefined || Date.now() > deadline) {
      const panels = await page.evaluate<string>(`[...document.querySelectorAll('main section')].map((panel) => panel.textContent.slice(0, 80)).join(' | ')`);
      throw new Error(`the overview was not filled: ${JSON.stringify(marks)}; panels: ${panels}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Opens the overview and waits until every panel is filled: the marks and the API requests made meanwhile. */
async function visit(page: Page, url: string): Promise<Visit> {
  const responses: Response[] = [];
  const onResponse = (response: Response): void => {
    if (new URL(response.url()).pathname.startsWith('/api/')) responses.push(response);
  };
  page.on('response', onResponse);
  try {
    await page.goto(url);
    const marks = await filledMarks(page);
    const origin = await page.evaluate<number>('performance.timeOrigin');
    const calls = await Promise.all(
      responses.map(async (response): Promise<ApiCall> => {
        const request = response.request();
        const timing = request.timing();
        const span = { startMs: round1(timing.startTime - origin), endMs: round1(timing.startTime - origin + timing.responseEnd) };
        const path = new URL(response.url()).pathname;
        if (!path.endsWith('/insights/trend/')) return { name: `${request.method()} ${path}`, ...span };
        const { is_cached, timings } = (await response.json()) as { is_cached: boolean; timings: { t: number }[] };
        return { name: trendName(request.postData()), ...span, serverMs: round1((timings[0]?.t ?? 0) * 1000), cached: is_cached };
      }),
    );
    return { firstChartMs: round1(marks.firstChart ?? NaN), allPanelsMs: round1(marks.allPanels ?? NaN), calls: calls.sort((a, b) => a.startMs - b.startMs) };
  } finally {
    page.off('response', onResponse);
  }
}

/** The data dir with its dataset: a kept one of the same size made within a day, else a new one generated now. */
async function prepare(dataDir: string): Promise<{ loadSeconds: Record<string, number>; reused: boolean; now: string }> {
  if (!fs.existsSync(path.join(dataDir, 'credentials.json'))) await seededDataDir(() => Promise.resolve(), dataDir);
  const { project } = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8')) as { project: { id: number } };
  const chdbDir = path.join(dataDir, 'clickhouse');
  const kept = await keptDataset(chdbDir);
  const keptNow = kept && Date.now() - Date.parse(kept.spec.now) < DAY_MS ? new Date(kept.spec.now) : null;
  const spec = { events: EVENTS, persons: PERSONS, projectId: project.id, now: keptNow ?? new Date(Math.floor(Date.now() / 1000) * 1000), days: DAYS };
  const { ch, dataset, reused } = await openDataset(chdbDir, spec);
  await ch.close();
  return { loadSeconds: dataset.loadSeconds, reused, now: dataset.spec.now };
}

async function main(): Promise<void> {
  const loadAverageBefore = os.loadavg().map(round1);
  const dataDir = KEPT_DIR === undefined ? fs.mkdtempSync(path.join(os.tmpdir(), 'plover-console-tti-')) : path.resolve(KEPT_DIR);
  let server: EmbeddedPlover | undefined;
  const browser = await launchBrowser();
  try {
    fs.mkdirSync(dataDir, { recursive: true });
    const dataset = await prepare(dataDir);
    const env = { PORT: String(await freePort()) };
    server = await startEmbedded(env, dataDir);
    const base = `http://127.0.0.1:${server.port}`;
    const overview = `${base}/project/${server.credentials.projectId}`;
    // The first request for the console builds it when its sources changed: not part of any visit.
    await (await fetch(`${base}/`)).text();

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addInitScript(MEASURE);
    const page = await context.newPage();
    await page.goto(`${base}/`);
    await page.getByLabel('Personal API key').fill(server.credentials.personalKey);
    await page.getByLabel('Personal API key').press('Enter');
    await page.waitForURL(overview, { timeout: 600_000 });
    await filledMarks(page);

    const rounds: { cold: Visit; cached: Visit }[] = [];
    for (let run = 0; run < RUNS; run++) {
      await server.kill('SIGTERM');
      server = await startEmbedded(env, dataDir);
      const cold = await visit(page, overview);
      rounds.push({ cold, cached: await visit(page, overview) });
    }
    const summary = (pick: (round: { cold: Visit; cached: Visit }) => number) => round1(median(rounds.map(pick)));
    const firstChartMs = summary((r) => r.cold.firstChartMs);
    console.log(
      JSON.stringify({
        bench: 'console-tti',
        events: EVENTS,
        persons: PERSONS,
        datasetEnds: dataset.now,
        reused: dataset.reused,
        loadSeconds: dataset.loadSeconds,
        runs: RUNS,
        firstChartMedianMs: firstChartMs,
        allPanelsMedianMs: summary((r) => r.cold.allPanelsMs),
        cachedFirstChartMedianMs: summary((r) => r.cached.firstChartMs),
        cachedAllPanelsMedianMs: summary((r) => r.cached.allPanelsMs),
        goalFirstChartMs: GOAL_FIRST_CHART_MS,
        firstChartOfGoal: round1((firstChartMs / GOAL_FIRST_CHART_MS) * 100) / 100,
        rounds,
        loadAverageBefore,
        loadAverageAfter: os.loadavg().map(round1),
        cpus: os.cpus().length,
        node: process.version,
      }),
    );
  } finally {
    await browser.close();
    await server?.kill('SIGTERM');
    if (KEPT_DIR === undefined) fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
