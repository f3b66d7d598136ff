import request from 'supertest';
import { silentLogger } from '@plover/core';
import { writeDefinitions } from '@plover/flag-store';
import { openMigratedPGlite } from '../../../packages/postgres/test/support/backends';
import { DefinitionsCache } from '../src/definitions';
import { buildApp, FaultySql, setup } from './support/harness';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('DefinitionsCache', () => {
  it('polls until closed, and after close() neither polls nor hears change signals', async () => {
    const database = await openMigratedPGlite();
    try {
      const projectId = (await setup(database.sql)).project.id;
      const sql = new FaultySql(database.sql);
      const cache = new DefinitionsCache(sql, { logger: silentLogger(), pollIntervalMs: 10 });
      const first = await cache.get(projectId);
      await sleep(100);
      const polls = () => sql.counts.get('decide.definitionVersions') ?? 0;
      // One read with the load, the rest from the poll.
      expect(polls()).toBeGreaterThan(2);

      cache.close();
      await sleep(20); // a poll already under way may finish
      const atClose = polls();
      await writeDefinitions(database.sql, projectId, () => Promise.resolve());
      await sleep(100);
      expect(polls()).toBe(atClose);
      // The change signal no longer drops the entry either: the closed cache answers what it had.
      expect(await cache.get(projectId)).toBe(first);
    } finally {
      await database.close();
    }
  });
});

describe('rendered flags live and die with their definitions', () => {
  it('serves an edited flag’s name, version and payload on the very next request', async () => {
    const database = await openMigratedPGlite();
    const { sql } = database;
    try {
      const { project } = await setup(sql);
      const app = buildApp(sql);
      const created = await request(app)
        .post(`/api/projects/${project.id}/feature_flags/`)
        .send({ key: 'edited', name: 'First', filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"n":1}' } } })
        .expect(201);
      const ask = async () => {
        const v4 = await request(app).post('/flags/?v=2').send({ token: project.api_token, distinct_id: 'u1' }).expect(200);
        const v3 = await request(app).post('/decide/?v=3').send({ token: project.api_token, distinct_id: 'u1' }).expect(200);
        return { metadata: v4.body.flags.edited.metadata, payload: v3.body.featureFlagPayloads.edited };
      };
      expect(await ask()).toEqual({ metadata: { id: created.body.id, version: 1, description: 'First', payload: '{"n":1}' }, payload: '{"n":1}' });

      await request(app)
        .patch(`/api/projects/${project.id}/feature_flags/${created.body.id}/`)
        .send({ name: 'Second', filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"n":2}' } } })
        .expect(200);
      expect(await ask()).toEqual({ metadata: { id: created.body.id, version: 2, description: 'Second', payload: '{"n":2}' }, payload: '{"n":2}' });
    } finally {
      await database.close();
    }
  });
});
