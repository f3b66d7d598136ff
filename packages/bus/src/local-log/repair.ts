/**
 * The operator's repair of a log that LocalLogBus refuses to open: a damaged record with intact ones behind it
 * (see recoverTail), which no crash leaves. Each partition is read whole and cut at its first damaged record:
 * that segment is truncated there, the segments after it are deleted, and groups that had committed past the cut
 * are moved back to it (the offsets from there on are handed out again, and a commit above them would skip the
 * new records). Without `cut` nothing is changed: the report says what a cut would drop.
 */
import path from 'node:path';
import { silentLogger } from '@plover/core';
import { nodeFileSystem } from './file-system';
import type { LogFile, LogFileSystem } from './file-system';
import { errorCode } from './files';
import { OffsetStore } from './offsets';
import { closeFiles, openSegments, scanSegment } from './partition-log';

export interface DamagedPartition {
  topic: string;
  partition: number;
  /** The segment holding the first damaged record, its position in it and the offset it should have had. */
  file: string;
  byte: number;
  offset: number;
  /** What the cut drops (or dropped): bytes from the damaged record on, in that segment and the later ones. */
  droppedBytes: number;
  droppedSegments: string[];
  /** Groups whose commit lies past the cut. */
  groupsMovedBack: string[];
}

export async function repairLocalLog(dataDir: string, options: { cut: boolean; fileSystem?: LogFileSystem }): Promise<DamagedPartition[]> {
  const fs = options.fileSystem ?? nodeFileSystem;
  const root = path.resolve(dataDir);
  let unlock: () => Promise<void>;
  try {
    unlock = await fs.lock(root);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return []; // no log yet
    throw error;
  }
  try {
    const offsets = await OffsetStore.open(fs, path.join(root, '_groups'), silentLogger(), () => undefined);
    const damaged: DamagedPartition[] = [];
    for (const topic of await fs.readdir(root)) {
      if (!topic.isDirectory() || /^[._]/.test(topic.name)) continue;
      for (const partition of await fs.readdir(path.join(root, topic.name))) {
        if (!/^\d+$/.test(partition.name)) continue;
        const found = await repairPartition(fs, offsets, path.join(root, topic.name, partition.name), topic.name, Number(partition.name), options.cut);
        if (found) damaged.push(found);
      }
    }
    return damaged;
  } finally {
    await unlock();
  }
}

async function repairPartition(
  fs: LogFileSystem,
  offsets: OffsetStore,
  dir: string,
  topic: string,
  partition: number,
  cut: boolean,
): Promise<DamagedPartition | undefined> {
  const segments = await openSegments(fs, dir);
  try {
    for (const [index, segment] of segments.entries()) {
      const scan = await scanSegment(segment);
      if (scan.intactBytes === segment.durableBytes) continue;
      const later = segments.slice(index + 1);
      const found: DamagedPartition = {
        topic,
        partition,
        file: segment.path,
        byte: scan.intactBytes,
        offset: scan.endOffset,
        droppedBytes: later.reduce((bytes, next) => bytes + next.durableBytes, segment.durableBytes - scan.intactBytes),
        droppedSegments: later.map((next) => next.path),
        groupsMovedBack: [],
      };
      if (cut) {
        const handle = segment.handle as LogFile;
        await handle.truncate(scan.intactBytes);
        await handle.datasync();
        await closeFiles(later);
        for (const next of later) await fs.unlink(next.path);
        await fs.fsyncDir(dir);
        found.groupsMovedBack = await offsets.moveBackTo(topic, partition, scan.endOffset);
      } else {
        found.groupsMovedBack = offsets.groupsPast(topic, partition, scan.endOffset);
      }
      return found;
    }
    return undefined;
  } finally {
    await closeFiles(segments);
  }
}
