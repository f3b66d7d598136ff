/**
 * The console's one way to the management API: a personal API key as a bearer token (never a cookie, never in a
 * URL), only the operations of operations.ts, and every failure as an {@link ApiError} that screens turn into
 * a message (components/problem.tsx). A request the server refused as one too many of the project's at once (429 with
 * a short `Retry-After`: analysis slots, running queries) is sent again after that wait, a few times, so a screen
 * whose queries queue behind others' draws late rather than failing.
 */
import { fillPath, type Operation, type PathParams } from './operations';
import type { ErrorBody } from './types';

/** A failed request: the server's error body when it sent one, else a description of what went wrong. */
export class ApiError extends Error {
  constructor(
    /** HTTP status; 0 when the server could not be reached. */
    readonly status: number,
    readonly body: ErrorBody,
    /** The scope the operation needs (the server names it in a 403 when the key lacks it). */
    readonly scope: string,
  ) {
    super(body.detail);
  }

  /** The key was not accepted at all: mistyped, revoked, or its user deactivated. */
  get unauthenticated(): boolean {
    return this.status === 401;
  }

  /** The scope the key lacks, when that is why the server refused. */
  get missingScope(): string | undefined {
    if (this.status !== 403) return undefined;
    return /missing required scope '([^']+)'/.exec(this.body.detail)?.[1];
  }
}

export interface RequestOptions<Body> {
  query?: Record<string, string | number | boolean | undefined>;
  body?: Body;
  signal?: AbortSignal;
}

/** Tries of a request the server keeps refusing with a short 429 before its error reaches the screen. */
const THROTTLED_TRIES = 10;
/** A 429 asking for a longer wait than this (a throttled key, a rate limit) is not retried: the screen shows it. */
const MAX_RETRY_AFTER_SECONDS = 5;

type Args<Path extends string, Body> = [params: PathParams<Path> & Record<string, string | number>, options?: RequestOptions<Body>];

export class ApiClient {
  constructor(
    private readonly key: string,
    /** The server's origin: the console page's own (`window.location.origin`). */
    private readonly base: string,
    /** Called when the server no longer accepts the key, so the console can ask for another one. */
    private readonly onUnauthenticated: (error: ApiError) => void = () => undefined,
  ) {}

  /** Calls `operation` and answers its parsed JSON body (undefined for an empty one). */
  async call<Response, Body, Path extends string>(operation: Operation<Response, Body, Path>, ...[params, options = {}]: Args<Path, Body>): Promise<Response> {
    const response = await this.send(operation, params, options, 'application/json');
    const text = await response.text();
    return (text === '' ? undefined : JSON.parse(text)) as Response;
  }

  /** Calls `operation` with `format=csv` and answers the CSV file with the name the server gave it. */
  async csv<Response, Body, Path extends string>(
    operation: Operation<Response, Body, Path>,
    ...[params, options = {}]: Args<Path, Body>
  ): Promise<{ name: string; blob: Blob }> {
    const response = await this.send(operation, params, { ...options, query: { ...options.query, format: 'csv' } }, 'text/csv');
    const name = /filename="([^"]+)"/.exec(response.headers.get('Content-Disposition') ?? '')?.[1] ?? 'export.csv';
    return { name, blob: await response.blob() };
  }

  private async send(
    operation: Operation<unknown, unknown>,
    params: Record<string, string | number>,
    { query, body, signal }: RequestOptions<unknown>,
    accept: string,
  ): Promise<Response> {
    const url = new URL(fillPath(operation.path, params), this.base);
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    const headers: Record<string, string> = { Authorization: `Bearer ${this.key}`, Accept: accept };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let response: Response;
    for (let tries = 1; ; tries++) {
      try {
        response = await fetch(url, {
          method: operation.method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          credentials: 'omit',
          signal,
        });
      } catch (error) {
        if (signal?.aborted) throw error;
        throw new ApiError(0, { type: 'network', code: 'unreachable', detail: 'The server could not be reached.', attr: null }, operation.scope);
      }
      const wait = tries < THROTTLED_TRIES ? briefRetryAfter(response) : undefined;
      if (wait === undefined) break;
      await response.body?.cancel();
      await pause(wait * 1000, signal);
    }
    if (response.ok) return response;
    const error = new ApiError(response.status, await errorBody(response), operation.scope);
    if (error.unauthenticated) this.onUnauthenticated(error);
    throw error;
  }
}

/** The seconds a 429 asks to wait when that is short enough to wait for here; undefined for any other answer. */
function briefRetryAfter(response: Response): number | undefined {
  const header = response.headers.get('Retry-After');
  if (response.status !== 429 || header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  return Number.isInteger(seconds) && seconds >= 0 && seconds <= MAX_RETRY_AFTER_SECONDS ? seconds : undefined;
}

/** Resolves after `ms`, or throws the signal's reason once it is aborted. */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  signal?.throwIfAborted();
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
  signal?.throwIfAborted();
}

async function errorBody(response: Response): Promise<ErrorBody> {
  const body = (await response.json().catch(() => undefined)) as Partial<ErrorBody> | undefined;
  return {
    type: body?.type ?? 'error',
    code: body?.code ?? String(response.status),
    detail: typeof body?.detail === 'string' ? body.detail : `${response.status} ${response.statusText}`,
    attr: body?.attr ?? null,
  };
}
