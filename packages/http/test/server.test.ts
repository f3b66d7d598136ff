import net from 'node:net';
import { silentLogger } from '@plover/core';
import { createMetricsRegistry, createServiceApp, listen, type RunningServer } from '@plover/http';

/** Writes raw bytes to the server and reads until it closes the connection. */
function exchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(bytes));
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

function jsonBody(answer: string): unknown {
  return JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
}

describe('requests the HTTP parser refuses', () => {
  let running: RunningServer;

  beforeAll(async () => {
    const app = createServiceApp({ logger: silentLogger(), metrics: createMetricsRegistry('test'), checks: {}, trustProxy: false, mount: () => undefined });
    running = await listen(app, { port: 0, host: '127.0.0.1' });
  });

  afterAll(() => running.close());

  it('answers a request line past 16 KiB with 431 in the JSON error shape', async () => {
    const answer = await exchange(running.port, `GET /_health?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(answer).toMatch(/\r\nContent-Type: application\/json\r\n/);
    expect(jsonBody(answer)).toEqual({ type: 'validation_error', code: 'request_header_fields_too_large', detail: expect.any(String), attr: null });
  });

  it('answers bytes that are not HTTP with 400 in the JSON error shape', async () => {
    const answer = await exchange(running.port, 'NOT HTTP AT ALL\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(jsonBody(answer)).toEqual({ type: 'validation_error', code: 'parse_error', detail: 'Malformed HTTP request.', attr: null });
  });
});
