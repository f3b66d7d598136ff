/**
 * Open-loop load at a fixed rate, for the "p99 at N req/s" figures of bench/capture.ts and bench/decide.ts.
 *
 * autocannon's `overallRate` is not a steady rate: each connection sends back to back until it has made its
 * share of the second, then waits for the next one-second tick (autocannon lib/httpClient.js, `reqsMadeThisSecond`).
 * At half the server's capacity that is full load for half of every second and nothing for the rest, so its p99
 * is a latency at saturation. Here request i is due at start + i / rate (sent on the 1 ms timer tick it falls in)
 * and its latency is counted from that due time, not from when a connection was free to send it: a request that
 * waits behind a slow one is charged the wait (no coordinated omission).
 *
 * HTTP/1.1 over keep-alive sockets, one request in flight per socket, answers read by Content-Length (every
 * Plover and baseline answer has one; a chunked answer counts as an error).
 */
import net from 'node:net';

export interface PacedSpec {
  /** One server, or several (replicas): connections are spread over them round robin. */
  url: string | string[];
  headers?: Record<string, string>;
  /** The body of the i-th POST (called once per request). */
  body: (index: number) => string;
  /** Requests per second. */
  rate: number;
  warmupSeconds: number;
  seconds: number;
  connections: number;
}

export interface PacedResult {
  /** Answers per second over the measured window. */
  requestsPerSecond: number;
  /** Latency from each request's due time, ms, over the requests due in the measured window. */
  latencyMs: { p50: number; p99: number; max: number };
  non2xx: number;
  errors: number;
}

interface Due {
  index: number;
  dueAt: number;
}

class Connection {
  private readonly socket: net.Socket;
  private buffered: Buffer = Buffer.alloc(0);
  current: Due | undefined;

  constructor(
    readonly target: URL,
    private readonly done: (connection: Connection, due: Due, status: number) => void,
    private readonly failed: (connection: Connection, due: Due | undefined, error: Error) => void,
  ) {
    this.socket = net.connect({ host: target.hostname, port: Number(target.port || 80), noDelay: true });
    this.socket.on('data', (chunk: Buffer) => this.receive(chunk));
    this.socket.on('error', (error) => this.failed(this, this.current, error));
    this.socket.on('close', () => this.failed(this, this.current, new Error('connection closed')));
  }

  send(due: Due, request: string): void {
    this.current = due;
    this.socket.write(request);
  }

  close(): void {
    this.socket.removeAllListeners('close');
    this.socket.destroy();
  }

  private receive(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const headEnd = this.buffered.indexOf('\r\n\r\n');
    if (headEnd === -1) return;
    const head = this.buffered.toString('latin1', 0, headEnd);
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    const due = this.current;
    if (!length || !due) {
      this.failed(this, due, new Error(length ? 'answer without a request' : 'answer without Content-Length'));
      return;
    }
    const end = headEnd + 4 + Number(length[1]);
    if (this.buffered.length < end) return;
    this.buffered = this.buffered.subarray(end);
    this.current = undefined;
    this.done(this, due, Number(head.slice(9, 12)));
  }
}

/** Runs the load; resolves once every request due in the run was answered or failed. */
export function pacedLoad(spec: PacedSpec): Promise<PacedResult> {
  const targets = [spec.url].flat().map((url) => new URL(url));
  const [first] = targets;
  if (!first || targets.some((target) => target.pathname + target.search !== first.pathname + first.search)) {
    throw new Error('paced load: give one or more URLs with the same path');
  }
  const path = first.pathname + first.search;
  const headers = Object.entries({ connection: 'keep-alive', ...spec.headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  // `host` is the same for every replica's connection; servers here do not route by it.
  const requestText = (index: number): string => {
    const body = spec.body(index);
    return `POST ${path} HTTP/1.1\r\nhost: ${first.host}\r\n${headers}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  };

  const intervalMs = 1000 / spec.rate;
  const total = Math.round(spec.rate * (spec.warmupSeconds + spec.seconds));
  const firstMeasured = Math.round(spec.rate * spec.warmupSeconds);
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  let settled = 0;
  let issued = 0;
  let lastAnswerAt = 0;
  const backlog: Due[] = [];
  const idle: Connection[] = [];
  const start = performance.now() + 50; // connections open meanwhile

  return new Promise((resolve) => {
    const connections: Connection[] = [];
    const finish = () => {
      if (settled < total) return;
      clearInterval(timer);
      for (const connection of connections) connection.close();
      latencies.sort((a, b) => a - b);
      const at = (q: number) => round2(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
      const measuredFrom = start + spec.warmupSeconds * 1000;
      resolve({
        requestsPerSecond: Math.round(latencies.length / ((Math.max(lastAnswerAt, measuredFrom + spec.seconds * 1000) - measuredFrom) / 1000)),
        latencyMs: { p50: at(0.5), p99: at(0.99), max: at(1) },
        non2xx,
        errors,
      });
    };
    const settle = (due: Due, status: number | undefined) => {
      settled++;
      if (due.index >= firstMeasured) {
        const now = performance.now();
        if (status === undefined) errors++;
        else {
          if (status < 200 || status > 299) non2xx++;
          latencies.push(now - due.dueAt);
          lastAnswerAt = now;
        }
      }
    };
    const dispatch = (connection: Connection) => {
      const due = backlog.shift();
      if (due) connection.send(due, requestText(due.index));
      else idle.push(connection);
    };
    const done = (connection: Connection, due: Due, status: number) => {
      settle(due, status);
      dispatch(connection);
      finish();
    };
    const failed = (connection: Connection, due: Due | undefined, error: Error) => {
      connection.close();
      if (due) settle(due, undefined);
      const index = connections.indexOf(connection);
      const idleAt = idle.indexOf(connection);
      if (idleAt !== -1) idle.splice(idleAt, 1);
      // A dead connection is replaced, so one server error does not shrink the load for the rest of the run.
      if (index !== -1 && settled < total) {
        const replacement = new Connection(connection.target, done, failed);
        connections[index] = replacement;
        dispatch(replacement);
      }
      if (error.message === 'answer without Content-Length') process.stderr.write(`paced load: ${error.message}\n`);
      finish();
    };
    for (let i = 0; i < spec.connections; i++) {
      const connection = new Connection(targets[i % targets.length]!, done, failed);
      connections.push(connection);
      idle.push(connection);
    }
    const timer = setInterval(() => {
      const now = performance.now();
      while (issued < total && start + issued * intervalMs <= now) {
        backlog.push({ index: issued, dueAt: start + issued * intervalMs });
        issued++;
      }
      while (backlog.length > 0 && idle.length > 0) dispatch(idle.pop()!);
    }, 1);
  });
}

const round2 = (value: number) => Math.round(value * 100) / 100;
