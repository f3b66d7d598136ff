/**
 * The replay consumer from the bus to ClickHouse, on the embedded stack (local log, PGlite, chDB) and on the
 * distributed one (Kafka, Postgres; chDB, as this machine has no ClickHouse server): stored blocks and summaries,
 * redelivery, the project settings, the drop rules and dead letters.
 */
import { randomBytes } from 'node:crypto';
import type { OutgoingMessage } from '@plover/bus';
import { getSessionSummary, listIngestionWarnings, readSnapshotBlocks, type ClickHouse } from '@plover/clickhouse';
import { snapshotMessageKey, type SnapshotMessage } from '@plover/contracts';
import { silentLogger, StorageError, uuidv7 } from '@plover/core';
import { createReplayConsumer, type ReplaySettings } from '@plover/ingestion/replay';
import type { Sql } from '@plover/postgres';
import { Registry, type Counter } from 'prom-client';
import { deleteTopics } from '../../../packages/bus/test/support/kafka-factory';
import { createProject } from '../../../packages/persons/test/support/stores';
import type { DeadLetter } from '../src/dead-letter';
import type { IngestionConsumer } from '../src/consumer';
import { collectTopic, stackFactories, waitFor, type Stack } from './support/stacks';

const DAY = 86_400_000;
/** A minute ago: live, and well within 7 days of capture's receive time. */
const T = Date.now() - 60_000;
const runId = randomBytes(3).toString('hex');
let sequence = 0;

/** A project with the recording settings (Postgres migration 006). */
async function recordingProject(sql: Sql, settings: { optIn: boolean; retention?: string }): Promise<number> {
  const id = await createProject(sql);
  await sql.query('test.settings', 'UPDATE projects SET session_recording_opt_in = $2, session_recording_retention_period = $3 WHERE id = $1', [
    id,
    settings.optIn,
    settings.retention ?? '30d',
  ]);
  return id;
}

function snapshotMessage(projectId: number, sessionId: string, events: unknown[], overrides: Partial<SnapshotMessage> = {}): OutgoingMessage {
  const message = {
    uuid: uuidv7(),
    team_id: projectId,
    distinct_id: 'user-1',
    session_id: sessionId,
    window_id: 'w1',
    snapshot_source: null,
    snapshot_library: 'web',
    events,
    now: new Date(T + 5_000).toISOString(),
    sent_at: null,
    ...overrides,
  };
  return { key: snapshotMessageKey(projectId, sessionId), value: Buffer.from(JSON.stringify(message)) };
}

const meta = (at: number, href: string) => ({ type: 4, data: { href, width: 800, height: 600 }, timestamp: at });
const click = (at: number) => ({ type: 3, data: { source: 2, type: 2, id: 1 }, timestamp: at });
const input = (at: number) => ({ type: 3, data: { source: 5, text: 'x', id: 2 }, timestamp: at });
const consoleError = (at: number) => ({ type: 6, data: { plugin: 'rrweb/console@1', payload: { level: 'error', payload: ['boom'] } }, timestamp: at });

describe.each(stackFactories)('replay consumer: $name', (factory) => {
  let stack: Stack;
  let ch: ClickHouse;
  const topics: string[] = [];
  const running: IngestionConsumer[] = [];

  beforeAll(async () => {
    stack = await factory.open();
    ch = stack.stores.clickhouse;
  });

  afterAll(async () => {
    await Promise.all(running.map((consumer) => consumer.stop()));
    if (stack?.description.brokers) await deleteTopics(stack.description.brokers, topics);
    await stack?.destroy();
  });

  /** A replay consumer on topics of its own; `metrics` shows what it did with each message. */
  async function startReplay(clickhouse: ClickHouse = ch): Promise<{ settings: ReplaySettings; metrics: Registry }> {
    const name = `plover-replay-test-${runId}-${++sequence}`;
    const settings: ReplaySettings = {
      topic: name,
      groupId: `${name}-group`,
      deadLetterTopic: `${name}-dlq`,
      batchSize: 100,
      lingerMs: 0,
      retryBackoffMs: 100,
    };
    topics.push(settings.topic, settings.deadLetterTopic);
    const metrics = new Registry();
    running.push(await createReplayConsumer({ logger: silentLogger(), metrics, ...stack.stores, clickhouse, settings }));
    return { settings, metrics };
  }

  async function handled(metrics: Registry, outcome: string): Promise<number> {
    const counter = metrics.getSingleMetric('plover_replay_messages_total') as Counter | undefined;
    const values = (await counter?.get())?.values ?? [];
    return values.filter((value) => value.labels.outcome === outcome).reduce((sum, value) => sum + value.value, 0);
  }

  it("stores a session's messages as blocks of lines and one summary", async () => {
    const { settings } = await startReplay();
    const projectId = await recordingProject(stack.stores.sql, { optIn: true, retention: '90d' });
    const first = [meta(T, 'https://shop.example/'), click(T + 1_000), input(T + 2_000)];
    const second = [click(T + 4_000), consoleError(T + 5_000)];
    await stack.stores.bus.produce(settings.topic, [
      snapshotMessage(projectId, 'session-1', first, { distinct_id: 'anon-1' }),
      snapshotMessage(projectId, 'session-1', second, { window_id: 'w2', distinct_id: 'user-1', snapshot_source: 'web' }),
    ]);
    await waitFor('both messages', async () => (await getSessionSummary(ch, projectId, 'session-1'))?.message_count === 2, stack.deliveryTimeoutMs);

    // Active time is counted per message: the click at 1 s to the input at 2 s, and the click at 4 s to the console
    // event at 5 s (an inactive event within 5 s of the last active one extends its segment): 2000 ms.
    expect(await getSessionSummary(ch, projectId, 'session-1')).toMatchObject({
      distinct_id: 'anon-1',
      distinct_ids: ['anon-1', 'user-1'],
      start_time: new Date(T).toISOString(),
      end_time: new Date(T + 5_000).toISOString(),
      duration: 5,
      click_count: 2,
      keypress_count: 1,
      mouse_activity_count: 2,
      active_milliseconds: 2_000,
      console_error_count: 1,
      event_count: 5,
      first_url: 'https://shop.example/',
      all_urls: ['https://shop.example/'],
      snapshot_source: 'web',
      snapshot_library: 'web',
      retention_period_days: 90,
      expires_at: new Date(Math.floor(T / DAY) * DAY + 90 * DAY).toISOString(),
    });
    const blocks = await readSnapshotBlocks(ch, projectId, 'session-1');
    const lines = blocks.map((block) =>
      block.data
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as unknown),
    );
    expect(lines).toEqual([first.map((event) => ['w1', event]), second.map((event) => ['w2', event])]);
  });

  it('leaves the counts unchanged when a batch is delivered again after it was stored', async () => {
    // ClickHouse fails the first sync, after both inserts: the batch is not committed and comes again.
    let syncs = 0;
    const summaryInserts: number[] = [];
    const flaky = new Proxy(ch, {
      get(target, key, receiver) {
        if (key === 'sync') {
          return async () => {
            if (++syncs === 1) throw new StorageError('injected sync failure', true, 'TEST');
            await target.sync?.();
          };
        }
        if (key === 'insert') {
          return (table: string, rows: readonly Record<string, unknown>[]) => {
            if (table === 'session_replay_summaries') summaryInserts.push(rows.length);
            return target.insert(table, rows);
          };
        }
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    const { settings, metrics } = await startReplay(flaky);
    const projectId = await recordingProject(stack.stores.sql, { optIn: true });
    const duplicate = snapshotMessage(projectId, 'session-2', [click(T), click(T + 100)]);
    // Capture retrying a produce can also put the same message on the bus twice.
    await stack.stores.bus.produce(settings.topic, [duplicate, snapshotMessage(projectId, 'session-2', [input(T + 200)]), duplicate]);
    await waitFor('the batch to be committed', async () => (await handled(metrics, 'stored')) === 3, stack.deliveryTimeoutMs);

    expect(syncs).toBeGreaterThanOrEqual(2);
    expect(summaryInserts.reduce((sum, rows) => sum + rows, 0)).toBeGreaterThan(3);
    expect(await getSessionSummary(ch, projectId, 'session-2')).toMatchObject({ message_count: 2, event_count: 3, click_count: 2, keypress_count: 1 });
    expect(await readSnapshotBlocks(ch, projectId, 'session-2')).toHaveLength(2);
  });

  it('drops the messages of projects that do not record, and those with unusable or distant times, with warnings', async () => {
    const { settings, metrics } = await startReplay();
    const off = await recordingProject(stack.stores.sql, { optIn: false });
    const on = await recordingProject(stack.stores.sql, { optIn: true });
    const distant = snapshotMessage(on, 'session-3', [click(T - 8 * DAY), click(T)]);
    const untimed = snapshotMessage(on, 'session-3', [
      { type: 3, data: { source: 2, type: 2 } },
      { type: 4, data: {}, timestamp: 'yesterday' },
    ]);
    await stack.stores.bus.produce(settings.topic, [
      snapshotMessage(off, 'session-off', [click(T)]),
      snapshotMessage(999_999, 'session-gone', [click(T)]),
      distant,
      untimed,
    ]);
    await waitFor(
      'the dropped messages',
      async () =>
        (await handled(metrics, 'recording_disabled')) === 2 &&
        (await handled(metrics, 'timestamp_out_of_range')) === 1 &&
        (await handled(metrics, 'no_valid_events')) === 1,
      stack.deliveryTimeoutMs,
    );

    expect(await getSessionSummary(ch, off, 'session-off')).toBeNull();
    expect(await getSessionSummary(ch, on, 'session-3')).toBeNull();
    const warnings = await listIngestionWarnings(ch, on);
    const uuidOf = (message: OutgoingMessage) => (JSON.parse(message.value.toString()) as SnapshotMessage).uuid;
    expect(warnings.map(({ type, event_uuid }) => ({ type, event_uuid })).sort((a, b) => a.type.localeCompare(b.type))).toEqual([
      { type: 'message_contained_no_valid_rrweb_events', event_uuid: uuidOf(untimed) },
      { type: 'message_timestamp_diff_too_large', event_uuid: uuidOf(distant) },
    ]);
    const distantDetails = JSON.parse(warnings.find((warning) => warning.type === 'message_timestamp_diff_too_large')!.details) as Record<string, number>;
    expect(distantDetails.thresholdDays).toBe(7);
    expect(distantDetails.startDiffDays).toBeCloseTo(8 + 5_000 / DAY, 6);
  });

  it('dead-letters a message that is not a snapshot message, with the reason and the original bytes', async () => {
    const { settings } = await startReplay();
    const projectId = await recordingProject(stack.stores.sql, { optIn: true });
    const letters = await collectTopic(stack.stores.bus, settings.deadLetterTopic);
    try {
      const value = JSON.stringify({ team_id: projectId, uuid: '0198c0de-7a3e-7c1b-9a52-0b6f2d3f1e11', session_id: 'no spaces allowed' });
      await stack.stores.bus.produce(settings.topic, [{ key: `${projectId}:x`, value: Buffer.from(value) }]);
      await waitFor('the dead letter', () => letters.received.length === 1, stack.deliveryTimeoutMs);
      const letter = JSON.parse(letters.received[0]!.value.toString()) as DeadLetter;
      expect(letter).toMatchObject({
        reason: 'invalid_message',
        source: { topic: settings.topic, key: `${projectId}:x` },
        team_id: projectId,
        event_uuid: '0198c0de-7a3e-7c1b-9a52-0b6f2d3f1e11',
        payload: value,
        payload_encoding: 'utf8',
      });
      expect(letter.detail).toMatch(/required/);
    } finally {
      await letters.stop();
    }
  });
});
