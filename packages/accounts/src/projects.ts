import type { SqlExecutor } from '@plover/postgres';

/** What the SDK-facing services need to know about the project a `phc_` token belongs to. */
export interface ProjectByToken {
  id: number;
  uuid: string;
  api_token: string;
}

export async function findProjectByToken(sql: SqlExecutor, token: string): Promise<ProjectByToken | undefined> {
  const result = await sql.query<ProjectByToken>('accounts.findProjectByToken', 'SELECT id, uuid, api_token FROM projects WHERE api_token = $1', [token]);
  return result.rows[0];
}

export interface ProjectTokenCacheOptions {
  /** A known token is looked up again (in the background, the cached answer still served) after this long. */
  refreshAfterMs?: number;
  /** An unknown token is answered "unknown" without a query for this long. */
  unknownTtlMs?: number;
  /** Unknown tokens remembered at most; the oldest is forgotten first. */
  maxUnknown?: number;
  now?: () => number;
}

interface Known {
  project: ProjectByToken;
  checkedAt: number;
}

const DEFAULTS = { refreshAfterMs: 60_000, unknownTtlMs: 5_000, maxUnknown: 10_000 };

/** PostHog's shape of a project token: 1 to 64 ASCII characters, none of them NUL. */
// eslint-disable-next-line no-control-regex -- the control characters are the point
const TOKEN_SHAPE = /^[\x01-\x7f]{1,64}$/;

/**
 * Project tokens for capture and decide, which see one on every request and must not query Postgres for each.
 *
 * - A known token is answered from memory. After `refreshAfterMs` it is re-checked in the background, so a
 *   rotated-away token stops working within about a minute, and a Postgres outage never rejects a token that
 *   was known before it.
 * - An unknown token is queried at once, so a project created a moment ago works on its first event; the
 *   negative answer is kept `unknownTtlMs`, so a misconfigured SDK retrying a stale token costs one query per
 *   few seconds, not one per request.
 * - Concurrent lookups of one token share one query.
 * - A token of a shape no project token has (see `TOKEN_SHAPE`) is unknown without a query and is not
 *   remembered: Postgres refuses a NUL in text, which would otherwise turn a bad token into an outage answer,
 *   and a request body may carry a token megabytes long, which must not sit in the negative cache.
 *
 * A failed lookup of a token not in memory rejects (the caller answers 503: the token may well be valid).
 */
export class ProjectTokenCache {
  private readonly known = new Map<string, Known>();
  private readonly unknown = new Map<string, number>();
  private readonly lookups = new Map<string, Promise<ProjectByToken | undefined>>();
  private readonly refreshAfterMs: number;
  private readonly unknownTtlMs: number;
  private readonly maxUnknown: number;
  private readonly now: () => number;

  constructor(
    private readonly sql: SqlExecutor,
    options: ProjectTokenCacheOptions = {},
  ) {
    this.refreshAfterMs = options.refreshAfterMs ?? DEFAULTS.refreshAfterMs;
    this.unknownTtlMs = options.unknownTtlMs ?? DEFAULTS.unknownTtlMs;
    this.maxUnknown = options.maxUnknown ?? DEFAULTS.maxUnknown;
    this.now = options.now ?? Date.now;
  }

  async get(token: string): Promise<ProjectByToken | undefined> {
    if (!TOKEN_SHAPE.test(token)) return undefined;
    const now = this.now();
    const known = this.known.get(token);
    if (known) {
      if (now - known.checkedAt >= this.refreshAfterMs) {
        // Served stale meanwhile; a failed refresh keeps the entry and is retried on a later request.
        this.lookup(token).catch(() => undefined);
      }
      return known.project;
    }
    const unknownUntil = this.unknown.get(token);
    if (unknownUntil !== undefined) {
      if (now < unknownUntil) return undefined;
      this.unknown.delete(token);
    }
    return this.lookup(token);
  }

  /** Forgets what is cached for `token`, e.g. after its project was deleted or its key rotated in this process. */
  invalidate(token: string): void {
    this.known.delete(token);
    this.unknown.delete(token);
  }

  private lookup(token: string): Promise<ProjectByToken | undefined> {
    let pending = this.lookups.get(token);
    if (!pending) {
      pending = findProjectByToken(this.sql, token)
        .then((project) => {
          this.remember(token, project);
          return project;
        })
        .finally(() => this.lookups.delete(token));
      this.lookups.set(token, pending);
    }
    return pending;
  }

  private remember(token: string, project: ProjectByToken | undefined): void {
    const now = this.now();
    if (project) {
      this.known.set(token, { project, checkedAt: now });
      this.unknown.delete(token);
      return;
    }
    this.known.delete(token);
    // Re-inserted at the end, so that the Map's insertion order is the eviction order.
    this.unknown.delete(token);
    this.unknown.set(token, now + this.unknownTtlMs);
    if (this.unknown.size > this.maxUnknown) {
      const oldest = this.unknown.keys().next();
      if (!oldest.done) this.unknown.delete(oldest.value);
    }
  }
}

/** Projects among `projectIds` whose `anonymize_ips` is on: ingestion stores their events without `$ip`. */
export async function projectsAnonymizingIps(sql: SqlExecutor, projectIds: readonly number[]): Promise<Set<number>> {
  const result = await sql.query<{ id: number }>('accounts.projectsAnonymizingIps', 'SELECT id FROM projects WHERE id = ANY($1::bigint[]) AND anonymize_ips', [
    projectIds,
  ]);
  return new Set(result.rows.map((row) => Number(row.id)));
}
