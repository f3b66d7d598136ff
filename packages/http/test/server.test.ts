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

describe('closing the server', () => {
  it('answers a request in flight, then closes its keep-alive connection instead of waiting for the idle timeout', async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const app = createServiceApp({
      logger: silentLogger(),
      metrics: createMetricsRegistry('test'),
      checks: {},
      trustProxy: false,
      mount: (express) => express.get('/slow', (_req, res) => void released.then(() => res.json({ done: true }))),
    });
    const running = await listen(app, { port: 0, host: '127.0.0.1' });
    const socket = net.connect(running.port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    const socketClosed = new Promise((resolve) => socket.on('close', resolve));
    const requested = new Promise((resolve) => socket.once('data', resolve));
    socket.write('GET /slow HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 100));

    const started = Date.now();
    const closed = running.close();
    release();
    await requested;
    await closed;
    await socketClosed;
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(answer).toContain('{"done":true}');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
