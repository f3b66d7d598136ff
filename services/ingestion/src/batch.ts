/**
 * One bus batch (one partition's messages, in order) from read to durable: the consumer's handleBatch.
 *
 * 1. Read every message; one that is not a usable captured event becomes a dead letter.
 * 2. Process events through persons and groups: serially per `team_id:distinct_id` (one person's events in
 *    bus order), up to `concurrency` keys at once. Property changes of existing persons are staged and stored
 *    together at the end, one statement per project; where a person changed meanwhile, the events that relied
 *    on its staged changes are processed again, one locked write each (see processStaged).
 * 3. Store: dead letters to the dead-letter topic, warnings and person overrides to ClickHouse, then the
 *    events rows. Each of these writes is made durable before the next (see durable()), and all of them
 *    before this resolves: resolving hands the batch back to the bus, which commits it, and the local log then
 *    deletes what the commit covers. So a commit never covers a write a power loss could take back.
 * A failure that is not an event's own (Postgres or ClickHouse unavailable, ...) is thrown: nothing is
 * committed and the bus redelivers the batch after its backoff, for as long as the failure lasts.
 *
 * Redelivery does not re-apply person updates, which would bump versions again and re-apply `$set`s that later
 * events had overwritten (packages/persons README, "Idempotency"):
 * - after a failure in this process, the events already processed are remembered by offset and reused;
 * - after a crash or a partition moving between consumers, batches are checked against ClickHouse until one
 *   holds no stored event. An event row is written last of everything its event produces, so an event found
 *   there has been fully handled and is skipped. "Written" means durable (see durable()): the order in which
 *   writes reach the page cache is not the order in which they survive a power loss.
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
import { PersonWriteConflict, type PersonSnapshot } from '@plover/persons';
import { deadLetterMessage, type DeadLetter } from './dead-letter';
import { readMessage, type CapturedInput } from './message';
import type { IngestionMetrics, Outcome, Step } from './metrics';
import { isEventFault, type EventProcessor, type Processed } from './process';
import { insertEventRows, storedEventUuids } from './store';

export interface BatchHandlerOptions {
  processor: EventProcessor;
  clickhouse: ClickHouse;
  bus: EventBus;
  deadLetterTopic: string;
  /** Distinct ids processed at once. */
  concurrency: number;
  metrics: IngestionMetrics;
  logger: Logger;
}

interface PartitionState {
  /** The offset after the last batch handled here; a batch starting elsewhere may hold stored events. */
  nextOffset: string | undefined;
  /** Where the last failed batch started: its redelivery starts there too. */
  retryOffset: string | undefined;
  /** Set until a batch shows that the events of an earlier, uncommitted delivery are behind us. */
  recovering: boolean;
  /** What processing returned for the messages of a batch that failed later, by offset: reused on redelivery. */
  processed: Map<string, Processed>;
  /**
   * What a failed attempt processed on staged person changes whose write may have been stored although it
   * failed (a connection broken around its COMMIT): settled against Postgres before the redelivery, so that
   * what was stored is reused rather than applied twice.
   */
  unsettled: { snapshots: ReadonlyMap<number, PersonSnapshot>; results: ProcessedMessage[] } | undefined;
}

interface ProcessedMessage {
  offset: string;
  processed: Processed;
}

interface EventOutput {
  row: EventRow;
  message: BusMessage;
  /** Position in the batch. */
  index: number;
}

export class BatchHandler {
  private readonly partitions = new Map<string, PartitionState>();

  constructor(private readonly options: BatchHandlerOptions) {}

  async handle(batch: Batch): Promise<void> {
    const { metrics } = this.options;
    const stopBatch = metrics.stepSeconds.startTimer({ step: 'batch' });
    const state = this.partitionState(batch);
    const first = batch.messages[0];
    const last = batch.messages[batch.messages.length - 1];
    if (!first || !last) return;
    if (first.offset !== state.nextOffset) state.recovering = true;
    // Neither the next batch nor a redelivery: the partition was consumed elsewhere meanwhile (a rebalance), and
    // what was remembered from here may be older than what that consumer stored.
    if (first.offset !== state.nextOffset && first.offset !== state.retryOffset) {
      state.processed.clear();
      state.unsettled = undefined;
    }
    try {
      const processed = await this.processBatch(batch.messages, state);
      this.count(batch, await this.store(processed, batch.messages));
    } catch (error) {
      metrics.batchFailures.inc({ topic: batch.topic, retriable: String(isRetriable(error)) });
      // Retriable failures are outages that pass; anything else stalls the partition until someone acts.
      this.options.logger[isRetriable(error) ? 'warn' : 'error'](
        { err: error, topic: batch.topic, partition: batch.partition, offset: first.offset, messages: batch.messages.length },
        'batch not stored; it will be redelivered',
      );
      state.retryOffset = first.offset;
      throw error;
    }
    state.nextOffset = (BigInt(last.offset) + 1n).toString();
    state.retryOffset = undefined;
    state.processed.clear();
    stopBatch();
  }

  private partitionState(batch: Batch): PartitionState {
    const id = `${batch.topic}:${batch.partition}`;
    let state = this.partitions.get(id);
    if (!state) {
      state = { nextOffset: undefined, retryOffset: undefined, recovering: true, processed: new Map(), unsettled: undefined };
      this.partitions.set(id, state);
    }
    return state;
  }

  /** Steps 1 and 2: what each message becomes, in batch order. */
  private async processBatch(messages: readonly BusMessage[], state: PartitionState): Promise<Processed[]> {
    if (state.unsettled) {
      const { snapshots, results } = state.unsettled;
      await this.timeAsync('flush_persons', () => this.options.processor.settleFlush(snapshots));
      this.remember(state, results);
      state.unsettled = undefined;
    }
    const results = new Array<Processed | undefined>(messages.length);
    const pending: Array<{ index: number; input: CapturedInput }> = [];
    this.time('read', () => {
      messages.forEach((message, index) => {
        const remembered = state.processed.get(message.offset);
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
    if (state.recovering && pending.length > 0) {
      const stored = await this.timeAsync('recover', () =>
        storedEventUuids(
          this.options.clickhouse,
          pending.map((item) => item.input),
        ),
      );
      toProcess = pending.filter((item) => !stored.has(item.input.uuid));
      for (const item of pending) if (stored.has(item.input.uuid)) results[item.index] = { kind: 'already_stored' };
      // Stored events are a prefix of the partition (a crashed delivery stored whole batches, in order): past
      // a batch with none of them, there is nothing left to recognise.
      if (stored.size === 0) state.recovering = false;
    }

    await this.timeAsync('process', () => this.processStaged(toProcess, results, state));
    return results.map((result, index) => {
      if (!result) throw new Error(`message ${messages[index]?.offset} was left unprocessed`);
      return result;
    });
  }

  /**
   * Processes with person changes staged, then stored together. When some could not be stored (their person
   * changed since the batch read it: PersonWriteConflict), or the statement storing them failed for a reason of
   * the events' own, the events whose results relied on them (not remembered as stored) are processed again
   * without staging: in bus order per key, each write under its row lock, as if they came after the concurrent
   * change. Of one key's events, those that relied on an unstored change are always the last ones processed
   * (a locked write of the person stores its staged changes first), so order per key holds.
   */
  private async processStaged(
    pending: ReadonlyArray<{ index: number; input: CapturedInput }>,
    results: Array<Processed | undefined>,
    state: PartitionState,
  ): Promise<void> {
    try {
      await this.processByKey(pending, results, state, true);
    } catch (error) {
      if (!(error instanceof PersonWriteConflict) && !isEventFault(error)) throw error;
      // The staged writes that failed so are known not to be stored: nothing to settle.
      state.unsettled = undefined;
      const again = pending.filter((item) => !state.processed.has(item.input.message.offset));
      this.options.logger.info({ err: error, events: again.length }, 'staged person changes not stored; processing the events that relied on them again');
      this.options.metrics.personReprocessed.inc(again.length);
      await this.processByKey(again, results, state, false);
    }
  }

  /**
   * The batch's persons are read first, in one statement per project. Then one worker per key slot; a worker
   * takes a key and processes its events in order. With `stageWrites`, the person changes staged meanwhile are
   * stored once every worker is done. A failure that is not the event's own stops every worker before its next
   * event and is rethrown once the others have settled; what is stored by then is remembered for the
   * redelivery.
   */
  private async processByKey(
    pending: ReadonlyArray<{ index: number; input: CapturedInput }>,
    results: Array<Processed | undefined>,
    state: PartitionState,
    stageWrites: boolean,
  ): Promise<void> {
    if (pending.length === 0) return;
    const { processor } = this.options;
    const snapshots = await processor.readPersons(
      pending.map((item) => item.input),
      stageWrites,
    );
    const queues = new Map<string, Array<{ index: number; input: CapturedInput }>>();
    for (const item of pending) {
      const queue = queues.get(item.input.key);
      if (queue) queue.push(item);
      else queues.set(item.input.key, [item]);
    }
    const keys = [...queues.values()];
    let nextKey = 0;
    let failure: { error: unknown } | undefined;
    const done: ProcessedMessage[] = [];
    const worker = async (): Promise<void> => {
      while (!failure && nextKey < keys.length) {
        for (const { index, input } of keys[nextKey++] ?? []) {
          if (failure) return;
          let processed: Processed;
          try {
            processed = await processor.process(input, snapshots.get(input.teamId));
          } catch (error) {
            if (!isEventFault(error)) {
              failure ??= { error };
              return;
            }
            this.options.logger.warn({ err: error, eventUuid: input.uuid, teamId: input.teamId }, 'event cannot be processed; dead-lettered');
            processed = processor.failedEvent(input, error);
          }
          results[index] = processed;
          done.push({ offset: input.message.offset, processed });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.options.concurrency, keys.length) }, worker));
    if (!failure && stageWrites) {
      try {
        await this.timeAsync('flush_persons', () => processor.flush(snapshots));
      } catch (error) {
        failure = { error };
      }
    }
    const unstored = this.remember(state, done);
    if (failure) {
      if (unstored.length > 0) state.unsettled = { snapshots, results: unstored };
      throw failure.error;
    }
  }

  /** Remembers the results that hold (not relying on an unstored person change); returns the others. */
  private remember(state: PartitionState, results: readonly ProcessedMessage[]): ProcessedMessage[] {
    const unstored: ProcessedMessage[] = [];
    for (const result of results) {
      if (result.processed.kind === 'event' && result.processed.staged?.stored === false) unstored.push(result);
      else state.processed.set(result.offset, result.processed);
    }
    return unstored;
  }

  /**
   * Step 3. Everything an event produced besides its row is stored before the events rows (the recovery above
   * relies on it). Rows ClickHouse refuses as invalid data are dead-lettered afterwards; the results are
   * returned with those events' outcome changed accordingly.
   */
  private async store(results: readonly Processed[], messages: readonly BusMessage[]): Promise<Processed[]> {
    const events: EventOutput[] = [];
    const warnings: IngestionWarningRow[] = [];
    const overrides: PersonOverrideRow[] = [];
    const deadLetters: DeadLetter[] = [];
    results.forEach((result, index) => {
      if (result.kind === 'event') {
        events.push({ row: result.row, message: messages[index] as BusMessage, index });
        warnings.push(...result.warnings);
        overrides.push(...result.overrides);
      } else if (result.kind === 'dead_letter') {
        deadLetters.push(result.deadLetter);
        warnings.push(...result.warnings);
      }
    });

    await this.timeAsync('side_writes', () => this.storeSideOutputs(deadLetters, warnings, overrides));
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
        teamId: item.row.team_id,
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
