/**
 * The Logs and LLM analytics screens in Chromium over embedded Plover: log lines sent to `/i/v1/logs` and `$ai_*`
 * events sent to `/i/v0/ai/batch/` (as the SDKs send them) are searched, listed, opened as a trace tree and charted
 * per model, each screen reading them through the query API. Screenshots: test-artifacts/console/logs-*.png,
 * llm-*.png.
 */
import { describeWithBrowser } from '../../../test/support/browser';
import { startEmbedded } from '../../../test/support/embedded';
import { ConsoleTarget, screenshot, signIn, usePage } from './support/console';

const target = {} as { console: ConsoleTarget };
const NOW_NANOS = BigInt(Date.now()) * 1_000_000n;

const kv = (key: string, value: string) => ({ key, value: { stringValue: value } });
function line(secondsAgo: number, level: 'INFO' | 'WARN' | 'ERROR', number: number, body: string, session: string, person: string) {
  return {
    timeUnixNano: String(NOW_NANOS - BigInt(secondsAgo) * 1_000_000_000n),
    severityText: level,
    severityNumber: number,
    body: { stringValue: body },
    attributes: [kv('sessionId', session), kv('posthogDistinctId', person)],
  };
}

const TRACE = 'trace-checkout-1';
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const AI_EVENTS = [
  {
    event: '$ai_trace',
    distinct_id: 'ada',
    timestamp: ago(60_000),
    properties: { $ai_trace_id: TRACE, $ai_span_name: 'checkout assistant', $ai_latency: 3.2 },
  },
  {
    event: '$ai_span',
    distinct_id: 'ada',
    timestamp: ago(59_000),
    properties: { $ai_trace_id: TRACE, $ai_span_id: 'span-plan', $ai_parent_id: TRACE, $ai_span_name: 'plan the answer', $ai_latency: 2.1 },
  },
  {
    event: '$ai_generation',
    distinct_id: 'ada',
    timestamp: ago(58_000),
    properties: {
      $ai_trace_id: TRACE,
      $ai_span_id: 'gen-1',
      $ai_parent_id: 'span-plan',
      $ai_model: 'gpt-4o-mini',
      $ai_provider: 'openai',
      $ai_input_tokens: 120,
      $ai_output_tokens: 30,
      $ai_latency: 1.5,
      $ai_total_cost_usd: 0.0004,
    },
  },
  {
    event: '$ai_generation',
    distinct_id: 'ada',
    timestamp: ago(57_000),
    properties: {
      $ai_trace_id: TRACE,
      $ai_span_id: 'gen-2',
      $ai_parent_id: TRACE,
      $ai_model: 'claude-3-5-haiku',
      $ai_provider: 'anthropic',
      $ai_input_tokens: 200,
      $ai_output_tokens: 80,
      $ai_latency: 0.9,
      $ai_total_cost_usd: 0.0011,
    },
  },
];

beforeAll(async () => {
  target.console = new ConsoleTarget(await startEmbedded());
  const { base, plover } = target.console;
  const logs = await fetch(`${base}/i/v1/logs?token=${plover.credentials.token}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      resourceLogs: [
        {
          resource: { attributes: [kv('service.name', 'posthog-browser-logs')] },
          scopeLogs: [
            {
              logRecords: [
                line(30, 'INFO', 9, 'cart loaded with 3 items', 'session-a', 'ada'),
                line(20, 'WARN', 13, 'payment form slow to render', 'session-a', 'ada'),
                line(10, 'ERROR', 17, 'payment declined: card expired', 'session-b', 'grace'),
              ],
            },
          ],
        },
      ],
    }),
  });
  expect(logs.status).toBe(200);
  const ai = await fetch(`${base}/i/v0/ai/batch/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ api_key: plover.credentials.token, batch: AI_EVENTS }),
  });
  expect(ai.status).toBe(200);
  // Both stored: the HogQL the screens run sees them.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const counts = await target.console.api<{ results: number[][] }>('POST', `/api/projects/${plover.credentials.projectId}/query/`, {
      query: { kind: 'HogQLQuery', query: "SELECT (SELECT count() FROM logs), (SELECT count() FROM events WHERE event LIKE '$ai_%')" },
      refresh: 'force_blocking',
    });
    if (counts.results[0]![0] === 3 && counts.results[0]![1] === 4) break;
    if (Date.now() > deadline) throw new Error(`stored ${JSON.stringify(counts.results)} in time`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}, 180_000);

afterAll(async () => {
  await target.console?.plover.stop();
});

/** Waits (at most 30 s) until `read` answers `expected`, then asserts it. */
async function eventually<T>(read: () => Promise<T>, expected: T): Promise<void> {
  const deadline = Date.now() + 30_000;
  let value = await read();
  while (JSON.stringify(value) !== JSON.stringify(expected) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    value = await read();
  }
  expect(value).toEqual(expected);
}

describeWithBrowser()('the Logs and LLM analytics screens', () => {
  const view = usePage();

  it('Logs: lists the lines newest first and narrows them by text, level, session and person', async () => {
    const { page, problems } = view;
    const { plover } = target.console;
    await signIn(page, target.console.base, plover.credentials.personalKey);
    await page.waitForURL(`**/project/${plover.credentials.projectId}`);
    await page.getByRole('link', { name: 'Logs' }).click();
    await page.waitForURL('**/logs');
    const table = page.getByRole('region', { name: 'Log lines, newest first' });
    const bodies = () => table.locator('.log-body').allTextContents();
    await table.waitFor();
    await expect(bodies()).resolves.toEqual(['payment declined: card expired', 'payment form slow to render', 'cart loaded with 3 items']);
    await screenshot(page, 'logs-all');

    await page.getByLabel('Text').fill('PAYMENT');
    await eventually(bodies, ['payment declined: card expired', 'payment form slow to render']);
    await page.getByLabel('Level').selectOption('warn');
    await eventually(bodies, ['payment form slow to render']);
    await page.getByLabel('Level').selectOption('');
    await page.getByLabel('Text').fill('');
    await page.getByRole('button', { name: 'session-b' }).click();
    await eventually(bodies, ['payment declined: card expired']);
    await expect(page.getByLabel('Session').inputValue()).resolves.toBe('session-b');
    await page.getByLabel('Session').fill('');
    await page.getByLabel('Person (distinct ID)').fill('ada');
    await eventually(bodies, ['payment form slow to render', 'cart loaded with 3 items']);
    await page.getByLabel('Text').fill('nothing like this');
    await page.getByText('No log line matches these filters.').waitFor();
    expect(problems).toEqual([]);
  });

  it('LLM analytics: a trace in the list opens as the tree of its spans and generations; generations and per-model charts', async () => {
    const { page, problems } = view;
    const { plover } = target.console;
    await signIn(page, target.console.base, plover.credentials.personalKey);
    await page.waitForURL(`**/project/${plover.credentials.projectId}`);
    await page.getByRole('link', { name: 'LLM analytics' }).click();
    await page.waitForURL('**/llm-analytics');
    const traces = page.getByRole('region', { name: 'Traces, newest first' });
    await traces.waitFor();
    await expect(traces.getByRole('row').allTextContents()).resolves.toEqual([
      'TraceStartedPersonGenerationsSpansTokensCostLatency',
      `${TRACE}${await traces.getByRole('cell').nth(1).textContent()}ada21430$0.00153.20 s`,
    ]);
    await screenshot(page, 'llm-traces');

    await traces.getByRole('button', { name: TRACE }).click();
    const tree = page.getByRole('list', { name: 'Spans and generations of the trace' });
    await tree.waitFor();
    const items = tree.getByRole('listitem');
    await expect(items.locator('strong').allTextContents()).resolves.toEqual(['checkout assistant', 'plan the answer', 'gpt-4o-mini', 'claude-3-5-haiku']);
    // Indented by depth: the trace, its span, the generation under the span, then the generation under the trace.
    await expect(items.evaluateAll((nodes) => nodes.map((node) => (node as unknown as { style: { paddingLeft: string } }).style.paddingLeft))).resolves.toEqual(
      ['0rem', '1.5rem', '3rem', '1.5rem'],
    );
    await expect(items.nth(2).textContent()).resolves.toContain('120 → 30 tokens');
    await screenshot(page, 'llm-trace-tree');

    await page.getByRole('button', { name: 'Back to the list' }).click();
    await page.getByRole('radio', { name: 'Generations' }).check();
    const generations = page.getByRole('region', { name: 'Generations, newest first' });
    await generations.waitFor();
    await expect(generations.getByRole('row').count()).resolves.toBe(3);
    await expect(generations.getByRole('row').nth(1).textContent()).resolves.toContain('claude-3-5-haiku');
    await screenshot(page, 'llm-generations');

    await page.getByRole('radio', { name: 'Models' }).check();
    await page.locator('#llm-tokens-title ~ figure canvas').waitFor();
    await page.locator('#llm-latency-title ~ figure canvas').waitFor();
    await expect(page.locator('#llm-tokens-title ~ figure').textContent()).resolves.toMatch(/claude-3-5-haiku.*280.*gpt-4o-mini.*150/s);
    const day = new Date().toISOString().slice(0, 10);
    await expect(page.getByRole('region', { name: 'Cost, tokens and latency per model and day' }).getByRole('row').allTextContents()).resolves.toEqual([
      'DayModelGenerationsCostTokensAverage latency',
      `${day}gpt-4o-mini1$0.000401501.50 s`,
      `${day}claude-3-5-haiku1$0.00112800.90 s`,
    ]);
    await screenshot(page, 'llm-models');
    expect(problems).toEqual([]);
  });

  it("Settings: the Logs panel turns the project's console-log capture on, as the remote config then says", async () => {
    const { page, problems } = view;
    const { plover } = target.console;
    const config = async () => ((await (await fetch(`${target.console.base}/array/${plover.credentials.token}/config`)).json()) as { logs: unknown }).logs;
    await expect(config()).resolves.toEqual({ captureConsoleLogs: false });
    await signIn(page, target.console.base, plover.credentials.personalKey);
    await page.waitForURL(`**/project/${plover.credentials.projectId}`);
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.waitForURL('**/settings');
    await page.getByLabel('Send the browser console to Logs').check();
    await page.getByRole('button', { name: 'Save logs settings' }).click();
    await page.getByText('Saved. posthog-js picks the setting up on its next page load.').waitFor();
    await expect(config()).resolves.toEqual({ captureConsoleLogs: true });
    await screenshot(page, 'logs-settings');
    expect(problems).toEqual([]);
  });
});
