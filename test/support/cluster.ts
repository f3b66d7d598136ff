/**
 * Helpers for services that run `node:cluster` workers behind one port (DECIDE_WORKERS, CAPTURE_WORKERS): each
 * request on a connection of its own, so that the primary's round robin hands consecutive requests to
 * different workers; the workers' pids; one value out of a Prometheus text exposition.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';

export interface Answer {
  status: number;
  body: string;
}

/** One request on a new connection (closed after the answer). */
export function requestOnNewConnection(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? 'GET', headers: init.headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** The pids of a process's children (a cluster primary's workers). */
export function childPids(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

/** The value of the sample `name{labels}` (labels in the order the exposition writes them); undefined when absent. */
export function sampleValue(exposition: string, sample: string): number | undefined {
  const line = exposition.split('\n').find((candidate) => candidate.startsWith(`${sample} `));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
}

/** Polls `check` every 100 ms until it returns true, within `timeoutMs`. */
export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
