/**
 * One bus batch of the replay topic from read to durable (docs/replay.md, "Ingestion"):
 *
 * 1. Read each message with the contract's parser; one that is not a snapshot message is dead-lettered.
 * 2. Drop the messages of projects that do not exist or do not record sessions, and those whose events are
 *    unusable or 7 days or more away from when capture received them (with PostHog's ingestion warnings).
 * 3. Store dead letters, warnings, then the snapshot blocks and summaries, make them durable, and only then
 *    resolve, which lets the bus commit the batch.
 *
 * Every write is idempotent, so a batch that fails anywhere is simply redelivered: a message stored again
 * collapses with its first copy (its uuid is in both tables' sorting keys), a warning likewise.
 */
import type { Batch, BusMessage, EventBus } from '@plover/bus';
import { insertIngestionWarnings, insertSnapshotBatches, type ClickHouse, type IngestionWarningRow, type SnapshotBatch } from '@plover/clickhouse';
import { parseSnapshotMessage, type SnapshotMessage } from '@plover/contracts';
import { isRetriable, isUuid, uuidv5, type Logger } from '@plover/core';
import type { Sql } from '@plover/postgres';
import { Counter, Gauge, type Registry } from 'prom-client';
import { deadLetterMessage, deadLetterOf, type DeadLetter } from '../dead-letter';
import { identityOf } from '../message';
import { metric } from '../metrics';
import { storableText } from '@plover/persons';
import { warningRow, type Warning } from '../rows';
import { recordingSettings } from './projects';
import { summarizeEvents } from './summary';

/** A message whose events are this many days or more from capture's receive time is dropped (PostHog's threshold). */
export const TIMESTAMP_THRESHOLD_DAYS = 7;
const DAY_MS = 86_400_000;
/** `snapshot_source` and `snapshot_library` are cut to this many characters, as PostHog does. */
const MAX_SNAPSHOT_FIELD_LENGTH = 1000;

/**
 * Namespace of the uuids given to messages whose own uuid is not a UUID, derived from the message's content so
 * that copies of it get the same one (random, fixed forever: changing it breaks dedupe).
 */
const BATCH_UUID_NAMESPACE = 'c7d5a4f1-8e2b-4f6a-9d3c-1b0e7a5c2f48';

export type ReplayOutcome = 'stored' | 'dead_lettered' | 'recording_disabled' | 'no_valid_events' | 'timestamp_out_of_range';

interface ReplayMetrics {
  messages: Counter<'outcome'>;
  batchFailures: Counter<'retriable'>;
  lagSeconds: Gauge;
}

function replayMetrics(registry: Registry): ReplayMetrics {
  return {
    messages: metric(
      registry,
      'plover_replay_messages_total',
      (name) => new Counter({ name, help: 'Replay messages handled and committed, by outcome', labelNames: ['outcome'], registers: [registry] }),
    ),
    batchFailures: metric(
      registry,
      'plover_replay_batch_failures_total',
      (name) => new Counter({ name, help: 'Replay batches left uncommitted for redelivery', labelNames: ['retriable'], registers: [registry] }),
    ),
    lagSeconds: metric(
      registry,
      'plover_replay_lag_seconds',
      (name) => new Gauge({ name, help: 'Age of the newest replay message handled', registers: [registry] }),
    ),
  };
}

export interface ReplayHandlerOptions {
  sql: Sql;
  clickhouse: ClickHouse;
  bus: EventBus;
  deadLetterTopic: string;
  metrics: Registry;
  logger: Logger;
  now: () => Date;
}

type Decision = { outcome: 'stored'; batch: SnapshotBatch } | { outcome: Exclude<ReplayOutcome, 'stored'>; warning?: Warning };

export function replayBatchHandler(options: ReplayHandlerOptions): (batch: Batch) => Promise<void> {
  const metrics = replayMetrics(options.metrics);
  return async (batch) => {
    try {
      const outcomes = await handle(options, batch.messages);
      for (const [outcome, count] of outcomes) metrics.messages.inc({ outcome }, count);
      const newest = batch.messages[batch.messages.length - 1];
      if (newest) metrics.lagSeconds.set((Date.now() - newest.timestamp) / 1000);
    } catch (error) {
      metrics.batchFailures.inc({ retriable: String(isRetriable(error)) });
      options.logger[isRetriable(error) ? 'warn' : 'error'](
        { err: error, topic: batch.topic, partition: batch.partition, offset: batch.messages[0]?.offset, messages: batch.messages.length },
        'replay batch not stored; it will be redelivered',
      );
      throw error;
    }
  };
}

async function handle(options: ReplayHandlerOptions, messages: readonly BusMessage[]): Promise<Map<ReplayOutcome, number>> {
  const now = options.now();
  const deadLetters: DeadLetter[] = [];
  const readable: Array<{ message: BusMessage; snapshot: SnapshotMessage }> = [];
  for (const message of messages) {
    const parsed = parseSnapshotMessage(message.value);
    if (parsed.ok) readable.push({ message, snapshot: parsed.value });
    else deadLetters.push(deadLetterOf(message, { reason: 'invalid_message', detail: parsed.violation.detail, ...identityOf(message.value) }, now));
  }

  const settings = await recordingSettings(options.sql, [...new Set(readable.map(({ snapshot }) => snapshot.team_id))]);
  const outcomes = new Map<ReplayOutcome, number>([['dead_lettered', deadLetters.length]]);
  const batches: SnapshotBatch[] = [];
  const warnings: IngestionWarningRow[] = [];
  for (const { message, snapshot } of readable) {
    const project = settings.get(snapshot.team_id);
    const decision: Decision = project?.enabled ? decide(message, snapshot, project.retentionDays) : { outcome: 'recording_disabled' };
    outcomes.set(decision.outcome, (outcomes.get(decision.outcome) ?? 0) + 1);
    if (decision.outcome === 'stored') batches.push(decision.batch);
    else if (decision.warning) warnings.push(warningRow({ projectId: snapshot.team_id, eventUuid: batchUuid(snapshot), message }, decision.warning));
  }

  await Promise.all([
    deadLetters.length > 0 ? options.bus.produce(options.deadLetterTopic, deadLetters.map(deadLetterMessage)) : undefined,
    warnings.length > 0 ? insertIngestionWarnings(options.clickhouse, warnings) : undefined,
  ]);
  await insertSnapshotBatches(options.clickhouse, batches);
  // chDB cannot make each insert durable by itself: the commit must not cover rows a power loss could take back.
  await options.clickhouse.sync?.();
  return outcomes;
}

/** What becomes of a readable message of a project that records sessions. */
function decide(message: BusMessage, snapshot: SnapshotMessage, retentionDays: number): Decision {
  const windowId = storableText(snapshot.window_id ?? snapshot.session_id);
  const summary = summarizeEvents(windowId, snapshot.events);
  if (!summary) return { outcome: 'no_valid_events', warning: { type: 'message_contained_no_valid_rrweb_events', details: {} } };
  // Measured from capture's receive time rather than this clock: fixed in the message, so a redelivery decides
  // the same, and a consumer that fell behind does not drop what arrived in time.
  const received = Date.parse(snapshot.now);
  const reference = Number.isNaN(received) ? message.timestamp : received;
  const startDiffDays = Math.abs(summary.first_timestamp - reference) / DAY_MS;
  const endDiffDays = Math.abs(summary.last_timestamp - reference) / DAY_MS;
  if (startDiffDays >= TIMESTAMP_THRESHOLD_DAYS || endDiffDays >= TIMESTAMP_THRESHOLD_DAYS) {
    return {
      outcome: 'timestamp_out_of_range',
      warning: { type: 'message_timestamp_diff_too_large', details: { startDiffDays, endDiffDays, thresholdDays: TIMESTAMP_THRESHOLD_DAYS } },
    };
  }
  return {
    outcome: 'stored',
    batch: {
      ...summary,
      urls: summary.urls.map(storableText),
      first_url: summary.first_url === null ? null : storableText(summary.first_url),
      team_id: snapshot.team_id,
      session_id: snapshot.session_id,
      window_id: windowId,
      batch_uuid: batchUuid(snapshot),
      distinct_id: storableText(snapshot.distinct_id),
      // Capture leaves the source out when the SDK sent none; web SDKs never send it.
      snapshot_source: storableText((snapshot.snapshot_source ?? 'web').slice(0, MAX_SNAPSHOT_FIELD_LENGTH)),
      snapshot_library: storableText((snapshot.snapshot_library ?? '').slice(0, MAX_SNAPSHOT_FIELD_LENGTH)),
      retention_period_days: retentionDays,
    },
  };
}

/** The message's uuid, or for one that is not a UUID, one derived from the message's project, session and uuid text. */
function batchUuid(snapshot: SnapshotMessage): string {
  return isUuid(snapshot.uuid) ? snapshot.uuid.toLowerCase() : uuidv5(`${snapshot.team_id}:${snapshot.session_id}:${snapshot.uuid}`, BATCH_UUID_NAMESPACE);
}
