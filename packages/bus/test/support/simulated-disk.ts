/**
 * A disk in memory for LocalLogBus's power-loss tests, with the guarantees POSIX gives and no more: a file's
 * content is durable as of its last fsync, and a directory's entries (creations, renames, deletions) as of the
 * directory's last fsync, so a new file whose directory was never fsynced is gone after a power loss.
 *
 * A `SimulatedProcess` is one process's view of the disk. Its death (`die`, or reaching `crashAtStep`) makes it
 * refuse every later call, as a killed process makes none; the disk keeps what the page cache had. `powerLoss`
 * then drops all that was not synced, keeping of each file's unsynced appended bytes a random prefix (a write
 * torn at any byte).
 */
import path from 'node:path';
import { StorageError } from '@plover/core';
import type { LogDirEntry, LogFile, LogFileSystem } from '../../src/local-log/file-system';

interface FileNode {
  kind: 'file';
  data: Buffer;
  /** The content as of the last fsync. */
  durable: Buffer;
}

interface DirNode {
  kind: 'dir';
  entries: Map<string, Node>;
  /** The entries as of the last fsync of the directory. */
  durable: Map<string, Node>;
}

type Node = FileNode | DirNode;

function errno(code: string, detail: string): Error {
  return Object.assign(new Error(`${code}: ${detail}`), { code });
}

function newDir(): DirNode {
  return { kind: 'dir', entries: new Map(), durable: new Map() };
}

export class SimulatedDisk {
  private root: DirNode = newDir();
  /** Directories locked by the running process (a lock dies with its process). */
  readonly locks = new Set<string>();
  /** Steps taken by all processes so far. */
  steps = 0;

  /**
   * A new process. It dies before taking its step number `crashAtStep` (counted over the disk's life), or the
   * first step `crashBefore` picks (steps are named like `datasync /data/bus/events/0/….log`). `failSync` picks
   * the fsyncs that fail with EIO.
   */
  process(options: ProcessOptions = {}): SimulatedProcess {
    this.locks.clear();
    return new SimulatedProcess(this, options);
  }

  /** Loses everything not synced. `random` picks how much of each file's unsynced appended bytes survives. */
  powerLoss(random: () => number): void {
    this.locks.clear();
    const visit = (dir: DirNode): void => {
      dir.entries = new Map(dir.durable);
      for (const node of dir.entries.values()) {
        if (node.kind === 'dir') visit(node);
        else {
          const { data, durable } = node;
          const appendedOnly = data.length > durable.length && data.subarray(0, durable.length).equals(durable);
          const kept = appendedOnly ? Math.floor(random() * (data.length - durable.length + 1)) : 0;
          node.data = Buffer.concat([durable, data.subarray(durable.length, durable.length + kept)]);
          node.durable = node.data;
        }
      }
    };
    visit(this.root);
  }

  /** The node at `target`, or undefined. */
  lookup(target: string): Node | undefined {
    let node: Node = this.root;
    for (const part of target.split('/').filter(Boolean)) {
      if (node.kind !== 'dir') return undefined;
      const next = node.entries.get(part);
      if (!next) return undefined;
      node = next;
    }
    return node;
  }

  dirAt(target: string): DirNode {
    const node = this.lookup(target);
    if (!node) throw errno('ENOENT', target);
    if (node.kind !== 'dir') throw errno('ENOTDIR', target);
    return node;
  }

  fileAt(target: string): FileNode {
    const node = this.lookup(target);
    if (!node) throw errno('ENOENT', target);
    if (node.kind !== 'file') throw errno('EISDIR', target);
    return node;
  }

  /** The current content of a file, as the next process would read it (tests inspect the log with it). */
  read(file: string): Buffer {
    return this.fileAt(file).data;
  }

  list(dir: string): string[] {
    const node = this.lookup(dir);
    return node?.kind === 'dir' ? [...node.entries.keys()].sort() : [];
  }
}

export interface ProcessOptions {
  crashAtStep?: number;
  crashBefore?: (step: string) => boolean;
  failSync?: (file: string) => boolean;
}

export class SimulatedProcess implements LogFileSystem {
  private dead = false;

  constructor(
    private readonly disk: SimulatedDisk,
    private readonly options: ProcessOptions,
  ) {}

  private failSync(file: string): boolean {
    return this.options.failSync?.(file) ?? false;
  }

  get alive(): boolean {
    return !this.dead;
  }

  /** Kills the process: every later call fails, the disk keeps what it has. */
  die(): void {
    this.dead = true;
    this.disk.locks.clear();
  }

  /**
   * Counts one step of the process (the unit a crash point is chosen in). Like a system call it completes
   * asynchronously, and it does nothing if the process is dead by then.
   */
  private step(what: string): Promise<void> {
    if (!this.dead && (++this.disk.steps >= (this.options.crashAtStep ?? Infinity) || this.options.crashBefore?.(what))) this.die();
    return Promise.resolve().then(() => {
      if (this.dead) throw errno('EDEAD', `the process is dead (${what})`);
    });
  }

  private parentOf(target: string): { dir: DirNode; name: string } {
    return { dir: this.disk.dirAt(path.dirname(target)), name: path.basename(target) };
  }

  async open(file: string, flags: 'r+' | 'wx+' | 'w'): Promise<LogFile> {
    await this.step(`open ${file}`);
    const { dir, name } = this.parentOf(file);
    let node = dir.entries.get(name);
    if (node?.kind === 'dir') throw errno('EISDIR', file);
    if (flags === 'wx+' && node) throw errno('EEXIST', file);
    if (flags === 'r+' && !node) throw errno('ENOENT', file);
    if (!node) {
      node = { kind: 'file', data: Buffer.alloc(0), durable: Buffer.alloc(0) };
      dir.entries.set(name, node);
    } else if (flags === 'w') node.data = Buffer.alloc(0);
    return this.handle(file, node);
  }

  private handle(file: string, node: FileNode): LogFile {
    const write = (buffer: Buffer, position: number): number => {
      const end = position + buffer.length;
      if (end > node.data.length) {
        const grown = Buffer.alloc(end);
        node.data.copy(grown);
        node.data = grown;
      } else node.data = Buffer.from(node.data); // `durable` may share the old buffer
      buffer.copy(node.data, position);
      return buffer.length;
    };
    return {
      read: async (buffer, offset, length, position) => {
        await this.step(`read ${file}`);
        return { bytesRead: node.data.copy(buffer, offset, position, Math.min(position + length, node.data.length)) };
      },
      writev: async (buffers, position) => {
        await this.step(`writev ${file}`);
        return { bytesWritten: write(Buffer.concat(buffers), position) };
      },
      write: async (buffer, offset, length, position) => {
        await this.step(`write ${file}`);
        return { bytesWritten: write(buffer.subarray(offset, offset + length), position) };
      },
      datasync: async () => {
        await this.step(`datasync ${file}`);
        // Like Linux after a failed writeback: the error is reported once, the pages stay readable but unsynced.
        if (this.failSync(file)) throw errno('EIO', `fdatasync ${file}`);
        node.durable = node.data;
      },
      truncate: async (length) => {
        await this.step(`truncate ${file}`);
        const truncated = Buffer.alloc(length);
        node.data.copy(truncated, 0, 0, length);
        node.data = truncated;
      },
      stat: async () => {
        await this.step(`stat ${file}`);
        return { size: node.data.length };
      },
      close: () => Promise.resolve(),
    };
  }

  async readdir(dir: string): Promise<LogDirEntry[]> {
    await this.step(`readdir ${dir}`);
    return [...this.disk.dirAt(dir).entries].map(([name, node]) => ({ name, isDirectory: () => node.kind === 'dir' }));
  }

  async readFile(file: string): Promise<string> {
    await this.step(`readFile ${file}`);
    return this.disk.fileAt(file).data.toString('utf8');
  }

  async mkdir(dir: string): Promise<void> {
    await this.step(`mkdir ${dir}`);
    const { dir: parent, name } = this.parentOf(dir);
    if (parent.entries.has(name)) throw errno('EEXIST', dir);
    parent.entries.set(name, newDir());
  }

  async rename(from: string, to: string): Promise<void> {
    await this.step(`rename ${from}`);
    const source = this.parentOf(from);
    const node = source.dir.entries.get(source.name);
    if (!node) throw errno('ENOENT', from);
    const target = this.parentOf(to);
    const existing = target.dir.entries.get(target.name);
    if (existing?.kind === 'dir' && existing.entries.size > 0) throw errno('ENOTEMPTY', to);
    source.dir.entries.delete(source.name);
    target.dir.entries.set(target.name, node);
  }

  async unlink(file: string): Promise<void> {
    await this.step(`unlink ${file}`);
    const { dir, name } = this.parentOf(file);
    if (dir.entries.get(name)?.kind !== 'file') throw errno('ENOENT', file);
    dir.entries.delete(name);
  }

  async removeTree(target: string): Promise<void> {
    await this.step(`removeTree ${target}`);
    const node = this.disk.lookup(path.dirname(target));
    if (node?.kind === 'dir') node.entries.delete(path.basename(target));
  }

  async fsyncDir(dir: string): Promise<void> {
    await this.step(`fsyncDir ${dir}`);
    const node = this.disk.dirAt(dir);
    if (this.failSync(dir)) throw errno('EIO', `fsync ${dir}`);
    node.durable = new Map(node.entries);
  }

  async lock(dir: string): Promise<() => Promise<void>> {
    await this.step(`lock ${dir}`);
    this.disk.dirAt(dir);
    if (this.disk.locks.has(dir)) throw new StorageError(`${dir} is in use`, false, 'DATA_DIR_LOCKED');
    this.disk.locks.add(dir);
    return () => {
      if (!this.dead) this.disk.locks.delete(dir);
      return Promise.resolve();
    };
  }
}
