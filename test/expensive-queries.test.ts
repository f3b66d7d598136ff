/**
 * The expensive requests an analyst (with a read-only key) can send, against embedded Plover in a child process
 * with small data and the analysis limits set low through configuration: a trend of many series broken down by a
 * high-cardinality property by hour over a long range, a HogQL scan, a CSV export of events with thousands of
 * property keys, several exports at once. None may answer a 5xx or end the process, and `/flags`, asked all the
 * while beside them, must stay within a generous multiple of its latency when idle, measured in the same run.
 */
import { randomUUID } from 'node:crypto';
import { startEmbedded, type EmbeddedPlover } from './support/embedded';
import { flagsBeside, flagsLatency, flagsVerdict } from './support/latency';

jest.setTimeout(300_000);

const DAY_MS = 86_400_000;
const EVENTS = 1_500;
/** Events each carrying this many distinct property keys (of 20,000 in all): the wide CSV. */
const WIDE_EVENTS = 10;
const WIDE_KEYS = 2_000;
const CSV_MAX_COLUMNS = 50;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('expensive analysis requests (embedded, limits set low)', () => {
  let plover: EmbeddedPlover;
  let readKey: string;
  let exited = false;
  const url = (pathname: string) => `http://127.0.0.1:${plover.port}${pathname}`;
  const project = (pathname: string) => url(`/api/projects/${plover.credentials.projectId}${pathname}`);
  const asAnalyst = (pathname: string, init: RequestInit = {}) =>
    fetch(project(pathname), { ...init, headers: { authorization: `Bearer ${readKey}`, 'content-type': 'application/json' } });
  const query = (node: Record<string, unknown>) => asAnalyst('/query/', { method: 'POST', body: JSON.stringify({ query: node }) });

  beforeAll(async () => {
    plover = await startEmbedded({
      ANALYSIS_MAX_EXECUTION_SECONDS: '3',
      ANALYSIS_MAX_MEMORY_BYTES: String(200 * 1024 * 1024),
      ANALYSIS_MAX_RESULT_ROWS: '20000',
      ANALYSIS_MAX_POINTS: '250000',
      ANALYSIS_CONCURRENCY_PER_PROJECT: '2',
      EXPORT_CONCURRENCY: '1',
      CSV_EXPORT_MAX_COLUMNS: String(CSV_MAX_COLUMNS),
    });
    void plover.exited.then(() => (exited = true));
    const created = await fetch(url('/api/personal_api_keys/'), {
      method: 'POST',
      headers: { authorization: `Bearer ${plover.credentials.personalKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ label: 'analyst', scopes: ['query:read', 'insight:read', 'person:read'] }),
    });
    expect(created.status).toBe(201);
    readKey = ((await created.json()) as { value: string }).value;

    // Events over 208 days, each with a property of its own value (the high-cardinality breakdown), and a few
    // wide ones carrying thousands of distinct keys (sent with the public token, as anyone could).
    const now = Date.now();
    const batch = Array.from({ length: EVENTS }, (_, i) => ({
      event: `event-${i % 10}`,
      distinct_id: `user-${i % 300}`,
      uuid: randomUUID(),
      timestamp: new Date(now - Math.floor((i / EVENTS) * 208 * DAY_MS) - 60_000).toISOString(),
      properties: { unique: `value-${i}` },
    }));
    const wide = Array.from({ length: WIDE_EVENTS }, (_, i) => ({
      event: 'wide',
      distinct_id: `wide-${i}`,
      uuid: randomUUID(),
      properties: Object.fromEntries(Array.from({ length: WIDE_KEYS }, (_, k) => [`key_${i}_${k}`, k])),
    }));
    for (const events of [batch.slice(0, 750), batch.slice(750), wide]) {
      const sent = await fetch(url('/batch/'), { method: 'POST', body: JSON.stringify({ api_key: plover.credentials.token, batch: events }) });
      expect(sent.status).toBe(200);
    }
    // Ingested: the HogQL count reaches every event.
    for (let stored = 0, i = 0; stored < EVENTS + WIDE_EVENTS; i++) {
      if (i > 300) throw new Error(`only ${stored} events stored`);
      await pause(300);
      const response = await query({ kind: 'HogQLQuery', query: 'select count() from events' });
      if (response.status === 200) stored = Number(((await response.json()) as { results: number[][] }).results[0]![0]);
    }
  });

  afterAll(async () => {
    // A process that died says why.
    if (exited) process.stdout.write(`Plover exited; its last output:\n${plover.output().slice(-6000)}\n`);
    if (plover) expect(await plover.stop()).toBe(0);
  });

  it('answers every probe with no 5xx, stays up, and keeps /flags within a multiple of its idle latency', async () => {
    const idle: number[] = [];
    for (let i = 0; i < 40; i++) idle.push(await flagsLatency(plover.port, plover.credentials.token));
    const rssBefore = plover.rssMiB();

    const many = Array.from({ length: 10 }, (_, i) => ({ id: `event-${i}`, type: 'events' }));
    const probes: Array<[string, () => Promise<Response>]> = [
      [
        'trend: 10 series × breakdown by a unique property (limit 1000) × hour × 200 days',
        () =>
          asAnalyst(
            `/insights/trend/?${new URLSearchParams({
              events: JSON.stringify(many),
              breakdown: 'unique',
              breakdown_type: 'event',
              breakdown_limit: '1000',
              interval: 'hour',
              date_from: '-200d',
            }).toString()}`,
          ),
      ],
      [
        'TrendsQuery: the same through /query/',
        () =>
          query({
            kind: 'TrendsQuery',
            series: many.map(({ id }) => ({ kind: 'EventsNode', event: id })),
            breakdownFilter: { breakdown: 'unique', breakdown_type: 'event', breakdown_limit: 1000 },
            interval: 'hour',
            dateRange: { date_from: '-200d' },
          }),
      ],
      [
        'TrendsQuery: 1 series × breakdown (limit 1000) × day × 208 days, within the points',
        () =>
          query({
            kind: 'TrendsQuery',
            series: [{ kind: 'EventsNode', event: 'event-1' }],
            breakdownFilter: { breakdown: 'unique', breakdown_type: 'event', breakdown_limit: 1000 },
            interval: 'day',
            dateRange: { date_from: '-208d' },
          }),
      ],
      [
        'HogQL: a scan of the events crossed with itself',
        () => query({ kind: 'HogQLQuery', query: 'select count() from events a cross join events b cross join events c' }),
      ],
      [
        'HogQL: a sort of every property text',
        () => query({ kind: 'HogQLQuery', query: 'select properties from events order by properties desc limit 20000' }),
      ],
      ['CSV export of the wide events', () => asAnalyst('/events/?format=csv&event=wide')],
      ...Array.from({ length: 4 }, (_, i): [string, () => Promise<Response>] => [
        `CSV export of every event, #${i + 1} of 4 at once`,
        () => asAnalyst('/events/?format=csv'),
      ]),
    ];

    // /flags beside the probes, one call after another, until they all answered.
    const { result: answers, latencies } = await flagsBeside(plover.port, plover.credentials.token, () =>
      Promise.all(
        probes.map(async ([name, send]) => {
          const response = await send();
          return { name, status: response.status, body: Buffer.from(await response.arrayBuffer()) };
        }),
      ),
    );

    const report = answers.map(({ name, status, body }) => `${status} ${name}${status >= 400 ? `: ${body.subarray(0, 200).toString()}` : ''}`);
    expect(answers.filter(({ status }) => status >= 500).map(({ name }) => name)).toEqual([]);
    for (const answer of answers.filter(({ status }) => status >= 400)) {
      expect(JSON.parse(answer.body.toString())).toEqual(
        expect.objectContaining({ type: expect.any(String), code: expect.any(String), detail: expect.any(String) }),
      );
    }
    // The request that could not fit is refused by name; the one within the points answers.
    expect(report[0]).toMatch(/^400 .*too_many_points/);
    expect(report[1]).toMatch(/^400 .*too_many_points/);
    expect(report[2]).toMatch(/^200 /);
    // The scan hits a limit (time or rows) and says which.
    expect(report[3]).toMatch(/^400 .*(timeout_exceeded|too_many_rows|too_slow)/);
    // The wide CSV keeps its columns to the cap, the rest in one JSON column.
    const wideCsv = answers[5]!;
    expect(wideCsv.status).toBe(200);
    const header = wideCsv.body.toString().split(/\r?\n/)[0]!.split(',');
    expect(header.length).toBeLessThanOrEqual(CSV_MAX_COLUMNS + 1);
    expect(header).toContain('other_properties');

    expect(exited).toBe(false);
    const health = await fetch(url('/_health'));
    expect(health.status).toBe(200);

    const flags = flagsVerdict(idle, latencies);
    process.stdout.write(`probes:\n  ${report.join('\n  ')}\n${flags.text}; RSS ${rssBefore.toFixed(0)} → ${plover.rssMiB().toFixed(0)} MiB\n`);
    expect(flags).toMatchObject({ ok: true });
  });
});
