/**
 * The insights benchmarks' dataset (bench/insights.ts, bench/console-tti.ts): `events` events of `persons`
 * persons over the `days` days before `now`, generated inside ClickHouse (`INSERT … SELECT … FROM numbers_mt(N)`,
 * deterministic hashes of the row number, so no row is built in JavaScript), then merged (`OPTIMIZE … FINAL`, the
 * state background merges reach). A directory keeps a marker of what made it, so a later run asking for the same
 * dataset reuses it instead of generating it again.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { migrate } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';

export interface DatasetSpec {
  events: number;
  persons: number;
  projectId: number;
  /** The end of the span the events fall in. */
  now: Date;
  days: number;
}

/** Browsers by popularity: a person's `$browser` is drawn with a cubic skew, so all 30 occur, the first most. */
const BROWSERS = [
  'Chrome',
  'Mobile Safari',
  'Safari',
  'Firefox',
  'Microsoft Edge',
  'Samsung Internet',
  'Chrome iOS',
  'Opera',
  'Android Mobile',
  'Firefox iOS',
  'Facebook Mobile',
  'Instagram',
  'Yandex',
  'UC Browser',
  'Brave',
  'Vivaldi',
  'Opera Mini',
  'Internet Explorer',
  'Chromium',
  'Whale',
  'Silk',
  'Puffin',
  'Konqueror',
  'BlackBerry',
  'Electron',
  'Edge iOS',
  'Edge Mobile',
  'Pale Moon',
  'SeaMonkey',
  'Waterfox',
];
const OPERATING_SYSTEMS = ['Windows', 'Mac OS X', 'iOS', 'Android', 'Linux', 'Chrome OS'];
const REFERRERS = ['$direct', 'www.google.com', 'news.ycombinator.com', 't.co', 'www.bing.com', 'duckduckgo.com'];
const PATHS = ['/', '/pricing', '/products/', '/blog/', '/cart', '/checkout', '/docs/', '/account'];

/** A ClickHouse array literal of plain strings (no quotes or backslashes in the lists above). */
function stringArray(values: readonly string[]): string {
  return `[${values.map((value) => `'${value}'`).join(', ')}]`;
}

/** A deterministic pseudo-random number in [0, 1) from the row or person number and a seed. */
function unit(of: string, seed: number): string {
  return `(cityHash64(${of}, ${seed}) % 1000000) / 1000000`;
}

/** The uuid of person number `p`: readable, and the same in events and person_overrides. */
function personUuid(p: string): string {
  return `toUUID(concat('01900000-0000-7000-8000-', leftPad(lower(hex(${p})), 12, '0')))`;
}

/**
 * Events of persons whose number has a skewed distribution (a few persons are very active, everyone has some).
 * A person's segment (0–99) decides which of the funnel's later steps they ever do: `added to cart` below 60,
 * `purchase` below 30, so of the persons entering `$pageview → added to cart → purchase` ≈ 30 % convert;
 * `watched video` (segments < 40) correlates with success, `error shown` (≥ 50) with failure.
 * One pageview in a hundred lacks `$browser` (the breakdown's `none`).
 */
export function generateEventsSql({ events, persons, projectId, now, days }: DatasetSpec): string {
  const from = now.getTime() * 1000 - days * 86_400_000_000;
  return `INSERT INTO events (uuid, event, properties, timestamp, team_id, distinct_id, elements_chain, created_at,
      person_id, person_properties, person_created_at, person_mode, group0_properties, group1_properties,
      group2_properties, group3_properties, group4_properties, group0_created_at, group1_created_at,
      group2_created_at, group3_created_at, group4_created_at, \`$group_0\`, \`$group_1\`, \`$group_2\`, \`$group_3\`,
      \`$group_4\`, session_id, window_id, historical_migration)
    WITH
      toUInt64(floor(pow(${unit('number', 1)}, 1.5) * ${persons})) AS p,
      cityHash64(p, 2) % 100 AS segment,
      cityHash64(number, 3) % 1000 AS u,
      fromUnixTimestamp64Micro(toInt64(${from} + cityHash64(number, 4) % ${days * 86_400_000_000}), 'UTC') AS ts,
      multiIf(u < 15 AND segment < 30, 'purchase', u < 45 AND segment < 60, 'added to cart',
              u < 75 AND segment < 40, 'watched video', u < 90 AND segment >= 50, 'error shown',
              u < 100, 'signup', u < 130, '$pageleave', u < 160, '$autocapture', '$pageview') AS name,
      ${stringArray(BROWSERS)}[1 + toUInt32(floor(pow(${unit('p', 5)}, 3) * ${BROWSERS.length}))] AS browser,
      ${stringArray(OPERATING_SYSTEMS)}[1 + cityHash64(p, 6) % ${OPERATING_SYSTEMS.length}] AS os,
      concat(${stringArray(PATHS)}[1 + cityHash64(number, 7) % ${PATHS.length}], toString(cityHash64(number, 8) % 500)) AS pathname,
      concat(lower(hex(cityHash64(p, 9))), '-', toString(intDiv(toUnixTimestamp(ts), 1800))) AS session,
      concat('user-', toString(p)) AS distinct
    SELECT
      reinterpretAsUUID(concat(reinterpretAsString(cityHash64(number, 10)), reinterpretAsString(number))),
      name,
      concat('{',
        if(name = '$pageview' AND cityHash64(number, 11) % 100 = 0, '', concat('"$browser":"', browser, '",')),
        '"$browser_version":', toString(100 + cityHash64(p, 12) % 30),
        ',"$os":"', os, '","$device_type":"', if(os IN ('iOS', 'Android'), 'Mobile', 'Desktop'),
        '","$current_url":"https://shop.example.com', pathname, '?utm_source=newsletter","$host":"shop.example.com","$pathname":"', pathname,
        '","$referring_domain":"', ${stringArray(REFERRERS)}[1 + cityHash64(p, 13) % ${REFERRERS.length}],
        '","$lib":"web","$lib_version":"1.180.0","$session_id":"', session,
        '","$insert_id":"', lower(hex(cityHash64(number, 14))),
        '","price":', toString(round((cityHash64(number, 15) % 20000) / 100, 2)),
        ',"quantity":', toString(1 + cityHash64(number, 16) % 5), '}'),
      ts, ${projectId}, distinct, '', ts,
      ${personUuid('p')},
      concat('{"email":"', distinct, '@example.com","plan":"', ['free', 'pro', 'enterprise'][1 + cityHash64(p, 17) % 3],
        '","$initial_browser":"', browser, '","$initial_os":"', os, '"}'),
      toDateTime64(${(now.getTime() - 60 * 86_400_000) / 1000}, 3, 'UTC'), 'full', '', '', '', '', '',
      0, 0, 0, 0, 0, '', '', '', '', '', session, concat(session, '-w'), false
    FROM numbers_mt(${events}) SETTINGS max_insert_threads = 2`;
}

/** One person in a hundred was merged into the person numbered one below (never itself merged: chains stay flat). */
function generateOverridesSql({ persons, projectId }: DatasetSpec): string {
  return `INSERT INTO person_overrides (team_id, old_person_id, override_person_id, version)
    SELECT ${projectId}, ${personUuid('number')}, ${personUuid('number - 1')}, 1 FROM numbers(${persons}) WHERE number % 100 = 99`;
}

export interface Dataset {
  /** Hash of the generating SQL (which holds every parameter): a kept dataset is reused only if it matches. */
  generator: string;
  /** What it was made from (`now` as ISO text). */
  spec: Omit<DatasetSpec, 'now'> & { now: string };
  loadSeconds: { events: number; overrides: number; optimize: number };
}

const MARKER = 'bench-dataset.json';

/** The dataset kept in `dir` by an earlier run, if any. */
export async function keptDataset(dir: string): Promise<Dataset | null> {
  const marker = path.join(dir, MARKER);
  return existsSync(marker) ? (JSON.parse(await readFile(marker, 'utf8')) as Dataset) : null;
}

/**
 * Opens chDB on `dir`, reusing the dataset kept there when the same SQL made it, else generating one (the
 * directory is emptied first). The caller closes the handle.
 */
export async function openDataset(dir: string, spec: DatasetSpec): Promise<{ ch: ChdbClickHouse; dataset: Dataset; reused: boolean }> {
  const events = generateEventsSql(spec);
  const overrides = generateOverridesSql(spec);
  // The schema counts too: a dataset made before a ClickHouse migration lacks its columns.
  const migrations = (await readdir(path.join(__dirname, '..', 'packages', 'clickhouse', 'migrations'))).sort().join(',');
  const generator = createHash('sha256').update(events).update(overrides).update(migrations).digest('hex');
  const kept = await keptDataset(dir);
  if (kept?.generator === generator) return { ch: await ChdbClickHouse.open({ dataDir: dir }), dataset: kept, reused: true };
  await rm(dir, { recursive: true, force: true });
  const ch = await ChdbClickHouse.open({ dataDir: dir });
  await migrate(ch);
  const seconds = async (name: string, sql: string) => {
    const start = performance.now();
    await ch.command(name, sql);
    return Math.round((performance.now() - start) / 100) / 10;
  };
  const loadSeconds = {
    events: await seconds('bench.events', events),
    overrides: await seconds('bench.overrides', overrides),
    optimize: await seconds('bench.optimize', 'OPTIMIZE TABLE events FINAL'),
  };
  const dataset: Dataset = { generator, spec: { ...spec, now: spec.now.toISOString() }, loadSeconds };
  await writeFile(path.join(dir, MARKER), JSON.stringify(dataset));
  return { ch, dataset, reused: false };
}
