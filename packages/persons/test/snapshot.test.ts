import { PersonStore, PersonWriteConflict, personUuid, type EventPerson, type PersonEvent } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { PersonSnapshot } from '../src/person-snapshot';
import { backends, event, useStores } from './support/stores';

/** The Sql of `stores`, counting the statements sent outside transactions (the unlocked reads). */
function countingReads(sql: Sql): { sql: Sql; reads: () => number } {
  let reads = 0;
  return {
    sql: {
      query: (name, text, params) => {
        reads += 1;
        return sql.query(name, text, params);
      },
      exec: (name, script) => sql.exec(name, script),
      transaction: (fn) => sql.transaction(fn),
      ping: () => sql.ping(),
      close: () => sql.close(),
    },
    reads: () => reads,
  };
}

describe('staging in a person snapshot', () => {
  it('refuses a change decided on a state that another change of the person replaced since (two of its ids at once)', () => {
    const snapshot = new PersonSnapshot(1, true);
    const person = { id: 7, uuid: personUuid(1, 'user'), properties: {}, isIdentified: true, createdAt: new Date(0), version: 3 };
    snapshot.set('user', person);
    snapshot.set('anon', person);
    const seenByUser = snapshot.get('user')!;
    const seenByAnon = snapshot.get('anon')!;

    snapshot.stage(seenByUser, { ...seenByUser, properties: { plan: 'pro' }, version: 4 });
    expect(() => snapshot.stage(seenByAnon, { ...seenByAnon, properties: { utm: 'ad' }, version: 4 })).toThrow(PersonWriteConflict);
    // Decided on the person as staged now, the change goes on top.
    const current = snapshot.get('anon')!;
    snapshot.stage(current, { ...current, properties: { ...current.properties, utm: 'ad' }, version: 5 });
    expect(snapshot.get('user')).toMatchObject({ properties: { plan: 'pro', utm: 'ad' }, version: 5 });
  });
});

// PersonSnapshot: a batch's persons read at once (what the ingestion consumer does per bus batch).
describe.each(backends)('person snapshots on $name', (backend) => {
  const stores = useStores(backend);

  it('answer the events that write nothing without a read of their own', async () => {
    const projectId = await stores.newProject();
    for (const id of ['a', 'b']) await stores.persons.processEvent(projectId, event(id, '$pageview', { $set: { plan: 'free' } }));
    const counting = countingReads(stores.sql);
    const persons = new PersonStore(counting.sql);

    const snapshot = await persons.readPersons(projectId, ['a', 'b', 'a', 'nobody']);
    const results = await Promise.all(
      ['a', 'b', 'a'].map((id) => persons.processEvent(projectId, event(id, '$pageview', { $set: { plan: 'free' } }), snapshot)),
    );
    const personless = await persons.processEvent(projectId, event('nobody', '$pageview', { $process_person_profile: false }), snapshot);

    expect(counting.reads()).toBe(1);
    expect(results.map((result) => result.personUuid)).toEqual([personUuid(projectId, 'a'), personUuid(projectId, 'b'), personUuid(projectId, 'a')]);
    expect(personless).toMatchObject({ mode: 'propertyless', personUuid: personUuid(projectId, 'nobody') });
  });

  it('after a write, the ids and persons it touched are read again: later events see the write', async () => {
    const projectId = await stores.newProject();
    for (const id of ['anon', 'user']) await stores.persons.processEvent(projectId, event(id, '$pageview', { $set: { [id]: true } }));
    const snapshot = await stores.persons.readPersons(projectId, ['anon', 'user']);

    await stores.persons.processEvent(
      projectId,
      event('user', '$identify', { $anon_distinct_id: 'anon', $set: { email: 'u@example.com' } }, { minutes: 1 }),
      snapshot,
    );
    // anon's person was merged away: its next event belongs to user's person, with the merged properties.
    const next = await stores.persons.processEvent(projectId, event('anon', '$pageview', {}, { minutes: 2 }), snapshot);

    expect(next).toMatchObject({ personUuid: personUuid(projectId, 'user'), properties: { anon: true, user: true, email: 'u@example.com' } });
  });

  it('leave the same persons as processing without one', async () => {
    const events = (ids: readonly string[]): PersonEvent[] =>
      ids.flatMap((id, n) => [
        event(id, '$pageview', { $set: { plan: 'free' } }, { minutes: n }),
        event(id, '$pageview', { $set_once: { first: n } }, { minutes: n + 1 }),
        event(id, '$pageview', { $set: { plan: 'pro' }, $unset: ['first'] }, { minutes: n + 2 }),
        event(id, '$pageview', {}, { minutes: n + 3 }),
      ]);
    const ids = ['p1', 'p2', 'p3'];
    const run = async (useSnapshot: boolean): Promise<{ results: EventPerson[]; projectId: number }> => {
      const projectId = await stores.newProject();
      const snapshot = useSnapshot ? await stores.persons.readPersons(projectId, ids) : undefined;
      const results: EventPerson[] = [];
      for (const item of events(ids)) results.push(await stores.persons.processEvent(projectId, item, snapshot));
      return { results, projectId };
    };
    const withSnapshot = await run(true);
    const without = await run(false);

    const comparable = async ({ results, projectId }: { results: EventPerson[]; projectId: number }) => ({
      events: results.map(({ mode, properties, warnings }) => ({ mode, properties, warnings })),
      persons: await Promise.all(
        ids.map(async (id) => {
          const person = await stores.reads.getByDistinctId(projectId, id);
          return { properties: person?.properties, version: person?.version };
        }),
      ),
    });
    const strip = (value: unknown) =>
      JSON.parse(JSON.stringify(value, (key, field: unknown) => (key === '$creator_event_uuid' ? undefined : field))) as unknown;
    expect(strip(await comparable(withSnapshot))).toEqual(strip(await comparable(without)));
  });

  it('reuse the properties read for an earlier batch only while the person is unchanged', async () => {
    const projectId = await stores.newProject();
    for (const id of ['a', 'b', 'c', 'd']) await stores.persons.processEvent(projectId, event(id, '$pageview', { $set: { [id]: true } }));
    const persons = new PersonStore(stores.sql);
    const first = await persons.readPersons(projectId, ['a', 'b', 'c', 'd']);

    // Between the batches, other writers: b changes, c is merged into d, a is deleted.
    await stores.persons.processEvent(projectId, event('b', '$pageview', { $set: { plan: 'pro' } }));
    await stores.persons.processEvent(projectId, event('d', '$identify', { $anon_distinct_id: 'c' }, { minutes: 1 }));
    await stores.persons.deletePerson(projectId, personUuid(projectId, 'a'));
    const second = await persons.readPersons(projectId, ['a', 'b', 'c', 'd']);

    const fresh = await new PersonStore(stores.sql).readPersons(projectId, ['a', 'b', 'c', 'd']);
    for (const id of ['a', 'b', 'c', 'd']) expect(second.get(id)).toEqual(fresh.get(id));
    expect(second.get('a')).toBeNull();
    expect(second.get('b')).toMatchObject({ properties: { b: true, plan: 'pro' }, version: 1 });
    expect(second.get('c')).toMatchObject({ uuid: personUuid(projectId, 'd'), properties: { c: true, d: true } });
    // Unchanged persons' properties are the objects read before, not read again.
    expect(first.get('d')?.properties).not.toBe(second.get('d')?.properties);
    const third = await persons.readPersons(projectId, ['b', 'd']);
    expect(third.get('b')?.properties).toBe(second.get('b')?.properties);
    expect(third.get('d')?.properties).toBe(second.get('d')?.properties);
  });

  it('belong to one project', async () => {
    const projectId = await stores.newProject();
    const snapshot = await stores.persons.readPersons(projectId, ['a']);
    await expect(stores.persons.processEvent(projectId + 1, event('a', '$pageview'), snapshot)).rejects.toThrow(
      `a snapshot of project ${projectId} used for project ${projectId + 1}`,
    );
  });
});
