import request from 'supertest';
import type { Credentials } from '@plover/accounts';
import { distinctIdOf } from '@plover/contracts';
import { backends, buildApp, createGroup, createPerson, setup, type Database } from './support/harness';

const PERSON_FLAG = {
  key: 'pro-users',
  filters: { groups: [{ properties: [{ key: 'plan', type: 'person', value: ['pro'], operator: 'exact' }], rollout_percentage: 100 }] },
};
const GROUP_FLAG = {
  key: 'company-flag',
  filters: {
    aggregation_group_type_index: 0,
    groups: [{ properties: [{ key: 'size', type: 'group', group_type_index: 0, value: 100, operator: 'gt' }], rollout_percentage: 100 }],
  },
};
// A hundred conditions, each a different pattern that backtracks exponentially on REGEX_VALUE.
const REGEX_FLAG = {
  key: 'regex-flag',
  filters: {
    groups: Array.from({ length: 100 }, (_, i) => ({
      properties: [{ key: 'p', type: 'person', value: `^(a|a)*\\1(?:b{${i}})?$`, operator: 'regex' }],
      rollout_percentage: 100,
    })),
  },
};
const REGEX_VALUE = `${'a'.repeat(64)}!`;
const CONTINUITY_FLAG = {
  key: 'continuity',
  ensure_experience_continuity: true,
  filters: { groups: [{ properties: [], rollout_percentage: 50 }] },
};

describe.each(backends)('decide with hostile input on $name', (backend) => {
  let db: Database;
  let credentials: Credentials;
  let token: string;
  let app: ReturnType<typeof buildApp>;

  beforeAll(async () => {
    db = await backend.open();
    credentials = await setup(db.sql);
    token = credentials.project.api_token;
    const projectId = credentials.project.id;
    app = buildApp(db.sql, { lookupTimeoutMs: 2000 });
    await createPerson(db.sql, projectId, ['pro-user'], { plan: 'pro' });
    await createGroup(db.sql, projectId, 'company', 0, 'acme', { size: 500 });
    // Stored directly: these tests are about decide's requests, whatever the management API accepts.
    for (const flag of [PERSON_FLAG, GROUP_FLAG, CONTINUITY_FLAG, REGEX_FLAG]) {
      await db.sql.query('test.insertFlag', 'INSERT INTO feature_flags (project_id, key, filters, ensure_experience_continuity) VALUES ($1, $2, $3, $4)', [
        projectId,
        flag.key,
        JSON.stringify(flag.filters),
        'ensure_experience_continuity' in flag,
      ]);
    }
  });
  afterAll(() => db.close());

  const post = (path: string, body: unknown) => request(app).post(path).set('Content-Type', 'application/json').send(JSON.stringify(body));

  it('answers a 20 MiB body built to make a NaN rewrite backtrack, valid or not', async () => {
    const padding = ' '.repeat(20 * 1024 * 1024 - 200);
    const invalid = await request(app).post('/flags/?v=2').set('Content-Type', 'text/plain').send(`{"a":[${padding}NaN x]}`).expect(400);
    expect(invalid.body).toMatchObject({ type: 'validation_error', code: 'malformed_data' });
    const valid = await request(app)
      .post('/flags/?v=2')
      .set('Content-Type', 'text/plain')
      .send(`{"token":"${token}","distinct_id":"pro-user","a":[${padding}NaN]}`)
      .expect(200);
    expect(valid.body.flags['pro-users'].enabled).toBe(true);
  });

  it('answers a token with a NUL or another bad shape with 401, never 5xx', async () => {
    for (const bad of [`${token}\u0000`, '\u0000', 'phc_\u0000x', 'x'.repeat(1000), 'phc_é']) {
      for (const path of ['/decide/?v=3', '/flags/?v=2']) {
        const res = await post(path, { token: bad, distinct_id: 'x' });
        expect([path, res.status, res.body]).toEqual([path, 401, expect.objectContaining({ type: 'authentication_error', code: 'invalid_api_key' })]);
      }
      const query = encodeURIComponent(bad);
      const surveys = await request(app).get(`/api/surveys/?token=${query}`);
      expect([surveys.status, surveys.body.type]).toEqual([401, 'authentication_error']);
      const features = await request(app).get(`/api/early_access_features/?token=${query}`);
      expect([features.status, features.body.type]).toEqual([401, 'authentication_error']);
      const local = await request(app)
        .get(`/api/feature_flag/local_evaluation?token=${query}`)
        .set('Authorization', `Bearer ${credentials.personal_api_key.value}`);
      expect([local.status, local.body.type]).toEqual([401, 'authentication_error']);
      await request(app).get(`/array/${query}/config`).expect(404);
      await request(app).get(`/array/${query}/config.js`).expect(404);
    }
  });

  it('spends a bounded regex budget on an anonymous request against a 100-group backtracking flag, which does not match', async () => {
    const undecided = async () => {
      const text = (await request(app).get('/metrics').expect(200)).text;
      return Number(/^plover_decide_regex_undecided_total(?:\{[^}]*\})? (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    const before = await undecided();
    const res = await post('/flags/?v=2', { token, distinct_id: 'anonymous-1', person_properties: { p: REGEX_VALUE } }).expect(200);
    // As in PostHog, a match that could not be decided is a non-match, not an error.
    expect(res.body.errorsWhileComputingFlags).toBe(false);
    expect(res.body.flags['regex-flag']).toMatchObject({ enabled: false, reason: { code: 'no_condition_match' } });
    // All 100 conditions were left undecided: at most two ran (each out of its time), the rest were never run.
    expect((await undecided()) - before).toBe(100);
  });

  it('answers a local-evaluation project_id beyond Postgres integers with 400, not 5xx', async () => {
    const key = credentials.personal_api_key.value;
    for (const id of ['2147483648', '99999999999999999999', '1'.repeat(400)]) {
      const res = await request(app).get(`/api/feature_flag/local_evaluation?project_id=${id}`).set('Authorization', `Bearer ${key}`);
      expect([id, res.status, res.body.type]).toEqual([id, 400, 'validation_error']);
    }
    await request(app).get(`/api/feature_flag/local_evaluation?project_id=${credentials.project.id}`).set('Authorization', `Bearer ${key}`).expect(200);
  });

  it('evaluates a distinct_id, an $anon_distinct_id or a group key with a NUL without a lookup error', async () => {
    const res = await post('/flags/?v=2', { token, distinct_id: 'pro\u0000user', $anon_distinct_id: 'anon\u0000', groups: { company: 'ac\u0000me' } }).expect(
      200,
    );
    expect(res.body.errorsWhileComputingFlags).toBe(false);
    expect(res.body.flags['pro-users']).toMatchObject({ enabled: false, reason: { code: 'no_condition_match' } });
    expect(res.body.flags['company-flag']).toMatchObject({ enabled: false });
    expect(res.body.flags.continuity.failed).toBeUndefined();
  });

  it('looks a person up under the id capture stored: 200 characters counted as code points, unpaired surrogates as U+FFFD', async () => {
    const astral = '\u{1F600}'.repeat(150); // 300 UTF-16 units, 150 characters: capture keeps it whole
    const surrogate = 'sur\ud800rogate';
    for (const sent of [astral, surrogate]) {
      await createPerson(db.sql, credentials.project.id, [distinctIdOf(sent)!], { plan: 'pro' });
      const res = await post('/flags/?v=2', { token, distinct_id: sent }).expect(200);
      expect([sent, res.body.flags['pro-users'].enabled]).toEqual([sent, true]);
    }
  });

  it('refuses known fields of the wrong type with 400 naming the field, and ignores unknown ones', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ groups: 'acme' }, 'groups'],
      [{ $groups: ['acme'] }, '$groups'],
      [{ groups: { company: { id: 1 } } }, 'groups__company'],
      [{ person_properties: [1] }, 'person_properties'],
      [{ $properties: 'plan' }, '$properties'],
      [{ group_properties: { company: 5 } }, 'group_properties__company'],
      [{ flag_keys_to_evaluate: ['beta', 1] }, 'flag_keys_to_evaluate__1'],
      [{ disable_flags: 'yes' }, 'disable_flags'],
      [{ geoip_disable: 1 }, 'geoip_disable'],
      [{ distinct_id: { id: 1 } }, 'distinct_id'],
      [{ $anon_distinct_id: ['a'] }, '$anon_distinct_id'],
      [{ api_key: 5 }, 'api_key'],
    ];
    for (const [fields, attr] of cases) {
      const res = await post('/flags/?v=2', { token, distinct_id: 'pro-user', ...fields });
      expect([attr, res.status, res.body]).toEqual([attr, 400, { type: 'validation_error', code: 'invalid_input', detail: expect.any(String), attr }]);
    }
    const lenient = await post('/flags/?v=2', { token, distinct_id: 'pro-user', groups: null, person_properties: null, anything: { else: [1] } }).expect(200);
    expect(lenient.body.flags['pro-users'].enabled).toBe(true);
  });

  it('refuses person or group properties nested past 128 levels with 400, not a stack overflow', async () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    for (const fields of [`"person_properties": {"plan": ${deep}}`, `"groups": {"company": "acme"}, "group_properties": {"company": {"size": ${deep}}}`]) {
      const res = await request(app)
        .post('/flags/?v=2')
        .set('Content-Type', 'application/json')
        .send(`{"token": "${token}", "distinct_id": "pro-user", ${fields}}`);
      expect([res.status, res.body.type]).toEqual([400, 'validation_error']);
    }
  });
});
