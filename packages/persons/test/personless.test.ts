import { PERSONLESS_CREATED_AT, personUuid } from '@plover/persons';
import { backends, countRows, event, overrides, T0, useStores } from './support/stores';

// docs/ingestion.md#personless-events (posthog-js sends anonymous events personless; the later $identify must
// still merge that anonymous id into the user).
describe.each(backends)('personless events on $name', (backend) => {
  const stores = useStores(backend);
  const personless = { $process_person_profile: false };

  it('write nothing and get the deterministic uuid, created_at 1970-01-01T00:00:05Z and no properties', async () => {
    const projectId = await stores.newProject();

    const result = await stores.persons.processEvent(projectId, event('anon', '$pageview', { ...personless, $set: { a: 1 } }));

    expect(result).toEqual({
      mode: 'propertyless',
      personUuid: personUuid(projectId, 'anon'),
      personId: undefined,
      createdAt: PERSONLESS_CREATED_AT,
      properties: {},
      warnings: [],
      overrides: [],
    });
    expect(await countRows(stores.sql, projectId)).toEqual({ persons: 0, distinctIds: 0, overrides: 0 });
  });

  it("use an existing person's uuid without its properties, and never update it", async () => {
    const projectId = await stores.newProject();
    await stores.persons.processEvent(projectId, event('user', '$pageview', { $set: { a: 1 } }));

    const result = await stores.persons.processEvent(projectId, event('user', '$pageview', { ...personless, $set: { a: 2 } }, { minutes: 1 }));

    expect(result).toMatchObject({ mode: 'propertyless', personUuid: personUuid(projectId, 'user'), createdAt: T0, properties: {} });
    expect(await stores.reads.getByDistinctId(projectId, 'user')).toMatchObject({ version: 0, properties: { a: 1 } });
  });

  it('force-upgrade when the person is more than a minute older than the event: its properties, mode force_upgrade', async () => {
    const projectId = await stores.newProject();
    await stores.persons.processEvent(projectId, event('user', '$pageview', { $set: { a: 1 } }));

    const result = await stores.persons.processEvent(projectId, event('user', '$pageview', { ...personless, $set: { a: 2 } }, { minutes: 2 }));

    expect(result).toMatchObject({ mode: 'force_upgrade', personUuid: personUuid(projectId, 'user'), createdAt: T0, properties: { a: 1 } });
    expect((await stores.reads.getByDistinctId(projectId, 'user'))?.version).toBe(0);
  });

  it('a personless $identify merges nothing', async () => {
    const projectId = await stores.newProject();
    await stores.persons.processEvent(projectId, event('user', '$identify', { ...personless, $anon_distinct_id: 'anon' }));

    expect(await countRows(stores.sql, projectId)).toEqual({ persons: 0, distinctIds: 0, overrides: 0 });
  });

  it('anonymous personless browsing, then $identify: the anon id joins the user and its events count as the user', async () => {
    const projectId = await stores.newProject();
    const browsing = await stores.persons.processEvent(projectId, event('anon', '$pageview', personless));

    const identified = await stores.persons.processEvent(
      projectId,
      event('user', '$identify', { $anon_distinct_id: 'anon', $set: { email: 'u@example.com' } }, { minutes: 3 }),
    );

    const user = await stores.reads.getByDistinctId(projectId, 'anon');
    expect(user).toMatchObject({ uuid: personUuid(projectId, 'user'), isIdentified: true, distinctIds: ['user', 'anon'] });
    // The pageview was stored with anon's own uuid; the override maps it to the user.
    expect(await overrides(stores.sql, projectId)).toEqual([{ old: browsing.personUuid, override: user!.uuid, version: 0 }]);
    expect(identified.overrides).toEqual([{ oldPersonUuid: browsing.personUuid, overridePersonUuid: user!.uuid, version: 0 }]);

    // Later personless events of the anon id (an SDK that has not caught up) carry the user's uuid.
    const later = await stores.persons.processEvent(projectId, event('anon', '$pageview', personless, { minutes: 3 }));
    expect(later).toMatchObject({ mode: 'propertyless', personUuid: user!.uuid, properties: {} });
  });
});
