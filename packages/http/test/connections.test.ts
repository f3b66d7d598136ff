import net from 'node:net';
import { silentLogger } from '@plover/core';
import {
  connectionCap,
  createMetricsRegistry,
  createServiceApp,
  fileDescriptorLimit,
  listen,
  MAX_UNANSWERED_PER_CONNECTION,
  type ConnectionLimits,
  type RunningServer,
} from '@plover/http';

const LIMITS: ConnectionLimits = { max: 'auto', headersTimeoutMs: 400, requestTimeoutMs: 1_000 };

/** A connection to the server: what it received, and a promise of its close (with when it happened). */
function connect(port: number): { socket: net.Socket; received: () => string; closed: Promise<number> } {
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
  socket.on('error', () => undefined);
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now())));
  return { socket, received: () => text, closed };
}

describe('connections a client holds', () => {
  let running: RunningServer;
  let handled = 0;
  let answerSlow: () => void = () => undefined;

  beforeAll(async () => {
    const app = createServiceApp({
      logger: silentLogger(),
      metrics: createMetricsRegistry('test'),
      checks: {},
      trustProxy: false,
      mount: (express) =>
        express.get('/slow', (_req, res) => {
          handled++;
          void new Promise<void>((resolve) => (answerSlow = resolve)).then(() => res.json({ done: true }));
        }),
    });
    running = await listen(app, { port: 0, host: '127.0.0.1', connections: LIMITS });
  });

  afterAll(() => {
    answerSlow();
    return running.close();
  });

  it('closes a connection that never sends a byte once the header timeout passed', async () => {
    const started = Date.now();
    const { closed, received } = connect(running.port);
    const at = await closed;
    expect(at - started).toBeGreaterThanOrEqual(LIMITS.headersTimeoutMs - 50);
    expect(at - started).toBeLessThan(3_000);
    expect(received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('closes a connection whose headers trickle in slower than the timeout', async () => {
    const { socket, closed, received } = connect(running.port);
    const drip = setInterval(() => socket.writable && socket.write('X-A: b\r\n'), 100);
    socket.write('GET /_health HTTP/1.1\r\nHost: x\r\n');
    await closed;
    clearInterval(drip);
    expect(received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('keeps a connection that sends its requests in time', async () => {
    const { socket, received, closed } = connect(running.port);
    socket.write('GET /_health HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(received()).toMatch(/^HTTP\/1\.1 200 /);
    socket.end();
    await closed;
  });

  it('stops handling the requests of a connection that has too many unanswered, and closes it', async () => {
    handled = 0;
    const { socket, closed } = connect(running.port);
    // 10,000 pipelined requests whose answers never come (and are never read): 270 kB.
    socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(10_000));
    await closed;
    expect(handled).toBe(MAX_UNANSWERED_PER_CONNECTION);
    answerSlow();
  });

  it('answers pipelined requests in order while they stay within the limit', async () => {
    const { socket, received, closed } = connect(running.port);
    socket.write(
      'GET /_health HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(MAX_UNANSWERED_PER_CONNECTION - 1) + 'GET /_health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    await closed;
    expect(received().match(/HTTP\/1\.1 200 /g)).toHaveLength(MAX_UNANSWERED_PER_CONNECTION);
  });
});

describe('the connection cap', () => {
  it('accepts no more connections than the cap, making room by closing idle keep-alive ones', async () => {
    const app = createServiceApp({ logger: silentLogger(), metrics: createMetricsRegistry('test'), checks: {}, trustProxy: false });
    const running = await listen(app, { port: 0, host: '127.0.0.1', connections: { ...LIMITS, max: 3, headersTimeoutMs: 5_000, requestTimeoutMs: 5_000 } });
    try {
      const idle = connect(running.port);
      idle.socket.write('GET /_health HTTP/1.1\r\nHost: x\r\n\r\n');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(idle.received()).toMatch(/^HTTP\/1\.1 200 /);
      // Two more that are busy sending a request: the cap is reached.
      const busy = [connect(running.port), connect(running.port)];
      for (const { socket } of busy) socket.write('GET /_health HTTP/1.1\r\n');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await new Promise<number>((resolve) => running.server.getConnections((_error, count) => resolve(count)))).toBe(3);

      // The fourth is closed as it is accepted; the idle keep-alive connection is closed to make room for the next.
      const dropped = connect(running.port);
      await dropped.closed;
      expect(dropped.received()).toBe('');
      await idle.closed;
      const next = connect(running.port);
      next.socket.write('GET /_health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      await next.closed;
      expect(next.received()).toMatch(/^HTTP\/1\.1 200 /);
      for (const { socket } of busy) socket.destroy();
    } finally {
      await running.close();
    }
  });

  it('keeps a quarter of the file descriptors (at least 256) for the process', () => {
    expect(connectionCap('auto', 1_024)).toBe(768);
    expect(connectionCap('auto', 20_000)).toBe(15_000);
    expect(connectionCap('auto', 1_048_576)).toBe(16_384);
    expect(connectionCap('auto', 300)).toBe(44);
    expect(connectionCap('auto', undefined)).toBe(16_384);
    expect(connectionCap(50, 1_024)).toBe(50);
    expect(fileDescriptorLimit()).toBeGreaterThan(0);
  });
});
