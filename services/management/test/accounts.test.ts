import request from 'supertest';
import { AuthFailureThrottle, hashPersonalApiKey, hasScope } from '@plover/accounts';
import { flatten, toCsv } from '../src/http/render';
import { createLogger } from '@plover/core';
import { createMetricsRegistry } from '@plover/http';
import { createApp } from '../src/app';
import { backends, bearer, noClickHouse, useWorld } from './support/app';

describe('scopes', () => {
  it('write implies read, * and the legacy empty list grant everything', () => {
    expect(hasScope(['person:write'], 'person:read')).toBe(true);
    expect(hasScope(['person:read'], 'person:write')).toBe(false);
    expect(hasScope(['*'], 'project:write')).toBe(true);
    expect(hasScope([], 'project:write')).toBe(true);
    expect(hasScope(['insight:read'], 'person:read')).toBe(false);
  });
});

describe('csv', () => {
  it('flattens nested objects and lists, sorts the header and quotes per RFC 4180', () => {
    expect(flatten({ a: { b: 1, c: [] }, d: ['x', 'y'], e: {} })).toEqual({ 'a.b': 1, 'd.0': 'x', 'd.1': 'y' });
    const csv = toCsv([
      { z: 'a,b', properties: { email: 'q"uote' } },
      { z: 'line\nbreak', distinct_ids: ['1'] },
    ]);
    expect(csv).toBe('distinct_ids.0,properties.email,z\r\n,"q""uote","a,b"\r\n1,,"line\nbreak"\r\n');
  });
});

describe('auth failure throttle', () => {
  it('answers a wait for a subject’s failures past max, for the most blocked subject, until its window ends', () => {
    let now = 0;
    const throttle = new AuthFailureThrottle(2, 60_000, () => now);
    expect(throttle.fail(['a'])).toBe(0);
    expect(throttle.fail(['a'])).toBe(0);
    now = 30_000;
    expect(throttle.fail(['a'])).toBe(30);
    expect(throttle.fail(['b'])).toBe(0);
    expect(throttle.fail(['b', 'a'])).toBe(30);
    now = 60_000;
    expect(throttle.fail(['a'])).toBe(0);
  });

  it('keeps at most maxEntries counters under a spray of subjects, forgetting the oldest window first', () => {
    const throttle = new AuthFailureThrottle(1, 60_000, () => 0, 1000);
    throttle.fail(['old']);
    for (let i = 0; i < 100_000; i++) throttle.fail([`spray ${i}`]);
    expect(throttle.size).toBe(1000);
    expect(throttle.fail(['spray 99999'])).toBe(60);
    expect(throttle.fail(['old'])).toBe(0);
  });
});

describe.each(backends)('accounts API on $name', (backend) => {
  const world = useWorld(backend);

  describe('authentication', () => {
    it('401 without credentials, with PostHog’s body', async () => {
      const res = await request(world.app).get('/api/users/@me/');
      expect(res.status).toBe(401);
      expect(res.body).toEqual({
        type: 'authentication_error',
        code: 'not_authenticated',
        detail: 'Authentication credentials were not provided.',
        attr: null,
      });
    });

    it('401 for an unknown key', async () => {
      const res = await request(world.app).get('/api/users/@me').set(bearer('phx_nope'));
      expect(res.status).toBe(401);
      expect(res.body).toEqual({
        type: 'authentication_error',
        code: 'authentication_failed',
        detail: 'Personal API key found in request Authorization header is invalid.',
        attr: null,
      });
    });

    it('keys of inactive users do not authenticate', async () => {
      const t = await world.tenant();
      await world.sql.query('t.deactivate', 'UPDATE users SET is_active = false WHERE id = $1', [t.userId]);
      expect((await request(world.app).get('/api/users/@me').set(t.auth)).status).toBe(401);
    });

    it('only the hash is stored and a correct key authenticates', async () => {
      const t = await world.tenant();
      const stored = await world.sql.query<{ n: number }>('t.hash', 'SELECT count(*)::int AS n FROM personal_api_keys WHERE secure_value = $1', [
        hashPersonalApiKey(t.key),
      ]);
      expect(stored.rows[0]!.n).toBe(1);
      const res = await request(world.app).get('/api/users/@me').set(t.auth);
      expect(res.status).toBe(200);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    });

    /** An app of its own with the production throttle (20 failures a minute), optionally behind a trusted proxy. */
    const throttledApp = (trustProxy: boolean) =>
      createApp({
        logger: createLogger({ service: 'test', level: 'silent' }),
        metrics: createMetricsRegistry('test'),
        sql: world.sql,
        clickhouse: noClickHouse,
        trustProxy,
        authThrottle: new AuthFailureThrottle(),
      });

    it('after 20 failures from one address, 429 for its invalid keys while valid keys still pass', async () => {
      const t = await world.tenant();
      const app = throttledApp(false);
      for (let i = 0; i < 20; i++)
        expect(
          (
            await request(app)
              .get('/api/users/@me')
              .set(bearer(`phx_bad${i}`))
          ).status,
        ).toBe(401);
      const bad = await request(app).get('/api/users/@me').set(bearer('phx_bad'));
      expect(bad.status).toBe(429);
      expect(bad.body).toMatchObject({ type: 'throttled', code: 'throttled' });
      expect((await request(app).get('/api/users/@me')).status).toBe(429);
      expect((await request(app).get('/api/users/@me').set(t.auth)).status).toBe(200);
    });

    it('after 20 failures of one key from as many addresses, 429 for that key only', async () => {
      const app = throttledApp(true);
      const retried = 'phx_revokedKeyValue';
      for (let i = 0; i < 20; i++) {
        expect((await request(app).get('/api/users/@me').set(bearer(retried)).set('X-Forwarded-For', `10.0.0.${i}`)).status).toBe(401);
      }
      expect((await request(app).get('/api/users/@me').set(bearer(retried)).set('X-Forwarded-For', '10.9.9.9')).status).toBe(429);
      expect((await request(app).get('/api/users/@me').set(bearer('phx_otherKeyValue')).set('X-Forwarded-For', '10.9.9.9')).status).toBe(401);
    });
  });

  it('405 for a method a known path does not support; 404 JSON for unknown paths', async () => {
    const t = await world.tenant();
    const res = await request(world.app).put('/api/projects/').set(t.auth).send({});
    expect(res.status).toBe(405);
    expect(res.body).toMatchObject({ code: 'method_not_allowed', detail: 'Method "PUT" not allowed.' });
    expect((await request(world.app).put(`/api/projects/${t.projectId}/persons/`).set(t.auth).send({})).status).toBe(405);
    const unknown = await request(world.app).get(`/api/projects/${t.projectId}/nothing-here`).set(t.auth);
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
  });

  describe('/api/users/@me', () => {
    it('returns the user with every basic field, and needs user:read', async () => {
      const t = await world.tenant();
      const res = await request(world.app).get('/api/users/@me/').set(t.auth);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(
        expect.arrayContaining([
          'id',
          'uuid',
          'distinct_id',
          'first_name',
          'last_name',
          'email',
          'is_email_verified',
          'hedgehog_config',
          'role_at_organization',
          'team',
          'organization',
        ]),
      );
      expect(res.body.team.id).toBe(t.projectId);
      const narrow = await world.newKey(t.userId, ['person:read']);
      const denied = await request(world.app).get('/api/users/@me').set(bearer(narrow));
      expect(denied.status).toBe(403);
      expect(denied.body).toEqual({
        type: 'authentication_error',
        code: 'permission_denied',
        detail: "API key missing required scope 'user:read'",
        attr: null,
      });
    });

    it('renders CSV with format=csv and rejects unknown formats', async () => {
      const t = await world.tenant();
      const csv = await request(world.app).get('/api/users/@me?format=csv').set(t.auth);
      expect(csv.status).toBe(200);
      expect(csv.headers['content-type']).toMatch(/^text\/csv/);
      expect(csv.headers['content-disposition']).toMatch(/^attachment; filename=".+\.csv"$/);
      expect(csv.text.split('\r\n')[0]).toContain('email');
      expect((await request(world.app).get('/api/users/@me?format=xml').set(t.auth)).status).toBe(404);
    });
  });

  describe('/api/personal_api_keys', () => {
    it('creates a key shown once, lists it masked, and revokes it at once', async () => {
      const t = await world.tenant();
      const created = await request(world.app)
        .post('/api/personal_api_keys/')
        .set(t.auth)
        .send({ label: 'ci', scopes: ['person:read'] });
      expect(created.status).toBe(201);
      const value = created.body.value as string;
      expect(value).toMatch(/^phx_/);
      expect(created.body.scopes).toEqual(['person:read']);
      const list = await request(world.app).get('/api/personal_api_keys').set(t.auth);
      expect(list.status).toBe(200);
      const listed = (list.body as Array<{ id: string; value: unknown; mask_value: string }>).find((k) => k.id === created.body.id)!;
      expect(listed.value).toBeNull();
      expect(listed.mask_value).toBe(`${value.slice(0, 4)}...${value.slice(-4)}`);
      // The new key works with its scope only.
      expect((await request(world.app).get('/api/personal_api_keys').set(bearer(value))).status).toBe(403);
      expect((await request(world.app).delete(`/api/personal_api_keys/${created.body.id}/`).set(t.auth)).status).toBe(204);
      expect((await request(world.app).get('/api/users/@me').set(bearer(value))).status).toBe(401);
      expect((await request(world.app).delete(`/api/personal_api_keys/${created.body.id}`).set(t.auth)).status).toBe(404);
    });

    it.each([
      [{ scopes: ['*'] }, 'label', 'required'],
      [{ label: 'x'.repeat(41), scopes: ['*'] }, 'label', 'max_length'],
      [{ label: 'x' }, 'scopes', 'required'],
      [{ label: 'x', scopes: ['person:delete'] }, 'scopes', 'invalid_input'],
      [{ label: 'x', scopes: ['nothing:read'] }, 'scopes', 'invalid_input'],
      [{ label: 'x', scopes: ['*'], scoped_teams: ['a'] }, 'scoped_teams__0', 'invalid'],
    ])('400 for %j and nothing stored', async (body, attr, code) => {
      const t = await world.tenant();
      const res = await request(world.app).post('/api/personal_api_keys').set(t.auth).send(body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ type: 'validation_error', attr, code });
      const keys = await world.sql.query<{ n: number }>('t.keys', 'SELECT count(*)::int AS n FROM personal_api_keys WHERE user_id = $1', [t.userId]);
      expect(keys.rows[0]!.n).toBe(1);
    });

    it('415 for a non-JSON body, 400 for malformed JSON', async () => {
      const t = await world.tenant();
      const text = await request(world.app).post('/api/personal_api_keys').set(t.auth).set('Content-Type', 'text/plain').send('label=x');
      expect(text.status).toBe(415);
      expect(text.body.code).toBe('unsupported_media_type');
      const bad = await request(world.app).post('/api/personal_api_keys').set(t.auth).set('Content-Type', 'application/json').send('{"label":');
      expect(bad.status).toBe(400);
      expect(bad.body.type).toBe('validation_error');
    });

    it('refuses an 11th key', async () => {
      const t = await world.tenant();
      for (let i = 0; i < 9; i++) await world.newKey(t.userId, ['*']);
      const res = await request(world.app)
        .post('/api/personal_api_keys')
        .set(t.auth)
        .send({ label: 'x', scopes: ['*'] });
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatch(/only have 10 personal API keys/);
    });
  });

  describe('/api/projects', () => {
    it('lists the user’s projects paginated with absolute URLs', async () => {
      const t = await world.tenant();
      await world.newProject(t.organizationId, 'Second');
      await world.newProject(t.organizationId, 'Third');
      const other = await world.tenant();
      const page = await request(world.app).get('/api/projects/?limit=2').set(t.auth);
      expect(page.status).toBe(200);
      expect(page.body.count).toBe(3);
      expect(page.body.results).toHaveLength(2);
      expect(page.body.results[0]).toEqual(expect.objectContaining({ id: t.projectId, name: 'Project', timezone: 'UTC', organization: t.organizationId }));
      expect(page.body.results[0].api_token).toMatch(/^phc_/);
      // Links name the configured SITE_URL (its default here), never the request's Host header.
      expect(page.body.next).toBe('http://localhost:8000/api/projects/?limit=2&offset=2');
      expect(page.body.previous).toBeNull();
      const last = await request(world.app)
        .get(new URL(page.body.next as string).pathname + new URL(page.body.next as string).search)
        .set(t.auth);
      expect(last.body.results).toHaveLength(1);
      expect(last.body.next).toBeNull();
      expect(last.body.previous).toMatch(/limit=2$/);
      expect((last.body.results as Array<{ id: number }>).map((p) => p.id)).not.toContain(other.projectId);
      const past = await request(world.app).get('/api/projects?offset=50').set(t.auth);
      expect(past.body).toMatchObject({ count: 3, results: [], next: null });
    });

    it.each(['limit=0', 'limit=-1', 'limit=1001', 'limit=abc', 'offset=-1'])('400 for %s', async (query) => {
      const t = await world.tenant();
      const res = await request(world.app).get(`/api/projects?${query}`).set(t.auth);
      expect(res.status).toBe(400);
      expect(res.body.type).toBe('validation_error');
      expect(res.body.attr).toBe(query.split('=')[0]);
    });

    it('retrieves a project under both prefixes; non-integer → 404; other organization → 403; scoped key → 403', async () => {
      const t = await world.tenant();
      const other = await world.tenant();
      for (const prefix of ['projects', 'environments']) {
        const res = await request(world.app).get(`/api/${prefix}/${t.projectId}`).set(t.auth);
        expect(res.status).toBe(200);
        expect(res.body.id).toBe(t.projectId);
      }
      expect((await request(world.app).get('/api/projects/@current/').set(t.auth)).body.id).toBe(t.projectId);
      const nonInteger = await request(world.app).get('/api/projects/abc/').set(t.auth);
      expect(nonInteger.status).toBe(404);
      expect(nonInteger.body.detail).toBe('Project not found.');
      expect((await request(world.app).get('/api/projects/999999/').set(t.auth)).status).toBe(404);
      const foreign = await request(world.app).get(`/api/projects/${other.projectId}/`).set(t.auth);
      expect(foreign.status).toBe(403);
      expect(foreign.body.detail).toBe("You don't have access to the project.");
      const second = await world.newProject(t.organizationId, 'B');
      const scoped = await world.newKey(t.userId, ['*'], { projects: [t.projectId] });
      const denied = await request(world.app).get(`/api/projects/${second.id}/`).set(bearer(scoped));
      expect(denied.status).toBe(403);
      expect(denied.body.detail).toBe(`API key does not have access to the requested project: ID ${second.id}.`);
      expect((await request(world.app).get(`/api/projects/${t.projectId}/`).set(bearer(scoped))).status).toBe(200);
    });

    it('creates projects and rotates tokens for admins only', async () => {
      const t = await world.tenant();
      const created = await request(world.app).post('/api/projects/').set(t.auth).send({ name: 'New', timezone: 'Europe/Berlin' });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ name: 'New', timezone: 'Europe/Berlin', organization: t.organizationId });
      const bad = await request(world.app).post('/api/projects/').set(t.auth).send({ name: 'Bad', timezone: 'Mars/Olympus' });
      expect(bad.status).toBe(400);
      expect(bad.body.attr).toBe('timezone');
      const rotated = await request(world.app).patch(`/api/projects/${t.projectId}/reset_token/`).set(t.auth);
      expect(rotated.status).toBe(200);
      expect(rotated.body.api_token).toMatch(/^phc_/);
      const member = await world.newUser(t.organizationId, 'member', t.projectId);
      const memberKey = bearer(await world.newKey(member.id, ['*']));
      expect((await request(world.app).patch(`/api/projects/${t.projectId}/reset_token/`).set(memberKey)).status).toBe(403);
      expect((await request(world.app).post('/api/projects/').set(memberKey).send({ name: 'X' })).status).toBe(403);
      const readOnly = bearer(await world.newKey(t.userId, ['project:read']));
      const denied = await request(world.app).post('/api/projects/').set(readOnly).send({ name: 'X' });
      expect(denied.body.detail).toBe("API key missing required scope 'project:write'");
    });

    it('changes name, timezone and session replay settings for admins, in one write decide hears of', async () => {
      const t = await world.tenant();
      const path = `/api/projects/${t.projectId}/`;
      const before = await request(world.app).get(path).set(t.auth);
      expect(before.body).toMatchObject({ session_recording_opt_in: false, session_recording_retention_period: '30d', capture_console_log_opt_in: true });
      const version = async () =>
        (await world.sql.query<{ version: number }>('test.version', 'SELECT version FROM flag_definition_versions WHERE project_id = $1', [t.projectId]))
          .rows[0]?.version ?? 0;
      const versionBefore = await version();

      const changed = await request(world.app)
        .patch(`/api/environments/${t.projectId}/`)
        .set(t.auth)
        .send({ name: 'Renamed', timezone: 'Asia/Tokyo', session_recording_opt_in: true, session_recording_sample_rate: 0.5, api_token: 'ignored', id: 1 });
      expect(changed.status).toBe(200);
      expect(changed.body).toMatchObject({
        id: t.projectId,
        name: 'Renamed',
        timezone: 'Asia/Tokyo',
        session_recording_opt_in: true,
        session_recording_sample_rate: 0.5,
      });
      expect(changed.body.api_token).toBe(before.body.api_token);
      expect((await request(world.app).get(path).set(t.auth)).body).toMatchObject({ name: 'Renamed', session_recording_opt_in: true });
      expect(await version()).toBe(versionBefore + 1);

      const put = await request(world.app).put(path).set(t.auth).send({ session_recording_retention_period: '90d' });
      expect(put.body).toMatchObject({ name: 'Renamed', session_recording_opt_in: true, session_recording_retention_period: '90d' });

      for (const [body, attr] of [
        [{ session_recording_sample_rate: 2 }, 'session_recording_sample_rate'],
        [{ session_recording_retention_period: '10y' }, 'session_recording_retention_period'],
        [{ session_recording_url_trigger_config: [{ url: '(', matching: 'regex' }] }, 'session_recording_url_trigger_config__0__url'],
        [{ timezone: 'Mars/Olympus' }, 'timezone'],
        [{ name: '  ' }, 'name'],
        [{ name: 'ok', session_recording_opt_in: 'yes' }, 'session_recording_opt_in'],
      ] as const) {
        const bad = await request(world.app).patch(path).set(t.auth).send(body);
        expect([bad.status, bad.body.type, bad.body.attr]).toEqual([400, 'validation_error', attr]);
      }
      // A rejected change leaves everything as it was, the fields it would have changed alongside included.
      expect((await request(world.app).get(path).set(t.auth)).body).toMatchObject({ name: 'Renamed', session_recording_opt_in: true });

      const member = await world.newUser(t.organizationId, 'member', t.projectId);
      expect(
        (
          await request(world.app)
            .patch(path)
            .set(bearer(await world.newKey(member.id, ['*'])))
            .send({ name: 'X' })
        ).status,
      ).toBe(403);
      const readOnly = await request(world.app)
        .patch(path)
        .set(bearer(await world.newKey(t.userId, ['project:read'])))
        .send({ name: 'X' });
      expect(readOnly.body.detail).toBe("API key missing required scope 'project:write'");
      expect((await request(world.app).get(path).set(t.auth)).body.name).toBe('Renamed');
    });
  });
});
