/**
 * Committed offsets of consumer groups, one small file per group and partition:
 * `<dir>/<group>/<topic>-<partition>` holding the decimal offset of the next record the group has not handled.
 */
import path from 'node:path';
import type { Logger } from '@plover/core';
import type { LogFileSystem } from './file-system';
import { makeDirectory, writeFileAtomic } from './files';

const OFFSET_FILE = /^(.+)-(\d+)$/;
/**
 * Writes of one offset file start at most this often. A commit is a new file, an fdatasync, a rename and a
 * directory fsync; a consumer that follows a lightly loaded log handles a batch per append, and committing each
 * one cost more than the appends themselves. Commits made meanwhile collapse into the next write, so a crash
 * redelivers up to this much more, which at-least-once delivery allows.
 */
export const COMMIT_INTERVAL_MS = 50;

/** Serialises the writes of one offset file and lets a burst of commits collapse into one write of the newest. */
interface FileWriter {
  latest: number;
  written: number | undefined;
  running: Promise<void> | undefined;
  /** When the last write of this file started (ms, monotonic). */
  startedAt: number;
}

export class OffsetStore {
  /** topic → group → partition → durably committed offset. */
  private readonly committed = new Map<string, Map<string, Map<number, number>>>();
  private readonly writers = new Map<string, FileWriter>();
  private readonly groupDirs = new Set<string>();
  /** Offset files written so far (for tests and benchmarks). */
  writes = 0;

  private constructor(
    private readonly fs: LogFileSystem,
    private readonly dir: string,
    /** Told after each durable commit, so that segments every group has passed can go. */
    private readonly onCommitted: (topic: string, partition: number) => void,
  ) {}

  static async open(fs: LogFileSystem, dir: string, logger: Logger, onCommitted: (topic: string, partition: number) => void): Promise<OffsetStore> {
    await makeDirectory(fs, dir);
    // A commit a killed process renamed into place but did not fsync yet is durable once these fsyncs are done,
    // before retention acts on it.
    await fs.fsyncDir(dir);
    const store = new OffsetStore(fs, dir, onCommitted);
    for (const { name: group } of await fs.readdir(dir)) {
      store.groupDirs.add(group);
      const groupDir = path.join(dir, group);
      await fs.fsyncDir(groupDir);
      for (const { name: file } of await fs.readdir(groupDir)) {
        const match = OFFSET_FILE.exec(file);
        if (!match) continue; // a `.tmp` left by a crash during a commit: the previous commit still stands
        const offset = Number((await fs.readFile(path.join(groupDir, file))).trim());
        if (!Number.isSafeInteger(offset) || offset < 0) {
          // Only reachable by editing the file: starting the group over redelivers, which at-least-once allows.
          logger.warn({ group, file }, 'ignoring an unreadable committed offset');
          continue;
        }
        store.set(group, match[1] as string, Number(match[2]), offset);
      }
    }
    return store;
  }

  get(group: string, topic: string, partition: number): number | undefined {
    return this.committed.get(topic)?.get(group)?.get(partition);
  }

  /**
   * Records where a group that never committed on this partition starts. It counts for retention at once, before
   * the file is written, so that no segment the group is about to read is deleted meanwhile.
   */
  async register(group: string, topic: string, partition: number, offset: number): Promise<void> {
    this.set(group, topic, partition, offset);
    await this.commit(group, topic, partition, offset);
  }

  /**
   * Durably commits `offset`. While a write of this file is running or waiting for its turn (one per
   * COMMIT_INTERVAL_MS), newer commits only replace the value the next write takes, so a consumer goes on with its
   * next batch without waiting for fsyncs. Resolves once a write of `offset` or a newer one has completed.
   */
  commit(group: string, topic: string, partition: number, offset: number): Promise<void> {
    const file = path.join(this.dir, group, `${topic}-${partition}`);
    let writer = this.writers.get(file);
    if (!writer) {
      writer = { latest: offset, written: undefined, running: undefined, startedAt: -Infinity };
      this.writers.set(file, writer);
    }
    writer.latest = offset;
    if (writer.written === offset && !writer.running) return Promise.resolve();
    return (writer.running ??= this.drain(writer, file, group, topic, partition));
  }

  private async drain(writer: FileWriter, file: string, group: string, topic: string, partition: number): Promise<void> {
    try {
      await this.ensureGroupDir(group);
      while (writer.written !== writer.latest) {
        const wait = writer.startedAt + COMMIT_INTERVAL_MS - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        writer.startedAt = performance.now();
        const offset = writer.latest;
        this.writes++;
        await writeFileAtomic(this.fs, file, `${offset}\n`);
        writer.written = offset;
        this.set(group, topic, partition, offset);
        this.onCommitted(topic, partition);
      }
    } finally {
      writer.running = undefined;
    }
  }

  /** The groups whose commit on the partition lies past `offset`. */
  groupsPast(topic: string, partition: number, offset: number): string[] {
    return [...(this.committed.get(topic) ?? [])].filter(([, partitions]) => (partitions.get(partition) ?? 0) > offset).map(([group]) => group);
  }

  /** Moves back to `offset` every group whose commit on the partition lies past it; returns those groups. */
  async moveBackTo(topic: string, partition: number, offset: number): Promise<string[]> {
    const groups = this.groupsPast(topic, partition, offset);
    for (const group of groups) await this.commit(group, topic, partition, offset);
    return groups;
  }

  private async ensureGroupDir(group: string): Promise<void> {
    if (this.groupDirs.has(group)) return;
    await makeDirectory(this.fs, path.join(this.dir, group));
    this.groupDirs.add(group);
  }

  private set(group: string, topic: string, partition: number, offset: number): void {
    let groups = this.committed.get(topic);
    if (!groups) this.committed.set(topic, (groups = new Map<string, Map<number, number>>()));
    let partitions = groups.get(group);
    if (!partitions) groups.set(group, (partitions = new Map<number, number>()));
    partitions.set(partition, offset);
  }

  /**
   * The offset every group known for `topic` has committed past on `partition`, or undefined when no group is
   * known (nothing may be deleted then: the first consumer has yet to read it all).
   */
  minCommitted(topic: string, partition: number): number | undefined {
    const groups = this.committed.get(topic);
    if (!groups) return undefined;
    let min: number | undefined;
    // A group known for the topic but without an offset on this partition has read nothing of it yet.
    for (const partitions of groups.values()) min = Math.min(min ?? Infinity, partitions.get(partition) ?? 0);
    return min;
  }
}
