/**
 * One partition of a LocalLogBus topic: a directory of segment files `<baseOffset>.log` (zero-padded so that
 * names sort like offsets), appended with group commit and read by consumers up to what is fsynced.
 */
import path from 'node:path';
import { StorageError } from '@plover/core';
import type { Logger } from '@plover/core';
import type { BusMessage, OutgoingMessage } from '../port';
import type { LogFile, LogFileSystem } from './file-system';
import { busClosedError, storageError, writeFully } from './files';
import { decodeFrame, encodeFrames, findIntactFrame, frameEnd, scanFrames } from './record';

const SEGMENT_NAME = /^(\d{20})\.log$/;
/** Consumers and recovery read segments in pieces this large (a single larger frame is read whole). */
const READ_CHUNK_BYTES = 1024 * 1024;
/**
 * Frames made durable lately stay in memory up to this many bytes per partition, so that a consumer following the
 * tail (the embedded ingestion consumer) gets them without reading the file back and checking its CRCs again.
 */
const RECENT_BYTES = 4 * 1024 * 1024;
const EMPTY = Buffer.alloc(0);

export interface Segment {
  readonly baseOffset: number;
  readonly path: string;
  /** Undefined until the flush that first writes a freshly rolled segment creates its file. */
  handle: LogFile | undefined;
  /** Bytes handed out to appends, durable or not: where the next append goes. */
  assignedBytes: number;
  /** Bytes written and fsynced: readers never look beyond them. */
  durableBytes: number;
  /** The file's directory entry is durable (fsynced into the partition directory). */
  linked: boolean;
}

interface PendingWrite {
  segment: Segment;
  frames: Buffer;
  /** Offset of the first frame. */
  firstOffset: number;
  /** Offset after the last frame. */
  endOffset: number;
  resolve: () => void;
  reject: (error: StorageError) => void;
}

/** One append's frames, durable, as written to `segment` (without the callbacks of its write). */
type RecentFrames = Pick<PendingWrite, 'segment' | 'firstOffset' | 'frames'>;

/** Whole frames in file order, and how many bytes of the file they cover. */
interface FramesAt {
  chunks: Buffer[];
  bytes: number;
}

export interface PartitionLogOptions {
  fs: LogFileSystem;
  dir: string;
  topic: string;
  partition: number;
  segmentBytes: number;
  logger: Logger;
  /** Told when an fsync failed, once the unsynced bytes are cut off; the process must not go on (see failSync). */
  onFatalError: (error: StorageError) => void;
}

/**
 * Errors of an append that say nothing about the bytes already durable, and that pass once space or descriptors are
 * freed: the partition cuts its file back to its durable end and takes the next append (see rewind).
 */
const TRANSIENT_CODES = new Set(['ENOSPC', 'EDQUOT', 'EMFILE', 'ENFILE', 'ENOMEM', 'EAGAIN']);

function isTransient(error: unknown): boolean {
  const cause = error instanceof SyncFailed ? error.error : error;
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  return code !== undefined && TRANSIENT_CODES.has(code);
}

/** An fsync that failed: what it should have made durable may be lost, though it still reads back. */
class SyncFailed extends Error {
  constructor(readonly error: unknown) {
    super('fsync failed', { cause: error });
  }
}

export class PartitionLog {
  /** Offset after the last fsynced record: consumers see exactly the records below it. */
  private durableOffset: number;
  private pending: PendingWrite[] = [];
  private flushing: Promise<void> | undefined;
  private readonly listeners = new Set<() => void>();
  private closed = false;
  /**
   * Set when a write failed in a way the partition cannot recover from (an I/O error, a file that cannot be cut
   * back): the tail of the file is unknown, so nothing is appended until a reopen recovers it. A transient failure
   * (a full disk, no descriptor left) refuses only the appends it met (see rewind).
   */
  failure: StorageError | undefined;
  /** fdatasync calls so far; with group commit far fewer than produce calls. */
  syncs = 0;
  /** Reader fills served from memory and from the file. */
  readsFromMemory = 0;
  readsFromFile = 0;
  /** Durable appends in offset order, oldest first from `recentHead`, at most RECENT_BYTES of frames. */
  private recent: RecentFrames[] = [];
  private recentHead = 0;
  private recentBytes = 0;

  private constructor(
    private readonly options: PartitionLogOptions,
    private readonly segments: Segment[],
    /** Offset the next appended record gets (records up to it may still be waiting for their fsync). */
    private nextOffset: number,
  ) {
    this.durableOffset = nextOffset;
  }

  /**
   * Opens the partition in `options.dir` (which must exist). Every segment file and the directory are fsynced
   * before any byte counts as durable: a process killed between a write and its fsync leaves bytes that read back
   * from the page cache but would not survive a power loss, and consumers must not see (and commit) records that
   * can still vanish. Then the torn tail of the last segment is cut off (see recoverTail).
   */
  static async open(options: PartitionLogOptions): Promise<PartitionLog> {
    const segments = await openSegments(options.fs, options.dir);
    try {
      for (const segment of segments) await (segment.handle as LogFile).datasync();
      await options.fs.fsyncDir(options.dir);
      const last = segments.at(-1);
      if (!last) return new PartitionLog(options, [newSegment(options.dir, 0)], 0);
      // Earlier segments were fsynced before the next one was created; only the last can end in a torn write.
      return new PartitionLog(options, segments, await recoverTail(last, options.logger));
    } catch (error) {
      await closeFiles(segments);
      throw storageError(`LocalLogBus: cannot open ${options.dir}`, error, false);
    }
  }

  get startOffset(): number {
    return (this.segments[0] as Segment).baseOffset;
  }

  get endOffset(): number {
    return this.durableOffset;
  }

  get topic(): string {
    return this.options.topic;
  }

  get partition(): number {
    return this.options.partition;
  }

  /**
   * Appends `messages` and resolves once they are fsynced. Offsets and file positions are handed out right here,
   * synchronously, so concurrent callers keep their call order; the write itself is left to `flush`, which writes
   * everything that queued up meanwhile with one writev and one fdatasync (group commit).
   */
  append(messages: readonly OutgoingMessage[], timestamp: number): Promise<void> {
    // The executor runs synchronously; what it throws (a message too large to frame) rejects the promise.
    return new Promise((resolve, reject) => {
      if (this.failure) throw this.failure;
      if (this.closed) throw busClosedError();
      const frames = encodeFrames(messages, this.nextOffset, timestamp);
      let segment = this.segments.at(-1) as Segment;
      if (segment.assignedBytes > 0 && segment.assignedBytes + frames.length > this.options.segmentBytes) {
        segment = newSegment(this.options.dir, this.nextOffset);
        this.segments.push(segment);
      }
      segment.assignedBytes += frames.length;
      const firstOffset = this.nextOffset;
      this.nextOffset += messages.length;
      this.pending.push({ segment, frames, firstOffset, endOffset: this.nextOffset, resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  private async flush(): Promise<void> {
    // Waiting for the check phase lets every produce call made by this loop turn's I/O callbacks join the first
    // write; later calls queue up while that write's fsync runs and go together in the next one.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.pending.length > 0) {
      const writes = this.pending;
      this.pending = [];
      let done = 0;
      try {
        while (done < writes.length) {
          // A batch spans two segments only when the log rolled: finish (and fsync) the old file first.
          const segment = (writes[done] as PendingWrite).segment;
          let end = done + 1;
          while (end < writes.length && (writes[end] as PendingWrite).segment === segment) end++;
          await this.writeDurably(segment, writes.slice(done, end));
          done = end;
        }
      } catch (error) {
        const unsettled = writes.slice(done);
        if (isTransient(error) && (await this.rewind(error, unsettled))) continue;
        if (error instanceof SyncFailed) await this.failSync(error.error, (unsettled[0] as PendingWrite).segment, unsettled);
        else this.fail(error, unsettled);
        break;
      }
    }
    this.flushing = undefined;
  }

  private async writeDurably(segment: Segment, writes: PendingWrite[]): Promise<void> {
    segment.handle ??= await this.options.fs.open(segment.path, 'wx+');
    if (!segment.linked) {
      await synced(this.options.fs.fsyncDir(this.options.dir));
      segment.linked = true;
    }
    const bytes = await writeFully(
      segment.handle,
      writes.map((write) => write.frames),
      segment.durableBytes,
    );
    await synced(segment.handle.datasync());
    this.syncs++;
    segment.durableBytes += bytes;
    this.durableOffset = (writes.at(-1) as PendingWrite).endOffset;
    this.remember(writes);
    for (const write of writes) write.resolve();
    for (const listener of this.listeners) listener();
  }

  private remember(writes: readonly PendingWrite[]): void {
    for (const { segment, firstOffset, frames } of writes) {
      this.recent.push({ segment, firstOffset, frames });
      this.recentBytes += frames.length;
    }
    while (this.recentBytes > RECENT_BYTES) this.recentBytes -= (this.recent[this.recentHead++] as RecentFrames).frames.length;
    // Dropped entries still hold their frames until they are spliced off: never more of them than live ones.
    if (this.recentHead * 2 > this.recent.length) {
      this.recent.splice(0, this.recentHead);
      this.recentHead = 0;
    }
  }

  /**
   * The durable frames from `offset` on, as far as they are still in memory, all in `segment` and at most
   * `maxBytes` (or the one append there is, when it is larger), one buffer per append; undefined when the append
   * starting at `offset` is no longer (or never was) kept.
   */
  recentFrames(segment: Segment, offset: number, maxBytes: number): FramesAt | undefined {
    let low = this.recentHead;
    let high = this.recent.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const candidate = (this.recent[middle] as RecentFrames).firstOffset;
      if (candidate === offset) {
        low = middle;
        break;
      }
      if (candidate < offset) low = middle + 1;
      else high = middle - 1;
    }
    const first = this.recent[low];
    if (low > high || first?.firstOffset !== offset || first.segment !== segment) return undefined;
    const chunks = [first.frames];
    let bytes = first.frames.length;
    for (let next = low + 1; next < this.recent.length; next++) {
      const { segment: nextSegment, frames } = this.recent[next] as RecentFrames;
      if (nextSegment !== segment || bytes + frames.length > maxBytes) break;
      chunks.push(frames);
      bytes += frames.length;
    }
    return { chunks, bytes };
  }

  private fail(error: unknown, unsettled: PendingWrite[]): StorageError {
    this.failure = storageError(`LocalLogBus: appending to ${this.options.dir} failed, appends are refused until the bus is reopened`, error, false);
    this.options.logger.error({ err: error, dir: this.options.dir }, 'local log append failed');
    for (const write of [...unsettled, ...this.pending]) write.reject(this.failure);
    this.pending = [];
    return this.failure;
  }

  /**
   * After a transient failure (see TRANSIENT_CODES) the durable end is still known: every append not yet durable is
   * refused (their callers answer 503 and the SDKs retry), the offsets and file positions handed out to them are
   * taken back, segments rolled for them are forgotten (their files were never created: a segment is opened only
   * once the one before it is durable to its end), and the last file is cut back to its durable end and synced, so
   * that no byte of a refused append, nor a page whose writeback failed, is ever read as a record. Appends made
   * while the cut runs wait for it. Returns false when the cut itself failed: the partition cannot go on.
   */
  private async rewind(error: unknown, unsettled: PendingWrite[]): Promise<boolean> {
    const cause = error instanceof SyncFailed ? error.error : error;
    const refused = storageError(`LocalLogBus: appending to ${this.options.dir} failed; the partition goes on from its durable end`, cause, true);
    this.options.logger.warn({ err: cause, dir: this.options.dir }, 'local log append failed; cutting back to the durable end');
    for (const write of [...unsettled, ...this.pending]) write.reject(refused);
    this.pending = [];
    this.nextOffset = this.durableOffset;
    while (this.segments.length > 1 && (this.segments.at(-1) as Segment).baseOffset > this.durableOffset) this.segments.pop();
    const tail = this.segments.at(-1) as Segment;
    tail.assignedBytes = tail.durableBytes;
    try {
      if (tail.handle) {
        await tail.handle.truncate(tail.durableBytes);
        await tail.handle.datasync();
      }
      return true;
    } catch (cutError) {
      this.options.logger.error({ err: cutError, file: tail.path }, 'could not cut the local log back to its durable end');
      this.fail(cutError, []);
      return false;
    }
  }

  /**
   * After a failed fsync the kernel may have dropped the unwritten pages or marked them clean: the bytes still
   * read back from the page cache, yet may never reach the disk, and a later fsync reports nothing. A restarted
   * process would count them durable. So they are cut off (the segment truncated to its durable end and synced)
   * and the process is ended: only a fresh start knows the state of the files again.
   */
  private async failSync(error: unknown, segment: Segment, unsettled: PendingWrite[]): Promise<void> {
    const failure = this.fail(error, unsettled);
    try {
      await segment.handle?.truncate(segment.durableBytes);
      await segment.handle?.datasync();
    } catch (truncateError) {
      this.options.logger.error({ err: truncateError, file: segment.path }, 'could not cut the unsynced bytes off the local log');
    }
    this.options.onFatalError(failure);
  }

  /** Calls `listener` whenever new records become durable; returns the unsubscribe function. */
  onAppend(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * A reader positioned at `offset`, clamped into the retained, durable range (a group's commit can point before
   * the first segment when segments were deleted, or past the end when a crash lost unsynced records).
   */
  async readerAt(offset: number): Promise<LogReader> {
    const target = Math.min(Math.max(offset, this.startOffset), this.durableOffset);
    const segment = this.segments.findLast((candidate) => candidate.baseOffset <= target) as Segment;
    // Nothing indexes offsets to positions: walking one segment is cheap and only happens when a consumer starts.
    const reader = new LogReader(this, segment, segment.baseOffset);
    await reader.skipTo(target);
    return reader;
  }

  /** The segment holding the records right after `segment`. */
  segmentAfter(segment: Segment): Segment {
    const next = this.segments.find((candidate) => candidate.baseOffset > segment.baseOffset);
    if (!next) throw new StorageError(`LocalLogBus: no segment after ${segment.path}`, false, 'LOG_INVARIANT');
    return next;
  }

  /** Deletes the segments whose records all lie below `offset` (every group has committed past them). */
  async deleteSegmentsBefore(offset: number): Promise<void> {
    let count = 0;
    // The last segment is never deleted: appends go there. Nor is one followed by a segment without durable
    // records: that one's file may not exist yet, and a partition left with no file starts over at offset 0.
    for (let next = this.segments[1]; next && next.baseOffset <= offset && next.durableBytes > 0; next = this.segments[count + 1]) count++;
    for (const segment of this.segments.splice(0, count)) {
      try {
        await segment.handle?.close();
        await this.options.fs.unlink(segment.path);
      } catch (error) {
        // A segment left behind is only disk space: it is found again on open and deleted with the next commit.
        this.options.logger.warn({ err: error, file: segment.path }, 'could not delete a consumed local log segment');
      }
    }
  }

  /** Waits for queued appends to become durable, then closes the files. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flushing;
    await closeFiles(this.segments);
  }
}

/** Reads a partition forward from an offset, one chunk of the file at a time. */
export class LogReader {
  /** Whole intact frames read ahead of `offset`, starting at `index`. */
  private chunk: Buffer = EMPTY;
  private index = 0;
  /** More such buffers that follow `chunk` in the file, from `nextChunk` on (appends served from memory). */
  private chunks: Buffer[] = [];
  private nextChunk = 0;
  /** File position right after the last of them. */
  private position = 0;

  constructor(
    private readonly log: PartitionLog,
    private segment: Segment,
    /** Offset of the next record this reader returns. */
    public offset: number,
  ) {}

  /**
   * Up to `max` records from `offset` on, none when the reader is at the durable end. One call never spans two
   * reads of the file, so a read that fails cannot take records already decoded down with it.
   */
  async next(max: number): Promise<BusMessage[]> {
    if (!this.hasFrames() && !(await this.fill())) return [];
    const messages: BusMessage[] = [];
    while (messages.length < max && this.hasFrames()) {
      messages.push(decodeFrame(this.chunk, this.index, this.log.topic, this.log.partition));
      this.index = frameEnd(this.chunk, this.index);
      this.offset++;
    }
    return messages;
  }

  async skipTo(target: number): Promise<void> {
    while (this.offset < target && (this.hasFrames() || (await this.fill()))) {
      this.index = frameEnd(this.chunk, this.index);
      this.offset++;
    }
  }

  /** Whether a frame is at hand without reading (moving on to the next buffer held when `chunk` is done). */
  private hasFrames(): boolean {
    if (this.index < this.chunk.length) return true;
    const next = this.chunks[this.nextChunk];
    if (!next) return false;
    this.chunk = next;
    this.index = 0;
    this.nextChunk++;
    return true;
  }

  private async fill(): Promise<boolean> {
    if (this.offset >= this.log.endOffset) return false;
    if (this.position >= this.segment.durableBytes) {
      // This segment is exhausted yet durable records follow: they are in the next segment.
      this.segment = this.log.segmentAfter(this.segment);
      this.position = 0;
    }
    const { segment, position } = this;
    let frames = this.log.recentFrames(segment, this.offset, READ_CHUNK_BYTES);
    if (frames) this.log.readsFromMemory++;
    else {
      const read = await readFrames(segment, position, segment.durableBytes, this.offset);
      if (read.count === 0) {
        throw new StorageError(`LocalLogBus: damaged record in ${segment.path} at byte ${position}`, false, 'LOG_CORRUPT');
      }
      frames = { chunks: [read.frames], bytes: read.frames.length };
      this.log.readsFromFile++;
    }
    this.chunks = frames.chunks;
    this.nextChunk = 0;
    this.chunk = EMPTY;
    this.index = 0;
    this.position = position + frames.bytes;
    return this.hasFrames();
  }
}

export async function closeFiles(segments: readonly Segment[]): Promise<void> {
  await Promise.all(segments.map(async (segment) => segment.handle?.close()));
}

function newSegment(dir: string, baseOffset: number): Segment {
  const file = path.join(dir, `${String(baseOffset).padStart(20, '0')}.log`);
  return { baseOffset, path: file, handle: undefined, assignedBytes: 0, durableBytes: 0, linked: false };
}

interface FramesRead {
  /** Whole intact frames. */
  frames: Buffer;
  count: number;
  /** The bytes after `frames` (up to `limit`) do not start with an intact frame. */
  damaged: boolean;
}

/** Reads the intact frames at `position` (the first with offset `firstOffset`) without looking past `limit`. */
async function readFrames(segment: Segment, position: number, limit: number, firstOffset: number): Promise<FramesRead> {
  const handle = segment.handle;
  if (!handle) throw new StorageError(`LocalLogBus: ${segment.path} is not open`, false, 'LOG_INVARIANT');
  let size = Math.min(READ_CHUNK_BYTES, limit - position);
  for (;;) {
    if (size <= 0) return { frames: EMPTY, count: 0, damaged: false };
    const buffer = Buffer.allocUnsafe(size);
    const { bytesRead } = await handle.read(buffer, 0, size, position);
    const scan = scanFrames(buffer.subarray(0, bytesRead), firstOffset);
    if (scan.count === 0 && !scan.damaged && scan.cutFrameBytes > size && position + scan.cutFrameBytes <= limit) {
      size = scan.cutFrameBytes; // one frame larger than a chunk
      continue;
    }
    // Not even one whole frame before the limit: the file ends in a torn write.
    const torn = scan.count === 0;
    return { frames: buffer.subarray(0, scan.bytes), count: scan.count, damaged: scan.damaged || torn };
  }
}

/** Where an fsync's failure is told apart from other failures of an append (see failSync). */
async function synced(sync: Promise<void>): Promise<void> {
  try {
    await sync;
  } catch (error) {
    throw new SyncFailed(error);
  }
}

/** The segment files in `dir`, oldest first, each open for reading and writing. */
export async function openSegments(fs: LogFileSystem, dir: string): Promise<Segment[]> {
  const names = (await fs.readdir(dir))
    .map((entry) => entry.name)
    .filter((name) => SEGMENT_NAME.test(name))
    .sort();
  const segments: Segment[] = [];
  try {
    for (const name of names) {
      const file = path.join(dir, name);
      const segment: Segment = {
        baseOffset: Number(name.slice(0, 20)),
        path: file,
        handle: await fs.open(file, 'r+'),
        assignedBytes: 0,
        durableBytes: 0,
        linked: true,
      };
      segments.push(segment);
      const { size } = await (segment.handle as LogFile).stat();
      segment.assignedBytes = size;
      segment.durableBytes = size;
    }
    return segments;
  } catch (error) {
    await closeFiles(segments);
    throw error;
  }
}

export interface SegmentScan {
  /** Bytes of the intact records from the start of the file, and the offset after the last of them. */
  intactBytes: number;
  endOffset: number;
  /** Where an intact record lies behind the first damaged one, when one does. */
  intactAfter: number | undefined;
}

/** Reads `segment` (up to its durableBytes) to the end of its intact records, and looks past them when damaged. */
export async function scanSegment(segment: Segment): Promise<SegmentScan> {
  const fileBytes = segment.durableBytes;
  let position = 0;
  let offset = segment.baseOffset;
  for (;;) {
    const read = await readFrames(segment, position, fileBytes, offset);
    position += read.frames.length;
    offset += read.count;
    if (read.damaged || read.count === 0) break;
  }
  if (position === fileBytes) return { intactBytes: position, endOffset: offset, intactAfter: undefined };
  // Only ever on damage, at most one segment's worth.
  const rest = Buffer.allocUnsafe(fileBytes - position);
  const { bytesRead } = await (segment.handle as LogFile).read(rest, 0, rest.length, position);
  const found = findIntactFrame(rest.subarray(0, bytesRead), offset);
  return { intactBytes: position, endOffset: offset, intactAfter: found < 0 ? undefined : position + found };
}

/**
 * Finds the end of the intact records of the last segment, which is where the next append goes. A crash in the
 * middle of a write leaves a damaged tail with nothing intact behind it: that is cut off. Intact records behind a
 * damaged one were written after it, and may have been acknowledged: the damage is in bytes that had been
 * synced (a bad sector), and cutting there would drop them. That takes the operator's consent: the open fails,
 * naming the repair.
 */
async function recoverTail(segment: Segment, logger: Logger): Promise<number> {
  const fileBytes = segment.durableBytes;
  const scan = await scanSegment(segment);
  if (scan.intactAfter !== undefined) throw damagedLogError(segment.path, scan);
  if (scan.intactBytes < fileBytes) {
    logger.warn({ file: segment.path, keptBytes: scan.intactBytes, droppedBytes: fileBytes - scan.intactBytes }, 'cutting off a torn tail of the local log');
    const handle = segment.handle as LogFile;
    await handle.truncate(scan.intactBytes);
    await handle.datasync();
    segment.assignedBytes = scan.intactBytes;
    segment.durableBytes = scan.intactBytes;
  }
  return scan.endOffset;
}

/** The command that shows, and with `--cut` repairs, damage that stops the log from opening (services/standalone). */
const REPAIR_COMMAND = 'npm run repair-log';

function damagedLogError(file: string, scan: SegmentScan): StorageError {
  return new StorageError(
    `LocalLogBus: ${file} has a damaged record at byte ${scan.intactBytes} (offset ${scan.endOffset}) with intact records behind it ` +
      `(from byte ${scan.intactAfter}); not opening, since cutting the log there drops them. With the process using the log stopped, ` +
      `\`${REPAIR_COMMAND}\` shows what a cut would drop, and \`${REPAIR_COMMAND} -- --cut\` cuts the log at the damaged record`,
    false,
    'LOG_DAMAGED',
  );
}
