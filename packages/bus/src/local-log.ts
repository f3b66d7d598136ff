/**
 * LocalLogBus: the EventBus of embedded mode, a durable append-only log in the data directory.
 *
 *   <dataDir>/LOCK                                  the process that owns the directory (see lockDirectory)
 *   <dataDir>/<topic>/<partition>/<baseOffset>.log  segments (see local-log/record.ts for the framing)
 *   <dataDir>/_groups/<group>/<topic>-<partition>   committed offsets
 *
 * produce resolves once its records are fsynced (group commit, see PartitionLog.append); consumers only ever see
 * fsynced records, so what they commit survives a power loss (see PartitionLog.open). A consumer group that
 * never committed starts at the oldest retained record. Segments are deleted once every group known for the topic
 * has committed past them; a topic no group has consumed keeps everything.
 */
import path from 'node:path';
import { silentLogger, StorageError } from '@plover/core';
import type { Logger } from '@plover/core';
import type { ConsumeOptions, Consumer, EventBus, OutgoingMessage } from './port';
import { LocalConsumer } from './local-log/consumer';
import { nodeFileSystem } from './local-log/file-system';
import type { LogFileSystem } from './local-log/file-system';
import { busClosedError, makeDirectory, storageError } from './local-log/files';
import { OffsetStore } from './local-log/offsets';
import { PartitionLog } from './local-log/partition-log';

export interface LocalLogBusOptions {
  dataDir: string;
  /** Partitions of the topics this bus creates; an existing topic keeps the count it was created with. */
  partitions?: number;
  /** A partition's segment file is rolled before an append would take it past this size. */
  segmentBytes?: number;
  logger?: Logger;
  /**
   * Called when an fsync of the log failed (after the bytes it did not make durable are cut off): the process
   * must end, since what the kernel still shows of the files may not be on disk. Defaults to logging the error
   * as fatal and exiting with status 1.
   */
  onFatalError?: (error: StorageError) => void;
  /** Where the files are; the tests put a simulated disk here. */
  fileSystem?: LogFileSystem;
}

/** Topic and group names become directory names: Kafka's character set, and no leading `.` or `_` (ours). */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,248}$/;
const STAGING_PREFIX = '.tmp-';
const DEFAULTS = { partitions: 4, segmentBytes: 64 * 1024 * 1024, maxBatchSize: 500, retryBackoffMs: 1000, lingerMs: 0 };

interface Topic {
  name: string;
  partitions: PartitionLog[];
}

export class LocalLogBus implements EventBus {
  private readonly topics = new Map<string, Topic>();
  private readonly creating = new Map<string, Promise<Topic>>();
  private readonly consumers = new Set<LocalConsumer>();
  /** Set by load(), which open() awaits before handing the bus out. */
  private offsets!: OffsetStore;
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly fs: LogFileSystem,
    private readonly dataDir: string,
    private readonly partitions: number,
    private readonly segmentBytes: number,
    private readonly logger: Logger,
    private readonly onFatalError: (error: StorageError) => void,
    private readonly unlock: () => Promise<void>,
  ) {}

  static async open(options: LocalLogBusOptions): Promise<LocalLogBus> {
    const partitions = options.partitions ?? DEFAULTS.partitions;
    const segmentBytes = options.segmentBytes ?? DEFAULTS.segmentBytes;
    if (!Number.isInteger(partitions) || partitions < 1) throw new RangeError(`partitions must be a positive integer, got ${partitions}`);
    if (!Number.isInteger(segmentBytes) || segmentBytes < 1) throw new RangeError(`segmentBytes must be a positive integer, got ${segmentBytes}`);
    const dataDir = path.resolve(options.dataDir);
    const logger = (options.logger ?? silentLogger()).child({ component: 'local-log-bus' });
    const fs = options.fileSystem ?? nodeFileSystem;
    let unlock: () => Promise<void>;
    try {
      await makeDirectory(fs, dataDir);
      unlock = await fs.lock(dataDir);
    } catch (error) {
      throw storageError(`LocalLogBus: cannot open ${dataDir}`, error, false);
    }
    const onFatalError = options.onFatalError ?? exitOnFatalError(logger);
    const bus = new LocalLogBus(fs, dataDir, partitions, segmentBytes, logger, onFatalError, unlock);
    try {
      await bus.load();
    } catch (error) {
      await bus.close();
      throw storageError(`LocalLogBus: cannot open ${dataDir}`, error, false);
    }
    return bus;
  }

  private async load(): Promise<void> {
    const { fs, dataDir } = this;
    this.offsets = await OffsetStore.open(fs, path.join(dataDir, '_groups'), this.logger, (topic, partition) => this.applyRetention(topic, partition));
    for (const entry of await fs.readdir(dataDir)) {
      if (!entry.isDirectory()) continue;
      if (entry.name.startsWith(STAGING_PREFIX)) await fs.removeTree(path.join(dataDir, entry.name));
      else if (NAME.test(entry.name)) await this.loadTopic(entry.name);
    }
    // A topic a killed process renamed into place without the fsync that follows is made durable before use.
    await fs.fsyncDir(dataDir);
    // Deletions that a crash interrupted (or that were due when it happened) are caught up here.
    for (const topic of this.topics.values()) {
      for (let partition = 0; partition < topic.partitions.length; partition++) this.applyRetention(topic.name, partition);
    }
  }

  private async loadTopic(name: string): Promise<Topic> {
    const dir = path.join(this.dataDir, name);
    const count = (await this.fs.readdir(dir)).filter((entry) => /^\d+$/.test(entry.name)).length;
    if (count === 0) throw new StorageError(`LocalLogBus: ${dir} looks like a topic but has no partitions`, false, 'LOG_CORRUPT');
    const partitions: PartitionLog[] = [];
    for (let partition = 0; partition < count; partition++) {
      // Topics are created whole (see createTopic), so partitions 0..count-1 exist; a gap fails here, loudly.
      partitions.push(
        await PartitionLog.open({
          fs: this.fs,
          dir: path.join(dir, String(partition)),
          topic: name,
          partition,
          segmentBytes: this.segmentBytes,
          logger: this.logger,
          onFatalError: this.onFatalError,
        }),
      );
    }
    const topic = { name, partitions };
    this.topics.set(name, topic);
    return topic;
  }

  private topic(name: string): Promise<Topic> {
    const topic = this.topics.get(name);
    if (topic) return Promise.resolve(topic);
    let created = this.creating.get(name);
    if (!created) {
      created = this.createTopic(name).finally(() => this.creating.delete(name));
      this.creating.set(name, created);
    }
    return created;
  }

  private async createTopic(name: string): Promise<Topic> {
    checkName('topic', name);
    this.checkOpen();
    // Built under a staging name and renamed into place: a topic appears with all its partitions or not at all,
    // because a topic reopened with fewer partitions would send keys elsewhere and break their order.
    const { fs, dataDir } = this;
    const staging = path.join(dataDir, `${STAGING_PREFIX}${name}`);
    try {
      await fs.removeTree(staging);
      await fs.mkdir(staging);
      for (let partition = 0; partition < this.partitions; partition++) await fs.mkdir(path.join(staging, String(partition)));
      await fs.fsyncDir(staging);
      await fs.rename(staging, path.join(dataDir, name));
      await fs.fsyncDir(dataDir);
      return await this.loadTopic(name);
    } catch (error) {
      throw storageError(`LocalLogBus: cannot create topic ${name}`, error, true);
    }
  }

  async produce(topicName: string, messages: readonly OutgoingMessage[]): Promise<void> {
    this.checkOpen();
    // The common case (topic loaded) stays synchronous up to the appends.
    const topic = this.topics.get(topicName) ?? (await this.topic(topicName));
    if (messages.length === 0) return;
    const { partitions } = topic;
    const timestamp = Date.now();
    if (partitions.length === 1) return (partitions[0] as PartitionLog).append(messages, timestamp);
    const byPartition: Array<OutgoingMessage[] | undefined> = [];
    for (const message of messages) (byPartition[partitionOf(message.key, partitions.length)] ??= []).push(message);
    const appends: Promise<void>[] = [];
    for (let partition = 0; partition < partitions.length; partition++) {
      const batch = byPartition[partition];
      if (batch) appends.push((partitions[partition] as PartitionLog).append(batch, timestamp));
    }
    await Promise.all(appends);
  }

  async consume(options: ConsumeOptions): Promise<Consumer> {
    this.checkOpen();
    const { groupId } = options;
    checkName('group id', groupId);
    if (options.topics.length === 0) throw new StorageError('LocalLogBus: consume needs at least one topic', false, 'INVALID_ARGUMENT');
    const maxBatchSize = options.maxBatchSize ?? DEFAULTS.maxBatchSize;
    if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1) throw new RangeError(`maxBatchSize must be a positive integer, got ${maxBatchSize}`);
    const lingerMs = options.lingerMs ?? DEFAULTS.lingerMs;
    if (!Number.isFinite(lingerMs) || lingerMs < 0) throw new RangeError(`lingerMs must be a non-negative number, got ${lingerMs}`);
    const topics = await Promise.all([...new Set(options.topics)].map((name) => this.topic(name)));
    const sources = await Promise.all(
      topics
        .flatMap((topic) => topic.partitions)
        .map(async (log) => {
          let committed = this.offsets.get(groupId, log.topic, log.partition);
          if (committed === undefined) {
            committed = log.startOffset;
            await this.offsets.register(groupId, log.topic, log.partition, committed);
          }
          return { log, reader: await log.readerAt(committed) };
        }),
    );
    // Checked only now, right before the consumer is added: a concurrent consume call for the group may have
    // finished setting up meanwhile. One consumer per group and process; a second would commit over the first.
    this.checkOpen();
    if ([...this.consumers].some((consumer) => consumer.options.groupId === groupId)) {
      throw new StorageError(`LocalLogBus: group ${groupId} already has a consumer in this process`, false, 'GROUP_BUSY');
    }
    const consumer: LocalConsumer = new LocalConsumer(
      {
        groupId,
        handleBatch: options.handleBatch,
        maxBatchSize,
        lingerMs,
        retryBackoffMs: options.retryBackoffMs ?? DEFAULTS.retryBackoffMs,
        offsets: this.offsets,
        logger: this.logger.child({ group: groupId }),
      },
      sources,
      () => this.consumers.delete(consumer),
    );
    this.consumers.add(consumer);
    return consumer;
  }

  async ensureTopics(topics: readonly string[]): Promise<void> {
    this.checkOpen();
    await Promise.all(topics.map((name) => this.topic(name)));
  }

  ping(): Promise<void> {
    const problem = this.closing ? busClosedError() : this.appendFailure();
    return problem ? Promise.reject(problem) : Promise.resolve();
  }

  private appendFailure(): StorageError | undefined {
    for (const topic of this.topics.values()) {
      for (const log of topic.partitions) if (log.failure) return log.failure;
    }
    return undefined;
  }

  /**
   * Counters for benchmarks and tests, summed over partitions: fdatasync calls made for appends, offset files
   * written, and consumer reads served from recently appended frames in memory or from the files.
   */
  stats(): { syncs: number; offsetWrites: number; readsFromMemory: number; readsFromFile: number } {
    const counts = { syncs: 0, offsetWrites: this.offsets.writes, readsFromMemory: 0, readsFromFile: 0 };
    for (const topic of this.topics.values()) {
      for (const log of topic.partitions) {
        counts.syncs += log.syncs;
        counts.readsFromMemory += log.readsFromMemory;
        counts.readsFromFile += log.readsFromFile;
      }
    }
    return counts;
  }

  /** Stops the consumers (committing what they handled), waits for pending appends, closes the files. */
  close(): Promise<void> {
    return (this.closing ??= this.shutdown());
  }

  private async shutdown(): Promise<void> {
    for (const result of await Promise.allSettled([...this.consumers].map((consumer) => consumer.stop()))) {
      if (result.status === 'rejected') this.logger.warn({ err: result.reason as unknown }, 'a consumer failed to commit while the bus closed');
    }
    await Promise.allSettled(this.creating.values());
    await Promise.all([...this.topics.values()].flatMap((topic) => topic.partitions.map((log) => log.close())));
    await this.unlock();
  }

  private checkOpen(): void {
    if (this.closing) throw busClosedError();
  }

  private applyRetention(topicName: string, partition: number): void {
    const log = this.topics.get(topicName)?.partitions[partition];
    const committed = this.offsets.minCommitted(topicName, partition);
    // deleteSegmentsBefore handles its own errors: a segment it could not delete is retried on the next commit.
    if (log && committed !== undefined) void log.deleteSegmentsBefore(committed);
  }
}

function exitOnFatalError(logger: Logger): (error: StorageError) => void {
  return (error) => {
    logger.fatal({ err: error }, 'the local log cannot go on; exiting so that a restart recovers it from the disk');
    process.exit(1);
  };
}

function checkName(what: string, name: string): void {
  if (!NAME.test(name)) throw new StorageError(`LocalLogBus: invalid ${what} ${JSON.stringify(name)} (allowed: ${NAME.source})`, false, 'INVALID_NAME');
}

/** FNV-1a over the key's UTF-16 code units: stable across processes and releases, so a key keeps its partition. */
export function partitionOf(key: string, partitions: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % partitions;
}
