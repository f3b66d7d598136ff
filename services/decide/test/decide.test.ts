import { gzipSync } from 'node:zlib';
import { compressToBase64 } from 'lz-string';
import request from 'supertest';
import type { Credentials } from '@plover/accounts';
import { MAX_FLAG_REQUEST_ENTRIES } from '../src/request';
import { backends, buildApp, createGroup, createPerson, FaultySql, setup, type Database } from './support/harness';

const BOOLEAN_FLAG = { key: 'beta', filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"color":"blue"}' } } };
const OFF_FLAG = { key: 'off', filters: { groups: [{ properties: [], rollout_percentage: 0 }] } };
const PERSON_FLAG = {
  key: 'pro-users',
  filters: { groups: [{ properties: [{ key: 'plan', type: 'person', value: ['pro'], operator: 'exact' }], rollout_percentage: 100 }] },
};
const MULTI_FLAG = {
  key: 'multi',
  filters: {
    groups: [{ properties: [], rollout_percentage: 100, variant: 'b' }],
    multivariate: {
      variants: [
        { key: 'a', rollout_percentage: 50 },
        { key: 'b', rollout_percentage: 50 },
      ],
    },
    payloads: { b: '[1,2]' },
  },
};
const GROUP_FLAG = {
  key: 'company-flag',
  filters: {
    aggregation_group_type_index: 0,
    groups: [{ properties: [{ key: 'size', type: 'group', group_type_index: 0, value: 100, operator: 'gt' }], rollout_percentage: 100 }],
  },
};

describe.each(backends)('decide on $name', (backend) => {
  let db: Database;
  let credentials: Credentials;
  let token: string;
  let projectId: number;
  let faulty: FaultySql;
  let app: ReturnType<typeof buildApp>;

  beforeAll(async () => {
    db = await backend.open();
    credentials = await setup(db.sql);
    token = credentials.project.api_token;
    projectId = credentials.project.id;
    faulty = new FaultySql(db.sql);
    app = buildApp(faulty, { lookupTimeoutMs: 200 }, db.sql);
    await createPerson(db.sql, projectId, ['pro-user'], { plan: 'pro', email: 'p@example.com' });
    await createGroup(db.sql, projectId, 'company', 0, 'acme', { size: 500 });
    for (const flag of [BOOLEAN_FLAG, OFF_FLAG, PERSON_FLAG, MULTI_FLAG, GROUP_FLAG]) {
      await request(app).post(`/api/projects/${projectId}/feature_flags/`).send(flag).expect(201);
    }
  });
  afterAll(() => db.close());
  afterEach(() => {
    faulty.failing.clear();
    faulty.delayMs.clear();
  });

  const decide = (path: string, body: unknown) => request(app).post(path).set('Content-Type', 'application/json').send(JSON.stringify(body));

  it('answers v=1 with the active keys and the config', async () => {
    const res = await decide('/decide/?v=1', { token, distinct_id: 'pro-user' }).expect(200);
    expect([...(res.body.featureFlags as string[])].sort()).toEqual(['beta', 'multi', 'pro-users']);
    expect(res.body).toMatchObject({
      config: { enable_collect_everything: true },
      toolbarParams: {},
      isAuthenticated: false,
      supportedCompression: ['gzip', 'gzip-js', 'lz64'],
      siteApps: [],
    });
    expect(typeof res.body.requestId).toBe('string');
  });

  it('answers v=2 with active flags and their values', async () => {
    const res = await decide('/decide?v=2', { token, distinct_id: 'pro-user' }).expect(200);
    expect(res.body.featureFlags).toEqual({ beta: true, multi: 'b', 'pro-users': true });
  });

  it('answers v=3 with every flag, payloads as JSON strings and errorsWhileComputingFlags', async () => {
    const res = await decide('/decide/?v=3', { token, distinct_id: 'someone' }).expect(200);
    expect(res.body.featureFlags).toEqual({ beta: true, off: false, 'pro-users': false, multi: 'b', 'company-flag': false });
    expect(res.body.featureFlagPayloads).toEqual({ beta: '{"color":"blue"}', multi: '[1,2]' });
    expect(res.body.errorsWhileComputingFlags).toBe(false);
    expect(res.body.quotaLimited).toBeUndefined();
    // A new project records nothing and captures network timing (PostHog's defaults; docs/decide.md#session-recording).
    expect(res.body).toMatchObject({
      sessionRecording: false,
      surveys: false,
      capturePerformance: { network_timing: true, web_vitals: false, web_vitals_allowed_metrics: null },
      autocapture_opt_out: false,
    });
  });

  it('answers v=4 and /flags?v=2 with flag details', async () => {
    for (const path of ['/decide/?v=4', '/flags/?v=2&config=true', '/flags']) {
      const res = await decide(path, { token, distinct_id: 'pro-user' }).expect(200);
      expect(res.body.flags.beta).toEqual({
        key: 'beta',
        enabled: true,
        variant: null,
        reason: { code: 'condition_match', condition_index: 0, description: 'Matched condition set 1' },
        metadata: { id: expect.any(Number), version: 1, description: null, payload: '{"color":"blue"}' },
      });
      expect(res.body.flags.multi).toMatchObject({ enabled: true, variant: 'b', metadata: { payload: '[1,2]' } });
      expect(res.body.flags.off).toMatchObject({ enabled: false, reason: { code: 'out_of_rollout_bound' }, metadata: { payload: null } });
      expect(res.body.errorsWhileComputingFlags).toBe(false);
      expect(res.body.config).toEqual({ enable_collect_everything: true });
    }
    const bare = await decide('/flags/?v=2', { token, distinct_id: 'pro-user' }).expect(200);
    expect(bare.body.config).toBeUndefined();
    expect(Object.keys(bare.body as object).sort()).toEqual(['errorsWhileComputingFlags', 'flags', 'requestId']);
  });

  it('rejects a missing or unknown token with 401 and a missing distinct_id with 400', async () => {
    const none = await decide('/decide/?v=3', { distinct_id: 'x' }).expect(401);
    expect(none.body).toEqual({
      type: 'authentication_error',
      code: 'no_api_key',
      detail: 'No project API key provided. You can find your project API key in PostHog project settings.',
      attr: null,
    });
    const unknown = await decide('/flags/?v=2', { token: 'phc_unknown', distinct_id: 'x' }).expect(401);
    expect(unknown.body).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
    const noId = await decide('/decide/?v=3', { api_key: token }).expect(400);
    expect(noId.body).toEqual({ type: 'validation_error', code: 'missing_distinct_id', detail: 'Decide requires a distinct_id.', attr: null });
    const malformed = await request(app).post('/decide/?v=3').set('Content-Type', 'application/json').send('{nope').expect(400);
    expect(malformed.body).toMatchObject({ type: 'validation_error', code: 'malformed_data' });
  });

  it('merges stored person properties under the request overrides', async () => {
    const stored = await decide('/decide/?v=3', { token, distinct_id: 'pro-user' }).expect(200);
    expect(stored.body.featureFlags['pro-users']).toBe(true);
    const overridden = await decide('/decide/?v=3', { token, distinct_id: 'pro-user', person_properties: { plan: 'free' } }).expect(200);
    expect(overridden.body.featureFlags['pro-users']).toBe(false);
    const anonymous = await decide('/decide/?v=3', { token, distinct_id: 'nobody', person_properties: { plan: 'pro' } }).expect(200);
    expect(anonymous.body.featureFlags['pro-users']).toBe(true);
  });

  it('evaluates group flags from stored group properties and request overrides', async () => {
    const stored = await decide('/decide/?v=3', { token, distinct_id: 'x', groups: { company: 'acme' } }).expect(200);
    expect(stored.body.featureFlags['company-flag']).toBe(true);
    const overridden = await decide('/decide/?v=3', {
      token,
      distinct_id: 'x',
      groups: { company: 'acme' },
      group_properties: { company: { size: 5 } },
    }).expect(200);
    expect(overridden.body.featureFlags['company-flag']).toBe(false);
    const noGroup = await decide('/decide/?v=4', { token, distinct_id: 'x' }).expect(200);
    expect(noGroup.body.flags['company-flag'].reason.code).toBe('no_group_type');
  });

  it('degrades to errorsWhileComputingFlags when the person lookup fails or times out', async () => {
    for (const fault of ['fail', 'timeout'] as const) {
      if (fault === 'fail') faulty.failing.add('decide.findPerson');
      else faulty.delayMs.set('decide.findPerson', 600);
      const v3 = await decide('/decide/?v=3', { token, distinct_id: 'pro-user' }).expect(200);
      expect(v3.body.errorsWhileComputingFlags).toBe(true);
      expect(v3.body.featureFlags).toEqual({ beta: true, off: false, multi: 'b', 'company-flag': false });
      const v4 = await decide('/flags/?v=2', { token, distinct_id: 'pro-user' }).expect(200);
      expect(v4.body.errorsWhileComputingFlags).toBe(true);
      expect(v4.body.flags['pro-users']).toMatchObject({
        enabled: false,
        variant: null,
        failed: true,
        reason: { code: fault === 'fail' ? 'database_error' : 'timeout', condition_index: null },
      });
      expect(v4.body.flags.beta.enabled).toBe(true);
      faulty.failing.clear();
      faulty.delayMs.clear();
    }
    // A request whose overrides cover every key needs no lookup and so does not fail.
    faulty.failing.add('decide.findPerson');
    const covered = await decide('/decide/?v=3', { token, distinct_id: 'pro-user', person_properties: { plan: 'pro' } }).expect(200);
    expect(covered.body.errorsWhileComputingFlags).toBe(false);
    expect(covered.body.featureFlags['pro-users']).toBe(true);
  });

  it('decodes form data=, base64, gzip without a hint and lz64 bodies', async () => {
    const json = JSON.stringify({ token, distinct_id: 'pro-user' });
    const base64 = Buffer.from(json).toString('base64');
    const form = await request(app)
      .post('/decide/?v=3&compression=base64')
      .type('form')
      .send(`data=${encodeURIComponent(base64)}`)
      .expect(200);
    expect(form.body.featureFlags['pro-users']).toBe(true);
    const gz = await request(app).post('/flags/?v=2').set('Content-Type', 'text/plain').send(gzipSync(json)).expect(200);
    expect(gz.body.flags['pro-users'].enabled).toBe(true);
    const lz = await request(app)
      .post('/decide/?v=3&compression=lz64')
      .type('form')
      .send(`data=${encodeURIComponent(compressToBase64(json))}`)
      .expect(200);
    expect(lz.body.featureFlags.beta).toBe(true);
    const get = await request(app)
      .get(`/decide/?v=3&data=${encodeURIComponent(base64)}`)
      .expect(200);
    expect(get.body.featureFlags.beta).toBe(true);
  });

  it('reads a gzip body sent with Content-Encoding: gzip, and refuses a body over 20 MiB with 413', async () => {
    const json = JSON.stringify({ token, distinct_id: 'pro-user' });
    const gz = await request(app).post('/flags/?v=2').set('Content-Type', 'text/plain').set('Content-Encoding', 'gzip').send(gzipSync(json)).expect(200);
    expect(gz.body.flags['pro-users'].enabled).toBe(true);
    const huge = await request(app)
      .post('/flags/?v=2')
      .set('Content-Type', 'text/plain')
      .send(Buffer.alloc(20 * 1024 * 1024 + 1, 0x20))
      .expect(413);
    expect(huge.body).toMatchObject({ type: 'validation_error', code: 'payload_too_large', attr: null });
  });

  it.each([
    ['person_properties', (entries: Record<string, number>) => ({ person_properties: entries })],
    ['group_properties', (entries: Record<string, number>) => ({ group_properties: { company: entries, team: { a: 1 } } })],
    ['groups', (entries: Record<string, number>) => ({ groups: entries })],
    ['flag_keys_to_evaluate', (entries: Record<string, number>) => ({ flag_keys_to_evaluate: Object.keys(entries) })],
  ])('refuses a request with more than the limit of entries in %s with 413 naming it', async (attr, field) => {
    const entries = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`p${i}`, i]));
    const limit = MAX_FLAG_REQUEST_ENTRIES + (attr === 'group_properties' ? 0 : 1);
    const refused = await request(app)
      .post('/flags/?v=2')
      .send({ token, distinct_id: 'pro-user', ...field(entries(limit)) })
      .expect(413);
    expect(refused.body).toEqual({
      type: 'validation_error',
      code: 'payload_too_large',
      detail: `${attr} holds ${MAX_FLAG_REQUEST_ENTRIES + 1} entries, above the limit of ${MAX_FLAG_REQUEST_ENTRIES}.`,
      attr,
    });
    await request(app)
      .post('/flags/?v=2')
      .send({ token, distinct_id: 'pro-user', ...field(entries(limit - 1)) })
      .expect(200);
  });

  it('answers preflights and bare requests like PostHog', async () => {
    const options = await request(app).options('/decide/').set('Origin', 'https://app.example').expect(200);
    expect(options.body).toEqual({ status: 1 });
    expect(options.headers['access-control-allow-origin']).toBe('https://app.example');
    await request(app).options('/flags/').expect(204);
    const bare = await request(app).get('/flags/').expect(200);
    expect(bare.body).toMatchObject({ flags: {}, errorsWhileComputingFlags: false });
  });

  it('narrows to flag_keys_to_evaluate and honours disable_flags', async () => {
    const narrowed = await decide('/flags/?v=2', { token, distinct_id: 'x', flag_keys_to_evaluate: ['beta'] }).expect(200);
    expect(Object.keys(narrowed.body.flags)).toEqual(['beta']);
    const disabled = await decide('/flags/?v=2', { token, distinct_id: 'x', disable_flags: true }).expect(200);
    expect(disabled.body.flags).toEqual({});
  });

  it('serves a flag created or changed through the management API on the very next request', async () => {
    const created = await request(app)
      .post(`/api/projects/${projectId}/feature_flags/`)
      .send({ key: 'fresh', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } })
      .expect(201);
    const first = await decide('/decide/?v=3', { token, distinct_id: 'x' }).expect(200);
    expect(first.body.featureFlags.fresh).toBe(true);
    await request(app).patch(`/api/projects/${projectId}/feature_flags/${created.body.id}/`).send({ active: false }).expect(200);
    const second = await decide('/decide/?v=3', { token, distinct_id: 'x' }).expect(200);
    expect(second.body.featureFlags.fresh).toBeUndefined();
    await request(app).patch(`/api/projects/${projectId}/feature_flags/${created.body.id}/`).send({ deleted: true }).expect(200);
  });

  it('serves static and dynamic cohorts', async () => {
    await createPerson(db.sql, projectId, ['member'], {});
    const staticCohort = await request(app)
      .post(`/api/projects/${projectId}/cohorts/`)
      .send({ name: 'S', is_static: true, distinct_ids: ['member'] })
      .expect(201);
    expect(staticCohort.body).toMatchObject({ is_static: true, count: 1 });
    const dynamic = await request(app)
      .post(`/api/projects/${projectId}/cohorts/`)
      .send({ name: 'D', filters: { properties: { type: 'AND', values: [{ key: 'email', type: 'person', value: 'example.com', operator: 'icontains' }] } } })
      .expect(201);
    for (const [key, id] of [
      ['static-cohort', staticCohort.body.id],
      ['dynamic-cohort', dynamic.body.id],
    ]) {
      await request(app)
        .post(`/api/projects/${projectId}/feature_flags/`)
        .send({ key, filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: id }], rollout_percentage: 100 }] } })
        .expect(201);
    }
    const member = await decide('/decide/?v=3', { token, distinct_id: 'member' }).expect(200);
    expect(member.body.featureFlags).toMatchObject({ 'static-cohort': true, 'dynamic-cohort': false });
    const pro = await decide('/decide/?v=3', { token, distinct_id: 'pro-user' }).expect(200);
    expect(pro.body.featureFlags).toMatchObject({ 'static-cohort': false, 'dynamic-cohort': true });
    for (const key of ['static-cohort', 'dynamic-cohort']) {
      const list = await request(app).get(`/api/projects/${projectId}/feature_flags/?search=${key}`).expect(200);
      await request(app).patch(`/api/projects/${projectId}/feature_flags/${list.body.results[0].id}/`).send({ deleted: true }).expect(200);
    }
  });

  it('serves the local-evaluation payload with a personal API key, with ETag and 304', async () => {
    const key = credentials.personal_api_key.value;
    await request(app).get(`/api/feature_flag/local_evaluation?token=${token}`).expect(401);
    await request(app).get(`/api/feature_flag/local_evaluation?token=${token}`).set('Authorization', 'Bearer phx_wrong').expect(401);
    const res = await request(app).get(`/api/feature_flag/local_evaluation?token=${token}&send_cohorts`).set('Authorization', `Bearer ${key}`).expect(200);
    expect(res.body.group_type_mapping).toEqual({ '0': 'company' });
    expect((res.body.flags as { key: string }[]).find((flag) => flag.key === 'beta')).toMatchObject({
      key: 'beta',
      active: true,
      deleted: false,
      filters: BOOLEAN_FLAG.filters,
      ensure_experience_continuity: false,
    });
    expect(res.body.cohorts).toEqual(expect.any(Object));
    const etag = res.headers.etag as string;
    await request(app).get(`/flags/definitions?token=${token}&send_cohorts`).set('Authorization', `Bearer ${key}`).set('If-None-Match', etag).expect(304);
  });

  it('serves remote config for a known token and 404 otherwise', async () => {
    const config = await request(app).get(`/array/${token}/config`).expect(200);
    expect(config.body).toMatchObject({ token, hasFeatureFlags: true, supportedCompression: ['gzip', 'gzip-js'] });
    const script = await request(app).get(`/array/${token}/config.js`).expect(200);
    expect(script.text).toContain('_POSTHOG_REMOTE_CONFIG');
    await request(app).get('/array/phc_nope/config').expect(404);
  });

  it('validates flags with PostHog-shaped errors and refuses DELETE', async () => {
    const badSum = await request(app)
      .post(`/api/projects/${projectId}/feature_flags/`)
      .send({
        key: 'bad',
        filters: {
          groups: [],
          multivariate: {
            variants: [
              { key: 'a', rollout_percentage: 60 },
              { key: 'b', rollout_percentage: 30 },
            ],
          },
        },
      })
      .expect(400);
    expect(badSum.body).toMatchObject({ type: 'validation_error', attr: 'filters' });
    const badPayload = await request(app)
      .post(`/api/projects/${projectId}/feature_flags/`)
      .send({ key: 'bad', filters: { groups: [], payloads: { nope: '1' } } })
      .expect(400);
    expect(badPayload.body.attr).toBe('filters');
    const duplicate = await request(app).post(`/api/projects/${projectId}/feature_flags/`).send({ key: 'beta' }).expect(400);
    expect(duplicate.body).toMatchObject({ code: 'unique', attr: 'key' });
    const list = await request(app).get(`/api/projects/${projectId}/feature_flags/`).expect(200);
    expect(list.body).toMatchObject({ count: 5, next: null, previous: null });
    await request(app).delete(`/api/projects/${projectId}/feature_flags/${list.body.results[0].id}/`).expect(405);
  });

  it('quota-limits a project past its monthly flag requests', async () => {
    const limited = buildApp(db.sql, { flagQuotaMonthly: 1 });
    await request(limited).post('/decide/?v=3').send({ token, distinct_id: 'x' }).expect(200);
    const over = await request(limited).post('/decide/?v=3').send({ token, distinct_id: 'x' }).expect(200);
    expect(over.body).toMatchObject({ featureFlags: {}, featureFlagPayloads: {}, errorsWhileComputingFlags: false, quotaLimited: ['feature_flags'] });
  });

  it('rate-limits per token with 429 when configured', async () => {
    const limited = buildApp(db.sql, { rateLimit: { perSecond: 0.001, burst: 1 } });
    await request(limited).post('/flags/?v=2').send({ token, distinct_id: 'x' }).expect(200);
    const over = await request(limited).post('/flags/?v=2').send({ token, distinct_id: 'x' }).expect(429);
    expect(over.body).toEqual({ type: 'validation_error', code: 'rate_limit_exceeded', detail: 'Rate limit exceeded ', attr: null });
  });

  it('keeps experience continuity through hash-key overrides', async () => {
    await createPerson(db.sql, projectId, ['anon-c', 'user-c'], {});
    const continuity = {
      key: 'continuity',
      ensure_experience_continuity: true,
      filters: {
        groups: [{ properties: [], rollout_percentage: 100 }],
        multivariate: { variants: ['a', 'b', 'c', 'd', 'e'].map((key) => ({ key, rollout_percentage: 20 })) },
      },
    };
    const created = await request(app).post(`/api/projects/${projectId}/feature_flags/`).send(continuity).expect(201);
    const first = await decide('/decide/?v=3', { token, distinct_id: 'user-c', $anon_distinct_id: 'anon-c' }).expect(200);
    const rows = await db.sql.query<{ hash_key: string }>(
      'test.overrides',
      'SELECT hash_key FROM feature_flag_hash_key_overrides WHERE feature_flag_key = $1',
      ['continuity'],
    );
    expect(rows.rows.map((row) => row.hash_key)).toEqual(['anon-c']);
    const later = await decide('/decide/?v=3', { token, distinct_id: 'user-c' }).expect(200);
    const personless = await decide('/decide/?v=3', { token, distinct_id: 'ghost', $anon_distinct_id: 'anon-c' }).expect(200);
    expect(later.body.featureFlags.continuity).toBe(first.body.featureFlags.continuity);
    expect(personless.body.featureFlags.continuity).toBe(first.body.featureFlags.continuity);
    await request(app).patch(`/api/projects/${projectId}/feature_flags/${created.body.id}/`).send({ deleted: true }).expect(200);
  });

  it('sees group types added by ingestion within a second', async () => {
    const polled = buildApp(db.sql, { definitionsPollMs: 200 });
    const flag = await request(polled)
      .post(`/api/projects/${projectId}/feature_flags/`)
      .send({ key: 'team-flag', filters: { aggregation_group_type_index: 1, groups: [{ properties: [], rollout_percentage: 100 }] } })
      .expect(201);
    const before = await request(polled)
      .post('/decide/?v=3')
      .send({ token, distinct_id: 'x', groups: { team: 't1' } })
      .expect(200);
    expect(before.body.featureFlags['team-flag']).toBe(false);
    await db.sql.query('test.groupType', `INSERT INTO group_type_mappings (project_id, group_type, group_type_index) VALUES ($1, 'team', 1)`, [projectId]);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const after = await request(polled)
      .post('/decide/?v=3')
      .send({ token, distinct_id: 'x', groups: { team: 't1' } })
      .expect(200);
    expect(after.body.featureFlags['team-flag']).toBe(true);
    await request(polled).patch(`/api/projects/${projectId}/feature_flags/${flag.body.id}/`).send({ deleted: true }).expect(200);
    await db.sql.query('test.groupTypeCleanup', `DELETE FROM group_type_mappings WHERE project_id = $1 AND group_type = 'team'`, [projectId]);
  });

  it('picks up changes made by another process within a second', async () => {
    if (!db.openSecond) return;
    const other = await db.openSecond();
    // Decide on its own connection; management writes through another whose signal this decide never hears.
    const decideOnly = buildApp(other, { definitionsPollMs: 200 });
    await request(decideOnly).post('/decide/?v=3').send({ token, distinct_id: 'x' }).expect(200);
    await db.sql.query(
      'test.insertFlag',
      `INSERT INTO feature_flags (project_id, key, filters) VALUES ($1, 'elsewhere', '{"groups":[{"properties":[],"rollout_percentage":100}]}')`,
      [projectId],
    );
    await db.sql.query(
      'test.bump',
      'INSERT INTO flag_definition_versions (project_id) VALUES ($1) ON CONFLICT (project_id) DO UPDATE SET version = flag_definition_versions.version + 1',
      [projectId],
    );
    const started = Date.now();
    let seen = false;
    while (!seen && Date.now() - started < 1000) {
      const res = await request(decideOnly).post('/decide/?v=3').send({ token, distinct_id: 'x' }).expect(200);
      seen = res.body.featureFlags.elsewhere === true;
      if (!seen) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(seen).toBe(true);
    await db.sql.query('test.cleanup', `UPDATE feature_flags SET deleted = true WHERE key = 'elsewhere'`);
  });
});
