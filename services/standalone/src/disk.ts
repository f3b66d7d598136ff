/**
 * Embedded mode on a disk that fills up: the stores' disks are looked at once a second (statfs, never per
 * request), and below PLOVER_DISK_MIN_FREE_MB the main thread's writers are refused at once: capture's appends
 * to the local log (503, SDKs retry), management's writes to PGlite and chDB (507). The ingestion thread is not:
 * it stores what capture already acknowledged, into the room the watermark keeps. docs/architecture.md#a-full-disk.
 */
import path from 'node:path';
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
