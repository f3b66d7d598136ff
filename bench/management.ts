/**
 * Management API latency: persons listing/search at BENCH_PERSONS persons (default 1,000,000) on real Postgres,
 * and a playlist's recordings listing with BENCH_PLAYLIST_ITEMS items (default 1,000) on chDB. Requests go
 * over HTTP to the management app on an ephemeral port, one at a time. Prints one JSON line.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --conditions=plover-source --import tsx bench/management.ts
 *
 * A database `plover_bench_<random>` is created next to the one named and dropped afterwards.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { hashPersonalApiKey, maskPersonalApiKey, newPersonalApiKey } from '@plover/accounts';
import { insertEvents, migrate as migrateClickHouse, NO_GROUPS, type EventRow } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { createLogger } from '@plover/core';
import { createMetricsRegistry, listen } from '@plover/http';
import { migrate, PgSql } from '@plover/postgres';
import { createApp } from '../services/management/src/app';

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const personCount = Number(process.env.BENCH_PERSONS ?? 1_000_000);
const playlistItems = Number(process.env.BENCH_PLAYLIST_ITEMS ?? 1000);
const requests = Number(process.env.BENCH_REQUESTS ?? 200);
const logger = createLogger({ service: 'bench', level: 'silent' });

function percentile(sorted: number[], p: number): number {
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]! * 100) / 100;
}

async function main(): Promise<void> {
  const name = `plover_bench_${randomBytes(6).toString('hex')}`;
  const admin = new PgSql({ connectionString: adminUrl, max: 1 });
  await admin.exec('bench.create', `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const sql = new PgSql({ connectionString: url.toString(), max: 10 });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'plover-bench-mgmt-'));
  const clickhouse = await ChdbClickHouse.open({ dataDir: dir });
  try {
    await migrate(sql);
    await migrateClickHouse(clickhouse, { logger });
    const org = (await sql.query<{ id: string }>('b.org', `INSERT INTO organizations (name) VALUES ('Bench') RETURNING id`)).rows[0]!.id;
    const project = (
      await sql.query<{ id: number }>('b.project', `INSERT INTO projects (organization_id, name, api_token) VALUES ($1, 'Bench', 'phc_bench') RETURNING id`, [
        org,
      ])
    ).rows[0]!.id;
    const user = (
      await sql.query<{ id: number }>('b.user', `INSERT INTO users (email, current_project_id) VALUES ('bench@example.com', $1) RETURNING id`, [project])
    ).rows[0]!.id;
    await sql.query('b.member', `INSERT INTO organization_memberships (organization_id, user_id, level) VALUES ($1, $2, 'owner')`, [org, user]);
    const key = newPersonalApiKey();
    await sql.query('b.key', `INSERT INTO personal_api_keys (user_id, label, secure_value, mask_value, scopes) VALUES ($1, 'bench', $2, $3, '{*}')`, [
      user,
      hashPersonalApiKey(key),
      maskPersonalApiKey(key),
    ]);

    const seedStart = performance.now();
    for (let from = 0; from < personCount; from += 100_000) {
      const to = Math.min(personCount, from + 100_000) - 1;
      await sql.query(
        'b.persons',
        `INSERT INTO persons (project_id, uuid, properties, created_at)
         SELECT $1, gen_random_uuid(), jsonb_build_object('email', 'user' || i || '@example' || (i % 100) || '.com', 'plan', CASE WHEN i % 3 = 0 THEN 'pro' ELSE 'free' END, 'age', i % 90),
                timestamptz '2024-01-01' + i * interval '1 second'
           FROM generate_series($2::int, $3::int) i`,
        [project, from, to],
      );
      await sql.query(
        'b.distinct',
        `INSERT INTO person_distinct_ids (project_id, distinct_id, person_id)
         SELECT $1, 'user-' || (extract(epoch FROM created_at - timestamptz '2024-01-01'))::bigint, id FROM persons
          WHERE project_id = $1 AND created_at >= timestamptz '2024-01-01' + $2::int * interval '1 second'
            AND created_at <= timestamptz '2024-01-01' + $3::int * interval '1 second'`,
        [project, from, to],
      );
    }
    await sql.exec('b.analyze', 'ANALYZE');
    const seedSeconds = Math.round((performance.now() - seedStart) / 100) / 10;

    // Playlist with N recordings, each a session of 10 events.
    const rows: EventRow[] = [];
    const zero = '1970-01-01 00:00:00.000';
    for (let s = 0; s < playlistItems; s++) {
      for (let e = 0; e < 10; e++) {
        rows.push({
          uuid: randomUUID(),
          event: '$pageview',
          properties: '{}',
          timestamp: `2024-03-01 12:${String(e).padStart(2, '0')}:00.000000`,
          team_id: project,
          distinct_id: `user-${s}`,
          elements_chain: '',
          created_at: '2024-03-01 12:00:00.000000',
          person_id: randomUUID(),
          person_properties: '{}',
          person_created_at: zero,
          person_mode: 'full',
          ...NO_GROUPS,
          session_id: `session-${s}`,
          window_id: '',
          historical_migration: false,
        });
      }
    }
    await insertEvents(clickhouse, rows);
    const playlist = (
      await sql.query<{ id: number }>(
        'b.playlist',
        `INSERT INTO session_recording_playlists (project_id, short_id, name, created_by) VALUES ($1, 'benchpl1', 'Bench', $2) RETURNING id`,
        [project, user],
      )
    ).rows[0]!.id;
    await sql.query(
      'b.items',
      `INSERT INTO session_recording_playlist_items (playlist_id, session_id) SELECT $1, 'session-' || i FROM generate_series(0, $2::int - 1) i`,
      [playlist, playlistItems],
    );

    const app = createApp({ logger, metrics: createMetricsRegistry('bench'), sql, clickhouse, trustProxy: false });
    const server = await listen(app, { port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${server.port}/api/projects/${project}`;
    const measure = async (pathAndQuery: string, n = requests): Promise<{ p50: number; p99: number }> => {
      const times: number[] = [];
      for (let i = 0; i < n + 5; i++) {
        const started = performance.now();
        const res = await fetch(`${base}${pathAndQuery.replace('{i}', String((i * 7919) % personCount))}`, { headers: { Authorization: `Bearer ${key}` } });
        if (res.status !== 200) throw new Error(`${pathAndQuery}: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
        if (i >= 5) times.push(performance.now() - started);
      }
      times.sort((a, b) => a - b);
      return { p50: percentile(times, 50), p99: percentile(times, 99) };
    };
    const results = {
      persons: personCount,
      seedSeconds,
      listFirstPage: await measure('/persons/?limit=100'),
      listOffset10k: await measure('/persons/?limit=100&offset=10000'),
      emailExact: await measure('/persons/?email=user{i}%40example1.com'),
      distinctId: await measure('/persons/?distinct_id=user-{i}'),
      searchContains: await measure('/persons/?search=user12345%40', 50),
      propertyFilter: await measure(`/persons/?properties=${encodeURIComponent(JSON.stringify([{ key: 'plan', value: 'pro' }]))}`),
      playlistItems,
      playlistRecordings: await measure(`/session_recording_playlists/benchpl1/recordings/?limit=${Math.min(1000, playlistItems)}`, 30),
    };
    await server.close();
    process.stdout.write(`${JSON.stringify({ bench: 'management', ...results })}\n`);
  } finally {
    await clickhouse.close();
    await rm(dir, { recursive: true, force: true });
    await sql.close();
    await admin.exec('bench.drop', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
