import { bootstrap, findProjectByToken, ProjectTokenCache } from '@plover/accounts';
import { StorageError } from '@plover/core';
import { migrate, type QueryResult, type SqlExecutor } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';

/** A projects table in memory that counts its queries and can be made to fail. */
class FakeProjects implements SqlExecutor {
  readonly tokens = new Map<string, number>();
  queries = 0;
  down = false;

  query<R>(_name: string, _text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
    this.queries++;
    if (this.down) return Promise.reject(new StorageError('connection refused', true, 'ECONNREFUSED'));
    const token = params?.[0] as string;
    const id = this.tokens.get(token);
    const rows = (id === undefined ? [] : [{ id, uuid: `uuid-${id}`, api_token: token }]) as R[];
    return Promise.resolve({ rows, rowCount: rows.length });
  }

  exec(): Promise<void> {
    return Promise.resolve();
  }
}

describe('findProjectByToken', () => {
  it('finds the bootstrapped project by its phc_ token and nothing by another', async () => {
    const sql = await PGliteSql.open({});
    try {
      await migrate(sql);
      const credentials = await bootstrap(sql, { adminEmail: 'a@example.com', projectName: 'P', timezone: 'UTC' });
      expect(await findProjectByToken(sql, credentials!.project.api_token)).toEqual({
        id: credentials!.project.id,
        uuid: credentials!.project.uuid,
        api_token: credentials!.project.api_token,
      });
      expect(await findProjectByToken(sql, 'phc_nope')).toBeUndefined();
    } finally {
      await sql.close();
    }
  });
});

describe('ProjectTokenCache', () => {
  let projects: FakeProjects;
  let now: number;
  let cache: ProjectTokenCache;

  beforeEach(() => {
    projects = new FakeProjects();
    projects.tokens.set('phc_a', 1);
    now = 1_000_000;
    cache = new ProjectTokenCache(projects, { refreshAfterMs: 60_000, unknownTtlMs: 5_000, maxUnknown: 2, now: () => now });
  });

  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('answers a known token from memory', async () => {
    expect((await cache.get('phc_a'))?.id).toBe(1);
    expect((await cache.get('phc_a'))?.id).toBe(1);
    expect(projects.queries).toBe(1);
  });

  it('shares one query between concurrent lookups of a token', async () => {
    await Promise.all([cache.get('phc_a'), cache.get('phc_a'), cache.get('phc_a')]);
    expect(projects.queries).toBe(1);
  });

  it('remembers an unknown token for a few seconds, then learns it once it exists', async () => {
    expect(await cache.get('phc_new')).toBeUndefined();
    projects.tokens.set('phc_new', 2);
    expect(await cache.get('phc_new')).toBeUndefined();
    expect(projects.queries).toBe(1);
    now += 5_000;
    expect((await cache.get('phc_new'))?.id).toBe(2);
  });

  it('forgets a rotated-away token after the refresh interval, serving it until the re-check answered', async () => {
    await cache.get('phc_a');
    projects.tokens.delete('phc_a');
    now += 60_000;
    expect((await cache.get('phc_a'))?.id).toBe(1);
    await settle();
    expect(await cache.get('phc_a')).toBeUndefined();
  });

  it('keeps serving known tokens while Postgres is down, and rejects unknown ones', async () => {
    await cache.get('phc_a');
    projects.down = true;
    now += 120_000;
    expect((await cache.get('phc_a'))?.id).toBe(1);
    await settle();
    expect((await cache.get('phc_a'))?.id).toBe(1);
    await expect(cache.get('phc_other')).rejects.toBeInstanceOf(StorageError);
  });

  it('bounds the unknown tokens it remembers', async () => {
    for (const token of ['phc_x', 'phc_y', 'phc_z']) await cache.get(token);
    const before = projects.queries;
    await cache.get('phc_x'); // the oldest, evicted: queried again
    await cache.get('phc_z');
    expect(projects.queries).toBe(before + 1);
  });

  it('answers a token no project can have as unknown without a query, even while Postgres is down', async () => {
    projects.down = true;
    for (const token of ['phc_a\u0000', '\u0000', 'phc_é', 'p'.repeat(65), '']) expect(await cache.get(token)).toBeUndefined();
    expect(projects.queries).toBe(0);
  });

  it('keeps made-up tokens of an impossible shape out of the unknown tokens it remembers', async () => {
    await cache.get('phc_x');
    for (let i = 0; i < 3; i++) await cache.get(`${'x'.repeat(100_000)}${i}`);
    await cache.get('phc_x');
    expect(projects.queries).toBe(1);
  });

  it('forgets a token on invalidate', async () => {
    await cache.get('phc_a');
    cache.invalidate('phc_a');
    await cache.get('phc_a');
    expect(projects.queries).toBe(2);
  });
});
