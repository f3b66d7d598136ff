/**
 * The EventBus port: what capture produces to and the ingestion consumer reads from.
 * Adapters: `KafkaBus` (kafkajs, distributed mode) and `LocalLogBus` (durable files, embedded mode).
 * Delivery is at least once; order is kept per key (one key always lands in one partition).
 */
export interface OutgoingMessage {
  key: string;
  value: Buffer;
  headers?: Record<string, string>;
}

export interface BusMessage {
  topic: string;
  partition: number;
  /** Position in the partition, as a decimal string (Kafka offsets exceed 2^53 in principle). */
  offset: string;
  key: string;
  value: Buffer;
  headers: Record<string, string>;
  /** Milliseconds since the epoch when the message was appended. */
  timestamp: number;
}

export interface Batch {
  topic: string;
  partition: number;
  messages: BusMessage[];
}

export interface ConsumeOptions {
  groupId: string;
  topics: string[];
  /**
   * Handles one batch of one partition. Offsets are committed only after it resolves. When it throws,
   * nothing is committed and the same messages are delivered again (after `retryBackoffMs`).
   */
  handleBatch: (batch: Batch) => Promise<void>;
  /** Upper bound of messages per batch (adapters may deliver fewer). */
  maxBatchSize?: number;
  /**
   * How long a batch short of `maxBatchSize` may wait for more messages: a trickle is then handled in fewer,
   * larger batches (each batch has a fixed cost in the handler: a store round trip, an insert, a sync). 0 (the
   * default) delivers what is there at once. The local log counts it from the batch's first append; on Kafka the
   * broker holds each fetch until about a megabyte arrived or `lingerMs` passed, counted from the fetch.
   */
  lingerMs?: number;
  /** Delay before a failed batch is delivered again. */
  retryBackoffMs?: number;
}

export interface Consumer {
  /** Stops fetching new batches; a batch in flight finishes. */
  pause(): void;
  resume(): void;
  /** Finishes the batch in flight, commits what was handled, and leaves the group. */
  stop(): Promise<void>;
}

export interface EventBus {
  /**
   * Appends `messages` to `topic`. Resolves only once every message is durable (Kafka acks=-1;
   * local log fsynced); rejects with a StorageError when that cannot be guaranteed.
   */
  produce(topic: string, messages: readonly OutgoingMessage[]): Promise<void>;
  consume(options: ConsumeOptions): Promise<Consumer>;
  /** Creates topics that do not exist yet (idempotent). */
  ensureTopics(topics: readonly string[]): Promise<void>;
  /** Resolves when the bus can accept messages; rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
