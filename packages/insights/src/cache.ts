import type { ClickHouse } from '@plover/clickhouse';
import type { ResolvedRange } from './types';

/**
 * Insight result cache: an in-process LRU of computed results (PostHog keeps them in Redis, keyed by the filter
 * and team). A result is keyed by what it was computed from: the project, the normalized input, the date range the
 * input resolved to at the time (so `-7d` moves on with the clock) and the project's data version. The data
 * version is read from ClickHouse on every request — newest insert and row count of the project's events and of
 * its person overrides — so new, redelivered or deleted events and person merges all change the key, and a
 * stale result is never served; superseded entries just age out of the LRU.
 */

/** JSON with object keys sorted at every level: equal values give equal text whatever their key order. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    typeof item === 'object' && item !== null && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}

/** The project's data version: changes whenever events or person overrides of the project are written or removed. */
export async function dataVersion(ch: ClickHouse, projectId: number): Promise<string> {
  const [events, overrides] = await Promise.all([
    ch.query('insights.eventsVersion', 'SELECT toString(max(inserted_at)) AS inserted, toString(count()) AS n FROM events WHERE team_id = {projectId:Int64}', {
      projectId,
    }),
    ch.query(
      'insights.overridesVersion',
      'SELECT toString(max(version)) AS version, toString(count()) AS n FROM person_overrides WHERE team_id = {projectId:Int64}',
      {
        projectId,
      },
    ),
  ]);
  return stableJson([events[0] ?? null, overrides[0] ?? null]);
}

/**
 * The part of a resolved range a result depends on beyond the data version: the timezone, the first bucket
 * and the start of the last one. An open end (`date_to` absent → now) moves every second, but what it adds —
 * events timestamped after the previous request that were already stored then — is the rare case of future
 * timestamps; ordinary new events change the data version instead. A result therefore stays cached until its
 * bucket grid moves (the next interval begins) or the data changes.
 */
export function rangeKey(range: ResolvedRange): { timezone: string; from: string; lastBucket: string | null } {
  return { timezone: range.timezone, from: range.from, lastBucket: range.buckets[range.buckets.length - 1] ?? null };
}

/** What a result was computed from; `input` and `range` are any JSON (key order does not matter). */
export interface CacheRequest {
  /** The computation, e.g. `trends`, `funnel_correlation`. */
  kind: string;
  projectId: number;
  input: unknown;
  /** The resolved date range, or whatever else time-dependent the result depends on. */
  range: unknown;
}

export interface CachedResult<T> {
  result: T;
  /** When the result was computed. */
  lastRefresh: Date;
  /** True only when served from the cache. */
  isCached: boolean;
}

interface Entry {
  result: unknown;
  lastRefresh: Date;
  /** Its request's {@link peekKey}. */
  peek: string;
}

export const DEFAULT_CACHE_ENTRIES = 500;

/** A request's key without its range and data version: what {@link InsightResultCache.peek} looks a result up by. */
const peekKey = (request: CacheRequest): string => stableJson({ kind: request.kind, projectId: request.projectId, input: request.input });

export class InsightResultCache {
  private readonly entries = new Map<string, Entry>();
  /** The key of the newest stored result of each request, whatever its range and data version. */
  private readonly newest = new Map<string, string>();
  /** Computations under way, so identical concurrent requests run once. */
  private readonly pending = new Map<string, Promise<Entry>>();

  constructor(
    private readonly maxEntries = DEFAULT_CACHE_ENTRIES,
    private readonly now: () => Date = () => new Date(),
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError('maxEntries must be a positive integer');
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * The newest stored result of `request` at any data version and resolved range, never computing nor reading
   * ClickHouse: PostHog's `force_cache`, what a dashboard shows until it is refreshed. It may be stale; its
   * `lastRefresh` says how old it is.
   */
  peek<T>(request: CacheRequest): CachedResult<T> | undefined {
    const key = this.newest.get(peekKey(request));
    const hit = key === undefined ? undefined : this.entries.get(key);
    return hit && { result: hit.result as T, lastRefresh: hit.lastRefresh, isCached: true };
  }

  /**
   * The cached result of `request` at the project's current data version, or `compute()`'s, which is then stored.
   * `refresh` skips the lookup (the fresh result replaces the stored one).
   */
  async run<T>(ch: ClickHouse, request: CacheRequest, refresh: boolean, compute: () => Promise<T>): Promise<CachedResult<T>> {
    const key = stableJson({ ...request, version: await dataVersion(ch, request.projectId) });
    if (!refresh) {
      const hit = this.entries.get(key);
      if (hit) {
        // Most recently used last: Map keeps insertion order, so the first key is the least recently used.
        this.entries.delete(key);
        this.entries.set(key, hit);
        return { result: hit.result as T, lastRefresh: hit.lastRefresh, isCached: true };
      }
      const running = this.pending.get(key);
      if (running) {
        const entry = await running;
        return { result: entry.result as T, lastRefresh: entry.lastRefresh, isCached: false };
      }
    }
    const lastRefresh = this.now();
    const computing = compute().then((result): Entry => ({ result, lastRefresh, peek: peekKey(request) }));
    this.pending.set(key, computing);
    try {
      const entry = await computing;
      this.store(key, entry);
      return { result: entry.result as T, lastRefresh, isCached: false };
    } finally {
      if (this.pending.get(key) === computing) this.pending.delete(key);
    }
  }

  private store(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
    this.newest.set(entry.peek, key);
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      const evicted = this.entries.get(oldest)!;
      this.entries.delete(oldest);
      if (this.newest.get(evicted.peek) === oldest) this.newest.delete(evicted.peek);
    }
  }
}
