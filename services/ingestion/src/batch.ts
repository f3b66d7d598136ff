/**
 * One bus batch (one partition's messages, in order) from read to durable: the consumer's handleBatch.
 *
 * 1. Recover the partition's state (partition-recovery.ts): which delivery this is, what a failed attempt of
 *    it left to reuse or to settle, whether its events must be checked against ClickHouse.
 * 2. Process: read every message (one that is not a usable captured event becomes a dead letter), skip the
 *    events found stored, and run the others through persons and groups, serially per `team_id:distinct_id`
 *    (one person's events in bus order), up to `concurrency` keys at once.
 * 3. Flush persons: property changes of existing persons are staged during processing (packages/persons
 *    BatchPersonStore) and stored together, in one transaction; where a person changed meanwhile, the events
 *    that relied on its staged changes are processed again, one locked write each (see processPersons).
 * 4. Insert rows: dead letters to the dead-letter topic, warnings and person overrides to ClickHouse, then the
 *    events rows. Each of these writes is made durable before the next (see durable()). The projects whose
 *    events are inserted are marked as having ingested one first (a redelivery finds the events stored).
 * 5. Commit the offset: resolving hands the batch back to the bus, which commits it, and the local log then
 *    deletes what the commit covers. So a commit never covers a write a power loss could take back.
 * A failure that is not an event's own (Postgres or ClickHouse unavailable, ...) is thrown: nothing is
 * committed and the bus redelivers the batch after its backoff, for as long as the failure lasts.
 */
import type { Batch, BusMessage, EventBus } from '@plover/bus';
import {
  insertIngestionWarnings,
  insertPersonOverrides,
  type ClickHouse,
  type EventRow,
  type IngestionWarningRow,
  type PersonOverrideRow,
} from '@plover/clickhouse';
import { isRetriable, type Logger } from '@plover/core';
import { PersonWriteConflict, type BatchPersonStore } from '@plover/persons';
import { deadLetterMessage, type DeadLetter } from './dead-letter';
import { readMessage, type CapturedInput } from './message';
import type { IngestionMetrics, Outcome, Step } from './metrics';
import { PartitionRecovery, type ProcessedMessage } from './partition-recovery';
import type { IngestedProjects } from './ingested-projects';
import { isEventFault, type EventProcessor, type Processed } from './process';
import { insertEventRows, storedEventUuids } from './store';
import type { DefinitionsUpkeep, ObservedEvent } from './definitions/upkeep';

export interface BatchHandlerOptions {
  processor: EventProcessor;
  /** Projects' `ingested_event`, set before their first events are inserted. */
  ingestedProjects: IngestedProjects;
  /** Event and property definitions; absent when `INGESTION_DEFINITIONS` is off. */
  definitions?: DefinitionsUpkeep;
  clickhouse: ClickHouse;
  bus: EventBus;
  deadLetterTopic: string;
  /** Distinct ids processed at once. */
  concurrency: number;
  metrics: IngestionMetrics;
  logger: Logger;
}

interface Pending {
  /** Position in the batch. */
  index: number;
  input: CapturedInput;
}

interface EventOutput {
  row: EventRow;
  message: BusMessage;
  /** Position in the batch. */
  index: number;
}

/** What one pass over events by key did before it ended: its results, and the failure that stopped it. */
interface Pass {
  done: ProcessedMessage[];
  failure: { error: unknown } | undefined;
}

export class BatchHandler {
  private readonly partitions = new Map<string, PartitionRecovery>();

  constructor(private readonly options: BatchHandlerOptions) {}

  async handle(batch: Batch): Promise<void> {
    const { metrics } = this.options;
    const stopBatch = metrics.stepSeconds.startTimer({ step: 'batch' });
    const recovery = this.partition(batch);
    const first = batch.messages[0];
    const last = batch.messages[batch.messages.length - 1];
    if (!first || !last) return;
    recovery.begin(first.offset);
    try {
      await this.settle(recovery);
      const processed = await this.process(batch.messages, recovery);
      this.count(batch, await this.store(processed, batch.messages));
    } catch (error) {
      metrics.batchFailures.inc({ topic: batch.topic, retriable: String(isRetriable(error)) });
      // Retriable failures are outages that pass; anything else stalls the partition until someone acts.
      this.options.logger[isRetriable(error) ? 'warn' : 'error'](
        { err: error, topic: batch.topic, partition: batch.partition, offset: first.offset, messages: batch.messages.length },
        'batch not stored; it will be redelivered',
      );
      recovery.failed(first.offset);
      throw error;
    }
    recovery.handled(last.offset);
    stopBatch();
  }

  private partition(batch: Batch): PartitionRecovery {
    const id = `${batch.topic}:${batch.partition}`;
    let recovery = this.partitions.get(id);
    if (!recovery) {
      recovery = new PartitionRecovery();
      this.partitions.set(id, recovery);
    }
    return recovery;
  }

  /** Step 1, after `begin`: person writes a failed attempt left in an unknown state are settled against Postgres. */
  private async settle(recovery: PartitionRecovery): Promise<void> {
    const unsettled = recovery.unsettledWrites;
    if (!unsettled) return;
    await this.timeAsync('flush_persons', () => unsettled.settle());
    recovery.settled();
  }

  /** Steps 2 and 3: what each message becomes, in batch order, with the person changes it made stored. */
  private async process(messages: readonly BusMessage[], recovery: PartitionRecovery): Promise<Processed[]> {
    const results = new Array<Processed | undefined>(messages.length);
    const pending: Pending[] = [];
    this.time('read', () => {
      messages.forEach((message, index) => {
        const remembered = recovery.rememberedAt(message.offset);
        if (remembered) {
          results[index] = remembered;
          return;
        }
        const read = readMessage(message);
        if (read.ok) pending.push({ index, input: read.input });
        else results[index] = this.options.processor.deadLetter(message, read.unreadable);
      });
    });

    let toProcess = pending;
    if (recovery.checksStoredEvents && pending.length > 0) {
      const stored = await this.timeAsync('recover', () =>
        storedEventUuids(
          this.options.clickhouse,
          pending.map((item) => item.input),
        ),
      );
      toProcess = pending.filter((item) => !stored.has(item.input.uuid));
      for (const item of pending) if (stored.has(item.input.uuid)) results[item.index] = { kind: 'already_stored' };
      recovery.storedEventsFound(stored.size);
    }

    await this.timeAsync('process', () => this.processPersons(toProcess, results, recovery));
    return results.map((result, index) => {
      if (!result) throw new Error(`message ${messages[index]?.offset} was left unprocessed`);
      return result;
    });
  }

  /**
   * Processes with person changes staged, then flushes them together. When some could not be stored (their
   * person changed since the batch read it: PersonWriteConflict), or the statement storing them failed for a
   * reason of the events' own, the staged changes are discarded and the events whose results relied on them
   * (not remembered as stored) are processed again without staging: in bus order per key, each write under its
   * row lock, as if they came after the concurrent change. Of one key's events, those that relied on an
   * unstored change are always the last ones processed (a locked write of the person stores its staged changes
   * first), so order per key holds. A failure that is not the events' own is rethrown once what is stored by
   * then is remembered for the redelivery, with the staged changes whose outcome it left unknown.
   */
  private async processPersons(pending: readonly Pending[], results: Array<Processed | undefined>, recovery: PartitionRecovery): Promise<void> {
    if (pending.length === 0) return;
    const { processor } = this.options;
    const staged = await processor.readPersons(
      pending.map((item) => item.input),
      true,
    );
    const pass = await this.processByKey(pending, results, staged);
    const failure = pass.failure ?? (await this.flushPersons(staged));
    const unstored = recovery.remember(pass.done);
    if (!failure) return;
    if (!(failure.error instanceof PersonWriteConflict) && !isEventFault(failure.error)) {
      recovery.leaveUnsettled(staged, unstored);
      throw failure.error;
    }
    staged.discard();
    const again = pending.filter((item) => recovery.rememberedAt(item.input.message.offset) === undefined);
    this.options.logger.info({ err: failure.error, events: again.length }, 'staged person changes not stored; processing the events that relied on them again');
    this.options.metrics.personReprocessed.inc(again.length);
    const direct = await this.processByKey(
      again,
      results,
      await processor.readPersons(
        again.map((item) => item.input),
        false,
      ),
    );
    recovery.remember(direct.done);
    if (direct.failure) throw direct.failure.error;
  }

  private async flushPersons(persons: BatchPersonStore): Promise<{ error: unknown } | undefined> {
    try {
      await this.timeAsync('flush_persons', () => persons.flush());
      return undefined;
    } catch (error) {
      return { error };
    }
  }

  /**
   * One worker per key slot; a worker takes a key and processes its events in order. A failure that is not the
   * event's own stops every worker before its next event and is returned once the others have settled.
   */
  private async processByKey(pending: readonly Pending[], results: Array<Processed | undefined>, persons: BatchPersonStore): Promise<Pass> {
    const { processor } = this.options;
    const queues = new Map<string, Pending[]>();
    for (const item of pending) {
      const queue = queues.get(item.input.key);
      if (queue) queue.push(item);
      else queues.set(item.input.key, [item]);
    }
    const keys = [...queues.values()];
    let nextKey = 0;
    const pass: Pass = { done: [], failure: undefined };
    const worker = async (): Promise<void> => {
      while (!pass.failure && nextKey < keys.length) {
        for (const { index, input } of keys[nextKey++] ?? []) {
          if (pass.failure) return;
          let processed: Processed;
          try {
            processed = await processor.process(input, persons);
          } catch (error) {
            if (!isEventFault(error)) {
              pass.failure ??= { error };
              return;
            }
            this.options.logger.warn({ err: error, eventUuid: input.uuid, projectId: input.projectId }, 'event cannot be processed; dead-lettered');
            processed = processor.failedEvent(input, error);
          }
          results[index] = processed;
          pass.done.push({ offset: input.message.offset, processed });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.options.concurrency, keys.length) }, worker));
    return pass;
  }

  /**
   * Step 4. Everything an event produced besides its row is stored before the events rows (the recovery of a
   * partition relies on it). Rows ClickHouse refuses as invalid data are dead-lettered afterwards; the results are
   * returned with those events' outcome changed accordingly.
   */
  private async store(results: readonly Processed[], messages: readonly BusMessage[]): Promise<Processed[]> {
    const events: EventOutput[] = [];
    const observed: ObservedEvent[] = [];
    const warnings: IngestionWarningRow[] = [];
    const overrides: PersonOverrideRow[] = [];
    const deadLetters: DeadLetter[] = [];
    results.forEach((result, index) => {
      if (result.kind === 'event') {
        events.push({ row: result.row, message: messages[index] as BusMessage, index });
        if (this.options.definitions) observed.push({ projectId: result.row.team_id, event: result.row.event, properties: result.properties });
        warnings.push(...result.warnings);
        overrides.push(...result.overrides);
      } else if (result.kind === 'dead_letter') {
        deadLetters.push(result.deadLetter);
        warnings.push(...result.warnings);
      }
    });

    await this.timeAsync('side_writes', async () => {
      await this.options.ingestedProjects.mark(events.map((output) => output.row.team_id));
      await this.storeSideOutputs(deadLetters, warnings, overrides);
    });
    const { definitions } = this.options;
    if (definitions) await this.timeAsync('definitions', () => definitions.record(observed));
    await this.durable();
    const refused = await this.timeAsync('insert_events', () => insertEventRows(this.options.clickhouse, events, (output) => output.row));
    await this.durable();
    if (refused.length === 0) return [...results];

    this.options.logger.warn({ events: refused.length, err: refused[0]?.error }, 'ClickHouse refused event rows as invalid; dead-lettered');
    const final = [...results];
    const rejected = refused.map(({ item, error }) => {
      const deadLettered = this.options.processor.deadLetter(item.message, {
        reason: 'insert_failed',
        detail: error.message,
        projectId: item.row.team_id,
        eventUuid: item.row.uuid,
      });
      final[item.index] = deadLettered;
      return deadLettered;
    });
    await this.storeSideOutputs(
      rejected.map((result) => result.deadLetter),
      rejected.flatMap((result) => result.warnings),
      [],
    );
    await this.durable();
    return final;
  }

  /**
   * Makes the writes resolved so far survive a power loss, before anything that relies on them: the events rows
   * (recovery takes a stored row for a fully handled event) and the bus's commit. Postgres needs no step here:
   * its commits are durable when they return (PGliteSql runs with fsync and synchronous commit; a server is
   * configured so), and the bus's produce resolves once fsynced. ClickHouse adapters that cannot make each
   * insert durable on its own (chDB) offer sync().
   */
  private async durable(): Promise<void> {
    const sync = this.options.clickhouse.sync?.bind(this.options.clickhouse);
    if (sync) await this.timeAsync('sync', sync);
  }

  private async storeSideOutputs(
    deadLetters: readonly DeadLetter[],
    warnings: readonly IngestionWarningRow[],
    overrides: readonly PersonOverrideRow[],
  ): Promise<void> {
    const { clickhouse, bus, deadLetterTopic, metrics } = this.options;
    await Promise.all([
      deadLetters.length > 0 ? bus.produce(deadLetterTopic, deadLetters.map(deadLetterMessage)) : undefined,
      warnings.length > 0 ? insertIngestionWarnings(clickhouse, warnings) : undefined,
      overrides.length > 0 ? insertPersonOverrides(clickhouse, overrides) : undefined,
    ]);
    for (const deadLetter of deadLetters) metrics.deadLetters.inc({ reason: deadLetter.reason });
    for (const warning of warnings) metrics.warnings.inc({ type: warning.type });
  }

  private count(batch: Batch, results: readonly Processed[]): void {
    const { metrics } = this.options;
    const topic = batch.topic;
    const now = Date.now();
    const outcomes = new Map<Outcome, number>();
    results.forEach((result, index) => {
      const outcome: Outcome = result.kind === 'event' ? 'ingested' : result.kind === 'dead_letter' ? 'dead_lettered' : 'already_stored';
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      const message = batch.messages[index];
      if (result.kind === 'event' && message) metrics.eventLagSeconds.observe({ topic }, (now - message.timestamp) / 1000);
    });
    for (const [outcome, count] of outcomes) metrics.messages.inc({ topic, outcome }, count);
    metrics.batchSize.observe(batch.messages.length);
    const newest = batch.messages[batch.messages.length - 1];
    if (newest) metrics.lagSeconds.set({ topic }, (now - newest.timestamp) / 1000);
  }

  private time<T>(step: Step, fn: () => T): T {
    const stop = this.options.metrics.stepSeconds.startTimer({ step });
    try {
      return fn();
    } finally {
      stop();
    }
  }

  private async timeAsync<T>(step: Step, fn: () => Promise<T>): Promise<T> {
    const stop = this.options.metrics.stepSeconds.startTimer({ step });
    try {
      return await fn();
    } finally {
      stop();
    }
  }
}
