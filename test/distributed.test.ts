import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startChdbHttpServer, type ChdbHttpServer } from '../packages/clickhouse/test/support/chdb-http-server';
import { createTestDatabase, type TestDatabase } from '../packages/postgres/test/support/database';
import { run, startService } from './support/processes';
import { describeWith, realService } from './support/services';

const postgres = realService('TEST_DATABASE_URL');
const kafka = realService('TEST_KAFKA_BROKERS');

// Distributed mode: each service's main.ts on real Postgres and Kafka, and ClickHouse's HTTP interface
// (served by chDB: no ClickHouse server exists on this machine).
describeWith({ url: postgres.url && kafka.url })('distributed services', () => {
  let database: TestDatabase;
  let clickhouse: ChdbHttpServer;
  let dataDir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await createTestDatabase(postgres.url!);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-distributed-'));
    clickhouse = await startChdbHttpServer(dataDir);
    env = {
      DATABASE_URL: database.url,
      CLICKHOUSE_URL: clickhouse.url,
      CLICKHOUSE_DATABASE: `plover_${Date.now()}`,
      KAFKA_BROKERS: kafka.url!,
      PORT: '0',
      HOST: '127.0.0.1',
    };
  });

  afterAll(async () => {
    await clickhouse?.close();
    await database?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('migrate applies every migration once, creating the ClickHouse database, and is idempotent', async () => {
    const first = await run('services/management/src/cli.ts', ['migrate'], env);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ postgres: expect.arrayContaining(['001_accounts']), clickhouse: expect.arrayContaining(['001_events']) });
    const second = await run('services/management/src/cli.ts', ['migrate'], env);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual({ postgres: [], clickhouse: [] });
  });

  it('migrate in cluster mode sends its statements ON CLUSTER: a server without that cluster refuses the first', async () => {
    const result = await run('services/management/src/cli.ts', ['migrate'], {
      ...env,
      CLICKHOUSE_CLUSTER: 'plover',
      CLICKHOUSE_DATABASE: `plover_cluster_${Date.now()}`,
    });
    expect(result.code).toBe(1);
    expect(result.output).toContain("ClickHouse command migrate.createDatabase failed: Requested cluster 'plover' not found");
  });

  it('bootstrap creates the first project and keys once', async () => {
    const first = await run('services/management/src/cli.ts', ['bootstrap'], env);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout).project.api_token).toMatch(/^phc_/);
    const second = await run('services/management/src/cli.ts', ['bootstrap'], env);
    expect(second.stdout).toBe('already bootstrapped; nothing created\n');
  });

  it.each(['capture', 'decide', 'management', 'ingestion'])('%s starts on real adapters and is ready', async (service) => {
    const running = await startService(service, env);
    try {
      const ready = await fetch(`http://127.0.0.1:${running.port}/_ready`);
      expect({ status: ready.status, body: await ready.json() }).toMatchObject({ status: 200, body: { status: 'ok' } });
    } finally {
      expect(await running.stop()).toBe(0);
    }
  });

  it('a service with a missing setting exits 1 naming it', async () => {
    const { DATABASE_URL: _omitted, ...rest } = env;
    const result = await run('services/capture/src/main.ts', [], rest);
    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe('Invalid configuration: DATABASE_URL is required but not set');
  });
});
