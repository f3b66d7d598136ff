/**
 * chDB insert throughput with the events schema: JSONEachRow batches through ChdbClickHouse, as the ingestion
 * consumer would write them in embedded mode. Prints one JSON line.
 *
 *   node --conditions=plover-source --import tsx bench/chdb-insert.ts
 *   BENCH_BATCHES=50 BENCH_BATCH_SIZE=10000 (defaults)
 *
 * `rowsPerSecond` counts only the time spent inside insertEvents (JSON serialization plus the engine's parse
 * and write); building the synthetic rows is excluded, and counted in `wallRowsPerSecond`.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { countEvents, insertEvents, migrate, NO_GROUPS, type EventRow } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';

const batches = Number(process.env.BENCH_BATCHES ?? 50);
const batchSize = Number(process.env.BENCH_BATCH_SIZE ?? 10_000);
const TEAM_ID = 1;
const EPOCH = Date.parse('2024-03-01T00:00:00Z');

function clickHouseTime(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '000');
}

/** A pageview shaped like posthog-js's: ~25 properties, ~700 bytes of JSON. */
function pageview(i: number): EventRow {
  const sessionId = `018e${(i >> 6).toString(16).padStart(8, '0')}-session`;
  const properties = {
    $os: 'Mac OS X',
    $os_version: '14.3.0',
    $browser: 'Chrome',
    $browser_version: 122,
    $device_type: 'Desktop',
    $current_url: `https://example.com/products/${i % 500}?utm_source=newsletter`,
    $host: 'example.com',
    $pathname: `/products/${i % 500}`,
    $screen_height: 1117,
    $screen_width: 1728,
    $viewport_height: 992,
    $viewport_width: 1728,
    $lib: 'web',
    $lib_version: '1.110.0',
    $insert_id: randomUUID(),
    $time: (EPOCH + i * 37) / 1000,
    distinct_id: `user-${i % 5000}`,
    $device_id: randomUUID(),
    $referrer: 'https://www.google.com/',
    $referring_domain: 'www.google.com',
    $session_id: sessionId,
    $window_id: `${sessionId}-w`,
    $pageview_id: randomUUID(),
    utm_source: 'newsletter',
    plan: i % 3 === 0 ? 'pro' : 'free',
  };
  return {
    uuid: randomUUID(),
    event: '$pageview',
    properties: JSON.stringify(properties),
    timestamp: clickHouseTime(EPOCH + i * 37),
    team_id: TEAM_ID,
    distinct_id: properties.distinct_id,
    elements_chain: '',
    created_at: clickHouseTime(EPOCH + i * 37 + 150),
    person_id: randomUUID(),
    person_properties: JSON.stringify({ email: `user-${i % 5000}@example.com`, plan: properties.plan }),
    person_created_at: '2024-01-15 08:00:00.000',
    person_mode: 'full',
    ...NO_GROUPS,
    session_id: sessionId,
    window_id: properties.$window_id,
    historical_migration: false,
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-bench-chdb-'));
  const ch = await ChdbClickHouse.open({ dataDir });
  try {
    await migrate(ch);
    const batchMs: number[] = [];
    let payloadBytes = 0;
    const wallStart = performance.now();
    for (let b = 0; b < batches; b++) {
      const rows = Array.from({ length: batchSize }, (_, i) => pageview(b * batchSize + i));
      payloadBytes += rows.reduce((sum, row) => sum + Buffer.byteLength(JSON.stringify(row)) + 1, 0);
      const start = performance.now();
      await insertEvents(ch, rows);
      batchMs.push(performance.now() - start);
    }
    const wallMs = performance.now() - wallStart;
    const rows = batches * batchSize;
    const stored = await countEvents(ch, TEAM_ID);
    const insertMs = batchMs.reduce((sum, ms) => sum + ms, 0);
    const sorted = [...batchMs].sort((a, b) => a - b);
    const round = (n: number) => Math.round(n * 10) / 10;
    console.log(
      JSON.stringify({
        bench: 'chdb-insert',
        batches,
        batchSize,
        rows,
        stored,
        payloadMiB: round(payloadBytes / 2 ** 20),
        insertSeconds: round(insertMs / 1000),
        rowsPerSecond: Math.round(rows / (insertMs / 1000)),
        mibPerSecond: round(payloadBytes / 2 ** 20 / (insertMs / 1000)),
        batchMsP50: round(percentile(sorted, 50)),
        batchMsP99: round(percentile(sorted, 99)),
        batchMsMax: round(sorted[sorted.length - 1] ?? 0),
        wallRowsPerSecond: Math.round(rows / (wallMs / 1000)),
        cpus: os.cpus().length,
        node: process.version,
      }),
    );
  } finally {
    await ch.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
