/**
 * What keeping event and property definitions costs ingestion (services/ingestion/src/definitions): the CPU of
 * draining the same kind of backlog with the upkeep off and on (`INGESTION_DEFINITIONS`), in the same process and
 * the same run, rounds alternating off, on, on, off, … so that a machine whose load changes during the run
 * weighs on both alike. Target: CPU per event with it ≤ 1.05 × without it.
 *
 *   node <the flags of services/standalone/node-flags.json> --conditions=plover-source --import tsx bench/definitions.ts
 *
 * (`npm run bench -- definitions` does so.) Embedded stack (LocalLogBus, PGlite, chDB) in this process, as `npm start`
 * runs it: the CPU counted is the whole process's, PGlite's statements and chDB's threads included. Events are the
 * pageviews of bench/ingestion.ts (posthog-js properties; one in ten `$set`s its person), after a warm-up that
 * creates every person. Each round starts a new consumer, so the upkeep starts every round with an empty memory and
 * writes the project's names once (as after a restart): the figure includes that.
 * BENCH_DEFINITIONS_EVENTS (20,000) events per round, BENCH_DEFINITIONS_ROUNDS (6) rounds, BENCH_DEFINITIONS_PEOPLE
 * (2,000) distinct ids. Prints one JSON line: per mode the median and total CPU-seconds per 1,000 events, and the
 * ratio of the medians and of the totals; the upkeep step's share of the batches' wall time; and, measured apart
 * from the consumer (whose rounds vary by ±10 % on a loaded machine), the upkeep's CPU per event over stored events
 * whose names it knows — the steady state — against the consumer's CPU per event.
 */
// First: the thread pool size embedded mode runs with (see the module).
import '@plover/config/threadpool';
import os from 'node:os';
import { migrate as migrateClickHouse } from '@plover/clickhouse';
import { createLogger } from '@plover/core';
import { createConsumer, DEFAULT_INGESTION_SETTINGS } from '@plover/ingestion/consumer';
import { migrate as migratePostgres } from '@plover/postgres';
import { Registry } from 'prom-client';
import { DefinitionsUpkeep } from '../services/ingestion/src/definitions/upkeep';
import { pageview } from './pageviews';
import { createProject, embeddedStack, observeInserts, stepSeconds, waitUntil, type Stack } from './stacks';

const EVENTS = Number(process.env.BENCH_DEFINITIONS_EVENTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_DEFINITIONS_ROUNDS ?? 6);
const PEOPLE = Number(process.env.BENCH_DEFINITIONS_PEOPLE ?? 2_000);
const REQUEST_EVENTS = 100;

/** off, on, on, off, off, on, …: each mode as often first as second within a pair of rounds. */
const modeOf = (round: number): boolean => round % 4 === 1 || round % 4 === 2;

async function produce(stack: Stack, teamId: number, from: number, count: number): Promise<void> {
  const topic = DEFAULT_INGESTION_SETTINGS.topics.events;
  for (let start = from; start < from + count; start += REQUEST_EVENTS) {
    const end = Math.min(from + count, start + REQUEST_EVENTS);
    await stack.bus.produce(
      topic,
      Array.from({ length: end - start }, (_, i) => pageview(teamId, start + i, PEOPLE).message),
    );
  }
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

async function main(): Promise<void> {
  const stack = await embeddedStack('definitions');
  try {
    await migratePostgres(stack.sql);
    await migrateClickHouse(stack.clickhouse);
    const teamId = await createProject(stack.sql);
    let stored = 0;
    const clickhouse = observeInserts(stack.clickhouse, (table, rows) => {
      if (table === 'events') stored += rows.length;
    });
    let metrics = new Registry();
    const start = (definitions: boolean) =>
      createConsumer({
        logger: createLogger({ service: 'bench', level: 'warn' }),
        metrics,
        sql: stack.sql,
        clickhouse,
        bus: stack.bus,
        settings: { ...stack.settings, definitions },
      });

    // Warm-up: every person exists, the tables and chDB's parts are past their first inserts.
    let produced = 0;
    let consumer = await start(true);
    await produce(stack, teamId, produced, PEOPLE);
    produced += PEOPLE;
    await waitUntil(() => stored >= produced, 600_000);
    await consumer.stop();

    const cpu: Record<'off' | 'on', number[]> = { off: [], on: [] };
    /** Of the rounds with the upkeep: seconds in its step, and in whole batches (wall time, summed over batches). */
    const steps = { definitions: 0, batch: 0 };
    const loads: number[][] = [os.loadavg()];
    for (let round = 0; round < ROUNDS; round++) {
      const definitions = modeOf(round);
      await produce(stack, teamId, produced, EVENTS);
      produced += EVENTS;
      const before = process.cpuUsage();
      metrics = new Registry();
      consumer = await start(definitions);
      await waitUntil(() => stored >= produced, 600_000);
      await consumer.stop();
      const used = process.cpuUsage(before);
      cpu[definitions ? 'on' : 'off'].push((used.user + used.system) / 1e3 / EVENTS);
      if (definitions) {
        const seconds = await stepSeconds(metrics);
        steps.definitions += seconds.definitions ?? 0;
        steps.batch += seconds.batch ?? 0;
      }
      loads.push(os.loadavg());
    }
    // The upkeep alone, over stored events (properties as ingestion had them) whose names are all known: the
    // steady state, where it runs no statement. Its CPU per event against the consumer's, measured without the
    // consumer's noise.
    const sampleRows = await stack.clickhouse.query<{ event: string; properties: string }>(
      'bench.sample',
      'SELECT event, properties FROM events WHERE team_id = {projectId:Int64} LIMIT {limit:UInt32}',
      { projectId: teamId, limit: EVENTS },
    );
    const sample = sampleRows.map((row) => ({ projectId: teamId, event: row.event, properties: JSON.parse(row.properties) as Record<string, unknown> }));
    const upkeep = new DefinitionsUpkeep({ sql: stack.sql, groupTypeIndex: () => Promise.resolve(undefined) });
    await upkeep.record(sample);
    const upkeepBefore = process.cpuUsage();
    for (let repeat = 0; repeat < 10; repeat++) await upkeep.record(sample);
    const upkeepUsed = process.cpuUsage(upkeepBefore);
    const upkeepMicrosecondsPerEvent = (upkeepUsed.user + upkeepUsed.system) / (10 * sample.length);

    const definitionRows = await stack.sql.query<{ events: number; properties: number }>(
      'bench.definitions',
      `SELECT (SELECT count(*)::int FROM event_definitions WHERE project_id = $1) AS events,
              (SELECT count(*)::int FROM property_definitions WHERE project_id = $1) AS properties`,
      [teamId],
    );
    const three = (n: number) => Math.round(n * 1000) / 1000;
    const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);
    console.log(
      JSON.stringify({
        bench: 'definitions',
        eventsPerRound: EVENTS,
        rounds: ROUNDS,
        cpuSecondsPerThousandEvents: { off: cpu.off.map(three), on: cpu.on.map(three) },
        medianOff: three(median(cpu.off)),
        medianOn: three(median(cpu.on)),
        // Target: ≤ 1.05.
        onOverOffMedian: Math.round((median(cpu.on) / median(cpu.off)) * 1000) / 1000,
        onOverOffTotal: Math.round((sum(cpu.on) / sum(cpu.off)) * 1000) / 1000,
        steadyUpkeepCpuMicrosecondsPerEvent: Math.round(upkeepMicrosecondsPerEvent * 100) / 100,
        // That against the consumer's CPU per event without the upkeep (µs per event = ms per 1,000 events).
        steadyUpkeepShareOfIngestionCpu: Math.round((upkeepMicrosecondsPerEvent / (median(cpu.off) * 1000)) * 10000) / 10000,
        // The upkeep's own share of the batches' time, a direct reading less exposed to the machine's load.
        definitionsStepShareOfBatch: Math.round((steps.definitions / steps.batch) * 10000) / 10000,
        definitions: definitionRows.rows[0],
        loadAverage1m: loads.map((load) => Math.round(load[0]! * 10) / 10),
        cpus: os.cpus().length,
        node: process.version,
      }),
    );
  } finally {
    await stack.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
