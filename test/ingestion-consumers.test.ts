/**
 * Many ingestion consumers under failure, in distributed mode: capture and ingestion as separate processes
 * (services/<name>/src/main.ts) on real Kafka and Postgres, ClickHouse's HTTP interface served by chDB. A topic
 * of 12 partitions, two capture processes sending side by side, several ingestion processes in one consumer
 * group; mid-stream one consumer is killed with SIGKILL and started again, or one is added. Afterwards:
 * - ClickHouse holds exactly the events sent, once each: the uuids after FINAL (as the product's queries read),
 *   and the rows as inserted, before FINAL (background merges are stopped, so an event stored twice would
 *   show as a second row);
 * - every person is what the events give in their order per distinct id (test/support/person-workload.ts says
 *   why that, and not a serial run, is the reference when persons of different partitions race), and every
 *   event resolves, through person overrides, to its distinct id's final person;
 * - no event was dead-lettered or warned about.
 * INGESTION_CONSUMERS_EVENTS sets the events per scenario (default 10,000, for npm test's time budget on two
 * cores); `npm run test:ingestion-consumers-100k` runs 100,000.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Session } from 'chdb';
import { HttpClickHouse } from '@plover/clickhouse';
import { PgSql } from '@plover/postgres';
import { startChdbHttpServer, type ChdbHttpServer } from '../packages/clickhouse/test/support/chdb-http-server';
import { createTestDatabase, type TestDatabase } from '../packages/postgres/test/support/database';
import { IngestionCluster } from './support/ingestion-cluster';
import { differences, noDifferences, personWorkload, storedEvents, storedPersons, type Workload } from './support/person-workload';
import { run } from './support/processes';
import { describeWith, realService } from './support/services';

const postgres = realService('TEST_DATABASE_URL');
const kafka = realService('TEST_KAFKA_BROKERS');
const EVENTS = Number(process.env.INGESTION_CONSUMERS_EVENTS ?? 10_000);
const PARTITIONS = 12;
/** Generous: a loaded two-core machine drains a few thousand events per second here. */
const SCENARIO_TIMEOUT_MS = Math.max(240_000, EVENTS * 30);

async function waitFor(what: string, condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describeWith({ url: postgres.url && kafka.url })('many ingestion consumers under failure (distributed mode, 12 partitions)', () => {
  let database: TestDatabase;
  let dataDir: string;
  let server: ChdbHttpServer;
  /** Held open for the whole suite: chDB keeps `SYSTEM STOP MERGES` only while some session is open. */
  let heldSession: Session;
  let clickhouse: HttpClickHouse;
  let sql: PgSql;
  let env: Record<string, string>;
  let token: string;
  let projectId: number;
  const clusters: IngestionCluster[] = [];

  beforeAll(async () => {
    database = await createTestDatabase(postgres.url!);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-consumers-'));
    server = await startChdbHttpServer(dataDir);
    heldSession = new Session(dataDir);
    const clickhouseDatabase = `plover_consumers_${Date.now()}`;
    env = { DATABASE_URL: database.url, CLICKHOUSE_URL: server.url, CLICKHOUSE_DATABASE: clickhouseDatabase, KAFKA_BROKERS: kafka.url! };
    const migrated = await run('services/management/src/cli.ts', ['migrate'], env);
    expect(migrated.code).toBe(0);
    const bootstrapped = await run('services/management/src/cli.ts', ['bootstrap'], env);
    expect(bootstrapped.code).toBe(0);
    const credentials = JSON.parse(bootstrapped.stdout) as { project: { id: number; api_token: string } };
    token = credentials.project.api_token;
    projectId = credentials.project.id;
    clickhouse = new HttpClickHouse({ url: server.url, database: clickhouseDatabase, username: 'default', password: '' });
    await clickhouse.command('test.stopMerges', `SYSTEM STOP MERGES ${clickhouseDatabase}.events`);
    sql = new PgSql({ connectionString: database.url });
  }, 120_000);

  afterAll(async () => {
    const closed = await Promise.allSettled(clusters.map((cluster) => cluster.close()));
    await sql?.close();
    await clickhouse?.close();
    heldSession?.close();
    await server?.close();
    await database?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    for (const result of closed) if (result.status === 'rejected') throw result.reason;
  });

  async function storedRows(label: string): Promise<number> {
    const [row] = await clickhouse.query<{ rows: string }>(
      'test.rows',
      'SELECT count() AS rows FROM events WHERE team_id = {projectId:Int64} AND distinct_id LIKE {like:String}',
      { projectId, like: `${label}-%` },
    );
    return Number(row?.rows ?? 0);
  }

  /** Until every event is stored and every offset committed: nothing is left in flight to be stored again. */
  async function drained(cluster: IngestionCluster, workload: Workload): Promise<void> {
    await waitFor(
      'every event stored and committed',
      async () => (await storedRows(workload.label)) >= workload.events.length && (await cluster.uncommitted()) === 0,
      SCENARIO_TIMEOUT_MS,
    );
  }

  async function expectExactlyTheEvents(workload: Workload): Promise<void> {
    const found = differences(workload, await storedPersons(sql, projectId, workload.label), await storedEvents(clickhouse, projectId, workload.label));
    expect(found).toEqual(noDifferences(workload));
    const [warnings] = await clickhouse.query<{ n: string }>(
      'test.warnings',
      'SELECT count() AS n FROM ingestion_warnings FINAL WHERE team_id = {projectId:Int64}',
      {
        projectId,
      },
    );
    expect(Number(warnings?.n)).toBe(0);
  }

  /** Starts the cluster: two captures and `consumers` ingestion processes, and checks the topic's partitions. */
  async function startCluster(label: string, consumers: number): Promise<IngestionCluster> {
    const cluster = new IngestionCluster({ env, partitions: PARTITIONS, label });
    clusters.push(cluster);
    await Promise.all([cluster.startCapture(), cluster.startCapture(), ...Array.from({ length: consumers }, () => cluster.startConsumer())]);
    expect(await cluster.eventPartitions()).toBe(PARTITIONS);
    return cluster;
  }

  /**
   * Sends the first half of every stream, waits until a third of the events is stored, runs `midStream` while
   * the consumers work through the rest of that half, then sends the second half and waits until every event is
   * stored and committed.
   */
  async function runScenario(cluster: IngestionCluster, workload: Workload, midStream: () => Promise<void>): Promise<void> {
    const halves = workload.streams.map((stream) => Math.ceil(stream.length / 2));
    const firstHalf = cluster.send(
      token,
      workload.streams.map((stream, index) => stream.slice(0, halves[index])),
    );
    await waitFor('a third of the events stored', async () => (await storedRows(workload.label)) >= workload.events.length / 3, SCENARIO_TIMEOUT_MS);
    await midStream();
    await firstHalf;
    await cluster.send(
      token,
      workload.streams.map((stream, index) => stream.slice(halves[index])),
    );
    await drained(cluster, workload);
  }

  it(
    'three consumers, one killed with SIGKILL mid-stream and started again: every event stored once, persons as the events give',
    async () => {
      const workload = personWorkload({ label: `kill${Date.now().toString(36)}`, projectId, events: EVENTS, streams: 2 });
      const cluster = await startCluster('consumers-kill', 3);
      await runScenario(cluster, workload, async () => {
        await cluster.consumers[1]!.crash();
        await cluster.startConsumer();
      });
      await expectExactlyTheEvents(workload);
    },
    SCENARIO_TIMEOUT_MS + 120_000,
  );

  it(
    'two consumers and a third added mid-stream (a rebalance): every event stored once, persons as the events give',
    async () => {
      const workload = personWorkload({ label: `add${Date.now().toString(36)}`, projectId, events: EVENTS, streams: 2, seed: 7 });
      const cluster = await startCluster('consumers-add', 2);
      await runScenario(cluster, workload, async () => {
        await cluster.startConsumer();
      });
      // The added consumer took its share: three members of four partitions each.
      await waitFor('a stable group', async () => (await cluster.assignments()).length > 0, 60_000);
      expect((await cluster.assignments()).sort()).toEqual([4, 4, 4]);
      await expectExactlyTheEvents(workload);
    },
    SCENARIO_TIMEOUT_MS + 120_000,
  );
});
