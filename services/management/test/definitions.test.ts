import request from 'supertest';
import { backends, useWorld } from './support/app';

interface Listing {
  count: number;
  results: Array<{ name: string; is_seen_on_filtered_events?: boolean | null }>;
}

describe.each(backends)('event and property definitions on $name', (backend) => {
  const world = useWorld(backend);
  let t: Awaited<ReturnType<typeof world.tenant>>;
  let base: string;
  const ids: Record<string, string> = {};

  /** Definitions as ingestion leaves them (its upkeep is tested in services/ingestion). */
  async function seed(projectId: number): Promise<void> {
    const events: Array<[string, string | null]> = [
      ['$pageview', '2025-03-03T10:00:00Z'],
      ['signed up', '2025-03-03T08:00:00Z'],
      ['purchase', '2025-03-02T23:00:00Z'],
      ['$autocapture', '2025-03-01T00:00:00Z'],
      ['never seen', null],
    ];
    for (const [name, seen] of events) {
      const row = await world.sql.query<{ id: string }>(
        'test.event',
        'INSERT INTO event_definitions (project_id, name, created_at, last_seen_at) VALUES ($1, $2, COALESCE($3, now()), $3) RETURNING id',
        [projectId, name, seen],
      );
      ids[`event ${name}`] = row.rows[0]!.id;
    }
    const properties: Array<[string, number, number | null, string | null]> = [
      ['$browser', 1, null, 'String'],
      ['$current_url', 1, null, 'String'],
      ['price', 1, null, 'Numeric'],
      ['quantity', 1, null, 'Numeric'],
      ['$feature/beta', 1, null, 'String'],
      ['$set', 1, null, null],
      ['distinct_id', 1, null, 'String'],
      ['plan name', 1, null, 'String'],
      ['email', 2, null, 'String'],
      ['age', 2, null, 'Numeric'],
      ['seats', 3, 0, 'Numeric'],
      ['industry', 3, 1, 'String'],
    ];
    for (const [name, type, index, propertyType] of properties) {
      const row = await world.sql.query<{ id: string }>(
        'test.property',
        `INSERT INTO property_definitions (project_id, name, type, group_type_index, property_type, is_numerical)
         VALUES ($1, $2, $3, $4, $5, $5 IS NOT DISTINCT FROM 'Numeric') RETURNING id`,
        [projectId, name, type, index, propertyType],
      );
      ids[`property ${type} ${name}`] = row.rows[0]!.id;
    }
    await world.sql.query(
      'test.pairs',
      `INSERT INTO event_properties (project_id, event, property) VALUES ($1, 'purchase', 'price'), ($1, 'purchase', 'quantity'), ($1, '$pageview', '$browser')`,
      [projectId],
    );
  }

  beforeAll(async () => {
    t = await world.tenant();
    base = `/api/projects/${t.projectId}`;
    await seed(t.projectId);
  });

  const get = (path: string) => request(world.app).get(`${base}${path}`).set(t.auth);
  const names = (body: Listing) => body.results.map((row) => row.name);

  describe('GET /event_definitions/', () => {
    it('lists the most recently seen days first, by name within a day, never-seen last', async () => {
      const res = await get('/event_definitions/');
      expect(res.status).toBe(200);
      expect(res.body.count).toBe(5);
      expect(names(res.body)).toEqual(['$pageview', 'signed up', 'purchase', '$autocapture', 'never seen']);
      expect(res.body.results[0]).toMatchObject({
        name: '$pageview',
        last_seen_at: '2025-03-03T10:00:00.000Z',
        created_at: '2025-03-03T10:00:00.000Z',
        is_action: false,
        volume_30_day: null,
        tags: [],
        verified: false,
      });
    });

    it('orders by name or by exact time when asked', async () => {
      expect(names((await get('/event_definitions/?ordering=-name')).body)).toEqual(['signed up', 'purchase', 'never seen', '$pageview', '$autocapture']);
      expect(names((await get('/event_definitions/?ordering=last_seen_at')).body)).toEqual([
        'never seen',
        '$autocapture',
        'purchase',
        'signed up',
        '$pageview',
      ]);
    });

    it('filters by search words, by origin and by exclusion', async () => {
      expect(names((await get('/event_definitions/?search=UP%20sign')).body)).toEqual(['signed up']);
      expect(names((await get('/event_definitions/?search=%25')).body)).toEqual([]);
      expect(names((await get('/event_definitions/?event_type=event_custom&ordering=name')).body)).toEqual(['never seen', 'purchase', 'signed up']);
      expect(names((await get('/event_definitions/?event_type=event_posthog&ordering=name')).body)).toEqual(['$autocapture', '$pageview']);
      const excluded = encodeURIComponent(JSON.stringify(['$pageview', 'purchase']));
      expect(names((await get(`/event_definitions/?excluded_properties=${excluded}&ordering=name`)).body)).toEqual(['$autocapture', 'never seen', 'signed up']);
    });

    it('pages with limit and offset, counting them all', async () => {
      const res = await get('/event_definitions/?limit=2&offset=2');
      expect(res.body.count).toBe(5);
      expect(names(res.body)).toEqual(['purchase', '$autocapture']);
      expect(res.body.next).toContain('offset=4');
    });

    it('refuses an exclusion list that is not a JSON array of strings', async () => {
      const res = await get('/event_definitions/?excluded_properties=%5B1%5D');
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ type: 'validation_error', attr: 'excluded_properties' });
    });
  });

  describe('GET /property_definitions/', () => {
    it("lists event properties by default, without PostHog's hidden keys", async () => {
      const res = await get('/property_definitions/');
      expect(res.status).toBe(200);
      expect(names(res.body)).toEqual(['$browser', '$current_url', '$feature/beta', 'plan name', 'price', 'quantity']);
      expect((res.body as Listing).results.find((row) => row.name === 'price')).toMatchObject({
        property_type: 'Numeric',
        is_numerical: true,
        is_seen_on_filtered_events: null,
      });
    });

    it('lists person properties and the properties of one group type', async () => {
      expect(names((await get('/property_definitions/?type=person')).body)).toEqual(['age', 'email']);
      expect(names((await get('/property_definitions/?type=group&group_type_index=1')).body)).toEqual(['industry']);
      expect((await get('/property_definitions/?type=session')).body).toMatchObject({ count: 0, results: [] });
    });

    it('wants group_type_index exactly with type=group', async () => {
      const missing = await get('/property_definitions/?type=group');
      expect([missing.status, missing.body.attr]).toEqual([400, 'group_type_index']);
      const stray = await get('/property_definitions/?type=person&group_type_index=0');
      expect([stray.status, stray.body.attr]).toEqual([400, 'group_type_index']);
    });

    it('filters numerical, feature flag and named properties, and search words', async () => {
      expect(names((await get('/property_definitions/?is_numerical=true')).body)).toEqual(['price', 'quantity']);
      expect(names((await get('/property_definitions/?is_feature_flag=true')).body)).toEqual(['$feature/beta']);
      expect(names((await get('/property_definitions/?is_feature_flag=false&exclude_core_properties=true')).body)).toEqual(['plan name', 'price', 'quantity']);
      expect(names((await get('/property_definitions/?properties=price,%20$browser,unknown')).body)).toEqual(['$browser', 'price']);
      expect(names((await get('/property_definitions/?search=NAME%20plan')).body)).toEqual(['plan name']);
      const excluded = encodeURIComponent(JSON.stringify(['price']));
      expect(names((await get(`/property_definitions/?excluded_properties=${excluded}&is_numerical=true`)).body)).toEqual(['quantity']);
    });

    it('puts the properties seen on event_names first, and with filter_by_event_names lists only those', async () => {
      const events = encodeURIComponent(JSON.stringify(['purchase']));
      const res = await get(`/property_definitions/?event_names=${events}`);
      expect((res.body as Listing).results.map((row) => [row.name, row.is_seen_on_filtered_events])).toEqual([
        ['price', true],
        ['quantity', true],
        ['$browser', false],
        ['$current_url', false],
        ['$feature/beta', false],
        ['plan name', false],
      ]);
      const only = await get(`/property_definitions/?event_names=${events}&filter_by_event_names=true`);
      expect([only.body.count, names(only.body)]).toEqual([2, ['price', 'quantity']]);
    });
  });

  describe('one definition', () => {
    it('retrieves, describes and verifies an event definition, recording who did it', async () => {
      const url = `/event_definitions/${ids['event purchase']}/`;
      expect((await get(url)).body.name).toBe('purchase');
      const res = await request(world.app)
        .patch(`${base}${url}`)
        .set(t.auth)
        .send({ description: 'A sale', tags: ['money', 'money'], verified: true });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ description: 'A sale', tags: ['money'], verified: true, verified_by: { id: t.userId }, updated_by: { id: t.userId } });
      expect(Date.parse(res.body.verified_at as string)).not.toBeNaN();
      const unverified = await request(world.app).patch(`${base}${url}`).set(t.auth).send({ verified: false });
      expect(unverified.body).toMatchObject({ description: 'A sale', verified: false, verified_at: null, verified_by: null });
    });

    it('changes a property type and is_numerical with it', async () => {
      const url = `${base}/property_definitions/${ids['property 1 quantity']}/`;
      const res = await request(world.app).patch(url).set(t.auth).send({ property_type: 'String' });
      expect(res.body).toMatchObject({ name: 'quantity', property_type: 'String', is_numerical: false });
      const back = await request(world.app).put(url).set(t.auth).send({ property_type: 'Numeric', hidden: true });
      expect(back.body).toMatchObject({ property_type: 'Numeric', is_numerical: true, hidden: true });
      expect(names((await get('/property_definitions/?is_numerical=true&exclude_hidden=true')).body)).toEqual(['price']);
      const refused = await request(world.app).patch(url).set(t.auth).send({ property_type: 'Money' });
      expect([refused.status, refused.body.attr]).toEqual([400, 'property_type']);
    });

    it('deletes definitions (204), then answers 404 for them', async () => {
      const url = `${base}/property_definitions/${ids['property 2 age']}/`;
      expect((await request(world.app).delete(url).set(t.auth)).status).toBe(204);
      expect((await request(world.app).get(url).set(t.auth)).status).toBe(404);
      expect((await request(world.app).delete(url).set(t.auth)).status).toBe(404);
      const event = `${base}/event_definitions/${ids['event never seen']}/`;
      expect((await request(world.app).delete(event).set(t.auth)).status).toBe(204);
      expect(names((await get('/event_definitions/')).body)).not.toContain('never seen');
    });

    it("never reads or changes another project's definitions", async () => {
      const other = await world.tenant();
      const url = `/api/projects/${other.projectId}/event_definitions/${ids['event signed up']}/`;
      expect((await request(world.app).get(url).set(other.auth)).status).toBe(404);
      expect((await request(world.app).patch(url).set(other.auth).send({ description: 'x' })).status).toBe(404);
      expect((await request(world.app).delete(url).set(other.auth)).status).toBe(404);
      expect((await request(world.app).get(`/api/projects/${other.projectId}/event_definitions/`).set(other.auth)).body.count).toBe(0);
      expect((await get(`/event_definitions/${ids['event signed up']}/`)).body.description).toBe('');
    });
  });

  it('answers under /api/environments/ too', async () => {
    const res = await request(world.app).get(`/api/environments/${t.projectId}/property_definitions/?type=person`).set(t.auth);
    expect(res.status).toBe(200);
    expect(names(res.body)).toContain('email');
  });
});
