import fs from 'node:fs';
import path from 'node:path';
import { UserError } from './errors';

/** What every command that talks to a running Plover is given (`--host`, `--api-key`, `--project`). */
export interface Connection {
  host: string;
  apiKey: string | undefined;
  project: string;
}

/** An answer other than 2xx, with the fields of the API's error body when it has one. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    readonly detail: string,
    readonly attr: string | null,
    readonly retryAfterSeconds: number | undefined,
  ) {
    super(`${status}${code ? ` ${code}` : ''}: ${detail}`);
    this.name = 'ApiFailure';
  }
}

/** The host could not be reached (refused, reset, timed out): a batch sender retries these. */
export class Unreachable extends UserError {
  constructor(origin: string, reason: string) {
    super(`cannot reach Plover at ${origin} (${reason}); is it running? (plover start)`);
    this.name = 'Unreachable';
  }
}

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The personal API key: `--api-key`, else PLOVER_API_KEY (commander reads both into `given`), else — for a Plover
 * on this machine only — the one embedded Plover wrote into its data dir's credentials.json on its first start.
 * A key read from disk is never sent to another host.
 */
export function resolveApiKey(given: string | undefined, host: string, dataDir: string): string | undefined {
  if (given) return given;
  if (!LOCAL_HOSTS.has(new URL(host).hostname)) return undefined;
  try {
    const file = path.join(dataDir, 'credentials.json');
    const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as { personal_api_key?: { value?: unknown } };
    return typeof stored.personal_api_key?.value === 'string' ? stored.personal_api_key.value : undefined;
  } catch {
    return undefined;
  }
}

function retryAfter(response: Response): number | undefined {
  const value = Number(response.headers.get('retry-after'));
  return Number.isFinite(value) && value > 0 ? value : undefined;
}

export async function failureOf(response: Response): Promise<ApiFailure> {
  const text = await response.text().catch(() => '');
  let body: { code?: unknown; detail?: unknown; attr?: unknown } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // Not the API's JSON error (a proxy's page): the status and the start of the text say enough.
  }
  const detail = typeof body.detail === 'string' ? body.detail : text.slice(0, 200) || response.statusText;
  return new ApiFailure(
    response.status,
    typeof body.code === 'string' ? body.code : undefined,
    detail,
    typeof body.attr === 'string' ? body.attr : null,
    retryAfter(response),
  );
}

/** The HTTP client of the commands: the host's base URL, the personal key on `/api/` calls, errors as one line. */
export class Api {
  readonly base: URL;

  constructor(readonly connection: Connection) {
    try {
      this.base = new URL(connection.host.endsWith('/') ? connection.host : `${connection.host}/`);
    } catch {
      throw new UserError(`--host ${JSON.stringify(connection.host)} is not a URL (e.g. http://localhost:8000)`);
    }
  }

  /** `/api/projects/<project>/…`: the project given by --project (an id, or @current). */
  projectPath(rest: string): string {
    return `api/projects/${encodeURIComponent(this.connection.project).replace(/^%40/, '@')}/${rest}`;
  }

  url(pathAndQuery: string): URL {
    return new URL(pathAndQuery.replace(/^\//, ''), this.base);
  }

  /**
   * One request; resolves with the response whatever its status. A host that cannot be reached is a UserError;
   * `/api/` paths carry the personal key (a UserError when there is none).
   */
  async fetch(pathAndQuery: string, init: RequestInit = {}): Promise<Response> {
    const url = this.url(pathAndQuery);
    const headers = new Headers(init.headers);
    if (url.pathname.startsWith('/api/')) {
      if (!this.connection.apiKey) {
        throw new UserError('no personal API key: pass --api-key or set PLOVER_API_KEY (the phx_… key embedded Plover printed on its first start)');
      }
      headers.set('authorization', `Bearer ${this.connection.apiKey}`);
    }
    try {
      return await fetch(url, { ...init, headers });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new Unreachable(this.base.origin, cause?.code ?? cause?.message ?? (error as Error).message);
    }
  }

  /** A JSON answer of the API (undefined for 204); any other status is a UserError naming the request and the server's reason. */
  async json<T>(pathAndQuery: string, init: RequestInit = {}): Promise<T> {
    const response = await this.fetch(pathAndQuery, init);
    if (!response.ok) throw userErrorOf(`${init.method ?? 'GET'} /${pathAndQuery.replace(/^\//, '').split('?')[0]}`, await failureOf(response));
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }

  /** The response if it is 2xx, else the {@link ApiFailure} it carries. */
  async ok(pathAndQuery: string, init: RequestInit = {}): Promise<Response> {
    const response = await this.fetch(pathAndQuery, init);
    if (!response.ok) throw await failureOf(response);
    return response;
  }

  /** The project's token (`phc_…`), which events are sent with. */
  async projectToken(): Promise<{ id: number; token: string; name: string }> {
    const project = await this.json<{ id: number; api_token: string; name: string }>(this.projectPath(''));
    return { id: project.id, token: project.api_token, name: project.name };
  }
}

/** A failed API call as the one line a user reads. */
export function userErrorOf(request: string, failure: ApiFailure): UserError {
  const hint = failure.status === 401 ? ' (check --api-key / PLOVER_API_KEY)' : failure.status === 403 ? ' (the key lacks a scope or this project)' : '';
  return new UserError(`${request} answered ${failure.message}${failure.attr ? ` [${failure.attr}]` : ''}${hint}`);
}
