import request from 'supertest';
import { backends, buildApp, setup, type Database } from './support/harness';

describe.each(backends)('early access features and surveys on $name', (backend) => {
  // A fresh database per test: each bootstraps its own project.
  let db: Database;
  beforeEach(async () => {
    db = await backend.open();
  });
  afterEach(() => db.close());

  it('gates an early access feature on $feature_enrollment and lists it publicly', async () => {
    const { project } = await setup(db.sql);
    const app = buildApp(db.sql);
    const created = await request(app)
      .post(`/api/projects/${project.id}/early_access_features/`)
      .send({ name: 'New dashboard', description: 'Try it', stage: 'beta', feature_flag_key: 'new-dashboard' })
      .expect(201);
    expect(created.body).toMatchObject({ name: 'New dashboard', stage: 'beta', feature_flag: { key: 'new-dashboard' } });
    const ask = async (personProperties: Record<string, unknown>) =>
      (await request(app).post('/flags/?v=2').send({ token: project.api_token, distinct_id: 'u1', person_properties: personProperties }).expect(200)).body as {
        flags: Record<string, { enabled: boolean; reason: { code: string } }>;
      };
    expect((await ask({})).flags['new-dashboard']?.enabled).toBe(false);
    const enrolled = await ask({ '$feature_enrollment/new-dashboard': true });
    expect(enrolled.flags['new-dashboard']).toMatchObject({ enabled: true, reason: { code: 'super_condition_value' } });
    const listed = await request(app).get(`/api/early_access_features/?token=${project.api_token}`).expect(200);
    expect(listed.body).toEqual({
      earlyAccessFeatures: [
        { id: created.body.id, name: 'New dashboard', description: 'Try it', stage: 'beta', documentationUrl: '', flagKey: 'new-dashboard' },
      ],
    });
    await request(app).get('/api/early_access_features/').expect(401);
    await request(app).post(`/api/projects/${project.id}/early_access_features/`).send({ name: 'Dup', feature_flag_key: 'new-dashboard' }).expect(400);
  });

  it('serves launched surveys, their targeting flag, and surveys: true on decide', async () => {
    const sql = db.sql;
    {
      const { project } = await setup(sql);
      const app = buildApp(sql);
      const decide = async () =>
        (
          await request(app)
            .post('/decide/?v=3')
            .send({ token: project.api_token, distinct_id: 'u1', person_properties: { plan: 'pro' } })
            .expect(200)
        ).body as Record<string, unknown>;
      expect((await decide()).surveys).toBe(false);
      const created = await request(app)
        .post(`/api/projects/${project.id}/surveys/`)
        .send({
          name: 'NPS',
          type: 'popover',
          questions: [{ type: 'rating', question: 'How likely?' }],
          conditions: { url: '/pricing' },
          targeting_flag_filters: { groups: [{ properties: [{ key: 'plan', type: 'person', value: ['pro'] }], rollout_percentage: 100 }] },
        })
        .expect(201);
      const targetingKey = (created.body as { targeting_flag: { key: string } }).targeting_flag.key;
      expect(targetingKey).toMatch(/^survey-targeting-/);
      expect((await request(app).get(`/api/surveys/?token=${project.api_token}`).expect(200)).body).toEqual({ surveys: [] });
      await request(app)
        .patch(`/api/projects/${project.id}/surveys/${created.body.id}/`)
        .send({ start_date: new Date(Date.now() - 1000).toISOString() })
        .expect(200);
      const body = await decide();
      expect(body.surveys).toBe(true);
      expect((body.featureFlags as Record<string, unknown>)[targetingKey]).toBe(true);
      const listed = await request(app).get(`/api/surveys/?token=${project.api_token}`).expect(200);
      expect(listed.body.surveys).toEqual([
        expect.objectContaining({
          id: created.body.id,
          name: 'NPS',
          type: 'popover',
          conditions: { url: '/pricing' },
          targeting_flag_key: targetingKey,
          end_date: null,
        }),
      ]);
      await request(app).delete(`/api/projects/${project.id}/surveys/${created.body.id}/`).expect(405);
    }
  });
});
