import request from 'supertest';
import { insertEvents } from '@plover/clickhouse';
import { eventRow } from '../../../packages/insights/test/support/event-row';
import { backends, tenantOf, useWorld } from './support/app';
import { useChdb } from './support/recordings';

type Body = Record<string, unknown>;
const ids = (res: request.Response) => (res.body.results as Body[]).map((a) => a.id);

const clickhouse = useChdb();

describe.each(backends)('actions and annotations on $name', (backend) => {
  const world = useWorld(backend, { clickhouse });

  it('actions: create with steps, list, retrieve under both prefixes, unique live names, soft delete and restore, DELETE → 405', async () => {
    const s = await tenantOf(world);
    const steps = [
      { event: '$pageview', url: '/welcome', url_matching: 'contains' },
      { event: '$autocapture', selector: 'form#signup button', text: 'Create account', text_matching: 'exact' },
      { event: 'user signed up', properties: [{ key: 'plan', value: ['pro'], operator: 'exact', type: 'event' }] },
    ];
    const created = await s.call('post', '/actions/', { name: 'Signed up', description: 'd', tags: ['growth'], steps });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Signed up',
      description: 'd',
      tags: ['growth'],
      deleted: false,
      is_action: true,
      is_calculating: false,
      team_id: s.projectId,
    });
    expect(created.body.steps[0]).toEqual({
      event: '$pageview',
      url: '/welcome',
      url_matching: 'contains',
      selector: null,
      selector_regex: null,
      tag_name: null,
      text: null,
      text_matching: null,
      href: null,
      href_matching: null,
      properties: null,
    });
    expect(typeof created.body.steps[1].selector_regex).toBe('string');
    expect((created.body.created_by as { id: number }).id).toBe(s.userId);
    const id = created.body.id as number;

    const dup = await s.call('post', '/actions/', { name: 'Signed up' });
    expect(dup.status).toBe(400);
    expect(dup.body).toMatchObject({ type: 'validation_error', attr: 'name', detail: `This project already has an action with this name, ID ${id}` });
    expect((await s.call('post', '/actions/', { steps: [] })).body).toMatchObject({ code: 'required', attr: 'name' });
    expect((await s.call('post', '/actions/', { name: '  ' })).body).toMatchObject({ code: 'blank', attr: 'name' });
    const badRegex = await s.call('post', '/actions/', { name: 'x', steps: [{ url: '(', url_matching: 'regex' }] });
    expect(badRegex.body).toMatchObject({ type: 'validation_error', attr: 'steps__0__url' });
    const badProperty = await s.call('post', '/actions/', { name: 'x', steps: [{ properties: [{ key: 'a', operator: 'nope' }] }] });
    expect(badProperty.status).toBe(400);
    expect(String(badProperty.body.attr)).toMatch(/^steps__0__properties/);

    await s.call('post', '/actions/', { name: 'Alpha' });
    const list = await s.call('get', '/actions/');
    expect(list.status).toBe(200);
    expect((list.body.results as Body[]).map((a) => a.name)).toEqual(['Alpha', 'Signed up']);
    expect((await s.call('get', `/actions/${id}/`, undefined, s.key, 'environments')).body.name).toBe('Signed up');

    expect((await s.call('delete', `/actions/${id}/`)).status).toBe(405);
    expect((await s.call('patch', `/actions/${id}/`, { deleted: true })).body.deleted).toBe(true);
    expect((await s.call('get', `/actions/${id}/`)).status).toBe(404);
    expect((await s.call('get', '/actions/')).body.results).toHaveLength(1);
    // The name is free again while deleted; restoring then collides.
    const again = await s.call('post', '/actions/', { name: 'Signed up' });
    expect(again.status).toBe(201);
    expect((await s.call('patch', `/actions/${id}/`, { deleted: false })).status).toBe(400);
    expect((await s.call('patch', `/actions/${again.body.id}/`, { name: 'Renamed' })).body.name).toBe('Renamed');
    expect((await s.call('patch', `/actions/${id}/`, { deleted: false })).body.deleted).toBe(false);

    // Another project cannot see it.
    const other = await tenantOf(world);
    expect((await other.call('get', `/actions/${id}/`)).status).toBe(404);
  });

  it('actions: concurrent creates and renames to one name give one action and 400s naming the field, never a 500', async () => {
    const s = await tenantOf(world);
    const creates = await Promise.all(Array.from({ length: 6 }, () => s.call('post', '/actions/', { name: 'Raced' })));
    expect(creates.map((res) => res.status).sort()).toEqual([201, 400, 400, 400, 400, 400]);
    for (const res of creates.filter((r) => r.status === 400)) expect(res.body).toMatchObject({ type: 'validation_error', code: 'unique', attr: 'name' });

    const others = await Promise.all(['a', 'b', 'c', 'd'].map((name) => s.call('post', '/actions/', { name })));
    const renames = await Promise.all(others.map((res) => s.call('patch', `/actions/${res.body.id as number}/`, { name: 'Renamed' })));
    expect(renames.map((res) => res.status).sort()).toEqual([200, 400, 400, 400]);
    expect(((await s.call('get', '/actions/')).body.results as Body[]).filter((a) => a.name === 'Renamed')).toHaveLength(1);
  });

  it('actions: count of matching events over the last 30 days', async () => {
    const s = await tenantOf(world);
    const now = Date.now();
    const at = (daysAgo: number) => new Date(now - daysAgo * 86_400_000).toISOString().replace('T', ' ').replace('Z', '');
    const person = '00000000-0000-4000-8000-00000000000a';
    let n = 0;
    const event = (name: string, daysAgo: number, properties: Body = {}, chain = '') => ({
      ...eventRow({
        uuid: `00000000-0000-7000-8000-${(++n).toString(16).padStart(12, '0')}`,
        projectId: s.projectId,
        event: name,
        at: at(daysAgo),
        person,
        properties,
      }),
      elements_chain: chain,
    });
    await insertEvents(clickhouse(), [
      event('$pageview', 1, { $current_url: 'https://x.com/welcome' }),
      event('$pageview', 2, { $current_url: 'https://x.com/pricing' }),
      event('$pageview', 40, { $current_url: 'https://x.com/welcome' }),
      event('$autocapture', 3, {}, 'button:nth-child="1"nth-of-type="1"text="Go";form:attr__id="signup"attr_id="signup"nth-child="1"nth-of-type="1"'),
      event('$autocapture', 3, {}, 'button:nth-child="1"nth-of-type="1"text="Go";div:nth-child="1"nth-of-type="1"'),
    ]);
    const created = await s.call('post', '/actions/', {
      name: 'A',
      steps: [
        { event: '$pageview', url: '/welcome' },
        { event: '$autocapture', selector: 'form#signup button' },
      ],
    });
    const count = await s.call('get', `/actions/${created.body.id}/count/`);
    expect(count.status).toBe(200);
    expect(count.body).toEqual({ count: 2 });
  });

  it("actions as query series: their events counted under their name; a deleted action, or another project's, is a 400", async () => {
    const s = await tenantOf(world);
    const other = await tenantOf(world);
    const person = '00000000-0000-4000-8000-00000000000b';
    const today = new Date().toISOString().slice(0, 10);
    const row = (uuid: number, name: string, url: string) => ({
      ...eventRow({
        uuid: `00000000-0000-7000-8000-${uuid.toString(16).padStart(12, '0')}`,
        projectId: s.projectId,
        event: name,
        at: `${today} 00:00:01.000`,
        person,
        properties: { $current_url: url },
      }),
      elements_chain: '',
    });
    await insertEvents(clickhouse(), [
      row(0x901, '$pageview', 'https://x.com/pricing'),
      row(0x902, '$pageview', 'https://x.com/home'),
      row(0x903, 'paid', 'https://x.com/pricing'),
    ]);
    const pricing = (await s.call('post', '/actions/', { name: 'Pricing', steps: [{ url: '/pricing' }] })).body as Body;
    const theirs = (await other.call('post', '/actions/', { name: 'Theirs', steps: [] })).body as Body;
    const trend = (id: unknown) =>
      s.call('post', '/query/', {
        query: { kind: 'TrendsQuery', series: [{ kind: 'ActionsNode', id }], dateRange: { date_from: '-1d' }, trendsFilter: { display: 'BoldNumber' } },
      });
    const ok = await trend(pricing.id);
    expect(ok.status).toBe(200);
    expect(ok.body.results[0]).toMatchObject({ label: 'Pricing', aggregated_value: 2, action: { id: pricing.id, type: 'actions', name: 'Pricing' } });
    const legacy = await s.call('get', `/insights/trend/?actions=${encodeURIComponent(JSON.stringify([{ id: pricing.id }]))}&display=BoldNumber&date_from=-1d`);
    expect(legacy.status).toBe(200);
    expect(legacy.body.result[0]).toMatchObject({ label: 'Pricing', aggregated_value: 2 });
    const foreign = await trend(theirs.id);
    expect(foreign.status).toBe(400);
    expect(foreign.body).toMatchObject({ type: 'validation_error', attr: 'query__series__0__id' });
    const hogql = (where: string) => s.call('post', '/query/', { query: { kind: 'HogQLQuery', query: `select count() from events where ${where}` } });
    for (const where of [`matchesAction(${String(pricing.id)})`, "matchesAction('Pricing')", "matchesAction('Pricing') and event = '$pageview'"]) {
      const res = await hogql(where);
      expect({ where, status: res.status, results: res.body.results }).toEqual({ where, status: 200, results: [[where.includes('event =') ? 1 : 2]] });
    }
    const events = await s.call('post', '/query/', {
      query: { kind: 'EventsQuery', select: ['event'], where: ["not matchesAction('Pricing')"], after: '-2d' },
    });
    expect(events.body.results).toEqual([['$pageview']]);
    for (const where of [`matchesAction(${String(theirs.id)})`, "matchesAction('Theirs')", 'matchesAction(event)']) {
      expect({ where, status: (await hogql(where)).status }).toEqual({ where, status: 400 });
    }
    await s.call('patch', `/actions/${String(pricing.id)}/`, { deleted: true });
    expect((await trend(pricing.id)).status).toBe(400);
  });

  it('actions: scopes', async () => {
    const s = await tenantOf(world);
    const reader = await world.newKey(s.userId, ['action:read']);
    expect((await s.call('get', '/actions/', undefined, reader)).status).toBe(200);
    expect((await s.call('post', '/actions/', { name: 'x' }, reader)).status).toBe(403);
    const annotations = await world.newKey(s.userId, ['annotation:write']);
    expect((await s.call('get', '/actions/', undefined, annotations)).status).toBe(403);
  });

  it('annotations: CRUD, links checked, filters, organization scope seen from every project of the organization', async () => {
    const s = await tenantOf(world);
    const insight = await s.call('post', '/insights/', { name: 'Signups', query: { kind: 'TrendsQuery', series: [] } });
    const one = await s.call('post', '/annotations/', { content: 'Launched pricing v2', date_marker: '2025-03-03T09:00:00Z', scope: 'project' });
    expect(one.status).toBe(201);
    expect(one.body).toMatchObject({
      content: 'Launched pricing v2',
      date_marker: '2025-03-03T09:00:00.000Z',
      scope: 'project',
      creation_type: 'USR',
      dashboard_item: null,
      insight_short_id: null,
      deleted: false,
    });
    const onInsight = await s.call('post', '/annotations/', {
      content: 'deploy',
      date_marker: '2025-03-05T00:00:00Z',
      dashboard_item: insight.body.id,
      creation_type: 'GIT',
    });
    expect(onInsight.body).toMatchObject({ scope: 'dashboard_item', insight_short_id: insight.body.short_id, insight_name: 'Signups', creation_type: 'GIT' });
    const org = await s.call('post', '/annotations/', { content: 'Company offsite', date_marker: '2025-03-01T00:00:00Z', scope: 'organization' });

    const list = await s.call('get', '/annotations/');
    expect((list.body.results as Body[]).map((a) => a.content)).toEqual(['deploy', 'Launched pricing v2', 'Company offsite']);
    expect(ids(await s.call('get', '/annotations/?search=PRICING'))).toEqual([one.body.id]);
    expect(ids(await s.call('get', '/annotations/?scope=organization'))).toEqual([org.body.id]);
    expect(ids(await s.call('get', '/annotations/?date_from=2025-03-02T00:00:00Z&date_to=2025-03-04T00:00:00Z'))).toEqual([one.body.id]);
    expect((await s.call('get', '/annotations/?date_from=yesterday')).status).toBe(400);

    // A second project of the organization sees the organization's annotation only; another organization sees none.
    const sibling = await world.newProject(s.organizationId, 'Sibling');
    const siblingList = await request(world.app).get(`/api/projects/${sibling.id}/annotations/`).set(s.auth);
    expect(ids(siblingList)).toEqual([org.body.id]);
    const stranger = await tenantOf(world);
    expect((await stranger.call('get', '/annotations/')).body.count).toBe(0);
    expect((await stranger.call('get', `/annotations/${org.body.id}/`)).status).toBe(404);
    expect((await stranger.call('post', '/annotations/', { content: 'x', dashboard_item: insight.body.id })).body).toMatchObject({ attr: 'dashboard_item' });

    expect((await s.call('patch', `/annotations/${one.body.id}/`, { content: 'Pricing v2' })).body.content).toBe('Pricing v2');
    expect((await s.call('delete', `/annotations/${one.body.id}/`)).status).toBe(405);
    expect((await s.call('patch', `/annotations/${one.body.id}/`, { deleted: true })).body.deleted).toBe(true);
    expect((await s.call('get', `/annotations/${one.body.id}/`)).status).toBe(404);
    expect((await s.call('get', '/annotations/', undefined, s.key, 'environments')).body.count).toBe(2);

    const reader = await world.newKey(s.userId, ['annotation:read']);
    expect((await s.call('get', '/annotations/', undefined, reader)).status).toBe(200);
    expect((await s.call('post', '/annotations/', { content: 'x' }, reader)).status).toBe(403);
  });
});
