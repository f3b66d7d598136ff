/**
 * Free space on the disks the embedded stores write to. A full disk is an ordinary condition for a server that
 * keeps its data on one machine: the stores refuse new writes below a watermark, before the disk is full, so
 * that what they already acknowledged (PGlite's WAL, chDB's parts and merges, the ingestion of logged events)
 * always has room to finish.
 */
import { statfsSync } from 'node:fs';
import path from 'node:path';
import { StorageError } from './errors';

/**
 * The codes a full disk shows up under: errno, Postgres' `disk_full` SQLSTATE, ClickHouse's NOT_ENOUGH_SPACE
 * (243) and CANNOT_WRITE_TO_FILE_DESCRIPTOR (75, how a write that met ENOSPC surfaces in ClickHouse).
 */
const DISK_FULL_CODES: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', '53100', '243', '75']);

/** Whether a storage failure was a full disk (by code, never by message text). */
export function isDiskFull(error: unknown): boolean {
  for (let cause = error; typeof cause === 'object' && cause !== null; cause = (cause as { cause?: unknown }).cause) {
    const { code } = cause as { code?: unknown };
    if (typeof code === 'string' && DISK_FULL_CODES.has(code)) return true;
  }
  return false;
}

/** The refusal of a write while its disk is below the watermark: retriable, SQLSTATE `disk_full`. */
export function diskLowError(operation: string, cause: string): StorageError {
  return new StorageError(`${operation}: refused, ${cause}`, true, '53100');
}

/** Bytes an unprivileged writer may still use on the disk holding `dir` (or its nearest existing parent). */
export function freeBytes(dir: string): number {
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    try {
      const stats = statfsSync(at);
      return stats.bavail * stats.bsize;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || at === path.dirname(at)) throw error;
    }
  }
}

/** `1.5 GB`, `240 MB`, `12 kB` (decimal units, as df -H). */
export function formatBytes(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 || value >= 100 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

export interface DiskWatchOptions {
  /** Each store's directory, by store name (`postgres`, `clickhouse`, `bus`). */
  dirs: Record<string, string>;
  /** New writes are refused while any store's disk has less than this free. */
  minFreeBytes: number;
  /** How often the disks are looked at (statfs), not per request. */
  checkEveryMs?: number;
  /** What the limit is, in the cause (default: the watermark, PLOVER_DISK_MIN_FREE_MB). */
  limit?: string;
  /** Called when the state changes (low ↔ enough), with the cause while low. */
  onChange?: (cause: string | undefined) => void;
}

export interface StoreSpace {
  store: string;
  dir: string;
  freeBytes: number;
}

const SAMPLE_WINDOW_MS = 15 * 60_000;

/**
 * Looks at the free space of the stores' disks every `checkEveryMs`. `lowCause()` is undefined while every
 * disk has at least `minFreeBytes` free, else it names the store, its free space and the watermark; writers
 * ask it on every write, which costs nothing (the last look is kept).
 */
export class DiskWatch {
  private readonly checkEveryMs: number;
  private timer: NodeJS.Timeout | undefined;
  private spaces: StoreSpace[] = [];
  private cause: string | undefined;
  /** (time, free bytes of the fullest disk) over the last SAMPLE_WINDOW_MS, for the rate of use. */
  private readonly samples: { at: number; free: number }[] = [];

  constructor(private readonly options: DiskWatchOptions) {
    this.checkEveryMs = options.checkEveryMs ?? 1000;
    this.check();
  }

  start(): this {
    this.timer ??= setInterval(() => this.check(), this.checkEveryMs);
    this.timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Why writes are refused now (store, free space, watermark), or undefined. */
  lowCause(): string | undefined {
    return this.cause;
  }

  get minFreeBytes(): number {
    return this.options.minFreeBytes;
  }

  /** Each store's disk as last looked at. */
  stores(): readonly StoreSpace[] {
    return this.spaces;
  }

  /** Bytes per second the free space shrank by over the last minutes (negative when it grew); undefined without two looks. */
  useRate(): number | undefined {
    const first = this.samples[0];
    const last = this.samples.at(-1);
    if (!first || !last || last.at === first.at) return undefined;
    return ((first.free - last.free) * 1000) / (last.at - first.at);
  }

  /** Looks at the disks now (also done every `checkEveryMs`). */
  check(): void {
    this.spaces = Object.entries(this.options.dirs).map(([store, dir]) => ({ store, dir, freeBytes: freeBytes(dir) }));
    const now = Date.now();
    this.samples.push({ at: now, free: Math.min(...this.spaces.map((space) => space.freeBytes)) });
    while (this.samples.length > 2 && this.samples[0]!.at < now - SAMPLE_WINDOW_MS) this.samples.shift();
    const low = this.spaces.filter((space) => space.freeBytes < this.options.minFreeBytes);
    const cause =
      low.length === 0
        ? undefined
        : `low disk space: ${low.map((space) => `${space.store} has ${formatBytes(space.freeBytes)} free in ${space.dir}`).join(', ')}, below ${this.options.limit ?? `the ${formatBytes(this.options.minFreeBytes)} watermark (PLOVER_DISK_MIN_FREE_MB)`}; new writes are refused until space is freed`;
    if (cause !== this.cause) {
      const changed = (cause === undefined) !== (this.cause === undefined);
      this.cause = cause;
      if (changed) this.options.onChange?.(cause);
    }
  }
}
