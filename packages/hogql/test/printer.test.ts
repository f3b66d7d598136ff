/**
 * The printed ClickHouse SQL for representative queries (golden, in __snapshots__), the default and maximum row
 * limits with hasMore, and the limits a query runs under.
 */
import { limitedClickHouse, withSettings, type ClickHouse, type ClickHouseParams, type StatementSettings } from '@plover/clickhouse';
import type { QueryLimits } from '@plover/config';
import { ApiError } from '@plover/core';
import { printHogQL, runHogQL } from '../src';
import { seededStore } from './support/store';

const GOLDEN = [
  'SELECT event, count() AS c FROM events WHERE timestamp > {since} GROUP BY event ORDER BY c DESC',
  'SELECT properties.$browser, person.properties.email, person_id FROM events LIMIT 10',
  'WITH recent AS (SELECT distinct_id FROM events) SELECT count() FROM recent',
  'SELECT e.event, p.properties.plan FROM events AS e LEFT JOIN persons AS p ON e.person_id = p.id',
  'SELECT $session_id, $is_bounce FROM events AS e JOIN sessions AS s ON e.$session_id = s.session_id',
  'SELECT 1 UNION ALL SELECT 2 LIMIT 100000',
];

it.each(GOLDEN)('prints %s', async (query) => {
  const printed = await printHogQL(query, { teamId: 7, values: { since: '2025-01-01' } });
  expect({ sql: printed.sql, params: printed.params, columns: printed.columns, limit: printed.limit }).toMatchSnapshot();
});

it.each([
  ['SELECT 1 FROM events SETTINGS max_threads = 64', 'not_implemented'],
  ['SELECT * FROM system.tables', 'resolution_error'],
  ["SELECT * FROM file('/etc/passwd')", 'resolution_error'],
  ["SELECT joinGet('t', 'c', 1)", 'resolution_error'],
  ['SELECT count( FROM events', 'syntax_error'],
  ['SELECT {missing}', 'resolution_error'],
])('refuses %s (%s) before reaching ClickHouse', async (query, code) => {
  const error = await runHogQL({} as never, query, { teamId: 1 }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ApiError);
  expect((error as ApiError).status).toBe(400);
  expect((error as ApiError).code).toBe(code);
});

describe('on chDB', () => {
  let store: Awaited<ReturnType<typeof seededStore>>;
  beforeAll(async () => {
    store = await seededStore(150);
  });
  afterAll(() => store.close());

  it('returns 100 rows by default and at most 50,000, saying there are more', async () => {
    const byDefault = await runHogQL(store.ch, 'SELECT uuid FROM events', { teamId: 1 });
    expect([byDefault.results.length, byDefault.hasMore, byDefault.limit]).toEqual([100, true, 100]);
    const all = await runHogQL(store.ch, 'SELECT uuid FROM events LIMIT 1000', { teamId: 1 });
    expect([all.results.length, all.hasMore]).toEqual([150, false]);
    const capped = await runHogQL(store.ch, 'SELECT number FROM numbers(60000) LIMIT 60000', { teamId: 1 });
    expect([capped.results.length, capped.hasMore, capped.limit]).toEqual([50_000, true, 50_000]);
  });

  const limits: QueryLimits = {
    maxExecutionSeconds: 30,
    maxMemoryBytes: 1_000_000_000,
    maxRowsToRead: 1_000_000_000,
    maxBytesToRead: 100_000_000_000,
    maxResultRows: 100_000,
    maxResultBytes: 100_000_000,
    maxThreads: 1,
    threadNice: 10,
    maxPoints: 1000,
  };

  it('runs under the analysis limits of its handle, in one SETTINGS clause with its own settings', async () => {
    const sent: string[] = [];
    const watched: ClickHouse = Object.assign(Object.create(store.ch) as ClickHouse, {
      queryRows: (name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings) => {
        sent.push(withSettings(sql, settings));
        return store.ch.queryRows(name, sql, params, settings);
      },
    });
    await runHogQL(limitedClickHouse(watched, limits), 'SELECT count() FROM events', { teamId: 1 });
    expect(sent).toHaveLength(1);
    expect(sent[0]!.match(/SETTINGS/g)).toHaveLength(1);
    expect(sent[0]).toMatch(/readonly = 2.*max_execution_time = 30.*max_threads = 1.*os_thread_priority = 10/);
  });

  it('stops a query at the rows-to-read and time limits with a 400 naming the limit', async () => {
    const rows = await runHogQL(limitedClickHouse(store.ch, { ...limits, maxRowsToRead: 1000 }), 'SELECT count() FROM numbers(100000000)', {
      teamId: 1,
    }).catch((e: unknown) => e);
    expect(rows).toMatchObject({ status: 400, code: 'too_many_rows' });
    expect((rows as ApiError).detail).toContain('max_rows_to_read');
    const slow = await runHogQL(
      limitedClickHouse(store.ch, { ...limits, maxExecutionSeconds: 1 }),
      'SELECT count() FROM numbers(1000000000) AS a WHERE sipHash64(a.number) = 1',
      { teamId: 1 },
    ).catch((e: unknown) => e);
    expect((slow as ApiError).status).toBe(400);
    expect((slow as ApiError).detail).toContain('max_execution_time');
  });

  it('maps a ClickHouse error the query caused to a 400', async () => {
    const error = await runHogQL(store.ch, "SELECT toInt64('x') + 1", { teamId: 1 }).catch((e: unknown) => e);
    expect((error as ApiError).status).toBe(400);
    expect((error as ApiError).code).toBe('clickhouse_error');
  });
});
