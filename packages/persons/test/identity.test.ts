import { personUuid, type PersonEvent } from '@plover/persons';
import { backends, countRows, distinctIdVersions, event, overrides, T0, useStores } from './support/stores';

// docs/ingestion.md#merges (identify, alias, merge; illegal distinct ids), one test per rule.
describe.each(backends)('identity on $name', (backend) => {
  const stores = useStores(backend);

  const identify = (distinctId: string, anonId: unknown, properties: Record<string, unknown> = {}, minutes = 0): PersonEvent =>
    event(distinctId, '$identify', { $anon_distinct_id: anonId, ...properties }, { minutes });
  const alias = (distinctId: string, aliasId: string, name = '$create_alias'): PersonEvent => event(distinctId, name, { alias: aliasId });

  async function personOf(projectId: number, distinctId: string) {
    const person = await stores.reads.getByDistinctId(projectId, distinctId);
    if (!person) throw new Error(`no person for ${distinctId}`);
    return person;
  }

  /** Two separate, unidentified persons: `a` (created at T0, version 1) and `b` (created at T0 + 1 min, version 0). */
  async function twoPersons(projectId: number): Promise<void> {
    await stores.persons.processEvent(projectId, event('a', '$pageview', { $set: { shared: 'a', onlyA: 1 } }));
    await stores.persons.processEvent(projectId, event('a', '$pageview', { $set: { bump: 1 } }));
    await stores.persons.processEvent(projectId, event('b', '$pageview', { $set: { shared: 'b', onlyB: 1 } }, { minutes: 1 }));
  }

  describe('$identify with $anon_distinct_id', () => {
    it('neither id known: one identified person with both ids, uuid from distinct_id; the anon uuid is overridden to it', async () => {
      const projectId = await stores.newProject();
      const result = await stores.persons.processEvent(projectId, identify('user', 'anon', { $set: { email: 'u@example.com' } }));

      const person = await personOf(projectId, 'anon');
      expect(person).toMatchObject({ uuid: personUuid(projectId, 'user'), isIdentified: true, version: 0, distinctIds: ['user', 'anon'] });
      expect(person.properties).toMatchObject({ email: 'u@example.com' });
      const override = { oldPersonUuid: personUuid(projectId, 'anon'), overridePersonUuid: person.uuid, version: 0 };
      expect(result).toMatchObject({ personUuid: person.uuid, warnings: [], overrides: [override] });
      expect(await overrides(stores.sql, projectId)).toEqual([{ old: override.oldPersonUuid, override: person.uuid, version: 0 }]);
    });

    it("only the anon id known: distinct_id joins the anon's person, which becomes identified", async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('anon', '$pageview', { $set: { a: 1 } }));
      await stores.persons.processEvent(projectId, identify('user', 'anon', { $set: { email: 'u@example.com' } }));

      const person = await personOf(projectId, 'user');
      expect(person).toMatchObject({ uuid: personUuid(projectId, 'anon'), isIdentified: true, version: 1, distinctIds: ['anon', 'user'] });
      expect(person.properties).toMatchObject({ a: 1, email: 'u@example.com' });
      expect(await distinctIdVersions(stores.sql, projectId)).toEqual({ anon: 0, user: 0 });
      // Personless events of `user` (if any) carry its own uuid: they count as this person.
      expect(await overrides(stores.sql, projectId)).toEqual([{ old: personUuid(projectId, 'user'), override: person.uuid, version: 0 }]);
    });

    it("only distinct_id known: the anon id joins distinct_id's person", async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('user', '$pageview', {}));
      await stores.persons.processEvent(projectId, identify('user', 'anon'));

      expect(await personOf(projectId, 'anon')).toMatchObject({
        uuid: personUuid(projectId, 'user'),
        isIdentified: true,
        version: 1,
        distinctIds: ['user', 'anon'],
      });
    });

    it('both ids already on one person: nothing but identification changes; the overrides into it come back for ClickHouse', async () => {
      const projectId = await stores.newProject();
      const aliased = await stores.persons.processEvent(projectId, alias('user', 'anon'));
      await stores.persons.updateProperties(projectId, personUuid(projectId, 'user'), { set: { a: 1 } });
      const before = await personOf(projectId, 'user');

      const result = await stores.persons.processEvent(projectId, identify('user', 'anon'));

      expect(await personOf(projectId, 'user')).toEqual(before);
      expect(aliased.overrides).toHaveLength(1);
      expect(result.overrides).toEqual(aliased.overrides);
      expect(await countRows(stores.sql, projectId)).toEqual({ persons: 1, distinctIds: 2, overrides: 1 });
    });

    it('two persons: merged into the distinct_id person — target wins, older created_at, version max + 1, ids moved, source deleted', async () => {
      const projectId = await stores.newProject();
      await twoPersons(projectId);
      const [a, b] = [await personOf(projectId, 'a'), await personOf(projectId, 'b')];

      const result = await stores.persons.processEvent(projectId, identify('b', 'a', { $set: { email: 'b@example.com' }, $set_once: { shared: 'x' } }, 5));

      const merged = await personOf(projectId, 'a');
      expect(merged).toMatchObject({ id: b.id, uuid: b.uuid, isIdentified: true, createdAt: T0, version: 2, distinctIds: ['a', 'b'] });
      expect(merged.properties).toEqual({ ...a.properties, ...b.properties, email: 'b@example.com' });
      await expect(stores.reads.get(projectId, a.id)).resolves.toBeUndefined();
      expect(await distinctIdVersions(stores.sql, projectId)).toEqual({ a: 1, b: 0 });
      expect(result).toMatchObject({ personUuid: b.uuid, createdAt: T0, overrides: [{ oldPersonUuid: a.uuid, overridePersonUuid: b.uuid, version: 0 }] });
      expect(result.properties).toMatchObject({ shared: 'b', onlyA: 1, onlyB: 1, email: 'b@example.com' });
    });

    it('keeps overrides flat: after a → b and b → c, events of a and of b count as c', async () => {
      const projectId = await stores.newProject();
      for (const id of ['a', 'b', 'c']) await stores.persons.processEvent(projectId, event(id, '$pageview', {}));
      await stores.persons.processEvent(projectId, alias('b', 'a'));
      await stores.persons.processEvent(projectId, event('c', '$merge_dangerously', { alias: 'b' }));

      const c = personUuid(projectId, 'c');
      expect(await overrides(stores.sql, projectId)).toEqual(
        [
          { old: personUuid(projectId, 'a'), override: c, version: 1 },
          { old: personUuid(projectId, 'b'), override: c, version: 0 },
        ].sort((x, y) => x.old.localeCompare(y.old)),
      );
      expect((await personOf(projectId, 'a')).distinctIds.sort()).toEqual(['a', 'b', 'c']);
    });

    it('refuses to merge away an identified person: warning, the event still updates and identifies its own person', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, identify('a', 'a-anon'));
      await stores.persons.processEvent(projectId, event('b', '$pageview', {}));
      const merge = identify('b', 'a', { $set: { email: 'b@example.com' } });

      const result = await stores.persons.processEvent(projectId, merge);

      expect(result.warnings).toEqual([
        { type: 'cannot_merge_already_identified', details: { sourcePersonDistinctId: 'a', targetPersonDistinctId: 'b', eventUuid: merge.uuid } },
      ]);
      expect(await personOf(projectId, 'b')).toMatchObject({
        uuid: personUuid(projectId, 'b'),
        isIdentified: true,
        distinctIds: ['b'],
        properties: { email: 'b@example.com' },
      });
      expect(await personOf(projectId, 'a')).toMatchObject({ uuid: personUuid(projectId, 'a'), distinctIds: ['a', 'a-anon'] });
    });

    it('a bare $identify (no anon id) does not identify the person', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('user', '$identify', { $set: { a: 1 } }));

      expect(await personOf(projectId, 'user')).toMatchObject({ isIdentified: false, properties: { a: 1 } });
    });

    it('the same id on both sides is no merge and no identification (posthog-node aliases a user to itself)', async () => {
      const projectId = await stores.newProject();
      const result = await stores.persons.processEvent(projectId, identify('user', 'user'));

      expect(result.warnings).toEqual([]);
      expect(await personOf(projectId, 'user')).toMatchObject({ isIdentified: false, distinctIds: ['user'] });
    });

    it('replaying a merge changes nothing in Postgres and returns its overrides again (a crash may have lost their copy in ClickHouse)', async () => {
      const projectId = await stores.newProject();
      await twoPersons(projectId);
      const merge = identify('b', 'a', { $set: { email: 'b@example.com' } });
      const merged = await stores.persons.processEvent(projectId, merge);
      const after = await personOf(projectId, 'a');

      const replay = await stores.persons.processEvent(projectId, merge);

      expect(await personOf(projectId, 'a')).toEqual(after);
      expect(replay).toMatchObject({ personUuid: after.uuid, warnings: [], overrides: merged.overrides });
      expect(await countRows(stores.sql, projectId)).toEqual({ persons: 1, distinctIds: 2, overrides: 1 });
    });
  });

  describe('$create_alias', () => {
    it('aliases a new id to a known person (alias unknown)', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('user', '$pageview', {}));
      await stores.persons.processEvent(projectId, alias('user', 'email@example.com'));

      expect(await personOf(projectId, 'email@example.com')).toMatchObject({
        uuid: personUuid(projectId, 'user'),
        isIdentified: true,
        distinctIds: ['user', 'email@example.com'],
      });
    });

    it('aliases a known id to a new distinct_id (distinct_id unknown)', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('email@example.com', '$pageview', {}));
      await stores.persons.processEvent(projectId, alias('user', 'email@example.com'));

      expect(await personOf(projectId, 'user')).toMatchObject({ uuid: personUuid(projectId, 'email@example.com'), isIdentified: true });
    });

    it('merges two unidentified persons like $identify, and ignores an empty alias', async () => {
      const projectId = await stores.newProject();
      await twoPersons(projectId);
      await stores.persons.processEvent(projectId, alias('b', ''));
      expect(await countRows(stores.sql, projectId)).toMatchObject({ persons: 2 });

      await stores.persons.processEvent(projectId, alias('b', 'a'));
      expect(await personOf(projectId, 'a')).toMatchObject({ uuid: personUuid(projectId, 'b'), version: 2, distinctIds: ['a', 'b'] });
    });

    it('refuses to merge away an identified person', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, identify('a', 'a-anon'));
      await stores.persons.processEvent(projectId, event('b', '$pageview', {}));

      const result = await stores.persons.processEvent(projectId, alias('b', 'a'));

      expect(result.warnings.map((warning) => warning.type)).toEqual(['cannot_merge_already_identified']);
      expect(await countRows(stores.sql, projectId)).toMatchObject({ persons: 2 });
    });
  });

  describe('$merge_dangerously', () => {
    it('merges even an identified person away', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, identify('a', 'a-anon', { $set: { who: 'a' } }));
      await stores.persons.processEvent(projectId, identify('b', 'b-anon', { $set: { who: 'b' } }));

      const result = await stores.persons.processEvent(projectId, alias('b', 'a', '$merge_dangerously'));

      expect(result.warnings).toEqual([]);
      expect(await personOf(projectId, 'a-anon')).toMatchObject({
        uuid: personUuid(projectId, 'b'),
        distinctIds: ['a', 'a-anon', 'b', 'b-anon'],
        properties: { who: 'b' },
      });
      expect(await distinctIdVersions(stores.sql, projectId)).toEqual({ a: 1, 'a-anon': 1, b: 0, 'b-anon': 0 });
    });
  });

  // Illegal ids get their own person and events; they only never merge.
  describe('illegal distinct ids', () => {
    const caseInsensitive = ['anonymous', 'guest', 'distinctid', 'distinct_id', 'id', 'not_authenticated', 'email', 'undefined', 'true', 'false'];
    const caseSensitive = ['[object Object]', 'NaN', 'None', 'none', 'null', '0', 'undefined'];
    const illegal = [
      '',
      '   ',
      ...caseInsensitive,
      ...caseInsensitive.map((id) => id.toUpperCase()),
      ...caseSensitive,
      ...[...caseInsensitive, ...caseSensitive].flatMap((id) => [`'${id}'`, `"${id}"`]),
      `"ANONYMOUS"`,
    ];

    it.each(illegal.map((id) => [JSON.stringify(id), id]))('%s as anon id: no merge, a warning, the event still processed', async (_label, id) => {
      const projectId = await stores.newProject();
      if (id.trim() !== '') await stores.persons.processEvent(projectId, event(id, '$pageview', {}));
      const merge = identify('user', id, { $set: { a: 1 } });

      const result = await stores.persons.processEvent(projectId, merge);

      expect(result.warnings).toEqual([
        { type: 'cannot_merge_with_illegal_distinct_id', details: { illegalDistinctId: id, otherDistinctId: 'user', eventUuid: merge.uuid } },
      ]);
      expect(await personOf(projectId, 'user')).toMatchObject({ isIdentified: false, distinctIds: ['user'], properties: { a: 1 } });
    });

    it('an illegal distinct_id (the merge target) is refused and named in the warning', async () => {
      const projectId = await stores.newProject();
      const merge = alias('null', 'anon');

      const result = await stores.persons.processEvent(projectId, merge);

      expect(result.warnings).toEqual([
        { type: 'cannot_merge_with_illegal_distinct_id', details: { illegalDistinctId: 'null', otherDistinctId: 'anon', eventUuid: merge.uuid } },
      ]);
      // The illegal id still gets its person.
      expect(await personOf(projectId, 'null')).toMatchObject({ distinctIds: ['null'] });
    });

    it('an object sent as anon id is stringified to [object Object] and refused (PostHog/posthog#12008)', async () => {
      const projectId = await stores.newProject();
      const result = await stores.persons.processEvent(projectId, identify('user', { id: 1 }));

      expect(result.warnings[0]).toMatchObject({ details: { illegalDistinctId: '[object Object]' } });
    });

    it.each(['NULL', 'Nan', 'NONE', ' anonymous', 'user-null'])('%s is legal: the case-sensitive list is exact, the other not trimmed', async (id) => {
      const projectId = await stores.newProject();
      const result = await stores.persons.processEvent(projectId, identify('user', id));

      expect(result.warnings).toEqual([]);
      expect((await personOf(projectId, 'user')).distinctIds).toEqual(['user', id]);
    });
  });
});
