/**
 * The logs consumer from the bus to ClickHouse, on the embedded stack and on the distributed one (Kafka, Postgres;
 * chDB): a record's row, a redelivered record stored once, the configured retention, and dead letters.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { OutgoingMessage } from '@plover/bus';
import type { ClickHouse } from '@plover/clickhouse';
import { logRecordMessageKey, type LogRecordMessage } from '@plover/contracts';
import { silentLogger } from '@plover/core';
import { createLogsConsumer, type LogsSettings } from '@plover/ingestion/logs';
import { Registry } from 'prom-client';
import { deleteTopics } from '../../../packages/bus/test/support/kafka-factory';
import type { IngestionConsumer } from '../src/consumer';
import type { DeadLetter } from '../src/dead-letter';
import { collectTopic, stackFactories, waitFor, type Stack } from './support/stacks';

const DAY = 86_400_000;
/** An hour ago, at a whole millisecond: recent enough that no retention has expired it. */
const T = Date.now() - 3_600_000;
/** Epoch ms and extra microseconds as the bus message's time. */
const micros = (ms: number, extra = 0) => new Date(ms).toISOString().replace('Z', `${String(extra).padStart(3, '0')}Z`);
/** The same as ClickHouse's toString of a DateTime64(6). */
const stored = (ms: number, extra = 0) => micros(ms, extra).replace('T', ' ').replace('Z', '');
const runId = randomBytes(3).toString('hex');
let sequence = 0;

function record(projectId: number, overrides: Partial<LogRecordMessage> = {}): LogRecordMessage {
  return {
    uuid: randomUUID(),
    team_id: projectId,
    timestamp: micros(T, 456),
    observed_timestamp: micros(T + 77),
    severity_text: 'WARN',
    severity_number: 13,
    body: 'disk almost full',
    trace_id: '0af7651916cd43dd8448eb211c80319c',
    span_id: 'b7ad6b7169203331',
    attributes: { sessionId: 'sess-1', nested: { a: [1, 2] } },
    resource_attributes: { 'service.name': 'web' },
    service_name: 'web',
    session_id: 'sess-1',
    distinct_id: 'user-1',
    ...overrides,
  };
}

const message = (value: LogRecordMessage): OutgoingMessage => ({
  key: logRecordMessageKey(value.team_id, value.session_id, value.uuid),
  value: Buffer.from(JSON.stringify(value)),
});

describe.each(stackFactories)('logs consumer: $name', (factory) => {
  let stack: Stack;
  let ch: ClickHouse;
  const topics: string[] = [];
  const running: IngestionConsumer[] = [];
  let projectId = 1000 + Math.floor(Math.random() * 1_000_000);

  beforeAll(async () => {
    stack = await factory.open();
    ch = stack.stores.clickhouse;
  });

  afterAll(async () => {
    await Promise.all(running.map((consumer) => consumer.stop()));
    if (stack?.description.brokers) await deleteTopics(stack.description.brokers, topics);
    await stack?.destroy();
  });

  async function startLogs(retentionDays = 30): Promise<LogsSettings> {
    const name = `plover-logs-test-${runId}-${++sequence}`;
    const settings: LogsSettings = {
      topic: name,
      groupId: `${name}-group`,
      deadLetterTopic: `${name}-dlq`,
      batchSize: 100,
      lingerMs: 0,
      retryBackoffMs: 100,
      retentionDays,
    };
    topics.push(settings.topic, settings.deadLetterTopic);
    running.push(await createLogsConsumer({ logger: silentLogger(), metrics: new Registry(), clickhouse: ch, bus: stack.stores.bus, settings }));
    return settings;
  }

  const rows = (project: number) =>
    ch.query<Record<string, unknown>>(
      'test.logs',
      `SELECT toString(uuid) AS uuid, toString(timestamp) AS timestamp, toString(observed_timestamp) AS observed, severity_text, severity_number,
              body, trace_id, span_id, attributes, resource_attributes, service_name, session_id, distinct_id, toString(expires_at) AS expires_at
       FROM logs FINAL WHERE team_id = {project:Int64} ORDER BY timestamp`,
      { project },
    );

  it('stores a record as one row, expiring the configured days after its UTC day; a redelivered record once', async () => {
    const settings = await startLogs(7);
    const project = ++projectId;
    const first = record(project);
    const second = record(project, { uuid: randomUUID(), timestamp: micros(T + 1), body: 'nul \u0000 and lone \ud800', severity_text: 'ERROR' });
    // The first record twice: a retried export or a redelivery.
    await stack.stores.bus.produce(settings.topic, [message(first), message(second)]);
    await stack.stores.bus.produce(settings.topic, [message(first)]);
    await waitFor('both records', async () => (await rows(project)).length === 2, stack.deliveryTimeoutMs);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const found = await rows(project);
    expect(found).toHaveLength(2);
    const expires = new Date(Math.floor(T / DAY) * DAY + 7 * DAY).toISOString().replace('T', ' ').slice(0, 19);
    expect(found[0]).toEqual({
      uuid: first.uuid,
      timestamp: stored(T, 456),
      observed: stored(T + 77),
      severity_text: 'WARN',
      severity_number: 13,
      body: 'disk almost full',
      trace_id: first.trace_id,
      span_id: first.span_id,
      attributes: JSON.stringify(first.attributes),
      resource_attributes: '{"service.name":"web"}',
      service_name: 'web',
      session_id: 'sess-1',
      distinct_id: 'user-1',
      expires_at: expires,
    });
    // Text ClickHouse could not hold (NUL, an unpaired surrogate) is replaced; the row expires with its day.
    expect(found[1]).toMatchObject({ body: 'nul \ufffd and lone \ufffd', severity_text: 'ERROR', expires_at: expires });
  });

  it('dead-letters a message that breaks the contract, with the reason and the original bytes', async () => {
    const settings = await startLogs();
    const letters = await collectTopic(stack.stores.bus, settings.deadLetterTopic);
    try {
      const project = ++projectId;
      const value = JSON.stringify({ ...record(project), severity_number: 99 });
      await stack.stores.bus.produce(settings.topic, [{ key: `${project}:x`, value: Buffer.from(value) }]);
      await waitFor('the dead letter', () => letters.received.length === 1, stack.deliveryTimeoutMs);
      const letter = JSON.parse(letters.received[0]!.value.toString()) as DeadLetter;
      expect(letter).toMatchObject({ reason: 'invalid_message', team_id: project, payload: value, source: { topic: settings.topic } });
      expect(await rows(project)).toEqual([]);
    } finally {
      await letters.stop();
    }
  });
});
