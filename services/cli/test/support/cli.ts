/**
 * The CLI as users run it, in a child process (`node --import tsx services/cli/src/cli.ts …`, what `npx plover`
 * runs in a checkout), and the calls the tests make to the Plover it talks to.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const ROOT = path.resolve(__dirname, '../../../..');
export const CLI = ['--conditions=plover-source', '--import', 'tsx', 'services/cli/src/cli.ts'];

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A child running `plover args…` in the repository, with only the environment given (no PLOVER_* of the machine). */
export function spawnCli(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, [...CLI, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env } });
}

export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const child = spawnCli(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** The management and capture calls of the tests, with the personal key. */
export class Plover {
  constructor(
    readonly host: string,
    private readonly key: string,
  ) {}

  async get<T>(pathAndQuery: string): Promise<T> {
    const response = await fetch(`${this.host}${pathAndQuery}`, { headers: { authorization: `Bearer ${this.key}` } });
    if (!response.ok) throw new Error(`GET ${pathAndQuery}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  }

  async text(pathAndQuery: string): Promise<string> {
    const response = await fetch(`${this.host}${pathAndQuery}`, { headers: { authorization: `Bearer ${this.key}` } });
    if (!response.ok) throw new Error(`GET ${pathAndQuery}: ${response.status}`);
    return response.text();
  }

  async project(name: string): Promise<{ id: number; token: string }> {
    const response = await fetch(`${this.host}/api/projects/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    });
    const created = (await response.json()) as { id: number; api_token: string };
    return { id: created.id, token: created.api_token };
  }

  /** Events as an SDK sends them, through `/batch/`, `size` per request, in order; 429 and 503 retried as SDKs do. */
  async batch(token: string, events: Array<Record<string, unknown>>, size = 500): Promise<void> {
    for (let i = 0; i < events.length; i += size) {
      const body = JSON.stringify({ api_key: token, batch: events.slice(i, i + size) });
      for (let attempt = 0; ; attempt++) {
        const response = await fetch(`${this.host}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        if (response.status === 200) break;
        if ((response.status !== 503 && response.status !== 429) || attempt === 20) {
          throw new Error(`/batch/ answered ${response.status}: ${await response.text()}`);
        }
        await sleep(500);
      }
    }
  }

  async eventCount(project: number): Promise<number> {
    return (await this.get<{ count: number }>(`/api/projects/${project}/events/?limit=1`)).count;
  }

  /** The sum of a metric's samples whose labels include `labels`. */
  async metric(name: string, labels: Record<string, string> = {}): Promise<number> {
    const text = await (await fetch(`${this.host}/metrics`)).text();
    let sum = 0;
    for (const line of text.split('\n')) {
      if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
      if (Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`))) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return sum;
  }

  /** Waits until `read` gives `expected` (ingestion runs behind capture's acknowledgement). */
  async until<T>(read: () => Promise<T>, expected: (value: T) => boolean, what: string, timeoutMs = 150_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (expected(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after ${timeoutMs} ms`);
      await sleep(250);
    }
  }

  /**
   * The project's persons as comparable values: sorted distinct ids and properties, in a stable order. Left out are
   * the properties that name the first or the latest event of a person: a visitor's anonymous events and their
   * $identify have different distinct ids, so they sit on different bus partitions and are processed in either
   * order, the same events sent twice to /batch/ included (docs/ingestion.md, Ordering).
   */
  async persons(project: number): Promise<Array<{ distinct_ids: string[]; properties: Record<string, unknown> }>> {
    const text = await this.text(`/api/projects/${project}/persons/?format=jsonl`);
    const orderDependent = new Set(['$creator_event_uuid', '$initial_current_url', '$current_url']);
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { distinct_ids: string[]; properties: Record<string, unknown> })
      .map((person) => ({
        distinct_ids: [...person.distinct_ids].sort(),
        properties: Object.fromEntries(Object.entries(person.properties).filter(([key]) => !orderDependent.has(key))),
      }))
      .sort((a, b) => a.distinct_ids[0]!.localeCompare(b.distinct_ids[0]!));
  }

  /** A trend over the generated events' days: daily users of $pageview, purchases' summed amount, $identify count. */
  async trend(project: number): Promise<unknown> {
    const events = [{ id: '$pageview', math: 'dau' }, { id: 'purchase', math: 'sum', math_property: 'amount' }, { id: '$identify' }];
    const query = new URLSearchParams({ events: JSON.stringify(events), date_from: '-14d', interval: 'day', refresh: 'true' });
    const trend = await this.get<{ result: Array<{ label: string; data: number[]; days: string[]; count: number }> }>(
      `/api/projects/${project}/insights/trend/?${query.toString()}`,
    );
    return trend.result.map(({ label, data, days, count }) => ({ label, data, days, count }));
  }
}
