import request from 'supertest';
import type { ClickHouse } from '@plover/clickhouse';
import { ProjectTokenCache } from '@plover/accounts';
import { silentLogger } from '@plover/core';
import { createMetricsRegistry, createServiceApp } from '@plover/http';
import { migrate } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';
import { managementRoutes } from '../../management/src/app';
import { decideRoutes, DefinitionsCache } from '../src/app';
import { setup } from './support/harness';

describe('decide beside the management API (embedded mode)', () => {
  it('serves a flag created with a personal API key on the very next decide call', async () => {
    const sql = await PGliteSql.open();
    const definitions = new DefinitionsCache(sql, { logger: silentLogger() });
    try {
      await migrate(sql);
      const { project, personal_api_key: key } = await setup(sql);
      const deps = { logger: silentLogger(), metrics: createMetricsRegistry('test'), sql, trustProxy: false, clickhouse: {} as ClickHouse };
      const decide = decideRoutes({ ...deps, projectTokens: new ProjectTokenCache(sql), definitions });
      const app = createServiceApp({
        ...deps,
        checks: {},
        fast: [decide.fast],
        mount(app) {
          app.use(decide.router);
          app.use(managementRoutes(deps));
        },
      });
      const ask = async () =>
        (await request(app).post('/flags/?v=2').send({ token: project.api_token, distinct_id: 'u1' }).expect(200)).body as {
          flags: Record<string, { enabled: boolean }>;
        };
      expect((await ask()).flags).toEqual({});

      await request(app).post(`/api/projects/${project.id}/feature_flags/`).send({ key: 'new-flag' }).expect(401);
      const created = await request(app)
        .post(`/api/projects/${project.id}/feature_flags/`)
        .set('Authorization', `Bearer ${key.value}`)
        .send({ key: 'new-flag', name: 'A new flag', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } })
        .expect(201);
      expect(created.body).toMatchObject({
        key: 'new-flag',
        name: 'A new flag',
        active: true,
        deleted: false,
        version: 1,
        created_by: { id: expect.any(Number) },
      });
      expect((await ask()).flags['new-flag']).toMatchObject({ enabled: true });

      await request(app)
        .patch(`/api/environments/${project.id}/feature_flags/${created.body.id}/`)
        .set('Authorization', `Bearer ${key.value}`)
        .send({ deleted: true })
        .expect(200);
      expect((await ask()).flags['new-flag']).toBeUndefined();
      await request(app).delete(`/api/projects/${project.id}/feature_flags/${created.body.id}/`).set('Authorization', `Bearer ${key.value}`).expect(405);
    } finally {
      definitions.close();
      await sql.close();
    }
  });
});
