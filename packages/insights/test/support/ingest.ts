/**
 * Ingests a generated dataset for real, through the ingestion consumer on an embedded stack (LocalLogBus,
 * PGlite, chDB: services/ingestion/test/support), so persons, person_overrides and the person property
 * snapshots are what production writes; then reads the stored events back in plain form for the reference.
 */
import type { OutgoingMessage } from '@plover/bus';
import { countEvents, type ClickHouse } from '@plover/clickhouse';
import { createProject } from '../../../persons/test/support/stores';
import { captured } from '../../../../services/ingestion/test/support/captured';
import { collectTopic, embedded, startConsumer, waitFor } from '../../../../services/ingestion/test/support/stacks';
import type { JsonValue } from '../../src/types';
import type { PlainEvent } from './reference';

export interface DatasetEvent {
  distinctId: string;
  event: string;
  properties: Record<string, JsonValue>;
  /** Epoch milliseconds. */
  timestamp: number;
}

/**
 * Sent in three rounds, each stored before the next is sent (the bus keeps order per distinct id only):
 * so every anonymous id has its own person by the time an `$identify` merges it, which writes an override.
 */
export interface Dataset {
  beforeMerges: readonly DatasetEvent[];
  merges: readonly DatasetEvent[];
  afterMerges: readonly DatasetEvent[];
}

export interface Ingestion {
  readonly clickhouse: ClickHouse;
  /** A fresh project holding `dataset`, and its events as stored. */
  ingest(dataset: Dataset): Promise<{ projectId: number; events: PlainEvent[] }>;
  close(): Promise<void>;
}

type DeadLetters = Awaited<ReturnType<typeof collectTopic>>;

/** Generous: the stack is embedded, but the machine running the tests may be shared and busy. */
const DELIVERY_TIMEOUT_MS = 120_000;

/** The dead letters of one project: ingestion refused these events, so waiting for them is pointless. */
function refused(deadLetters: DeadLetters, projectId: number): { reason: string; detail: string }[] {
  return deadLetters.received
    .map((message) => JSON.parse(message.value.toString()) as { team_id: number | null; reason: string; detail: string })
    .filter((letter) => letter.team_id === projectId)
    .map(({ reason, detail }) => ({ reason, detail }));
}

export async function openIngestion(): Promise<Ingestion> {
  const stack = await embedded.open();
  const { clickhouse, bus, sql } = stack.stores;
  const failed = (cleanup: () => Promise<void>) => async (error: unknown) => {
    await cleanup();
    throw error;
  };
  const consumer = await startConsumer(stack).catch(failed(() => stack.destroy()));
  const letters = await collectTopic(bus, stack.description.settings.topics.deadLetter).catch(
    failed(async () => {
      await consumer.stop();
      await stack.destroy();
    }),
  );
  const ingestion: Ingestion = {
    clickhouse,
    async ingest(dataset) {
      const projectId = await createProject(sql);
      let expected = 0;
      for (const round of [dataset.beforeMerges, dataset.merges, dataset.afterMerges]) {
        if (round.length === 0) continue;
        const messages: OutgoingMessage[] = round.map((event) =>
          captured(projectId, event.distinctId, event.event, event.properties, { timestamp: new Date(event.timestamp).toISOString() }),
        );
        await bus.produce(stack.description.settings.topics.events, messages);
        expected += round.length;
        const stored = async () => refused(letters, projectId).length > 0 || (await countEvents(clickhouse, projectId)) >= expected;
        await waitFor(`${expected} events of project ${projectId}`, stored, DELIVERY_TIMEOUT_MS);
        if (refused(letters, projectId).length > 0) throw new Error(`ingestion refused events: ${JSON.stringify(refused(letters, projectId))}`);
      }
      return { projectId, events: await readEvents(clickhouse, projectId) };
    },
    async close() {
      await letters.stop();
      await consumer.stop();
      await stack.destroy();
    },
  };
  // One event through the pipeline first, so that no test's deadline includes the consumer's start.
  await ingestion.ingest({
    beforeMerges: [{ distinctId: 'warm-up', event: 'warm-up', properties: {}, timestamp: Date.UTC(2025, 0, 1) }],
    merges: [],
    afterMerges: [],
  });
  return ingestion;
}

type StoredEvent = {
  uuid: string;
  event: string;
  distinct_id: string;
  properties: string;
  timestamp: string;
  person_id: string;
  person_properties: string;
} & Record<`$group_${0 | 1 | 2 | 3 | 4}` | `group${0 | 1 | 2 | 3 | 4}_properties`, string>;

const GROUP_INDEXES = [0, 1, 2, 3, 4] as const;
const parseJson = (text: string): Record<string, JsonValue> => (text === '' ? {} : (JSON.parse(text) as Record<string, JsonValue>));

/** A project's events, each once, with its person resolved through person_overrides (plain selects only). */
export async function readEvents(clickhouse: ClickHouse, projectId: number): Promise<PlainEvent[]> {
  const groupColumns = GROUP_INDEXES.map((i) => `\`$group_${i}\`, group${i}_properties`).join(', ');
  const rows = await clickhouse.query<StoredEvent>(
    'test.insights.events',
    `SELECT uuid, event, distinct_id, properties, timestamp, person_id, person_properties, ${groupColumns} FROM events FINAL WHERE team_id = {projectId:Int64}`,
    { projectId },
  );
  const overrides = await clickhouse.query<{ old_person_id: string; override_person_id: string; version: string }>(
    'test.insights.overrides',
    'SELECT old_person_id, override_person_id, version FROM person_overrides WHERE team_id = {projectId:Int64}',
    { projectId },
  );
  const current = new Map<string, { person: string; version: number }>();
  for (const row of overrides) {
    const version = Number(row.version);
    if ((current.get(row.old_person_id)?.version ?? -1) < version) current.set(row.old_person_id, { person: row.override_person_id, version });
  }
  return rows.map((row) => ({
    uuid: row.uuid,
    event: row.event,
    distinctId: row.distinct_id,
    timestamp: Date.parse(`${row.timestamp.replace(' ', 'T').slice(0, 23)}Z`),
    person: current.get(row.person_id)?.person ?? row.person_id,
    properties: parseJson(row.properties),
    personProperties: parseJson(row.person_properties),
    groups: GROUP_INDEXES.map((i) => row[`$group_${i}`]),
    groupProperties: GROUP_INDEXES.map((i) => parseJson(row[`group${i}_properties`])),
  }));
}
