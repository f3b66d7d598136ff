import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { bootstrap, ProjectTokenCache } from '@plover/accounts';
import { LocalLogBus } from '@plover/bus';
import type { ClickHouse } from '@plover/clickhouse';
import { silentLogger } from '@plover/core';
import { DefinitionsCache } from '@plover/decide/app';
import { createMetricsRegistry } from '@plover/http';
import { migrate } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';
import { FaultySql } from '../../../packages/postgres/test/support/faulty-sql';
import { createApp } from '../src/app';

describe('embedded mode: capture and decide share one project token cache', () => {
  it('looks a token up once for both, and a token rotated through the management API is refused by both at once', async () => {
    const database = await PGliteSql.open();
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-standalone-app-'));
    const bus = await LocalLogBus.open({ dataDir });
    const logger = silentLogger();
    const definitions = new DefinitionsCache(database, { logger });
    try {
      await migrate(database);
      const credentials = (await bootstrap(database, { adminEmail: 'admin@example.com', projectName: 'P', timezone: 'UTC' }))!;
      const sql = new FaultySql(database);
      const lookups = () => sql.counts.get('accounts.findProjectByToken') ?? 0;
      const app = createApp({
        logger,
        metrics: createMetricsRegistry('test'),
        sql,
        clickhouse: {} as ClickHouse,
        bus,
        trustProxy: false,
        projectTokens: new ProjectTokenCache(sql, { refreshAfterMs: 60_000 }),
        definitions,
      });
      const capture = (token: string) => request(app).post('/i/v0/e/').send({ api_key: token, event: 'e', distinct_id: 'u1' });
      const decide = (token: string) => request(app).post('/flags/?v=2').send({ token, distinct_id: 'u1' });
      const oldToken = credentials.project.api_token;

      expect((await capture(oldToken)).status).toBe(200);
      expect((await decide(oldToken)).status).toBe(200);
      expect(lookups()).toBe(1);

      const rotated = await request(app)
        .post(`/api/projects/${credentials.project.id}/reset_token/`)
        .set('Authorization', `Bearer ${credentials.personal_api_key.value}`)
        .expect(200);
      const newToken: string = rotated.body.api_token;
      expect(newToken).not.toBe(oldToken);

      // The rotation dropped the old token from the shared cache: the next request looks it up, once for both.
      expect((await capture(oldToken)).status).toBe(401);
      expect((await decide(oldToken)).status).toBe(401);
      expect(lookups()).toBe(2);

      expect((await decide(newToken)).status).toBe(200);
      expect((await capture(newToken)).status).toBe(200);
      expect(lookups()).toBe(3);
    } finally {
      definitions.close();
      await bus.close();
      await database.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('embedded mode: /_health', () => {
  it('fails once the local log cannot go on without a restart, naming it', async () => {
    const database = await PGliteSql.open();
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-standalone-health-'));
    // Every append after the first rolls to a new segment file.
    const bus = await LocalLogBus.open({ dataDir, partitions: 1, segmentBytes: 1 });
    const logger = silentLogger();
    const definitions = new DefinitionsCache(database, { logger });
    try {
      await migrate(database);
      const credentials = (await bootstrap(database, { adminEmail: 'admin@example.com', projectName: 'P', timezone: 'UTC' }))!;
      const app = createApp({
        logger,
        metrics: createMetricsRegistry('test'),
        sql: database,
        clickhouse: {} as ClickHouse,
        bus,
        trustProxy: false,
        projectTokens: new ProjectTokenCache(database, { refreshAfterMs: 60_000 }),
        definitions,
      });
      const capture = () => request(app).post('/i/v0/e/').send({ api_key: credentials.project.api_token, event: 'e', distinct_id: 'u1' });
      expect((await capture()).status).toBe(200);
      expect((await request(app).get('/_health')).status).toBe(200);

      // The partition's directory is gone: the next segment cannot be created, which no retry mends.
      await rm(path.join(dataDir, 'events'), { recursive: true });
      expect((await capture()).status).toBe(503);
      const health = await request(app).get('/_health');
      expect(health.status).toBe(503);
      expect(health.body).toEqual({ status: 'unavailable', checks: { bus: expect.stringContaining('ENOENT') } });
    } finally {
      definitions.close();
      await bus.close();
      await database.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
