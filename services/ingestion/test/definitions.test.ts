import type { Sql } from '@plover/postgres';
import { GroupStore } from '@plover/persons';
import { DefinitionsUpkeep, type ObservedEvent } from '../src/definitions/upkeep';
import { createProject, postgres } from '../../../packages/persons/test/support/stores';
import { sqlBackends } from '../../../packages/postgres/test/support/backends';
import { FaultySql } from '../../../packages/postgres/test/support/faulty-sql';

const T0 = new Date('2025-03-01T10:20:00.000Z');

interface PropertyRow {
  name: string;
  type: number;
  group_type_index: number | null;
  property_type: string | null;
  is_numerical: boolean;
}

describe.each(sqlBackends(postgres.url))('definitions upkeep: $name', (backend) => {
  let sql: Sql;
  let close: () => Promise<void>;
  let counted: FaultySql;
  let now: Date;
  let upkeep: DefinitionsUpkeep;
  let groups: GroupStore;
  let projectId: number;

  beforeAll(async () => {
    const opened = await backend.open();
    sql = opened.sql;
    close = () => opened.close();
  });
  afterAll(() => close());

  beforeEach(async () => {
    projectId = await createProject(sql);
    counted = new FaultySql(sql);
    now = T0;
    groups = new GroupStore(sql);
    upkeep = newUpkeep();
  });

  function newUpkeep(maxKnown?: number): DefinitionsUpkeep {
    return new DefinitionsUpkeep({
      sql: counted,
      now: () => now,
      groupTypeIndex: (project, type) => groups.groupTypeIndex(project, type),
      ...(maxKnown === undefined ? {} : { maxKnown }),
    });
  }

  const observed = (event: string, properties: Record<string, unknown> = {}, project = projectId): ObservedEvent => ({ projectId: project, event, properties });

  async function eventDefinitions(project = projectId) {
    const result = await sql.query<{ name: string; created_at: Date; last_seen_at: Date }>(
      'test.events',
      'SELECT name, created_at, last_seen_at FROM event_definitions WHERE project_id = $1 ORDER BY name',
      [project],
    );
    return result.rows;
  }

  async function propertyDefinitions(project = projectId): Promise<PropertyRow[]> {
    const result = await sql.query<PropertyRow>(
      'test.properties',
      'SELECT name, type, group_type_index, property_type, is_numerical FROM property_definitions WHERE project_id = $1 ORDER BY type, group_type_index, name',
      [project],
    );
    return result.rows;
  }

  async function pairs(project = projectId): Promise<string[]> {
    const result = await sql.query<{ pair: string }>(
      'test.pairs',
      `SELECT event || ' ' || property AS pair FROM event_properties WHERE project_id = $1 ORDER BY event, property`,
      [project],
    );
    return result.rows.map((row) => row.pair);
  }

  const statements = () => [...counted.counts.values()].reduce((sum, count) => sum + count, 0);

  describe('event definitions', () => {
    it('stores each name once with when ingestion first and last saw it', async () => {
      await upkeep.record([observed('$pageview'), observed('signed up'), observed('$pageview')]);
      now = new Date(T0.getTime() + 2 * 3_600_000);
      await upkeep.record([observed('$pageview')]);
      const rows = await eventDefinitions();
      expect(rows.map((row) => [row.name, row.created_at.toISOString(), row.last_seen_at.toISOString()])).toEqual([
        ['$pageview', T0.toISOString(), now.toISOString()],
        ['signed up', T0.toISOString(), T0.toISOString()],
      ]);
    });

    it('writes last_seen_at at most once an hour per name', async () => {
      await upkeep.record([observed('a')]);
      counted.counts.clear();
      now = new Date(T0.getTime() + 30 * 60_000);
      await upkeep.record([observed('a')]);
      expect(statements()).toBe(0);
      now = new Date('2025-03-01T11:00:00.000Z');
      await upkeep.record([observed('a')]);
      expect(counted.counts.get('ingestion.eventDefinitions')).toBe(1);
      expect((await eventDefinitions())[0]?.last_seen_at.toISOString()).toBe('2025-03-01T11:00:00.000Z');
    });

    it('never moves last_seen_at back when another process wrote a later one', async () => {
      const later = new Date(T0.getTime() + 5 * 3_600_000);
      const other = newUpkeep();
      now = later;
      await other.record([observed('a')]);
      now = T0;
      await upkeep.record([observed('a')]);
      expect((await eventDefinitions())[0]?.last_seen_at.toISOString()).toBe(later.toISOString());
    });

    it("skips PostHog's $$plugin_metrics and names longer than 200 bytes", async () => {
      await upkeep.record([observed('$$plugin_metrics', { a: 1 }), observed('é'.repeat(101), { a: 1 }), observed('x'.repeat(200))]);
      expect((await eventDefinitions()).map((row) => row.name)).toEqual(['x'.repeat(200)]);
      expect(await propertyDefinitions()).toEqual([]);
    });

    it('keeps projects apart', async () => {
      const other = await createProject(sql);
      await upkeep.record([observed('a', { p: 1 }), observed('b', { q: 'x' }, other)]);
      expect((await eventDefinitions()).map((row) => row.name)).toEqual(['a']);
      expect((await eventDefinitions(other)).map((row) => row.name)).toEqual(['b']);
      expect(await pairs(other)).toEqual(['b q']);
    });
  });

  describe('property definitions', () => {
    it('types event properties by their first value with a type, and records which events carry them', async () => {
      await upkeep.record([
        observed('purchase', { price: 9.5, currency: 'EUR', gift: 'true', note: null, tags: ['a'] }),
        observed('purchase', { price: 'free', note: 'thanks' }),
        observed('$pageview', { $current_url: 'https://example.com', price: 3 }),
      ]);
      expect(await propertyDefinitions()).toEqual([
        { name: '$current_url', type: 1, group_type_index: null, property_type: 'String', is_numerical: false },
        { name: 'currency', type: 1, group_type_index: null, property_type: 'String', is_numerical: false },
        { name: 'gift', type: 1, group_type_index: null, property_type: 'Boolean', is_numerical: false },
        { name: 'note', type: 1, group_type_index: null, property_type: 'String', is_numerical: false },
        { name: 'price', type: 1, group_type_index: null, property_type: 'Numeric', is_numerical: true },
        { name: 'tags', type: 1, group_type_index: null, property_type: null, is_numerical: false },
      ]);
      expect(await pairs()).toEqual([
        '$pageview $current_url',
        '$pageview price',
        'purchase currency',
        'purchase gift',
        'purchase note',
        'purchase price',
        'purchase tags',
      ]);
    });

    it('keeps the first stored type when later batches (or other processes) see another', async () => {
      await upkeep.record([observed('e', { amount: 5 })]);
      await upkeep.record([observed('e', { amount: 'five' })]);
      await newUpkeep().record([observed('e', { amount: 'five' })]);
      expect((await propertyDefinitions()).map((row) => [row.name, row.property_type])).toEqual([['amount', 'Numeric']]);
    });

    it('fills a type left NULL once a value with one arrives, in a later batch or another process', async () => {
      await upkeep.record([observed('e', { a: null, b: [] })]);
      await upkeep.record([observed('e', { a: 3 })]);
      await newUpkeep().record([observed('f', { b: '2025-01-01' })]);
      expect((await propertyDefinitions()).map((row) => [row.name, row.property_type, row.is_numerical])).toEqual([
        ['a', 'Numeric', true],
        ['b', 'DateTime', false],
      ]);
    });

    it('takes person properties from $set and $set_once, and not as event properties', async () => {
      await upkeep.record([
        observed('$identify', { $set: { email: 'a@b.c', age: 30 }, $set_once: { first_seen: '2025-01-01T00:00:00Z' }, $groups: { org: 'x' } }),
      ]);
      expect(await propertyDefinitions()).toEqual([
        { name: 'age', type: 2, group_type_index: null, property_type: 'Numeric', is_numerical: true },
        { name: 'email', type: 2, group_type_index: null, property_type: 'String', is_numerical: false },
        { name: 'first_seen', type: 2, group_type_index: null, property_type: 'DateTime', is_numerical: false },
      ]);
      expect(await pairs()).toEqual([]);
    });

    it('takes only the group properties of $groupidentify, under the index of its group type', async () => {
      await groups.groupTypeIndex(projectId, 'company');
      const index = await groups.groupTypeIndex(projectId, 'team');
      await upkeep.record([observed('$groupidentify', { $group_type: 'team', $group_key: 't1', $group_set: { seats: 4, plan: 'pro' }, other: 1 })]);
      expect(await propertyDefinitions()).toEqual([
        { name: 'plan', type: 3, group_type_index: index, property_type: 'String', is_numerical: false },
        { name: 'seats', type: 3, group_type_index: index, property_type: 'Numeric', is_numerical: true },
      ]);
      expect((await eventDefinitions()).map((row) => row.name)).toEqual(['$groupidentify']);
      expect(await pairs()).toEqual([]);
    });

    it('keeps one definition per name and kind: an event, a person and a group property may share a name', async () => {
      const index = await groups.groupTypeIndex(projectId, 'company');
      await upkeep.record([
        observed('e', { plan: 1, $set: { plan: 'pro' } }),
        observed('$groupidentify', { $group_type: 'company', $group_set: { plan: true } }),
      ]);
      expect((await propertyDefinitions()).map((row) => [row.type, row.group_type_index, row.property_type])).toEqual([
        [1, null, 'Numeric'],
        [2, null, 'String'],
        [3, index, 'Boolean'],
      ]);
    });

    it('stores names that differ only by a character Postgres cannot hold once, and a group type with NUL under its stored index', async () => {
      const index = await groups.groupTypeIndex(projectId, 'org\uFFFD');
      await upkeep.record([
        observed('e\u0000', { 'k\u0000': 1, 'k\uFFFD': 2, 'lone\ud800': 'x', $set: { 'p\u0000': 1, 'p\uFFFD': 2 } }),
        observed('e\uFFFD', { 'k\u0000': 1 }),
        observed('$groupidentify', { $group_type: 'org\u0000', $group_set: { 'g\u0000': 1, 'g\uFFFD': 2 } }),
      ]);
      expect((await eventDefinitions()).map((row) => row.name)).toEqual(['$groupidentify', 'e\uFFFD']);
      expect((await propertyDefinitions()).map((row) => [row.type, row.group_type_index, row.name])).toEqual([
        [1, null, 'k\uFFFD'],
        [1, null, 'lone\uFFFD'],
        [2, null, 'p\uFFFD'],
        [3, index, 'g\uFFFD'],
      ]);
      expect(await pairs()).toEqual(['e\uFFFD k\uFFFD', 'e\uFFFD lone\uFFFD']);
    });

    it('stores NUL in a name as U+FFFD, and skips keys longer than 200 bytes', async () => {
      await upkeep.record([observed('a\u0000b', { 'k\u0000': 1, ['ü'.repeat(101)]: 1 })]);
      expect((await eventDefinitions()).map((row) => row.name)).toEqual(['a\uFFFDb']);
      expect((await propertyDefinitions()).map((row) => row.name)).toEqual(['k\uFFFD']);
    });

    it('skips the properties of an event that would make more than 10,000 updates (about 5,000 keys), as PostHog does', async () => {
      const many = Object.fromEntries(Array.from({ length: 5_000 }, (_, index) => [`p${index}`, index]));
      await upkeep.record([observed('big', many)]);
      expect((await eventDefinitions()).map((row) => row.name)).toEqual(['big']);
      expect(await propertyDefinitions()).toEqual([]);
    });
  });

  describe('steady state', () => {
    it('runs no statement for a batch whose names are all known', async () => {
      const event = observed('$pageview', { $browser: 'Chrome', $screen_width: 1280, $set: { $browser: 'Chrome' }, $set_once: { $initial_browser: 'Chrome' } });
      await upkeep.record([event]);
      counted.counts.clear();
      await upkeep.record([event, event, observed('$pageview', { $browser: 'Firefox', $screen_width: 800 })]);
      expect(statements()).toBe(0);
    });

    it('writes one statement per kind of row for a batch of new names, however many events hold them', async () => {
      const batch = Array.from({ length: 500 }, (_, index) =>
        observed(`event ${index % 50}`, { [`p${index}`]: index, shared: 'x', $set: { [`q${index % 7}`]: 1 } }),
      );
      await upkeep.record(batch);
      expect(Object.fromEntries(counted.counts)).toEqual({
        'ingestion.eventDefinitions': 1,
        'ingestion.propertyDefinitions': 1,
        'ingestion.eventProperties': 1,
      });
      expect(await eventDefinitions()).toHaveLength(50);
      expect(await propertyDefinitions()).toHaveLength(500 + 1 + 7);
      expect(await pairs()).toHaveLength(500 + 50);
    });

    it('writes again what it forgot once its memory is full, and what a failed batch did not store', async () => {
      const small = newUpkeep(3);
      await small.record([observed('a', { x: 1, y: 2 })]);
      counted.counts.clear();
      await small.record([observed('a', { x: 1, y: 2 })]);
      expect(counted.counts.get('ingestion.propertyDefinitions')).toBe(1);

      counted.failing.add('ingestion.eventProperties');
      await expect(upkeep.record([observed('b', { z: 1 })])).rejects.toThrow('injected failure');
      counted.failing.clear();
      counted.counts.clear();
      await upkeep.record([observed('b', { z: 1 })]);
      expect(counted.counts.get('ingestion.eventProperties')).toBe(1);
      expect(await pairs()).toContain('b z');
    });
  });

  it('two processes recording overlapping names at once both succeed', async () => {
    const batch = (offset: number) =>
      Array.from({ length: 200 }, (_, index) =>
        observed(`e${(index + offset) % 40}`, { [`p${(index * 7 + offset) % 90}`]: index, $set: { [`q${index % 30}`]: 'x' } }),
      );
    await Promise.all([newUpkeep().record(batch(0)), newUpkeep().record(batch(13)), newUpkeep().record(batch(29))]);
    expect(await eventDefinitions()).toHaveLength(40);
  });
});
