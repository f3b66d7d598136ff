/**
 * A LocalLogBus consumer: one worker per partition, all partitions in parallel, each partition strictly serial
 * (a batch is handled, and on failure retried, before the next one is read).
 */
import type { Logger } from '@plover/core';
import type { Batch, BusMessage, Consumer } from '../port';
import type { OffsetStore } from './offsets';
import type { LogReader, PartitionLog } from './partition-log';

export interface LocalConsumerOptions {
  groupId: string;
  handleBatch: (batch: Batch) => Promise<void>;
  maxBatchSize: number;
  lingerMs: number;
  retryBackoffMs: number;
  offsets: OffsetStore;
  logger: Logger;
}

export interface PartitionSource {
  log: PartitionLog;
  reader: LogReader;
}

export class LocalConsumer implements Consumer {
  private isPaused = false;
  private isStopped = false;
  private readonly workers: PartitionWorker[];
  private readonly running: Promise<unknown>;
  private stopping: Promise<void> | undefined;
  /**
   * The workers wait on promises alone, which do not keep Node running: without this timer a process whose only
   * work is consuming would exit while idle. (A Kafka consumer's open connection does the same job.)
   */
  private readonly keepAlive = setInterval(() => undefined, 2 ** 30);

  constructor(
    readonly options: LocalConsumerOptions,
    sources: readonly PartitionSource[],
    /** Lets the bus forget the consumer once it has stopped. */
    private readonly onStopped: () => void,
  ) {
    this.workers = sources.map((source) => new PartitionWorker(this, source.log, source.reader));
    this.running = Promise.all(this.workers.map((worker) => worker.run()));
  }

  get paused(): boolean {
    return this.isPaused;
  }

  get stopped(): boolean {
    return this.isStopped;
  }

  pause(): void {
    this.isPaused = true;
  }

  resume(): void {
    this.isPaused = false;
    for (const worker of this.workers) worker.wake();
  }

  stop(): Promise<void> {
    return (this.stopping ??= this.shutdown());
  }

  private async shutdown(): Promise<void> {
    this.isStopped = true;
    for (const worker of this.workers) worker.wake();
    try {
      await this.running;
      // Commits run behind the batches (see OffsetStore.commit): make sure the last handled batch is on disk.
      await Promise.all(this.workers.map((worker) => worker.commitHandled()));
    } finally {
      clearInterval(this.keepAlive);
      this.onStopped();
    }
  }
}

class PartitionWorker {
  /** Ends the current `sleep`; set while one is pending. */
  private wakeup: (() => void) | undefined;
  /** A wake-up that arrived while the worker was busy: the next `sleep` returns at once instead of missing it. */
  private woken = false;
  /** Offset after the last batch handled successfully. */
  private handled: number | undefined;

  constructor(
    private readonly consumer: LocalConsumer,
    private readonly log: PartitionLog,
    private readonly reader: LogReader,
  ) {}

  async run(): Promise<void> {
    const { options } = this.consumer;
    // In-process appends wake the worker directly: no polling delay between produce and delivery.
    const unsubscribe = this.log.onAppend(() => this.wake());
    try {
      while (!this.consumer.stopped) {
        if (this.consumer.paused) {
          await this.sleep();
          continue;
        }
        let batch: Batch;
        try {
          batch = { topic: this.log.topic, partition: this.log.partition, messages: await this.reader.next(options.maxBatchSize) };
        } catch (error) {
          options.logger.error({ err: error, topic: this.log.topic, partition: this.log.partition }, 'reading the local log failed');
          await this.backoff();
          continue;
        }
        if (batch.messages.length === 0) await this.sleep();
        else {
          await this.linger(batch.messages);
          await this.deliver(batch, this.reader.offset);
        }
      }
    } finally {
      unsubscribe();
    }
  }

  /**
   * Tops a short batch up with the records appended until `lingerMs` after its first record's append (or until it
   * is full). A record that waited behind the previous batch for that long is delivered without waiting more. A
   * read that fails ends the wait: the batch goes out with what it has, and the next read meets the failure.
   */
  private async linger(messages: BusMessage[]): Promise<void> {
    const { lingerMs, maxBatchSize } = this.consumer.options;
    if (lingerMs === 0) return;
    const deadline = messages[0]!.timestamp + lingerMs;
    while (messages.length < maxBatchSize && !this.consumer.stopped && !this.consumer.paused) {
      let more: BusMessage[];
      try {
        more = await this.reader.next(maxBatchSize - messages.length);
      } catch {
        return;
      }
      if (more.length > 0) {
        messages.push(...more);
        continue;
      }
      const wait = deadline - Date.now();
      if (wait <= 0) return;
      await this.sleep(wait);
    }
  }

  /** Hands `batch` to the handler until it succeeds, then commits `endOffset`; a stop leaves it uncommitted. */
  private async deliver(batch: Batch, endOffset: number): Promise<void> {
    const { options } = this.consumer;
    for (;;) {
      // Paused or stopped while the batch was being read or retried: hold it, it is not delivered yet.
      while (this.consumer.paused && !this.consumer.stopped) await this.sleep();
      if (this.consumer.stopped) return;
      try {
        // A fresh array per attempt: a handler that trims its batch must not shrink the redelivery.
        await options.handleBatch({ ...batch, messages: [...batch.messages] });
        this.handled = endOffset;
        this.commitHandled().catch((error: unknown) => {
          // The next commit (or stop) writes a newer offset; until then a crash only means redelivery.
          options.logger.warn({ err: error, topic: batch.topic, partition: batch.partition }, 'committing an offset failed');
        });
        return;
      } catch (error) {
        options.logger.warn(
          { err: error, topic: batch.topic, partition: batch.partition, offset: batch.messages[0]?.offset },
          'batch handler failed, will redeliver',
        );
        await this.backoff();
      }
    }
  }

  commitHandled(): Promise<void> {
    if (this.handled === undefined) return Promise.resolve();
    return this.consumer.options.offsets.commit(this.consumer.options.groupId, this.log.topic, this.log.partition, this.handled);
  }

  wake(): void {
    if (this.wakeup) this.wakeup();
    else this.woken = true;
  }

  /** Waits for `wake` (an append, resume or stop) or, when given, `ms` milliseconds. */
  private sleep(ms?: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(() => this.wakeup?.(), ms);
      this.wakeup = () => {
        clearTimeout(timer);
        this.wakeup = undefined;
        resolve();
      };
    });
  }

  private async backoff(): Promise<void> {
    const until = Date.now() + this.consumer.options.retryBackoffMs;
    // Appends wake the worker too; only stop cuts the wait short.
    while (!this.consumer.stopped && Date.now() < until) await this.sleep(until - Date.now());
  }
}
