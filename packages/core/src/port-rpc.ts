/**
 * Calls between two threads of one process over a MessagePort (node:worker_threads), in both directions: each
 * side answers the methods it registered and calls the other's. Arguments and results cross by structured
 * clone, so Dates, BigInts, Maps and typed arrays keep their kind; a Buffer arrives as a plain Uint8Array
 * (see `asBuffer`). Errors cross as data and are rebuilt: a StorageError stays a StorageError with its
 * `retriable` and `code`, so retry decisions on the calling side are the same as if the call had been local.
 *
 * Used by embedded mode, whose ingestion thread reaches the local log of the main thread and the PGlite of the
 * Postgres thread through it (services/standalone).
 */
import type { MessagePort } from 'node:worker_threads';
import { StorageError } from './errors';

type Handler = (...args: never[]) => unknown;

interface Request {
  kind: 'call';
  id: number;
  method: string;
  args: unknown[];
}

interface Reply {
  kind: 'reply';
  id: number;
  ok: boolean;
  value?: unknown;
  error?: WireError;
}

interface WireError {
  name: string;
  message: string;
  stack?: string;
  /** A driver's error code (SQLSTATE, errno), which callers classify by. */
  code?: string;
  storage?: { retriable: boolean };
  cause?: WireError;
}

/** The other side went away (its thread ended or the port was closed) before answering. */
export class PortClosedError extends Error {
  constructor(method: string) {
    super(`${method}: the other thread is gone`);
    this.name = 'PortClosedError';
  }
}

function toWire(error: unknown): WireError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const wire: WireError = { name: error.name, message: error.message, stack: error.stack };
  const { code } = error as { code?: unknown };
  if (typeof code === 'string') wire.code = code;
  if (error instanceof StorageError) wire.storage = { retriable: error.retriable };
  if (error.cause !== undefined) wire.cause = toWire(error.cause);
  return wire;
}

function fromWire(wire: WireError): Error {
  const cause = wire.cause && { cause: fromWire(wire.cause) };
  const error = wire.storage
    ? new StorageError(wire.message, wire.storage.retriable, wire.code, cause)
    : Object.assign(new Error(wire.message, cause), wire.code === undefined ? {} : { code: wire.code });
  error.name = wire.name;
  if (wire.stack) error.stack = wire.stack;
  return error;
}

/** A Uint8Array that crossed a port, as the Buffer it was (no copy). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export class PortRpc {
  private readonly handlers = new Map<string, Handler>();
  private readonly pending = new Map<number, { method: string; resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private readonly closeListeners: (() => void)[] = [];
  private nextId = 0;
  private closed = false;

  constructor(private readonly port: MessagePort) {
    port.on('message', (message: Request | Reply) => {
      if (message.kind === 'call') void this.answer(message);
      else this.settle(message);
    });
    port.on('close', () => this.gone());
  }

  /** Registers what the other side may call as `method`. */
  handle<F extends Handler>(method: string, handler: F): this {
    this.handlers.set(method, handler);
    return this;
  }

  call<T>(method: string, ...args: unknown[]): Promise<T> {
    if (this.closed) return Promise.reject(new PortClosedError(method));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { method, resolve: resolve as (value: unknown) => void, reject });
      this.port.postMessage({ kind: 'call', id, method, args } satisfies Request);
    });
  }

  /** Runs `listener` once the other side is gone; calls still waiting have been rejected by then. */
  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.push(listener);
  }

  /** Lets the thread end while the port is open (the port keeps an event loop alive otherwise). */
  unref(): void {
    this.port.unref();
  }

  close(): void {
    this.port.close();
    this.gone();
  }

  private async answer(request: Request): Promise<void> {
    let reply: Reply;
    try {
      const handler = this.handlers.get(request.method);
      if (!handler) throw new Error(`no handler for ${request.method}`);
      reply = { kind: 'reply', id: request.id, ok: true, value: await (handler as (...args: unknown[]) => unknown)(...request.args) };
    } catch (error) {
      reply = { kind: 'reply', id: request.id, ok: false, error: toWire(error) };
    }
    if (!this.closed) this.port.postMessage(reply);
  }

  private settle(reply: Reply): void {
    const waiting = this.pending.get(reply.id);
    if (!waiting) return;
    this.pending.delete(reply.id);
    if (reply.ok) waiting.resolve(reply.value);
    else waiting.reject(fromWire(reply.error ?? { name: 'Error', message: 'unknown failure' }));
  }

  private gone(): void {
    if (this.closed) return;
    this.closed = true;
    for (const { method, reject } of this.pending.values()) reject(new PortClosedError(method));
    this.pending.clear();
    for (const listener of this.closeListeners.splice(0)) listener();
  }
}
