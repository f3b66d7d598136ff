import { MAX_PROPERTIES_BYTES, personUuid } from '@plover/persons';
import { backends, countRows, event, T0, useStores } from './support/stores';

// docs/ingestion.md#persons (creation; $set / $set_once / $unset), one test per rule.
describe.each(backends)('person properties on $name', (backend) => {
  const stores = useStores(backend);

  async function personOf(projectId: number, distinctId: string) {
    const person = await stores.reads.getByDistinctId(projectId, distinctId);
    if (!person) throw new Error(`no person for ${distinctId}`);
    return person;
  }

  describe('creation', () => {
    it('creates the person on first sight: uuid from the distinct id, created_at = event time, version 0, $set beating $set_once', async () => {
      const projectId = await stores.newProject();
      const first = event('user-1', '$pageview', {
        $set: { plan: 'pro', email: 'a@example.com' },
        $set_once: { plan: 'free', signup: 'web' },
        $unset: ['email'],
      });

      const result = await stores.persons.processEvent(projectId, first);

      const person = await personOf(projectId, 'user-1');
      expect(person).toMatchObject({
        uuid: personUuid(projectId, 'user-1'),
        createdAt: T0,
        version: 0,
        isIdentified: false,
        distinctIds: ['user-1'],
        // $unset is not applied at creation.
        properties: { plan: 'pro', signup: 'web', email: 'a@example.com', $creator_event_uuid: first.uuid },
      });
      expect(result).toMatchObject({ mode: 'full', personUuid: person.uuid, personId: person.id, createdAt: T0, warnings: [], overrides: [] });
    });

    it('re-processing the creating event changes nothing (at-least-once delivery)', async () => {
      const projectId = await stores.newProject();
      const first = event('user-1', '$pageview', { $set: { plan: 'pro' }, $set_once: { signup: 'web' } });
      await stores.persons.processEvent(projectId, first);
      await stores.persons.processEvent(projectId, first);

      expect(await personOf(projectId, 'user-1')).toMatchObject({ version: 0, properties: { plan: 'pro', signup: 'web', $creator_event_uuid: first.uuid } });
      expect(await countRows(stores.sql, projectId)).toEqual({ persons: 1, distinctIds: 1, overrides: 0 });
    });
  });

  describe('updates', () => {
    it('$set_once applies only to keys the person lacks; a key holding null counts as set', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { a: 1, b: null } }));
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set_once: { a: 2, b: 2, c: 2 } }));

      expect(await personOf(projectId, 'u')).toMatchObject({ version: 1, properties: { a: 1, b: null, c: 2 } });
    });

    it('$set overwrites values that differ and overrides a $set_once of the same key in the same event', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { a: 1, b: 1 } }));
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { a: 2, c: 'set' }, $set_once: { c: 'once' } }));

      expect(await personOf(projectId, 'u')).toMatchObject({ version: 1, properties: { a: 2, b: 1, c: 'set' } });
    });

    it('$unset deletes only keys that existed before the event: a key in both $set and $unset is deleted if it existed, kept if new', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { old: 1, gone: 1 } }));
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { old: 2, fresh: 2 }, $unset: ['old', 'fresh', 'gone', 'missing'] }));

      const person = await personOf(projectId, 'u');
      expect(person.properties).toEqual({ fresh: 2, $creator_event_uuid: expect.any(String) });
      expect(person.version).toBe(1);
    });

    it('$unset may be an object, whose keys are unset', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { a: 1, b: 1 } }));
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $unset: { a: null } }));

      expect((await personOf(projectId, 'u')).properties).toEqual({ b: 1, $creator_event_uuid: expect.any(String) });
    });

    it('writes only changes: equal values (objects compared as JSON), present $set_once keys and absent $unset keys bump nothing', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { plan: { tier: 'pro', seats: [1, 2] }, n: 1 } }));
      await stores.persons.processEvent(
        projectId,
        event('u', '$set', { $set: { plan: { seats: [1, 2], tier: 'pro' }, n: 1 }, $set_once: { n: 5 }, $unset: ['missing'] }),
      );

      expect((await personOf(projectId, 'u')).version).toBe(0);
    });

    it('each write bumps the version by one', async () => {
      const projectId = await stores.newProject();
      for (let n = 0; n < 4; n += 1) await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { n } }));

      expect(await personOf(projectId, 'u')).toMatchObject({ version: 3, properties: { n: 3 } });
    });

    it('applies updates in ingestion order, not event time', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { plan: 'new' } }, { minutes: 10 }));
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { plan: 'old' } }, { minutes: 0 }));

      expect((await personOf(projectId, 'u')).properties.plan).toBe('old');
    });

    it.each(['$exception', '$$heatmap', '$groupidentify', '$group_identify'])('%s never updates the person', async (name) => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { a: 1 } }));
      const result = await stores.persons.processEvent(projectId, event('u', name, { $set: { a: 2 }, $set_once: { b: 2 }, $unset: ['a'] }));

      expect(await personOf(projectId, 'u')).toMatchObject({ version: 0, properties: { a: 1 } });
      expect(result.properties).toMatchObject({ a: 1 });
    });

    it('stores NUL and unpaired surrogates as U+FFFD instead of failing the write', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u\u0000x', '$pageview', { $set: { 'k\u0000': 'a\u0000b', lone: 'x\ud800' } }));
      await stores.persons.processEvent(projectId, event('u\u0000x', '$pageview', { $set: { 'k\u0000': 'a\u0000b' } }));

      expect(await personOf(projectId, 'u\ufffdx')).toMatchObject({ version: 0, properties: { 'k\ufffd': 'a\ufffdb', lone: 'x\ufffd' } });
    });
  });

  // Write filtering: a change made only to these properties, on an ordinary event, is not written.
  describe.each([
    { group: 'URL / navigation', key: '$current_url' },
    { group: 'screen / viewport', key: '$viewport_width' },
    { group: 'browser / device', key: '$browser_version' },
    { group: 'geo', key: '$geoip_latitude' },
  ])('churning properties: $group', ({ key }) => {
    it(`a change to ${key} alone is not written on an ordinary event, but shows on the event and is stored with the next write`, async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { [key]: 'v1' } }));

      const skipped = await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { [key]: 'v2' } }));
      expect(skipped.properties[key]).toBe('v2');
      expect(await personOf(projectId, 'u')).toMatchObject({ version: 0, properties: { [key]: 'v1' } });

      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { [key]: 'v3', plan: 'pro' } }));
      expect(await personOf(projectId, 'u')).toMatchObject({ version: 1, properties: { [key]: 'v3', plan: 'pro' } });
    });

    it(`${key} is written when new, and on person events ($identify, $set)`, async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', {}));
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { [key]: 'v1' } }));
      expect(await personOf(projectId, 'u')).toMatchObject({ version: 1, properties: { [key]: 'v1' } });

      await stores.persons.processEvent(projectId, event('u', '$set', { $set: { [key]: 'v2' } }));
      await stores.persons.processEvent(projectId, event('u', '$identify', { $set: { [key]: 'v3' } }));
      expect(await personOf(projectId, 'u')).toMatchObject({ version: 3, properties: { [key]: 'v3' } });
    });
  });

  it.each(['$geoip_country_name', '$geoip_city_name'])('%s is not churning: a change is written', async (key) => {
    const projectId = await stores.newProject();
    await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { [key]: 'a' } }));
    await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { [key]: 'b' } }));

    expect(await personOf(projectId, 'u')).toMatchObject({ version: 1, properties: { [key]: 'b' } });
  });

  it("gives the event the person's properties after it, with the event's $set on top", async () => {
    const projectId = await stores.newProject();
    await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { a: 1, b: 1 } }));
    const result = await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { b: 2, c: 2 }, $set_once: { d: 1 }, $unset: ['a', 'c'] }));

    // c was new, so the person keeps it; a key both set and unset would still show with its $set value.
    expect(result.properties).toEqual({ b: 2, c: 2, d: 1, $creator_event_uuid: expect.any(String) });
  });

  describe('size cap (640 KiB)', () => {
    const big = 'x'.repeat(MAX_PROPERTIES_BYTES);

    it('refuses an update that would exceed it with a warning, keeping the stored properties and version', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { a: 1 } }));
      const oversized = event('u', '$pageview', { $set: { blob: big } });

      const result = await stores.persons.processEvent(projectId, oversized);

      expect(result.warnings).toEqual([
        {
          type: 'person_properties_size_violation',
          details: {
            personUuid: personUuid(projectId, 'u'),
            distinctId: 'u',
            eventUuid: oversized.uuid,
            sizeBytes: expect.any(Number),
            maxBytes: MAX_PROPERTIES_BYTES,
          },
        },
      ]);
      const [warning] = result.warnings;
      expect(warning?.type === 'person_properties_size_violation' && warning.details.sizeBytes).toBeGreaterThan(MAX_PROPERTIES_BYTES);
      expect(await personOf(projectId, 'u')).toMatchObject({ version: 0, properties: { a: 1 } });
    });

    it('creates a person whose first properties exceed it with only $creator_event_uuid, and a warning', async () => {
      const projectId = await stores.newProject();
      const first = event('u', '$pageview', { $set: { blob: big } });

      const result = await stores.persons.processEvent(projectId, first);

      expect(result.warnings.map((warning) => warning.type)).toEqual(['person_properties_size_violation']);
      expect(await personOf(projectId, 'u')).toMatchObject({ version: 0, properties: { $creator_event_uuid: first.uuid } });
    });

    it('accepts properties just under it', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', {}));
      const current = JSON.stringify((await personOf(projectId, 'u')).properties);
      // {...current, "blob":"…"}: the key, quotes, colon and comma take 10 bytes.
      const fits = 'x'.repeat(MAX_PROPERTIES_BYTES - current.length - 10);

      const result = await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { blob: fits } }));

      expect(result.warnings).toEqual([]);
      expect((await personOf(projectId, 'u')).version).toBe(1);
    });
  });

  describe('management PATCH (updateProperties)', () => {
    it('merges properties with $set semantics and bumps the version, by id or uuid; equal values change nothing', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { a: 1, $browser: 'Firefox' } }));
      const { id, uuid } = await personOf(projectId, 'u');

      const patched = await stores.persons.updateProperties(projectId, id, { set: { b: 2, $browser: 'Chrome' } });
      expect(patched).toMatchObject({
        outcome: 'updated',
        person: { id, uuid, version: 1, distinctIds: ['u'], properties: { a: 1, b: 2, $browser: 'Chrome' } },
      });

      const again = await stores.persons.updateProperties(projectId, uuid.toUpperCase(), { set: { b: 2 } });
      expect(again).toMatchObject({ outcome: 'unchanged', person: { version: 1 } });
      expect(await personOf(projectId, 'u')).toMatchObject({ version: 1, properties: { a: 1, b: 2, $browser: 'Chrome' } });
    });

    it('refuses properties over the cap without writing', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', { $set: { a: 1 } }));
      const { id } = await personOf(projectId, 'u');

      const result = await stores.persons.updateProperties(projectId, id, { set: { blob: 'x'.repeat(MAX_PROPERTIES_BYTES) } });

      expect(result).toMatchObject({ outcome: 'too_large', person: { version: 0, properties: { a: 1 } } });
    });

    it('finds no person for an unknown id, another project, or a string that is not a uuid', async () => {
      const projectId = await stores.newProject();
      const otherProject = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$pageview', {}));
      const { id } = await personOf(projectId, 'u');

      await expect(stores.persons.updateProperties(otherProject, id, { set: { a: 1 } })).resolves.toBeUndefined();
      await expect(stores.persons.updateProperties(projectId, id + 1000, { set: { a: 1 } })).resolves.toBeUndefined();
      await expect(stores.persons.updateProperties(projectId, 'u', { set: { a: 1 } })).resolves.toBeUndefined();
      await expect(stores.reads.get(projectId, 'not-a-uuid')).resolves.toBeUndefined();
    });
  });

  describe('deletePerson', () => {
    it('deletes the person and its distinct ids; the next event creates it again under the same uuid, version 0', async () => {
      const projectId = await stores.newProject();
      await stores.persons.processEvent(projectId, event('u', '$identify', { $anon_distinct_id: 'anon', $set: { a: 1 } }));
      const person = await personOf(projectId, 'u');

      const deleted = await stores.persons.deletePerson(projectId, person.uuid);
      expect(deleted).toMatchObject({ id: person.id, uuid: person.uuid, version: person.version });
      expect(deleted!.distinctIds.sort()).toEqual(['anon', 'u']);
      await expect(stores.reads.get(projectId, person.id)).resolves.toBeUndefined();
      await expect(stores.persons.deletePerson(projectId, person.id)).resolves.toBeUndefined();

      await stores.persons.processEvent(projectId, event('anon', '$pageview', { $set: { b: 1 } }, { minutes: 5 }));
      const reborn = await personOf(projectId, 'anon');
      expect(reborn).toMatchObject({ uuid: personUuid(projectId, 'anon'), version: 0, properties: { b: 1 } });
      // The override anon → u written by the $identify is dropped: anon's uuid is a live person again.
      expect(await countRows(stores.sql, projectId)).toEqual({ persons: 1, distinctIds: 1, overrides: 0 });
    });
  });
});
