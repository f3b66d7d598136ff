import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { insertPersonOverrides, migrate, type ClickHouse } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { silentLogger } from '@plover/core';
import { dataVersion, InsightResultCache, rangeKey, stableJson } from '../src/cache';

/** A ClickHouse whose data version is whatever `version.value` says. */
function versioned(): { ch: ClickHouse; version: { value: number }; reads: { count: number } } {
  const version = { value: 1 };
  const reads = { count: 0 };
  const ch: ClickHouse = {
    command: () => Promise.resolve(),
    query: <R>() => {
      reads.count += 1;
      return Promise.resolve([{ inserted: String(version.value), n: '1' }] as R[]);
    },
    queryRows: () => Promise.reject(new Error('not used')),
    queryRaw: () => Promise.reject(new Error('not used')),
    queryRawStream: () => {
      throw new Error('not used');
    },
    insert: () => Promise.resolve(),
    ping: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  return { ch, version, reads };
}

const request = (input: unknown, range: unknown = ['2024-01-01', '2024-01-07']) => ({ kind: 'trends', projectId: 1, input, range });

describe('stableJson', () => {
  it('sorts object keys at every level and keeps array order', () => {
    expect(stableJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[2,{"y":2,"z":1}]},"b":1}');
    expect(stableJson({ a: 1, b: 2 })).toBe(stableJson({ b: 2, a: 1 }));
  });
});

describe('InsightResultCache', () => {
  it('serves a repeated request from the cache with the first computation time; key order does not matter', async () => {
    const { ch } = versioned();
    let clock = 1_000;
    const cache = new InsightResultCache(10, () => new Date(clock));
    const compute = jest.fn(() => Promise.resolve(['r1']));
    const first = await cache.run(ch, request({ a: 1, b: 2 }), false, compute);
    expect(first).toEqual({ result: ['r1'], lastRefresh: new Date(1_000), isCached: false });
    clock = 2_000;
    const second = await cache.run(ch, request({ b: 2, a: 1 }), false, compute);
    expect(second).toEqual({ result: ['r1'], lastRefresh: new Date(1_000), isCached: true });
    expect(compute).toHaveBeenCalledTimes(1);
  });

  it('peek: the newest result of a request at any range and data version, without reading ClickHouse; gone once evicted', async () => {
    const { ch, version, reads } = versioned();
    let clock = 1_000;
    const cache = new InsightResultCache(2, () => new Date(clock));
    expect(cache.peek(request({ a: 1 }))).toBeUndefined();
    await cache.run(ch, request({ a: 1 }), false, () => Promise.resolve('old'));
    version.value = 2;
    clock = 2_000;
    await cache.run(ch, request({ a: 1 }, ['2024-01-02', '2024-01-08']), false, () => Promise.resolve('new'));
    const before = reads.count;
    // Another range and version than either stored result: the newest computed one.
    expect(cache.peek(request({ a: 1 }, ['2025-01-01', '2025-01-07']))).toEqual({ result: 'new', lastRefresh: new Date(2_000), isCached: true });
    expect(cache.peek(request({ a: 2 }))).toBeUndefined();
    expect(reads.count).toBe(before);
    // Two more requests evict both of {a: 1}'s entries.
    await cache.run(ch, request({ b: 1 }), false, () => Promise.resolve(1));
    await cache.run(ch, request({ b: 2 }), false, () => Promise.resolve(2));
    expect(cache.peek(request({ a: 1 }))).toBeUndefined();
    expect(cache.peek(request({ b: 2 }))?.result).toBe(2);
  });

  it('computes again for another input, project, kind, range or data version', async () => {
    const { ch, version } = versioned();
    const cache = new InsightResultCache();
    let n = 0;
    const compute = () => Promise.resolve(++n);
    expect((await cache.run(ch, request({ a: 1 }), false, compute)).result).toBe(1);
    expect((await cache.run(ch, request({ a: 2 }), false, compute)).result).toBe(2);
    expect((await cache.run(ch, { ...request({ a: 1 }), projectId: 2 }, false, compute)).result).toBe(3);
    expect((await cache.run(ch, { ...request({ a: 1 }), kind: 'funnel_correlation' }, false, compute)).result).toBe(4);
    expect((await cache.run(ch, request({ a: 1 }, ['2024-01-02', '2024-01-08']), false, compute)).result).toBe(5);
    expect((await cache.run(ch, request({ a: 1 }), false, compute)).isCached).toBe(true);
    version.value = 2;
    const after = await cache.run(ch, request({ a: 1 }), false, compute);
    expect(after).toMatchObject({ result: 6, isCached: false });
  });

  it('refresh bypasses the lookup and replaces the stored result', async () => {
    const { ch } = versioned();
    const cache = new InsightResultCache();
    let n = 0;
    const compute = () => Promise.resolve(++n);
    await cache.run(ch, request({}), false, compute);
    expect(await cache.run(ch, request({}), true, compute)).toMatchObject({ result: 2, isCached: false });
    expect(await cache.run(ch, request({}), false, compute)).toMatchObject({ result: 2, isCached: true });
  });

  it('evicts the least recently used entry beyond its bound', async () => {
    const { ch } = versioned();
    const cache = new InsightResultCache(2);
    const compute = jest.fn((value: string) => Promise.resolve(value));
    await cache.run(ch, request('a'), false, () => compute('a'));
    await cache.run(ch, request('b'), false, () => compute('b'));
    // Using `a` makes `b` the least recently used.
    expect((await cache.run(ch, request('a'), false, () => compute('a'))).isCached).toBe(true);
    await cache.run(ch, request('c'), false, () => compute('c'));
    expect(cache.size).toBe(2);
    expect((await cache.run(ch, request('a'), false, () => compute('a'))).isCached).toBe(true);
    expect((await cache.run(ch, request('b'), false, () => compute('b'))).isCached).toBe(false);
    expect(() => new InsightResultCache(0)).toThrow(RangeError);
  });

  it('runs identical concurrent requests once and does not store failures', async () => {
    const { ch } = versioned();
    const cache = new InsightResultCache();
    let release!: (value: string) => void;
    const compute = jest.fn(() => new Promise<string>((resolve) => (release = resolve)));
    const first = cache.run(ch, request('x'), false, compute);
    const second = cache.run(ch, request('x'), false, compute);
    await new Promise((resolve) => setImmediate(resolve));
    release('done');
    expect((await Promise.all([first, second])).map((r) => r.result)).toEqual(['done', 'done']);
    expect(compute).toHaveBeenCalledTimes(1);

    const failing = () => Promise.reject(new Error('boom'));
    await expect(cache.run(ch, request('y'), false, failing)).rejects.toThrow('boom');
    expect(await cache.run(ch, request('y'), false, () => Promise.resolve('ok'))).toMatchObject({ result: 'ok', isCached: false });
  });
});

describe('dataVersion on chDB', () => {
  let ch: ClickHouse;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'plover-insights-cache-'));
    ch = await ChdbClickHouse.open({ dataDir: dir });
    await migrate(ch, { logger: silentLogger() });
  });
  afterAll(async () => {
    await ch.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** One event of project `projectId` (every other column defaults). */
  const addEvent = (projectId: number) =>
    ch.command('t.event', `INSERT INTO events (uuid, team_id, event, timestamp) VALUES (generateUUIDv4(), {projectId:Int64}, 'e', now64(6))`, { projectId });

  it('changes with new events and person overrides of the project only', async () => {
    const empty = await dataVersion(ch, 7);
    await addEvent(7);
    const withEvent = await dataVersion(ch, 7);
    expect(withEvent).not.toBe(empty);
    await addEvent(8);
    expect(await dataVersion(ch, 7)).toBe(withEvent);
    await insertPersonOverrides(ch, [{ team_id: 7, old_person_id: randomUUID(), override_person_id: randomUUID(), version: 1 }]);
    expect(await dataVersion(ch, 7)).not.toBe(withEvent);
  });
});

describe('rangeKey', () => {
  it('keeps the timezone, start and last bucket, not the moving open end', () => {
    const range = {
      timezone: 'Europe/Berlin',
      interval: 'day' as const,
      from: '2024-01-01 00:00:00',
      to: '2024-01-03 10:11:12',
      buckets: ['2024-01-01 00:00:00', '2024-01-02 00:00:00', '2024-01-03 00:00:00'],
    };
    expect(rangeKey(range)).toEqual({ timezone: 'Europe/Berlin', from: '2024-01-01 00:00:00', lastBucket: '2024-01-03 00:00:00' });
    expect(rangeKey({ ...range, to: '2024-01-03 10:11:13' })).toEqual(rangeKey(range));
  });
});
