/**
 * Embedded mode on a disk that fills up: the stores' disks are looked at once a second (statfs, never per
 * request), and below PLOVER_DISK_MIN_FREE_MB the main thread's writers are refused at once: capture's appends
 * to the local log (503, SDKs retry), management's writes to PGlite and chDB (507). The ingestion thread is not:
 * it stores what capture already acknowledged, into the room the watermark keeps. docs/architecture.md#a-full-disk.
 */
import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { Gauge, type Registry } from 'prom-client';
import type { EventBus, OutgoingMessage } from '@plover/bus';
import type { ClickHouse, ClickHouseParams } from '@plover/clickhouse';
import { diskLowError, DiskWatch, type Logger } from '@plover/core';
import { WritesRefusedWhen, type Sql } from '@plover/postgres';

export const STORE_DIRS = { postgres: 'postgres', clickhouse: 'clickhouse', bus: 'bus' } as const;

export function watchDisk(dataDir: string, minFreeBytes: number, logger: Logger): DiskWatch {
  const dirs = Object.fromEntries(Object.entries(STORE_DIRS).map(([store, dir]) => [store, path.join(dataDir, dir)]));
  return new DiskWatch({
    dirs,
    minFreeBytes,
    onChange: (cause) => {
      if (cause) logger.error({ cause }, 'disk space below the watermark: new events and management writes are refused');
      else logger.info('disk space above the watermark again: writes accepted');
    },
  }).start();
}

/** The local log (or any bus) refusing new messages while the disk is low; consuming and committing go on. */
class RefusingBus implements EventBus {
  constructor(
    private readonly bus: EventBus,
    private readonly disk: DiskWatch,
  ) {}

  produce(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    const cause = this.disk.lowCause();
    return cause === undefined ? this.bus.produce(topic, messages) : Promise.reject(diskLowError(`produce to ${topic}`, cause));
  }

  consume: EventBus['consume'] = (options) => this.bus.consume(options);
  ensureTopics: EventBus['ensureTopics'] = (topics) => this.bus.ensureTopics(topics);
  ping = () => this.bus.ping();
  close = () => this.bus.close();
}

/** chDB refusing inserts and commands (mutations, DDL) while the disk is low; queries go on. */
class RefusingClickHouse implements ClickHouse {
  constructor(
    private readonly clickhouse: ClickHouse,
    private readonly disk: DiskWatch,
  ) {}

  command(name: string, sql: string, params?: ClickHouseParams): Promise<void> {
    return this.refused(`ClickHouse command ${name}`) ?? this.clickhouse.command(name, sql, params);
  }

  insert(table: string, rows: readonly Record<string, unknown>[]): Promise<void> {
    return this.refused(`ClickHouse insert into ${table}`) ?? this.clickhouse.insert(table, rows);
  }

  query: ClickHouse['query'] = (name, sql, params, settings) => this.clickhouse.query(name, sql, params, settings);
  queryRows: ClickHouse['queryRows'] = (name, sql, params, settings) => this.clickhouse.queryRows(name, sql, params, settings);
  queryRaw: ClickHouse['queryRaw'] = (name, sql, params, settings) => this.clickhouse.queryRaw(name, sql, params, settings);
  queryRawStream: ClickHouse['queryRawStream'] = (name, sql, params, settings) => this.clickhouse.queryRawStream(name, sql, params, settings);
  sync = () => this.clickhouse.sync?.() ?? Promise.resolve();
  ping = () => this.clickhouse.ping();
  close = () => this.clickhouse.close();

  private refused(operation: string): Promise<never> | undefined {
    const cause = this.disk.lowCause();
    return cause === undefined ? undefined : Promise.reject(diskLowError(operation, cause));
  }
}

/** The stores as the main thread's writers (capture, management, schedules) see them: refusing writes while the disk is low. */
export function refusingWrites<S extends { sql: Sql; clickhouse: ClickHouse; bus: EventBus }>(stores: S, disk: DiskWatch): S {
  return {
    ...stores,
    sql: new WritesRefusedWhen(stores.sql, () => disk.lowCause()),
    clickhouse: new RefusingClickHouse(stores.clickhouse, disk),
    bus: new RefusingBus(stores.bus, disk),
  };
}

/** Space on disk (allocated blocks, as du counts) of the files under `dir`, each inode once; 0 when it is missing. */
export async function directoryBytes(dir: string, seen = new Set<string>()): Promise<number> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0; // removed meanwhile (a merged part, a deleted segment)
  }
  let total = 0;
  for (const entry of entries) {
    const at = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      total += await directoryBytes(at, seen);
    } else if (entry.isFile()) {
      const stats = await stat(at).catch(() => undefined);
      // chDB hard-links unchanged files between a part and its successor: counted once, as the disk holds them.
      if (!stats || (stats.nlink > 1 && seen.has(`${stats.dev}:${stats.ino}`))) continue;
      if (stats.nlink > 1) seen.add(`${stats.dev}:${stats.ino}`);
      total += stats.blocks * 512;
    }
  }
  return total;
}

/** Sizes are measured at most this often (a walk of chDB's parts), however often /metrics is read. */
const MEASURE_EVERY_MS = 30_000;

/**
 * `/metrics` gauges of the disk space embedded mode uses (what `plover status` shows): the bytes of each store —
 * the local log, PGlite's data dir, chDB's data dir, and of that the replay tables (their active parts) — the free
 * space of the fullest store disk, the watermark, and how fast the free space shrank over the last 15 minutes
 * (DiskWatch's samples, once a second).
 */
export function exposeDiskUse(registry: Registry, dataDir: string, disk: DiskWatch, clickhouse: ClickHouse): void {
  const measure = async (): Promise<Record<string, number>> => {
    const [localLog, postgres, chdb, replay] = await Promise.all([
      directoryBytes(path.join(dataDir, STORE_DIRS.bus)),
      directoryBytes(path.join(dataDir, STORE_DIRS.postgres)),
      directoryBytes(path.join(dataDir, STORE_DIRS.clickhouse)),
      clickhouse
        .query<{ bytes: string | number }>(
          'disk.replay',
          "SELECT sum(bytes_on_disk) AS bytes FROM system.parts WHERE active AND database = currentDatabase() AND startsWith(table, 'session_replay_')",
        )
        .then(([row]) => Number(row?.bytes ?? 0)),
    ]);
    return { local_log: localLog, postgres, clickhouse: chdb, replay };
  };
  let last: { at: number; sizes: Promise<Record<string, number>> } | undefined;
  new Gauge({
    name: 'plover_store_bytes',
    help: 'Disk space of each store: local_log, postgres (PGlite), clickhouse (chDB), replay (its tables in chDB)',
    labelNames: ['store'],
    registers: [registry],
    async collect() {
      if (!last || Date.now() - last.at >= MEASURE_EVERY_MS) last = { at: Date.now(), sizes: measure() };
      const sizes = await last.sizes.catch(() => ({}));
      for (const [store, bytes] of Object.entries(sizes)) this.set({ store }, bytes);
    },
  });
  new Gauge({
    name: 'plover_disk_free_bytes',
    help: 'Free space of the fullest disk a store writes to',
    registers: [registry],
    collect() {
      this.set(Math.min(...disk.stores().map((space) => space.freeBytes)));
    },
  });
  new Gauge({
    name: 'plover_disk_min_free_bytes',
    help: 'The watermark (PLOVER_DISK_MIN_FREE_MB): below it new writes are refused',
    registers: [registry],
    collect() {
      this.set(disk.minFreeBytes);
    },
  });
  new Gauge({
    name: 'plover_disk_use_bytes_per_second',
    help: 'How fast the free space of the fullest store disk shrank over the last 15 minutes (negative: it grew)',
    registers: [registry],
    collect() {
      this.set(disk.useRate() ?? 0);
    },
  });
}
