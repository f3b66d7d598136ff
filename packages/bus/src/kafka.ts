/**
 * KafkaBus: the EventBus port on Kafka through kafkajs (distributed mode).
 *
 * Producing: one idempotent producer with acks=-1, so a resolved `produce` means every replica in sync has the
 * messages, and the broker drops duplicates of kafkajs's own retries. Keys go through kafkajs's default
 * partitioner, which is the Java client's murmur2: one key always lands in one partition, whichever client
 * (ours or a Java tool) produced it.
 *
 * Consuming: one kafkajs consumer per `consume`, `eachBatch` with manual offset resolution and no auto-commit.
 * A handled batch is resolved and committed before the next one starts; a failed one is left unresolved, so
 * kafkajs fetches the same offsets again once the backoff has passed (its next fetch starts at the last
 * resolved offset). Nothing is ever committed past a message that was not handled.
 */
import { Kafka, KafkaJSAggregateError, KafkaJSError, KafkaJSNonRetriableError, KafkaJSProtocolError, KafkaJSTimeout, Partitioners, logLevel } from 'kafkajs';
import type { Admin, EachBatchPayload, Consumer as KafkaConsumer, KafkaMessage, LogEntry, Producer, ProducerRecord } from 'kafkajs';
import { StorageError, createLogger } from '@plover/core';
import type { Logger } from '@plover/core';
import type { Batch, BusMessage, ConsumeOptions, Consumer, EventBus, OutgoingMessage } from './port';

export interface KafkaBusOptions {
  /** `host:port` of one or more brokers to bootstrap from. */
  brokers: string[];
  clientId: string;
  logger?: Logger;
  /**
   * Partitions of the topics that `ensureTopics` creates (default 4): the most consumers of one group that
   * share a topic's work. Topics that exist keep theirs.
   */
  partitions?: number;
  /**
   * Put before every topic and consumer group name on the broker, so that several installations (or test runs)
   * share one cluster. Callers name topics and groups without it, and batches carry the names without it.
   */
  topicPrefix?: string;
  /** Client-side timeout of one request, also the broker's wait for replica acks of a produce (default 30 s). */
  requestTimeoutMs?: number;
  /**
   * How often kafkajs retries a failed request before the call rejects, and its first backoff (doubling
   * from there). Defaults are kafkajs's own (5 retries from 300 ms). kafkajs warns that any explicit limit
   * may invalidate an idempotent producer's guarantees; this adapter replaces its producer after every
   * failed send, which is what keeps them.
   */
  retry?: { retries?: number; initialRetryTimeMs?: number };
}

const DEFAULT_PARTITIONS = 4;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
// The same defaults as LocalLogBus, so that a consumer behaves alike in embedded and distributed mode.
const DEFAULT_MAX_BATCH_SIZE = 500;
const DEFAULT_RETRY_BACKOFF_MS = 1_000;
/**
 * A member that misses heartbeats this long is evicted and its partitions go to another member. kafkajs's
 * 30 s default delays failover; long batches are covered by heartbeats sent while they run.
 */
const SESSION_TIMEOUT_MS = 10_000;
const HEARTBEAT_INTERVAL_MS = 3_000;
/**
 * How long one fetch waits on the broker for new messages. It bounds how quickly `stop()` and `pause()` take
 * effect on an idle consumer; delivery latency is unaffected (a fetch returns as soon as data arrives).
 */
const FETCH_MAX_WAIT_MS = 500;
/**
 * With `lingerMs`, what a fetch waits for on the broker (up to `lingerMs`, at most a heartbeat interval so that the
 * group never misses one, instead of returning with the first message): about a full default batch of captured
 * events (≈ 500 bytes each).
 */
const LINGER_MIN_BYTES = 1024 * 1024;
/** Pause before `ensureTopics` looks again at topics the broker did not know a moment after their creation. */
const TOPIC_RETRY_MS = 100;
/** What the broker answers about a topic whose creation it has not finished taking in. */
const TOPIC_NOT_READY = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE']);

export class KafkaBus implements EventBus {
  private readonly kafka: Kafka;
  private readonly logger: Logger;
  private readonly partitions: number;
  private readonly prefix: string;
  private readonly requestTimeoutMs: number;
  private producer: ProducerSession | undefined;
  private admin: Promise<Admin> | undefined;
  private readonly consumers = new Set<KafkaBusConsumer>();
  private closed = false;

  constructor(options: KafkaBusOptions) {
    this.logger = (options.logger ?? createLogger({ service: options.clientId, level: 'info' })).child({ component: 'kafka-bus' });
    this.partitions = options.partitions ?? DEFAULT_PARTITIONS;
    this.prefix = options.topicPrefix ?? '';
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const { retries, initialRetryTimeMs } = options.retry ?? {};
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      requestTimeout: this.requestTimeoutMs,
      // Only what was set: an idempotent producer left without a limit gets kafkajs's default of 5 (and no
      // warning), while an explicit limit reaches it through this client-wide setting.
      retry: {
        ...(retries === undefined ? {} : { retries }),
        ...(initialRetryTimeMs === undefined ? {} : { initialRetryTime: initialRetryTimeMs }),
      },
      logLevel: kafkaLogLevel(this.logger),
      logCreator: () => (entry) => logKafkaEntry(this.logger, entry),
    });
  }

  async produce(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    this.assertOpen();
    if (messages.length === 0) return;
    const session = (this.producer ??= new ProducerSession(
      this.kafka.producer({ idempotent: true, createPartitioner: Partitioners.DefaultPartitioner }),
      this.requestTimeoutMs,
    ));
    try {
      await session.send(this.prefix + topic, messages);
    } catch (error) {
      // After a failure the broker may hold messages whose acknowledgement never arrived, while kafkajs will
      // number the next batch as if they were lost; the broker would then discard that batch as a duplicate.
      // A new producer gets a new producer id and a fresh sequence, so nothing is silently dropped.
      if (this.producer === session) this.producer = undefined;
      void session.retire();
      throw toStorageError(`producing ${messages.length} message(s) to ${topic} failed`, error);
    }
  }

  async consume(options: ConsumeOptions): Promise<Consumer> {
    this.assertOpen();
    const { maxBatchSize } = options;
    if (maxBatchSize !== undefined && !(Number.isInteger(maxBatchSize) && maxBatchSize > 0)) {
      throw new StorageError(`maxBatchSize must be a positive integer, got ${maxBatchSize}`, false, 'INVALID_ARGUMENT');
    }
    const lingerMs = options.lingerMs ?? 0;
    if (!(Number.isFinite(lingerMs) && lingerMs >= 0))
      throw new StorageError(`lingerMs must be a non-negative number, got ${lingerMs}`, false, 'INVALID_ARGUMENT');
    const consumer = new KafkaBusConsumer(
      this.kafka.consumer({
        groupId: this.prefix + options.groupId,
        sessionTimeout: SESSION_TIMEOUT_MS,
        heartbeatInterval: HEARTBEAT_INTERVAL_MS,
        // A linger makes the broker hold a fetch until LINGER_MIN_BYTES arrived or the linger ran out.
        ...(lingerMs > 0
          ? { minBytes: LINGER_MIN_BYTES, maxWaitTimeInMs: Math.min(Math.round(lingerMs), HEARTBEAT_INTERVAL_MS) }
          : { maxWaitTimeInMs: FETCH_MAX_WAIT_MS }),
      }),
      options,
      this.prefix,
      this.logger,
      () => this.consumers.delete(consumer),
    );
    // Registered before it starts, so that a close() meanwhile stops it too.
    this.consumers.add(consumer);
    try {
      await consumer.start();
    } catch (error) {
      await consumer.stop().catch(() => undefined);
      throw toStorageError(`starting consumer group ${options.groupId} failed`, error);
    }
    return consumer;
  }

  /**
   * Resolves once every topic exists with a leader for each partition. Services starting together create
   * overlapping sets of topics at once; the broker then answers, for a moment, as if a topic that another
   * request has just created did not exist (or had no leader yet), and kafkajs gives up on that answer. So
   * the topics are looked at again until they are all there, within the request timeout.
   */
  async ensureTopics(topics: readonly string[]): Promise<void> {
    this.assertOpen();
    const names = [...new Set(topics.map((topic) => this.prefix + topic))];
    const deadline = Date.now() + this.requestTimeoutMs;
    for (;;) {
      try {
        const admin = await this.connectedAdmin();
        const existing = new Set(await admin.listTopics());
        const missing = names.filter((topic) => !existing.has(topic));
        // Creating only the missing topics keeps waitForLeaders meaningful: kafkajs skips that wait when any
        // topic of the request already existed. A topic created concurrently elsewhere still just returns false.
        if (missing.length > 0) {
          await admin.createTopics({
            topics: missing.map((topic) => ({
              topic,
              numPartitions: this.partitions,
              configEntries: [{ name: 'max.message.bytes', value: String(TOPIC_MAX_MESSAGE_BYTES) }],
            })),
            waitForLeaders: true,
            timeout: this.requestTimeoutMs,
          });
        }
        const { topics: found } = await admin.fetchTopicMetadata({ topics: names });
        if (found.every((topic) => topic.partitions.length > 0 && topic.partitions.every((partition) => partition.leader >= 0))) return;
      } catch (error) {
        const failure = toStorageError(`creating topics ${topics.join(', ')} failed`, error);
        if (!TOPIC_NOT_READY.has(failure.code ?? '') || Date.now() >= deadline) throw failure;
      }
      if (Date.now() >= deadline)
        throw new StorageError(`creating topics ${topics.join(', ')} failed: no leader within ${this.requestTimeoutMs} ms`, true, 'LEADER_NOT_AVAILABLE');
      await new Promise((resolve) => setTimeout(resolve, TOPIC_RETRY_MS));
    }
  }

  async ping(): Promise<void> {
    this.assertOpen();
    try {
      const admin = await this.connectedAdmin();
      await admin.describeCluster();
    } catch (error) {
      throw toStorageError('Kafka is not reachable', error);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.consumers].map((consumer) => consumer.stop()));
    const producer = this.producer;
    this.producer = undefined;
    const admin = this.admin;
    this.admin = undefined;
    await Promise.all([
      producer?.retire(),
      admin?.then(
        (connected) => connected.disconnect(),
        () => undefined,
      ),
    ]);
  }

  private connectedAdmin(): Promise<Admin> {
    if (!this.admin) {
      const admin = this.kafka.admin();
      const connecting = admin.connect().then(() => admin);
      this.admin = connecting;
      // A failed connect is not cached: the next call tries again.
      connecting.catch(() => {
        if (this.admin === connecting) this.admin = undefined;
      });
    }
    return this.admin;
  }

  private assertOpen(): void {
    if (this.closed) throw new StorageError('the Kafka bus is closed', false, 'BUS_CLOSED');
  }
}

/**
 * The largest record a topic Plover creates takes: an LLM analytics event may be 8 MiB as the client sent it
 * (docs/capture.md#llm-analytics-iv0aibatch), above the broker's 1 MiB default.
 */
const TOPIC_MAX_MESSAGE_BYTES = 9 * 1024 * 1024;

/**
 * Our share of a produce request's bytes. The broker refuses a partition's record batch above
 * `message.max.bytes` (1 MiB by default) and kafkajs does not split batches, so requests stay below it.
 */
const MAX_REQUEST_BYTES = 900 * 1024;

type KafkaMessageOut = ProducerRecord['messages'][number];

interface QueuedSend {
  topic: string;
  messages: KafkaMessageOut[];
  bytes: number;
  resolve(): void;
  reject(error: Error | undefined): void;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function sizeOf(message: OutgoingMessage): number {
  let bytes = message.value.length + Buffer.byteLength(message.key);
  for (const [name, value] of Object.entries(message.headers ?? {})) bytes += name.length + value.length;
  return bytes;
}

/** Splits one call's messages into pieces that each fit a request (a lone oversized message stays whole). */
function chunk(messages: readonly OutgoingMessage[]): { messages: KafkaMessageOut[]; bytes: number }[] {
  const chunks: { messages: KafkaMessageOut[]; bytes: number }[] = [];
  let current: { messages: KafkaMessageOut[]; bytes: number } | undefined;
  for (const message of messages) {
    const bytes = sizeOf(message);
    if (!current || (current.bytes + bytes > MAX_REQUEST_BYTES && current.messages.length > 0)) {
      current = { messages: [], bytes: 0 };
      chunks.push(current);
    }
    current.messages.push({ key: message.key, value: message.value, headers: message.headers });
    current.bytes += bytes;
  }
  return chunks;
}

/**
 * One kafkajs producer and its connection, sending one request at a time: kafkajs serializes an idempotent
 * producer's requests anyway, so concurrent calls would queue one round trip each. Instead, calls that
 * arrive while a request is in flight wait together and go out as the next request (group commit, as
 * the local log does with fsync), each resolving when the request carrying it is acknowledged.
 * Retired after a failed send: what was queued behind the failure is refused rather than sent on a
 * producer whose sequence numbers may no longer match the broker's, and it disconnects once idle.
 */
class ProducerSession {
  private readonly connected: Promise<void>;
  private readonly queue: QueuedSend[] = [];
  private flushing = false;
  private failure: Error | undefined;
  private retired = false;
  private disconnected: Promise<void> | undefined;

  constructor(
    private readonly producer: Producer,
    private readonly timeoutMs: number,
  ) {
    this.connected = producer.connect();
    // Observed through flush(); without this a failed connect with no send waiting would be unhandled.
    this.connected.catch(() => undefined);
  }

  async send(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    await Promise.all(
      chunk(messages).map(
        (piece) =>
          new Promise<void>((resolve, reject) => {
            if (this.failure !== undefined) return reject(this.failure);
            this.queue.push({ topic, ...piece, resolve, reject });
            if (!this.flushing) void this.flush();
          }),
      ),
    );
  }

  retire(): Promise<void> {
    this.retired = true;
    return this.flushing ? Promise.resolve() : this.disconnect();
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      await this.connected;
      while (this.queue.length > 0) {
        const group = this.takeRequest();
        try {
          await this.producer.sendBatch({ acks: -1, timeout: this.timeoutMs, topicMessages: byTopic(group) });
        } catch (error) {
          this.failure = asError(error);
          for (const send of group) send.reject(this.failure);
          break;
        }
        for (const send of group) send.resolve();
      }
    } catch (error) {
      this.failure = asError(error);
    } finally {
      for (const send of this.queue.splice(0)) send.reject(this.failure);
      this.flushing = false;
      if (this.retired) void this.disconnect();
    }
  }

  private takeRequest(): QueuedSend[] {
    let bytes = 0;
    let count = 0;
    while (count < this.queue.length && (count === 0 || bytes + this.queue[count]!.bytes <= MAX_REQUEST_BYTES)) {
      bytes += this.queue[count]!.bytes;
      count += 1;
    }
    return this.queue.splice(0, count);
  }

  private disconnect(): Promise<void> {
    this.disconnected ??= this.producer.disconnect().catch(() => undefined);
    return this.disconnected;
  }
}

function byTopic(group: readonly QueuedSend[]): { topic: string; messages: KafkaMessageOut[] }[] {
  const topics = new Map<string, KafkaMessageOut[]>();
  for (const send of group) {
    const messages = topics.get(send.topic);
    if (messages) messages.push(...send.messages);
    else topics.set(send.topic, [...send.messages]);
  }
  return [...topics].map(([topic, messages]) => ({ topic, messages }));
}

class KafkaBusConsumer implements Consumer {
  private paused = false;
  private stopping: Promise<void> | undefined;
  /** The topics as the broker names them (prefixed). */
  private readonly topics: { topic: string }[];
  private readonly logger: Logger;

  constructor(
    private readonly consumer: KafkaConsumer,
    private readonly options: ConsumeOptions,
    private readonly prefix: string,
    logger: Logger,
    private readonly onStopped: () => void,
  ) {
    this.topics = options.topics.map((topic) => ({ topic: prefix + topic }));
    this.logger = logger.child({ groupId: options.groupId });
  }

  async start(): Promise<void> {
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
      // kafkajs restarts itself after retriable failures; after any other, nothing consumes until a restart
      // of the service, which only this line tells.
      if (!payload.restart) this.logger.error({ err: payload.error }, 'Kafka consumer stopped after a non-retriable error');
    });
    await this.consumer.connect();
    // A group without committed offsets starts at the beginning: messages produced before the first
    // consumer of a group joined are still handled.
    await this.consumer.subscribe({ topics: this.topics.map(({ topic }) => topic), fromBeginning: true });
    // Resolves once the group is joined and partitions are assigned.
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: (payload) => this.eachBatch(payload),
    });
    this.logger.info({ topics: this.options.topics }, 'Kafka consumer started');
  }

  pause(): void {
    this.paused = true;
    this.toKafka(() => this.consumer.pause(this.topics));
  }

  resume(): void {
    this.paused = false;
    this.toKafka(() => this.consumer.resume(this.topics));
  }

  stop(): Promise<void> {
    // kafkajs's disconnect waits for the batch in flight (eachBatch stops between chunks once isRunning()
    // turns false), then leaves the group; what was handled has been committed already.
    this.stopping ??= this.consumer.disconnect().finally(() => {
      this.onStopped();
      this.logger.info('Kafka consumer stopped');
    });
    return this.stopping;
  }

  private async eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    const topic = batch.topic.slice(this.prefix.length);
    const heartbeat = () => payload.heartbeat();
    // A kafkajs batch is whatever one fetch returned for the partition (up to 1 MB); handleBatch gets it in slices.
    const size = this.options.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE;
    for (let start = 0; start < batch.messages.length; start += size) {
      if (this.paused) {
        // kafkajs forgets pauses when it recreates its group after a crash; pausing again here keeps the
        // promise of pause() and the unresolved messages are fetched again after resume().
        this.consumer.pause(this.topics);
        return;
      }
      if (!payload.isRunning()) return;
      const chunk = batch.messages.slice(start, start + size);
      const busBatch: Batch = {
        topic,
        partition: batch.partition,
        messages: chunk.map((message) => toBusMessage(topic, batch.partition, message)),
      };
      try {
        await this.withHeartbeats(heartbeat, () => this.options.handleBatch(busBatch));
      } catch (error) {
        const backoffMs = this.options.retryBackoffMs ?? DEFAULT_RETRY_BACKOFF_MS;
        this.logger.warn({ err: error, topic, partition: batch.partition, offset: chunk[0]?.offset, backoffMs }, 'batch failed; it will be delivered again');
        await sleepWithHeartbeats(backoffMs, heartbeat, () => payload.isRunning());
        return;
      }
      const last = chunk[chunk.length - 1];
      if (last) payload.resolveOffset(last.offset);
      // With autoCommit off kafkajs commits only what it is handed: everything resolved and not yet committed.
      await payload.commitOffsetsIfNecessary(payload.uncommittedOffsets());
      await heartbeat();
    }
  }

  /**
   * Keeps the group membership alive while a batch runs longer than the session timeout. A failed heartbeat
   * (usually a rebalance) is left for kafkajs to discover again once the batch is over: the commit or the
   * next heartbeat then fails and kafkajs rejoins.
   */
  private async withHeartbeats<T>(heartbeat: () => Promise<void>, work: () => Promise<T>): Promise<T> {
    const timer = setInterval(() => {
      heartbeat().catch((error: unknown) => this.logger.debug({ err: error }, 'heartbeat during a batch failed'));
    }, HEARTBEAT_INTERVAL_MS);
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }

  /** Pause and resume reach kafkajs only while it has a group; the check in eachBatch covers the gaps. */
  private toKafka(apply: () => void): void {
    try {
      apply();
    } catch (error) {
      // kafkajs refuses (non-retriably) before run() and between a crash and its automatic restart.
      if (!(error instanceof KafkaJSNonRetriableError)) throw error;
    }
  }
}

async function sleepWithHeartbeats(ms: number, heartbeat: () => Promise<void>, isRunning: () => boolean): Promise<void> {
  const until = Date.now() + ms;
  while (isRunning()) {
    const left = until - Date.now();
    if (left <= 0) return;
    await new Promise((resolve) => setTimeout(resolve, Math.min(left, HEARTBEAT_INTERVAL_MS)));
    await heartbeat();
  }
}

function toBusMessage(topic: string, partition: number, message: KafkaMessage): BusMessage {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    // Kafka allows repeated header names; like the Java client's lastHeader(), the last one wins.
    const last = Array.isArray(value) ? value[value.length - 1] : value;
    if (last !== undefined) headers[name] = last.toString();
  }
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key?.toString() ?? '',
    value: message.value ?? Buffer.alloc(0),
    headers,
    timestamp: Number(message.timestamp),
  };
}

/**
 * kafkajs wraps the error that made it give up: KafkaJSNumberOfRetriesExceeded around the last retriable
 * failure, KafkaJSNonRetriableError around a permanent one. The innermost kafkajs error says what happened.
 */
function rootKafkaError(error: unknown): unknown {
  let current = error;
  while (current instanceof KafkaJSError && current.cause instanceof KafkaJSError) current = current.cause;
  return current;
}

/**
 * Classifies by kafkajs error class and Kafka protocol error type, never by message text. `retriable` means
 * the same call may succeed later (broker down, leader moving, replicas catching up).
 */
export function toStorageError(message: string, error: unknown): StorageError {
  if (error instanceof StorageError) return error;
  const root = rootKafkaError(error);
  let retriable = false;
  let code: string | undefined;
  if (root instanceof KafkaJSProtocolError) {
    // Kafka's own error table marks each protocol error retriable or not (kafkajs copies it).
    retriable = root.retriable;
    code = root.type;
  } else if (root instanceof KafkaJSTimeout) {
    // kafkajs marks its timeouts non-retriable only to end its own retry loop; a later call may well succeed.
    retriable = true;
    code = root.name;
  } else if (root instanceof KafkaJSAggregateError) {
    // Per-topic failures of one request (createTopics): retriable only when every one of them is.
    const errors = root.errors.filter((inner): inner is KafkaJSProtocolError => inner instanceof KafkaJSProtocolError);
    retriable = errors.length === root.errors.length && errors.every((inner) => inner.retriable);
    code = errors[0]?.type;
  } else if (root instanceof KafkaJSError) {
    // Connection failures, request timeouts, missing metadata: retriable unless kafkajs says otherwise.
    retriable = root.retriable;
    code = root.name;
  }
  const detail = error instanceof Error ? error.message : String(error);
  return new StorageError(`${message}: ${detail}`, retriable, code, { cause: error });
}

/**
 * kafkajs filters by its own level before calling the log creator; derive it from the pino level so that
 * entries pino would drop are never built (kafkajs info entries land at pino debug, see logKafkaEntry).
 */
function kafkaLogLevel(logger: Logger): logLevel {
  if (logger.isLevelEnabled('debug')) return logLevel.DEBUG;
  if (logger.isLevelEnabled('warn')) return logLevel.WARN;
  if (logger.isLevelEnabled('error')) return logLevel.ERROR;
  return logLevel.NOTHING;
}

/**
 * Routes kafkajs's logs into pino. Its info lines are per-operation chatter (every pause and resume, every
 * join, every reconnect), so they go out at debug; this adapter logs consumer lifecycle at info itself.
 */
function logKafkaEntry(logger: Logger, entry: LogEntry): void {
  const { message, timestamp: _timestamp, ...fields } = entry.log;
  const bindings = { library: 'kafkajs', namespace: entry.namespace, ...fields };
  switch (entry.level) {
    case logLevel.ERROR:
      logger.error(bindings, message);
      break;
    case logLevel.WARN:
      logger.warn(bindings, message);
      break;
    default:
      logger.debug(bindings, message);
  }
}
