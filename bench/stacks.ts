/**
 * Stores and helpers the in-process benchmarks share (bench/ingestion.ts, bench/replay.ts): the embedded stack, a
 * project, a ClickHouse whose inserts are observed, polling, the main thread's CPU time.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalLogBus, type EventBus } from '@plover/bus';
import type { ClickHouse } from '@plover/clickhouse';
import type { IngestionSettings } from '@plover/ingestion/consumer';
import type { Sql } from '@plover/postgres';
import type { Registry } from 'prom-client';
import { procCpuSeconds } from './proc';

export interface Stack {
  name: string;
  sql: Sql;
  clickhouse: ClickHouse;
  bus: EventBus;
  settings: Partial<IngestionSettings>;
  close(): Promise<void>;
}

/** Loaded only where used: the native chDB library would count in the memory of the distributed run. */
export async function openChdb(dataDir: string): Promise<ClickHouse> {
  const { ChdbClickHouse } = await import('@plover/chdb');
  return ChdbClickHouse.open({ dataDir: path.join(dataDir, 'clickhouse') });
}

/** What `npm start` runs on: PGlite, chDB and the local log, in a temporary directory named after `bench`. */
export async function embeddedStack(bench: string): Promise<Stack> {
  const { PGliteSql } = await import('@plover/postgres/pglite');
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `plover-bench-${bench}-`));
  const sql = await PGliteSql.open({ dataDir: path.join(dataDir, 'postgres'), guardTransactions: false }); // as embedded mode opens it
  const clickhouse = await openChdb(dataDir);
  const bus = await LocalLogBus.open({ dataDir: path.join(dataDir, 'bus') });
  return {
    name: 'embedded (LocalLogBus, PGlite, chDB)',
    sql,
    clickhouse,
    bus,
    settings: {},
    async close() {
      await bus.close();
      await clickhouse.close();
      await sql.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** `inner`, telling `inserted` of each insert once it resolved. */
export function observeInserts(inner: ClickHouse, inserted: (table: string, rows: readonly Record<string, unknown>[]) => void): ClickHouse {
  return {
    command: (name, sql, params) => inner.command(name, sql, params),
    query: (name, sql, params, settings) => inner.query(name, sql, params, settings),
    queryRows: (name, sql, params, settings) => inner.queryRows(name, sql, params, settings),
    queryRaw: (name, sql, params, settings) => inner.queryRaw(name, sql, params, settings),
    queryRawStream: (name, sql, params, settings) => inner.queryRawStream(name, sql, params, settings),
    insert: async (table, rows) => {
      await inner.insert(table, rows);
      inserted(table, rows);
    },
    sync: inner.sync?.bind(inner),
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
}

/** A project of a new organization, straight into the tables (no keys, no bootstrap). */
export async function createProject(sql: Sql): Promise<number> {
  const organization = await sql.query<{ id: string }>('bench.organization', `INSERT INTO organizations (name) VALUES ('Bench') RETURNING id`);
  const project = await sql.query<{ id: number }>(
    'bench.project',
    `INSERT INTO projects (organization_id, name, api_token) VALUES ($1, 'Bench', $2) RETURNING id`,
    [organization.rows[0]?.id, `phc_${randomUUID()}`],
  );
  const id = project.rows[0]?.id;
  if (id === undefined) throw new Error('no project created');
  return id;
}

/** Polls `condition` every 20 ms until it holds; throws after `timeoutMs`. */
export async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * CPU seconds of this process's main thread (Linux: /proc/self/task/<pid>/stat, utime + stime in clock ticks of
 * 1/100 s), which runs the consumer, the producer and PGlite; chDB's work runs on other threads. Undefined elsewhere.
 */
export function mainThreadCpuSeconds(): number | undefined {
  try {
    return procCpuSeconds(process.pid, process.pid);
  } catch {
    return undefined;
  }
}

/** Seconds the consumer spent per step, summed over its batches (steps of concurrent batches overlap). */
export async function stepSeconds(metrics: Registry): Promise<Record<string, number>> {
  const metric = await metrics.getSingleMetric('plover_ingestion_step_seconds')?.get();
  const sums = (metric?.values ?? []).filter((value) => 'metricName' in value && value.metricName === 'plover_ingestion_step_seconds_sum');
  return Object.fromEntries(sums.map((value) => [String(value.labels.step), value.value]));
}
