import { GroupStore, MAX_GROUP_TYPES, type GroupEvent } from '@plover/persons';
import { backends, T0, useStores } from './support/stores';

// docs/ingestion.md#groups: group types (≤ 5 per project, indices 0–4) and $groupidentify.
describe.each(backends)('groups on $name', (backend) => {
  const stores = useStores(backend);

  const groupIdentify = (groupType: string, groupKey: unknown, set: Record<string, unknown>, minutes = 0): GroupEvent => ({
    event: '$groupidentify',
    timestamp: new Date(T0.getTime() + minutes * 60_000),
    properties: { $group_type: groupType, $group_key: groupKey, $group_set: set },
  });
  const pageview = (groups: Record<string, unknown>, extra: Record<string, unknown> = {}): GroupEvent => ({
    event: '$pageview',
    timestamp: T0,
    properties: { $groups: groups, ...extra },
  });

  it('$groupidentify assigns the type an index and creates the group: created_at = event time, version 0', async () => {
    const projectId = await stores.newProject();
    await stores.groups.processEvent(projectId, groupIdentify('company', 'acme', { name: 'Acme', seats: 10 }));

    expect(await stores.groups.listGroupTypes(projectId)).toEqual([{ groupType: 'company', groupTypeIndex: 0, nameSingular: null, namePlural: null }]);
    expect(await stores.groups.getGroups(projectId, [{ groupTypeIndex: 0, groupKey: 'acme' }])).toEqual([
      { groupTypeIndex: 0, groupKey: 'acme', properties: { name: 'Acme', seats: 10 }, createdAt: T0, version: 0 },
    ]);
  });

  it('$group_set writes keys that are missing or differ (loosely: 10 and "10" are equal), version + 1 per write', async () => {
    const projectId = await stores.newProject();
    await stores.groups.processEvent(projectId, groupIdentify('company', 'acme', { name: 'Acme', seats: 10 }));
    await stores.groups.processEvent(projectId, groupIdentify('company', 'acme', { name: 'Acme', seats: '10', tags: ['a'] }, 1));
    await stores.groups.processEvent(projectId, groupIdentify('company', 'acme', { tags: ['a'] }, 2));
    await stores.groups.processEvent(projectId, groupIdentify('company', 'acme', { name: 'Acme Inc' }, 3));

    expect(await stores.groups.getGroups(projectId, [{ groupTypeIndex: 0, groupKey: 'acme' }])).toEqual([
      { groupTypeIndex: 0, groupKey: 'acme', properties: { name: 'Acme Inc', seats: 10, tags: ['a'] }, createdAt: T0, version: 2 },
    ]);
  });

  it('resolves $groups to $group_<index> with the stored group, or none for a group never identified', async () => {
    const projectId = await stores.newProject();
    await stores.groups.processEvent(projectId, groupIdentify('company', 42, { name: 'Acme' }));

    const groups = await stores.groups.processEvent(projectId, pageview({ company: 42, team: 'core', ignored: null }));

    expect(groups).toEqual([
      { groupTypeIndex: 0, groupKey: '42', group: { groupTypeIndex: 0, groupKey: '42', properties: { name: 'Acme' }, createdAt: T0, version: 0 } },
      { groupTypeIndex: 1, groupKey: 'core', group: undefined },
    ]);
  });

  it('personless events are in no group, but their $groupidentify still writes the group', async () => {
    const projectId = await stores.newProject();
    const personless = { $process_person_profile: false };

    expect(await stores.groups.processEvent(projectId, pageview({ company: 'acme' }, personless))).toEqual([]);
    const identify = groupIdentify('company', 'acme', { a: 1 });
    await stores.groups.processEvent(projectId, { ...identify, properties: { ...identify.properties, ...personless } });
    expect(await stores.groups.getGroups(projectId, [{ groupTypeIndex: 0, groupKey: 'acme' }])).toHaveLength(1);
  });

  it('allows five group types, indices 0–4 first come first served; a sixth is refused', async () => {
    const projectId = await stores.newProject();
    const types = ['company', 'team', 'project', 'org', 'region', 'sixth'];

    const indices = [];
    for (const type of types) indices.push(await stores.groups.groupTypeIndex(projectId, type));

    expect(indices).toEqual([0, 1, 2, 3, 4, undefined]);
    const groups = await stores.groups.processEvent(projectId, pageview({ sixth: 'x', region: 'eu' }));
    expect(groups).toEqual([{ groupTypeIndex: 4, groupKey: 'eu', group: undefined }]);
    expect(await stores.groups.listGroupTypes(projectId)).toHaveLength(MAX_GROUP_TYPES);
  });

  it('assigns indices race-free when many processes create types at once', async () => {
    const projectId = await stores.newProject();
    const types = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'a', 'b', 'c'];

    // Separate stores: no shared cache, as separate consumers.
    const indices = await Promise.all(types.map((type) => new GroupStore(stores.sql).groupTypeIndex(projectId, type)));

    const mappings = await stores.groups.listGroupTypes(projectId);
    expect(mappings.map((mapping) => mapping.groupTypeIndex)).toEqual([0, 1, 2, 3, 4]);
    const byType = new Map(mappings.map((mapping) => [mapping.groupType, mapping.groupTypeIndex]));
    expect(indices).toEqual(types.map((type) => byType.get(type)));
    expect(indices.filter((index) => index === undefined).length).toBe(types.filter((type) => !byType.has(type)).length);
  });

  it('upserts one group once when the same $groupidentify runs concurrently', async () => {
    const projectId = await stores.newProject();
    const index = (await stores.groups.groupTypeIndex(projectId, 'company'))!;

    await Promise.all(Array.from({ length: 8 }, (_, n) => new GroupStore(stores.sql).identifyGroup(projectId, index, 'acme', { [`k${n}`]: n }, T0)));

    const [group] = await stores.groups.getGroups(projectId, [{ groupTypeIndex: index, groupKey: 'acme' }]);
    expect(group).toMatchObject({ version: 7, properties: Object.fromEntries(Array.from({ length: 8 }, (_, n) => [`k${n}`, n])) });
  });
});
