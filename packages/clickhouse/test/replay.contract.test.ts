/** The session replay tables (src/replay.ts), on every adapter (test/support/variants.ts). */
import {
  deleteSessions,
  deleteSessionsOfDistinctIds,
  getSessionSummary,
  insertSnapshotBatches,
  listSessionSummaries,
  listSnapshotBlocks,
  migrate,
  readSnapshotBlocks,
  type ClickHouse,
  type SessionSummary,
  type SnapshotBatch,
} from '@plover/clickhouse';
import { snapshotBatch } from './support/snapshot-batch';
import { variants, type Target } from './support/variants';

const SECOND = 1000;
const DAY = 86_400_000;
/** Recent enough to be live under any retention, on a whole second so durations are exact. */
const T0 = Math.floor((Date.now() - 2 * 3_600_000) / SECOND) * SECOND;
const iso = (ms: number) => new Date(ms).toISOString();
/** Midnight UTC of the day holding `ms`, plus `days`. */
const dayPlus = (ms: number, days: number) => iso(Math.floor(ms / DAY) * DAY + days * DAY);

let nextProject = 1_000;

/** A stored message `at` seconds after T0 (snapshotBatch). */
const batch = (projectId: number, sessionId: string, overrides: Parameters<typeof snapshotBatch>[3] = {}): SnapshotBatch =>
  snapshotBatch(projectId, sessionId, T0, overrides);

describe.each(variants)('session replay storage: $name', (variant) => {
  let target: Target;
  let ch: ClickHouse;

  beforeAll(async () => {
    target = await variant.open();
    ch = target.ch;
    await migrate(ch);
  });

  afterAll(async () => {
    await target?.close();
  });

  describe('a session stored from several messages', () => {
    const projectId = nextProject++;
    const first = batch(projectId, 'session-a', {
      at: 0,
      seconds: 9,
      distinct_id: 'anon-1',
      data: '["w1",{"type":4,"data":{"href":"https://shop.example/"},"timestamp":1}]\n["w1",{"type":3,"data":{"source":2,"type":2},"timestamp":2}]\n',
      event_count: 2,
      click_count: 1,
      mouse_activity_count: 1,
      active_milliseconds: 1,
      console_error_count: 1,
      first_url: 'https://shop.example/',
      urls: ['https://shop.example/', 'https://shop.example/cart'],
    });
    const second = batch(projectId, 'session-a', {
      at: 20,
      seconds: 10,
      window_id: 'w2',
      distinct_id: 'user-1',
      keypress_count: 3,
      mouse_activity_count: 4,
      active_milliseconds: 2_500,
      console_log_count: 2,
      console_warn_count: 1,
      first_url: 'https://shop.example/cart',
      urls: ['https://shop.example/cart', 'https://shop.example/pay'],
      snapshot_library: 'posthog-js',
      retention_period_days: 90,
    });
    // Duration 30 s, active 2.501 s; score = (2.501 + 1 + 3 + 1) / (5 + 30 + 1 + 2 + 1) × 100 = 19.23.
    const expected: SessionSummary = {
      session_id: 'session-a',
      distinct_id: 'anon-1',
      distinct_ids: ['anon-1', 'user-1'],
      start_time: iso(T0),
      end_time: iso(T0 + 30 * SECOND),
      duration: 30,
      active_milliseconds: 2_501,
      active_seconds: 2.501,
      inactive_seconds: 30 - 2.501,
      click_count: 1,
      keypress_count: 3,
      mouse_activity_count: 5,
      console_log_count: 2,
      console_warn_count: 1,
      console_error_count: 1,
      event_count: 3,
      first_url: 'https://shop.example/',
      all_urls: ['https://shop.example/', 'https://shop.example/cart', 'https://shop.example/pay'],
      size: Buffer.byteLength(first.data) + Buffer.byteLength(second.data),
      message_count: 2,
      snapshot_source: 'web',
      snapshot_library: 'web',
      retention_period_days: 90,
      expires_at: dayPlus(T0, 30),
      last_ingested_at: expect.any(String),
      activity_score: 19.23,
    };

    beforeAll(async () => {
      await insertSnapshotBatches(ch, [first, second]);
    });

    it('sums its messages into one summary', async () => {
      expect(await getSessionSummary(ch, projectId, 'session-a')).toEqual(expected);
    });

    it('counts a message stored again once, in the summary and in the blocks', async () => {
      await insertSnapshotBatches(ch, [first, second]);
      await insertSnapshotBatches(ch, [second]);
      expect(await getSessionSummary(ch, projectId, 'session-a')).toEqual(expected);
      expect(await listSessionSummaries(ch, projectId)).toEqual([expected]);
      expect((await listSnapshotBlocks(ch, projectId, 'session-a')).map((block) => block.batch_uuid)).toEqual([first.batch_uuid, second.batch_uuid]);
    });

    it('serves its blocks in time order with their lines as stored, whole or by window and page', async () => {
      const blockOf = (stored: SnapshotBatch) => ({
        window_id: stored.window_id,
        batch_uuid: stored.batch_uuid,
        first_timestamp: iso(stored.first_timestamp),
        last_timestamp: iso(stored.last_timestamp),
        event_count: stored.event_count,
        size: Buffer.byteLength(stored.data),
      });
      expect(await listSnapshotBlocks(ch, projectId, 'session-a')).toEqual([blockOf(first), blockOf(second)]);
      expect(await listSnapshotBlocks(ch, projectId, 'session-a', { windowId: 'w2' })).toEqual([blockOf(second)]);
      expect(await readSnapshotBlocks(ch, projectId, 'session-a')).toEqual([
        { ...blockOf(first), data: first.data },
        { ...blockOf(second), data: second.data },
      ]);
      expect(await readSnapshotBlocks(ch, projectId, 'session-a', { offset: 1, limit: 1 })).toEqual([{ ...blockOf(second), data: second.data }]);
      expect(await readSnapshotBlocks(ch, projectId, 'session-a', { windowId: 'w1' })).toEqual([{ ...blockOf(first), data: first.data }]);
    });

    it('keeps other projects and unknown sessions apart', async () => {
      expect(await getSessionSummary(ch, projectId + 10_000, 'session-a')).toBeNull();
      expect(await getSessionSummary(ch, projectId, "session-a' OR 1=1 --")).toBeNull();
      expect(await listSnapshotBlocks(ch, projectId + 10_000, 'session-a')).toEqual([]);
    });
  });

  it('round-trips any JSON text in a block exactly', async () => {
    const projectId = nextProject++;
    const data = `${JSON.stringify(['w1', { type: 2, data: 'gzip\u001f\u008b\u0000 latin1 ÿ', cv: '2024-10', timestamp: T0 }])}\n${JSON.stringify(['w1', { type: 5, data: { tag: '日本語 🚀 "q" \\ \ud800' } }])}\n`;
    await insertSnapshotBatches(ch, [batch(projectId, 's', { data })]);
    const [block] = await readSnapshotBlocks(ch, projectId, 's');
    expect(block?.data).toBe(data);
    expect(block?.size).toBe(Buffer.byteLength(data));
  });

  it('splits the snapshot rows of a large call into inserts of at most 16 MiB of lines', async () => {
    const projectId = nextProject++;
    const sizes: number[] = [];
    const counting: ClickHouse = Object.assign(Object.create(ch) as ClickHouse, {
      insert: (table: string, rows: readonly Record<string, unknown>[]) => {
        if (table === 'session_replay_snapshots') sizes.push(rows.length);
        return ch.insert(table, rows);
      },
    });
    const data = `${JSON.stringify(['w1', { type: 5, data: { blob: 'x'.repeat(7 * 1024 * 1024) }, timestamp: T0 }])}\n`;
    await insertSnapshotBatches(
      counting,
      [0, 1, 2].map((at) => batch(projectId, 'big', { at, data })),
    );
    expect(sizes).toEqual([2, 1]);
    expect((await readSnapshotBlocks(ch, projectId, 'big')).map((block) => block.data === data)).toEqual([true, true, true]);
  });

  describe('listing', () => {
    const projectId = nextProject++;
    const ids = (summaries: SessionSummary[]) => summaries.map((summary) => summary.session_id);

    beforeAll(async () => {
      await insertSnapshotBatches(ch, [
        // short: 5 s at T0, one error.
        batch(projectId, 'short', { at: 0, seconds: 5, distinct_id: 'alice', console_error_count: 1, active_milliseconds: 4_000 }),
        // long: 100 s from T0 + 60 s, from two distinct ids.
        batch(projectId, 'long', { at: 60, seconds: 40, distinct_id: 'bob', click_count: 7 }),
        batch(projectId, 'long', { at: 100, seconds: 60, distinct_id: 'bob-identified', console_error_count: 3 }),
        // late: 20 s from T0 + 1 h, started an hour after the others.
        batch(projectId, 'late', { at: 3_600, seconds: 20, distinct_id: 'carol', active_milliseconds: 20_000 }),
      ]);
    });

    it('orders by start time, newest first, by default', async () => {
      expect(ids(await listSessionSummaries(ch, projectId))).toEqual(['late', 'long', 'short']);
    });

    it('orders by any metric in either direction', async () => {
      expect(ids(await listSessionSummaries(ch, projectId, { orderBy: 'duration', direction: 'ASC' }))).toEqual(['short', 'late', 'long']);
      expect(ids(await listSessionSummaries(ch, projectId, { orderBy: 'console_error_count' }))).toEqual(['long', 'short', 'late']);
      expect(ids(await listSessionSummaries(ch, projectId, { orderBy: 'active_seconds' }))).toEqual(['late', 'short', 'long']);
    });

    it('filters by start time: a session that started before the range is out even when it went on inside it', async () => {
      expect(ids(await listSessionSummaries(ch, projectId, { dateFrom: new Date(T0 + 90 * SECOND) }))).toEqual(['late']);
      expect(ids(await listSessionSummaries(ch, projectId, { dateFrom: new Date(T0 + 60 * SECOND) }))).toEqual(['late', 'long']);
      expect(ids(await listSessionSummaries(ch, projectId, { dateTo: new Date(T0 + 60 * SECOND) }))).toEqual(['long', 'short']);
      expect(ids(await listSessionSummaries(ch, projectId, { dateFrom: new Date(T0 + 1), dateTo: new Date(T0 + 3_599 * SECOND) }))).toEqual(['long']);
    });

    it('filters by distinct ids (any of a session) and session ids', async () => {
      expect(ids(await listSessionSummaries(ch, projectId, { distinctIds: ['bob-identified', 'carol'] }))).toEqual(['late', 'long']);
      expect(ids(await listSessionSummaries(ch, projectId, { sessionIds: ['short', 'nope'] }))).toEqual(['short']);
      expect(await listSessionSummaries(ch, projectId, { sessionIds: [] })).toEqual([]);
    });

    it('filters by conditions on the summary', async () => {
      expect(ids(await listSessionSummaries(ch, projectId, { having: [{ key: 'duration', operator: 'gt', value: 5 }] }))).toEqual(['late', 'long']);
      expect(ids(await listSessionSummaries(ch, projectId, { having: [{ key: 'duration', operator: 'gte', value: 5 }] }))).toEqual(['late', 'long', 'short']);
      expect(
        ids(
          await listSessionSummaries(ch, projectId, {
            having: [
              { key: 'console_error_count', operator: 'gte', value: 1 },
              { key: 'active_seconds', operator: 'lt', value: 5 },
            ],
          }),
        ),
      ).toEqual(['long', 'short']);
      expect(ids(await listSessionSummaries(ch, projectId, { having: [{ key: 'click_count', operator: 'exact', value: 7 }] }))).toEqual(['long']);
    });

    it('filters by a condition tree of any and all, together with the other conditions', async () => {
      const errorsOrClicks = {
        any: [{ key: 'console_error_count', operator: 'gt', value: 0 } as const, { key: 'click_count', operator: 'gt', value: 0 } as const],
      };
      expect(ids(await listSessionSummaries(ch, projectId, { condition: errorsOrClicks }))).toEqual(['long', 'short']);
      expect(ids(await listSessionSummaries(ch, projectId, { condition: errorsOrClicks, having: [{ key: 'duration', operator: 'lt', value: 10 }] }))).toEqual([
        'short',
      ]);
      expect(
        ids(await listSessionSummaries(ch, projectId, { condition: { all: [errorsOrClicks, { key: 'active_seconds', operator: 'gte', value: 4 }] } })),
      ).toEqual(['short']);
      expect(ids(await listSessionSummaries(ch, projectId, { condition: { all: [] } }))).toEqual(['late', 'long', 'short']);
      expect(await listSessionSummaries(ch, projectId, { condition: { any: [] } })).toEqual([]);
      const key = 'duration) OR (1' as 'duration';
      await expect(listSessionSummaries(ch, projectId, { condition: { any: [{ key, operator: 'gt', value: 1 }] } })).rejects.toThrow(RangeError);
    });

    it('pages with limit and offset', async () => {
      expect(ids(await listSessionSummaries(ch, projectId, { limit: 2 }))).toEqual(['late', 'long']);
      expect(ids(await listSessionSummaries(ch, projectId, { limit: 2, offset: 2 }))).toEqual(['short']);
    });

    it('refuses a filter or an order it does not know rather than put it in SQL', async () => {
      const key = 'duration; DROP TABLE session_replay_snapshots' as 'duration';
      await expect(listSessionSummaries(ch, projectId, { having: [{ key, operator: 'gt', value: 1 }] })).rejects.toThrow(RangeError);
      await expect(listSessionSummaries(ch, projectId, { having: [{ key: 'duration', operator: 'like' as 'gt', value: 1 }] })).rejects.toThrow(RangeError);
      await expect(listSessionSummaries(ch, projectId, { having: [{ key: 'duration', operator: 'toString' as 'gt', value: 1 }] })).rejects.toThrow(RangeError);
      await expect(listSessionSummaries(ch, projectId, { orderBy: key })).rejects.toThrow(RangeError);
    });
  });

  describe('retention', () => {
    it('expires every message of a session with the day the session started, also after midnight', async () => {
      const projectId = nextProject++;
      const midnight = Math.floor(T0 / DAY) * DAY;
      await insertSnapshotBatches(ch, [batch(projectId, 's', { at: (midnight - 60 * SECOND - T0) / SECOND, retention_period_days: 90 })]);
      await insertSnapshotBatches(ch, [batch(projectId, 's', { at: (midnight + 60 * SECOND - T0) / SECOND, retention_period_days: 90 })]);
      const stored = await ch.query('test.expiry', 'SELECT DISTINCT expires_at FROM session_replay_summaries WHERE team_id = {projectId:Int64}', { projectId });
      const snapshots = await ch.query('test.expiry', 'SELECT DISTINCT expires_at FROM session_replay_snapshots WHERE team_id = {projectId:Int64}', {
        projectId,
      });
      const expiry = dayPlus(midnight - DAY, 90)
        .replace('T', ' ')
        .replace('.000Z', '');
      expect(stored).toEqual([{ expires_at: expiry }]);
      expect(snapshots).toEqual([{ expires_at: expiry }]);
    });

    it('stops serving a session past its retention, and the TTL deletes its rows', async () => {
      const projectId = nextProject++;
      const old = batch(projectId, 'old', { at: -40 * 86_400, retention_period_days: 30 });
      const kept = batch(projectId, 'kept', { at: -40 * 86_400, retention_period_days: 90 });
      await insertSnapshotBatches(ch, [old, kept]);
      expect((await listSessionSummaries(ch, projectId)).map((summary) => summary.session_id)).toEqual(['kept']);
      expect(await getSessionSummary(ch, projectId, 'old')).toBeNull();
      expect(await listSnapshotBlocks(ch, projectId, 'old')).toEqual([]);
      expect(await readSnapshotBlocks(ch, projectId, 'old')).toEqual([]);

      for (const table of ['session_replay_summaries', 'session_replay_snapshots']) {
        await ch.command('test.optimize', `OPTIMIZE TABLE ${table} FINAL`);
        const left = await ch.query('test.left', `SELECT session_id FROM ${table} WHERE team_id = {projectId:Int64}`, { projectId });
        expect(left).toEqual([{ session_id: 'kept' }]);
      }
    });
  });

  describe('deletion', () => {
    const projectId = nextProject++;

    beforeAll(async () => {
      await insertSnapshotBatches(ch, [
        batch(projectId, 'one', { distinct_id: 'anon' }),
        batch(projectId, 'one', { distinct_id: 'user', at: 10 }),
        batch(projectId, 'two', { distinct_id: 'user' }),
        batch(projectId, 'three', { distinct_id: 'other' }),
        batch(projectId + 1, 'one', { distinct_id: 'user' }),
      ]);
    });

    it('deletes sessions by id from both tables and names those that existed', async () => {
      expect(await deleteSessions(ch, projectId, ['three', 'missing'])).toEqual(['three']);
      expect(await getSessionSummary(ch, projectId, 'three')).toBeNull();
      const left = await ch.query('test.left', "SELECT count() AS n FROM session_replay_snapshots WHERE team_id = {projectId:Int64} AND session_id = 'three'", {
        projectId,
      });
      expect(left).toEqual([{ n: '0' }]);
      expect(await deleteSessions(ch, projectId, [])).toEqual([]);
    });

    it("deletes a person's sessions by distinct id, whole, in that project only", async () => {
      expect((await deleteSessionsOfDistinctIds(ch, projectId, ['anon', 'user'])).sort()).toEqual(['one', 'two']);
      expect(await listSessionSummaries(ch, projectId)).toEqual([]);
      expect(await listSnapshotBlocks(ch, projectId, 'one')).toEqual([]);
      expect(await getSessionSummary(ch, projectId + 1, 'one')).not.toBeNull();
    });
  });
});
