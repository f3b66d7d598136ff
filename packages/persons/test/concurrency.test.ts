import { PersonReads, PersonStore, personUuid } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { describeWith } from '../../../test/support/services';
import { openMigratedPostgres } from '../../postgres/test/support/backends';
import { countRows, createProject, event, postgres } from './support/stores';

// Row locks on a real server (PGlite has one connection, so nothing there runs concurrently): concurrent
// consumers and the management API must never lose each other's writes.
describeWith(postgres)('person writes racing on Postgres', () => {
  const N = 20;
  let database: { sql: Sql; close: () => Promise<void> };
  let persons: PersonStore;
  let reads: PersonReads;

  beforeAll(async () => {
    database = await openMigratedPostgres(postgres.url!, N);
    persons = new PersonStore(database.sql);
    reads = new PersonReads(database.sql);
  });
  afterAll(() => database.close());

  const keys = (count: number, prefix: string) => Object.fromEntries(Array.from({ length: count }, (_, n) => [`${prefix}${n}`, n]));

  it(`${N} concurrent events setting different keys on one person: all keys kept, version ${N}`, async () => {
    const projectId = await createProject(database.sql);
    await persons.processEvent(projectId, event('user', '$pageview', {}));

    await Promise.all(Array.from({ length: N }, (_, n) => persons.processEvent(projectId, event('user', '$pageview', { $set: { [`k${n}`]: n } }))));

    const person = await reads.getByDistinctId(projectId, 'user');
    expect(person).toMatchObject({ version: N, properties: keys(N, 'k') });
  });

  it(`${N} concurrent first events of one distinct id: one person with every key`, async () => {
    const projectId = await createProject(database.sql);

    await Promise.all(Array.from({ length: N }, (_, n) => persons.processEvent(projectId, event('new', '$pageview', { $set: { [`k${n}`]: n } }))));

    expect(await reads.getByDistinctId(projectId, 'new')).toMatchObject({ version: N - 1, properties: keys(N, 'k') });
    expect(await countRows(database.sql, projectId)).toEqual({ persons: 1, distinctIds: 1, overrides: 0 });
  });

  it('management PATCHes racing ingestion events: every write kept', async () => {
    const projectId = await createProject(database.sql);
    await persons.processEvent(projectId, event('user', '$pageview', {}));
    const uuid = personUuid(projectId, 'user');

    await Promise.all(
      Array.from({ length: N }, (_, n) =>
        n % 2 === 0
          ? persons.updateProperties(projectId, uuid, { set: { [`api${n}`]: n } })
          : persons.processEvent(projectId, event('user', '$pageview', { $set: { [`event${n}`]: n } })),
      ),
    );

    const person = await reads.get(projectId, uuid);
    const expected = Object.fromEntries(Array.from({ length: N }, (_, n) => [n % 2 === 0 ? `api${n}` : `event${n}`, n]));
    expect(person).toMatchObject({ version: N, properties: expected });
  });

  it('crossing merges and updates of the same persons settle on one person without losing a write', async () => {
    const projectId = await createProject(database.sql);
    for (const id of ['a', 'b']) await persons.processEvent(projectId, event(id, '$pageview', {}));

    // Opposite merges (a into b, b into a) plus updates on both ids: locks taken in opposite orders
    // deadlock or find a person merged away, and are replayed.
    await Promise.all(
      Array.from({ length: N }, (_, n) => {
        const [into, other] = n % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
        return n % 4 < 2
          ? persons.processEvent(projectId, event(into, '$create_alias', { alias: other, $set: { [`m${n}`]: n } }))
          : persons.processEvent(projectId, event(into, '$pageview', { $set: { [`u${n}`]: n } }));
      }),
    );

    const a = await reads.getByDistinctId(projectId, 'a');
    expect(a?.distinctIds.sort()).toEqual(['a', 'b']);
    const written = Object.keys(a!.properties).filter((key) => key !== '$creator_event_uuid');
    expect(written.sort()).toEqual(Array.from({ length: N }, (_, n) => (n % 4 < 2 ? `m${n}` : `u${n}`)).sort());
    expect(await countRows(database.sql, projectId)).toEqual({ persons: 1, distinctIds: 2, overrides: 1 });
  });
});
