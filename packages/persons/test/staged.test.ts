import { PersonStore, PersonWriteConflict, personUuid, type BatchPersonStore, type EventPerson, type PersonEvent } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { backends, event, useStores } from './support/stores';

/** `sql` with the name of every statement it runs recorded, and `transaction` where a transaction begins. */
function recording(sql: Sql): { sql: Sql; names: string[] } {
  const names: string[] = [];
  const record = <T>(name: string, run: () => Promise<T>) => {
    names.push(name);
    return run();
  };
  return {
    names,
    sql: {
      query: (name, text, params) => record(name, () => sql.query(name, text, params)),
      exec: (name, script) => sql.exec(name, script),
      transaction: (fn) =>
        record('transaction', () =>
          sql.transaction((tx) =>
            fn({ query: (name, text, params) => record(name, () => tx.query(name, text, params)), exec: (name, script) => tx.exec(name, script) }),
          ),
        ),
      ping: () => sql.ping(),
      close: () => sql.close(),
    },
  };
}

/** What the event row gets from person processing, without the creator uuid (it differs per run). */
function eventView({ mode, properties, warnings }: EventPerson) {
  const { $creator_event_uuid: _creator, ...rest } = properties;
  return { mode, properties: rest, warnings };
}

/** A batch of `projectId`'s `distinctIds` whose property changes are staged until its flush. */
function staging(persons: PersonStore, projectId: number, distinctIds: readonly string[]): Promise<BatchPersonStore> {
  return persons.batch(new Map([[projectId, distinctIds]]), { stageWrites: true });
}

// Staged person changes (a BatchPersonStore with stageWrites, then flush): what the ingestion consumer does per batch.
describe.each(backends)('staged person changes on $name', (backend) => {
  const stores = useStores(backend);

  /** A new project with persons for `ids`, each created by an event without properties. */
  async function projectWith(ids: readonly string[]): Promise<number> {
    const projectId = await stores.newProject();
    for (const id of ids) await stores.persons.processEvent(projectId, event(id, '$pageview'));
    return projectId;
  }

  async function state(projectId: number, distinctId: string) {
    const person = await stores.reads.getByDistinctId(projectId, distinctId);
    if (!person) return undefined;
    const { $creator_event_uuid: _creator, ...properties } = person.properties;
    return { properties, version: person.version, isIdentified: person.isIdentified, distinctIds: [...person.distinctIds].sort() };
  }

  const changes: PersonEvent[] = [
    event('user', '$pageview', { $set: { plan: 'free', n: 0 } }, { minutes: 1 }),
    event('user', '$pageview', { $set_once: { first: 1, plan: 'ignored' } }, { minutes: 2 }),
    event('user', '$pageview', {}, { minutes: 3 }),
    event('user', '$pageview', { $set: { plan: 'pro' }, $unset: ['first'] }, { minutes: 4 }),
    event('user', '$pageview', { $set: { plan: 'pro' } }, { minutes: 5 }),
    event('user', '$pageview', { $process_person_profile: false }, { minutes: 6 }),
    event('user', '$set', { $set: { n: 5 } }, { minutes: 7 }),
  ];

  it('many changes of one person: the same event snapshots and person as one write each, stored by one statement', async () => {
    const one = await projectWith(['user']);
    const oneByOne = [];
    for (const item of changes) oneByOne.push(eventView(await stores.persons.processEvent(one, item)));

    const batched = await projectWith(['user']);
    const { sql, names } = recording(stores.sql);
    const persons = new PersonStore(sql);
    const staged = await staging(persons, batched, ['user']);
    const results: EventPerson[] = [];
    for (const item of changes) results.push(await staged.processEvent(batched, item));
    expect(await state(batched, 'user')).toMatchObject({ properties: {}, version: 0 });
    expect(results.every((result) => result.staged?.stored !== true)).toBe(true);
    await staged.flush();

    expect(results.map(eventView)).toEqual(oneByOne);
    expect(results.every((result) => result.staged?.stored ?? true)).toBe(true);
    expect(await state(batched, 'user')).toEqual(await state(one, 'user'));
    expect(names).toEqual(['persons.findByDistinctIds', 'transaction', 'persons.updateIfUnchanged']);
  });

  it('a management PATCH before the flush: the person is not written (a conflict), the others are', async () => {
    const projectId = await projectWith(['user', 'other']);
    const staged = await staging(stores.persons, projectId, ['user', 'other']);
    const user = await staged.processEvent(projectId, event('user', '$pageview', { $set: { plan: 'pro' } }));
    const other = await staged.processEvent(projectId, event('other', '$pageview', { $set: { plan: 'free' } }));

    await stores.persons.updateProperties(projectId, personUuid(projectId, 'user'), { set: { api: true } });
    await expect(staged.flush()).rejects.toBeInstanceOf(PersonWriteConflict);

    expect([user.staged?.stored, other.staged?.stored]).toEqual([false, true]);
    expect(await state(projectId, 'user')).toMatchObject({ properties: { api: true }, version: 1 });
    expect(await state(projectId, 'other')).toMatchObject({ properties: { plan: 'free' }, version: 1 });
    // Processed again without staging, the event applies after the PATCH: nothing is lost.
    const again = await stores.persons.processEvent(projectId, event('user', '$pageview', { $set: { plan: 'pro' } }));
    expect(again.properties).toMatchObject({ api: true, plan: 'pro' });
    expect(await state(projectId, 'user')).toMatchObject({ properties: { api: true, plan: 'pro' }, version: 2 });
  });

  it('a person deleted before the flush is a conflict, not a write to nobody', async () => {
    const projectId = await projectWith(['user']);
    const staged = await staging(stores.persons, projectId, ['user']);
    const user = await staged.processEvent(projectId, event('user', '$pageview', { $set: { plan: 'pro' } }));

    await stores.persons.deletePerson(projectId, personUuid(projectId, 'user'));
    await expect(staged.flush()).rejects.toBeInstanceOf(PersonWriteConflict);

    expect(user.staged?.stored).toBe(false);
    expect(await state(projectId, 'user')).toBeUndefined();
  });

  it('a merge after staged changes stores them first, under its lock: the same result as one write each', async () => {
    const batch = [
      event('user', '$pageview', { $set: { plan: 'pro', source: 'user' } }, { minutes: 1 }),
      event('anon', '$pageview', { $set: { source: 'anon', utm: 'ad' } }, { minutes: 1 }),
      event('user', '$identify', { $anon_distinct_id: 'anon', $set: { email: 'u@example.com' } }, { minutes: 2 }),
      event('user', '$pageview', { $set: { plan: 'enterprise' } }, { minutes: 3 }),
    ];
    const one = await projectWith(['user', 'anon']);
    const oneByOne = [];
    for (const item of batch) oneByOne.push(eventView(await stores.persons.processEvent(one, item)));

    const batched = await projectWith(['user', 'anon']);
    const staged = await staging(stores.persons, batched, ['user', 'anon']);
    const results: EventPerson[] = [];
    for (const item of batch) results.push(await staged.processEvent(batched, item));
    // The merge stored what was staged before it; only the change after it waits for the flush.
    expect(results.map((result) => result.staged?.stored ?? true)).toEqual([true, true, true, false]);
    await staged.flush();

    expect(results.map(eventView)).toEqual(oneByOne);
    expect(await state(batched, 'user')).toEqual(await state(one, 'user'));
  });

  it('two distinct ids of one person processed at once (two keys of a batch): neither change is lost', async () => {
    const projectId = await projectWith(['user']);
    await stores.persons.processEvent(projectId, event('user', '$identify', { $anon_distinct_id: 'anon' }));
    const staged = await staging(stores.persons, projectId, ['user', 'anon']);
    // The consumer processes keys concurrently: both events read the person before either stages its change.
    const results = await Promise.all([
      staged.processEvent(projectId, event('user', '$pageview', { $set: { plan: 'pro' } })),
      staged.processEvent(projectId, event('anon', '$pageview', { $set: { utm: 'ad' } })),
    ]);
    await staged.flush();

    expect(results.map((result) => result.staged?.stored)).toEqual([true, true]);
    expect(await state(projectId, 'user')).toMatchObject({ properties: { plan: 'pro', utm: 'ad' }, version: 3 });
  });

  it('a batch replayed after a crash before its flush ends as one run does, versions included', async () => {
    const once = await projectWith(['user']);
    const staged = await staging(stores.persons, once, ['user']);
    for (const item of changes) await staged.processEvent(once, item);
    await staged.flush();

    const crashed = await projectWith(['user']);
    // The first delivery stages everything and dies before its flush: nothing of it is stored.
    const lost = await staging(stores.persons, crashed, ['user']);
    for (const item of changes) await lost.processEvent(crashed, item);
    expect(await state(crashed, 'user')).toMatchObject({ properties: {}, version: 0 });
    const redelivery = await staging(stores.persons, crashed, ['user']);
    for (const item of changes) await redelivery.processEvent(crashed, item);
    await redelivery.flush();
    // A redelivery after the flush changes nothing more: every $set finds its value.
    const late = await staging(stores.persons, crashed, ['user']);
    await late.processEvent(crashed, changes[changes.length - 1] as PersonEvent);
    await late.flush();

    expect(await state(crashed, 'user')).toEqual(await state(once, 'user'));
  });

  it('reads through the batch see its staged changes; reads of the store see what is stored', async () => {
    const projectId = await projectWith(['user']);
    const staged = await staging(stores.persons, projectId, ['user']);
    await staged.processEvent(projectId, event('user', '$pageview', { $set: { plan: 'pro' } }, { minutes: 1 }));
    await staged.processEvent(projectId, event('user', '$pageview', { $set_once: { first: 1 } }, { minutes: 2 }));

    const expected = { properties: { plan: 'pro', first: 1 }, version: 2, distinctIds: ['user'] };
    expect(await staged.getPersonByDistinctId(projectId, 'user')).toMatchObject(expected);
    expect(await staged.getPerson(projectId, personUuid(projectId, 'user'))).toMatchObject(expected);
    expect(await state(projectId, 'user')).toMatchObject({ properties: {}, version: 0 });
    await staged.flush();
    expect(await state(projectId, 'user')).toMatchObject({ properties: { plan: 'pro', first: 1 }, version: 2 });
  });

  it('discard drops the staged changes unwritten: the database is untouched and the results relying on them never hold', async () => {
    const projectId = await projectWith(['user', 'other']);
    const before = [await state(projectId, 'user'), await state(projectId, 'other')];
    const { sql, names } = recording(stores.sql);
    const staged = await staging(new PersonStore(sql), projectId, ['user', 'other']);
    const results = [
      await staged.processEvent(projectId, event('user', '$pageview', { $set: { plan: 'pro' } })),
      await staged.processEvent(projectId, event('other', '$pageview', { $unset: ['plan'], $set: { seen: true } })),
    ];

    staged.discard();
    await staged.flush();

    expect(names).toEqual(['persons.findByDistinctIds']);
    expect([await state(projectId, 'user'), await state(projectId, 'other')]).toEqual(before);
    expect(results.map((result) => result.staged?.stored)).toEqual([false, false]);
    expect(await staged.getPersonByDistinctId(projectId, 'user')).toEqual(await stores.reads.getByDistinctId(projectId, 'user'));
  });

  it("flush stores every project's staged changes in one transaction", async () => {
    const first = await projectWith(['user']);
    const second = await projectWith(['user']);
    const { sql, names } = recording(stores.sql);
    const staged = await new PersonStore(sql).batch(
      new Map([
        [first, ['user']],
        [second, ['user']],
      ]),
      { stageWrites: true },
    );
    await staged.processEvent(first, event('user', '$pageview', { $set: { project: 'first' } }));
    await staged.processEvent(second, event('user', '$pageview', { $set: { project: 'second' } }));
    names.length = 0;

    await staged.flush();

    expect(names).toEqual(['transaction', 'persons.updateIfUnchanged']);
    expect(await state(first, 'user')).toMatchObject({ properties: { project: 'first' }, version: 1 });
    expect(await state(second, 'user')).toMatchObject({ properties: { project: 'second' }, version: 1 });
  });
});
