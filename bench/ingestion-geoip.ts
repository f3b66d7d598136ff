/**
 * What GeoIP enrichment costs ingestion: the embedded stack's consumer drains backlogs of posthog-js pageviews
 * from public addresses (each located, so each gets its `$geoip_*` properties and person `$set`/`$set_once`),
 * alternately without and with the lookup (off, on, off, on, …), in one process and one run. Prints this process's
 * CPU per event of each drain (consumer, PGlite, chDB: all in this process), the medians and their ratio
 * (target: with ≤ 1.1 × without). Every person exists before the first measured drain.
 *
 *   node <the flags of services/standalone/node-flags.json> --conditions=plover-source --import tsx bench/ingestion-geoip.ts
 *
 * BENCH_GEOIP_EVENTS (20,000) per drain, BENCH_GEOIP_ROUNDS (3) pairs of drains, BENCH_GEOIP_PEOPLE (2,000).
 */
import '@plover/config/threadpool';
import { migrate as migrateClickHouse } from '@plover/clickhouse';
import { createLogger } from '@plover/core';
import { loadGeoIp, type GeoIpLookup } from '@plover/geoip';
import { createConsumer, DEFAULT_INGESTION_SETTINGS } from '@plover/ingestion/consumer';
import { migrate as migratePostgres } from '@plover/postgres';
import { Registry } from 'prom-client';
import { pageview } from './pageviews';
import { createProject, embeddedStack, observeInserts, waitUntil } from './stacks';

const EVENTS = Number(process.env.BENCH_GEOIP_EVENTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_GEOIP_ROUNDS ?? 3);
const PEOPLE = Number(process.env.BENCH_GEOIP_PEOPLE ?? 2_000);
/** Public networks GeoLite2 places in several countries; the last two octets vary per person. */
const NETWORKS = ['81.2', '89.160', '8.8', '2.125', '175.16', '216.160', '128.101', '202.196'];

/** A person keeps its address, as a visitor does between pageviews: its location changes nothing after the first. */
function personIp(i: number): string {
  const person = i % PEOPLE;
  return `${NETWORKS[person % NETWORKS.length]}.${(person >> 3) % 250}.${(person * 7) % 250}`;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

async function main(): Promise<void> {
  const stack = await embeddedStack('geoip');
  const lookup = loadGeoIp();
  await migratePostgres(stack.sql);
  await migrateClickHouse(stack.clickhouse);
  const teamId = await createProject(stack.sql);
  const topic = DEFAULT_INGESTION_SETTINGS.topics.events;
  let stored = 0;
  const clickhouse = observeInserts(stack.clickhouse, (table, rows) => {
    if (table === 'events') stored += rows.length;
  });
  let next = 0;
  const produce = async (count: number) => {
    for (let done = 0; done < count; done += 100) {
      await stack.bus.produce(
        topic,
        Array.from({ length: Math.min(100, count - done) }, () => {
          const i = next++;
          return pageview(teamId, i, PEOPLE, personIp(i)).message;
        }),
      );
    }
  };
  const drain = async (count: number, geoip: GeoIpLookup | undefined): Promise<number> => {
    await produce(count);
    const target = stored + count;
    const cpuBefore = process.cpuUsage();
    const consumer = await createConsumer({
      logger: createLogger({ service: 'bench', level: 'warn' }),
      metrics: new Registry(),
      sql: stack.sql,
      clickhouse,
      bus: stack.bus,
      settings: stack.settings,
      geoip,
    });
    await waitUntil(() => stored >= target, 600_000);
    const cpu = process.cpuUsage(cpuBefore);
    await consumer.stop();
    return (cpu.user + cpu.system) / 1000 / count;
  };
  try {
    await drain(PEOPLE, lookup); // warm-up: every person exists, with its location
    const without: number[] = [];
    const withGeoIp: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      without.push(await drain(EVENTS, undefined));
      withGeoIp.push(await drain(EVENTS, lookup));
    }
    const round3 = (value: number) => Math.round(value * 1000) / 1000;
    console.log(
      JSON.stringify({
        bench: 'ingestion-geoip',
        events: EVENTS,
        rounds: ROUNDS,
        cpuMsPerEventWithout: without.map(round3),
        cpuMsPerEventWith: withGeoIp.map(round3),
        ratio: round3(median(withGeoIp) / median(without)),
      }),
    );
  } finally {
    await stack.close();
  }
}

void main();
