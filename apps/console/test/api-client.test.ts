/**
 * The console's API client against a real HTTP server: a 429 with a short Retry-After (the project's analysis slots
 * are busy) is sent again after that wait, while a long one (a throttled key) or any other failure reaches the
 * screen at once.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiClient, ApiError } from '../src/api/client';
import { operations } from '../src/api/operations';

type Answer = { status: number; retryAfter?: string };

/** A server answering each request with the next of `answers` (the last one repeated), counting the requests. */
async function serve(answers: Answer[]): Promise<{ client: ApiClient; requests: () => number; close: () => Promise<void> }> {
  let requests = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    const answer = answers[Math.min(requests++, answers.length - 1)]!;
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (answer.retryAfter !== undefined) headers['Retry-After'] = answer.retryAfter;
    res.writeHead(answer.status, headers);
    res.end(
      answer.status === 200 ? '{"results":[]}' : JSON.stringify({ type: 'throttled_error', code: 'throttled', detail: 'Request was throttled.', attr: null }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    client: new ApiClient('phx_test', base),
    requests: () => requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const run = (client: ApiClient, signal?: AbortSignal) =>
  client.call(operations.query, { project_id: '1' }, { body: { query: { kind: 'HogQLQuery', query: 'select 1' } }, signal });

describe('the console API client', () => {
  it('sends a request refused with a short 429 again after the wait the server asks for', async () => {
    const server = await serve([{ status: 429, retryAfter: '0' }, { status: 429, retryAfter: '1' }, { status: 200 }]);
    try {
      const started = Date.now();
      await expect(run(server.client)).resolves.toEqual({ results: [] });
      expect(server.requests()).toBe(3);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    } finally {
      await server.close();
    }
  });

  it('gives up after ten refusals, with the server’s error', async () => {
    const server = await serve([{ status: 429, retryAfter: '0' }]);
    try {
      const failure = await run(server.client).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(ApiError);
      expect((failure as ApiError).status).toBe(429);
      expect(server.requests()).toBe(10);
    } finally {
      await server.close();
    }
  });

  it.each([
    ['a 429 asking for a long wait', { status: 429, retryAfter: '60' }],
    ['a 429 without Retry-After', { status: 429 }],
    ['a 503', { status: 503, retryAfter: '1' }],
  ])('does not retry %s', async (_name, answer) => {
    const server = await serve([answer, { status: 200 }]);
    try {
      await expect(run(server.client)).rejects.toMatchObject({ status: answer.status });
      expect(server.requests()).toBe(1);
    } finally {
      await server.close();
    }
  });

  it('stops waiting when the screen that asked goes away', async () => {
    const server = await serve([{ status: 429, retryAfter: '5' }, { status: 200 }]);
    try {
      const controller = new AbortController();
      const answer = run(server.client, controller.signal);
      while (server.requests() === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      controller.abort();
      await expect(answer).rejects.toBeDefined();
      expect(server.requests()).toBe(1);
    } finally {
      await server.close();
    }
  });
});
