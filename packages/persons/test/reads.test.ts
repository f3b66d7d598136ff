import { ApiError } from '@plover/core';
import { EXACT_COUNT_CAP, PersonReads, personUuid, type PersonCondition, type PersonListFilter } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { backends, event, T0, useStores } from './support/stores';

/** The 400 a read refuses bad input with, as `{code, attr}`. */
async function refusal(read: Promise<unknown>): Promise<{ code: string; attr: string | null }> {
  const error = await read.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ApiError);
  const { status, code, attr } = error as ApiError;
  expect(status).toBe(400);
  return { code, attr };
}

async function staticCohort(sql: Sql, projectId: number, personIds: readonly number[]): Promise<number> {
  const cohort = await sql.query<{ id: number }>('test.cohort', 'INSERT INTO cohorts (project_id, is_static) VALUES ($1, true) RETURNING id', [projectId]);
  const id = cohort.rows[0]!.id;
  await sql.query('test.cohortPeople', 'INSERT INTO cohort_people (cohort_id, person_id) SELECT $1, unnest($2::bigint[])', [id, personIds]);
  return id;
}

describe.each(backends)('person reads on $name', (backend) => {
  const stores = useStores(backend);
  let reads: PersonReads;
  let projectId: number;
  /** Person ids by their first distinct id; created one minute apart in this order. */
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    reads = new PersonReads(stores.sql);
    projectId = await stores.newProject();
    const people: Array<[string, Record<string, unknown>]> = [
      ['alice', { email: 'alice@example.com', plan: 'pro', seats: 12, signup: '2024-01-15T00:00:00Z' }],
      ['bob', { email: 'bob@example.org', plan: 'free', seats: 3 }],
      ['carol', { email: 'carol_100%@example.com', plan: 'pro', seats: '40' }],
      ['dave', { name: "x' OR '1'='1" }],
    ];
    for (const [index, [distinctId, properties]] of people.entries()) {
      const result = await stores.persons.processEvent(projectId, event(distinctId, '$pageview', { $set: properties }, { minutes: index }));
      ids[distinctId] = result.personId!;
    }
    // alice gets a second, later distinct id.
    await stores.persons.processEvent(projectId, event('alice-laptop', '$identify', { $anon_distinct_id: 'alice' }, { minutes: 10 }));
  });

  const list = (filter: PersonListFilter = {}, limit = 100) => reads.list(projectId, filter, { limit, offset: 0 });
  const firstIds = async (filter: PersonListFilter) => (await list(filter)).map((person) => person.distinctIds[0]);

  it('lists newest first with all the person fields, distinct ids oldest first', async () => {
    const persons = await list();
    expect(persons.map((person) => person.id)).toEqual([ids.dave, ids.carol, ids.bob, ids.alice]);
    const alice = persons[3]!;
    expect(alice).toMatchObject({
      uuid: personUuid(projectId, 'alice'),
      distinctIds: ['alice', 'alice-laptop'],
      isIdentified: true,
      createdAt: T0,
      properties: { email: 'alice@example.com', plan: 'pro' },
    });
    expect(alice).toEqual(expect.objectContaining(await reads.get(projectId, ids.alice!)));
  });

  it('pages by offset and by the cursor of the last row, which agree', async () => {
    const byOffset = await reads.list(projectId, {}, { limit: 2, offset: 2 });
    const first = await reads.list(projectId, {}, { limit: 2, offset: 0 });
    const byCursor = await reads.list(projectId, {}, { limit: 2, after: first[1]!.cursor });
    expect(byOffset.map((person) => person.id)).toEqual([ids.bob, ids.alice]);
    expect(byCursor.map((person) => person.id)).toEqual([ids.bob, ids.alice]);
    expect(await reads.list(projectId, {}, { limit: 2, after: byCursor[1]!.cursor })).toEqual([]);
  });

  it('keeps the microseconds of created_at in the cursor, so equal-millisecond persons are neither skipped nor repeated', async () => {
    const project = await stores.newProject();
    await stores.sql.query(
      'test.microsecondPersons',
      `INSERT INTO persons (project_id, uuid, created_at)
       SELECT $1, gen_random_uuid(), $2::timestamptz + make_interval(secs => n / 1000000.0) FROM generate_series(1, 5) AS n`,
      [project, T0.toISOString()],
    );
    const seen: number[] = [];
    let page = await reads.list(project, {}, { limit: 2, offset: 0 });
    while (page.length > 0) {
      seen.push(...page.map((person) => person.id));
      page = await reads.list(project, {}, { limit: 2, after: page[page.length - 1]!.cursor });
    }
    expect(seen).toEqual((await reads.list(project, {}, { limit: 10, offset: 0 })).map((person) => person.id));
    expect(new Set(seen).size).toBe(5);
  });

  it('filters by distinct id, exact email, and search over email, distinct id and uuid', async () => {
    expect(await firstIds({ distinctId: 'alice-laptop' })).toEqual(['alice']);
    expect(await firstIds({ email: 'bob@example.org' })).toEqual(['bob']);
    expect(await firstIds({ email: 'BOB@example.org' })).toEqual([]);
    expect(await firstIds({ search: '  EXAMPLE.COM ' })).toEqual(['carol', 'alice']);
    expect(await firstIds({ search: 'alice-laptop' })).toEqual(['alice']);
    expect(await firstIds({ search: personUuid(projectId, 'bob').toUpperCase() })).toEqual(['bob']);
    // LIKE wildcards in a search match only themselves.
    expect(await firstIds({ search: '_100%' })).toEqual(['carol']);
    expect(await firstIds({ search: '%' })).toEqual(['carol']);
    // Empty filters filter nothing.
    expect(await firstIds({ distinctId: '', email: '', search: ' ', properties: '' })).toHaveLength(4);
  });

  it('filters by person properties, values bound rather than spliced into the SQL', async () => {
    const properties = (filters: unknown) => firstIds({ properties: JSON.stringify(filters) });
    expect(await properties([{ key: 'plan', value: 'pro' }])).toEqual(['carol', 'alice']);
    expect(await properties([{ key: 'plan', value: ['free', 'pro'], operator: 'is_not' }])).toEqual(['dave']);
    expect(await properties([{ key: 'seats', value: 10, operator: 'gt' }])).toEqual(['carol', 'alice']);
    expect(await properties([{ key: 'email', value: 'EXAMPLE.COM', operator: 'icontains' }])).toEqual(['carol', 'alice']);
    expect(await properties([{ key: 'email', value: '^b', operator: 'regex' }])).toEqual(['bob']);
    expect(await properties([{ key: 'signup', value: '2024-01-01', operator: 'is_date_after' }])).toEqual(['alice']);
    expect(await properties([{ key: 'name', operator: 'is_set' }])).toEqual(['dave']);
    expect(
      await properties({
        type: 'OR',
        values: [
          { key: 'plan', value: 'free' },
          {
            type: 'AND',
            values: [
              { key: 'plan', value: 'pro' },
              { key: 'seats', value: 20, operator: 'gte' },
            ],
          },
        ],
      }),
    ).toEqual(['carol', 'bob']);
    expect(await properties([{ key: 'name', value: "x' OR '1'='1" }])).toEqual(['dave']);
    expect(await properties([{ key: "plan' OR true --", value: 'pro' }])).toEqual([]);
  });

  it('refuses bad filters with a 400 naming the offending part', async () => {
    expect(await refusal(list({ properties: '{' }))).toEqual({ code: 'invalid_input', attr: 'properties' });
    expect(await refusal(list({ properties: '[{"key":"plan","operator":"like","value":"x"}]' }))).toEqual({
      code: 'invalid_choice',
      attr: 'properties__0__operator',
    });
    expect(await refusal(list({ properties: '{"type":"OR","values":[{"key":"seats","operator":"gt","value":"many"}]}' }))).toEqual({
      code: 'invalid',
      attr: 'properties__values__0__value',
    });
    expect(await refusal(reads.count(projectId, { properties: '[{"key":"plan"}]' }, { exact: true }))).toEqual({
      code: 'required',
      attr: 'properties__0__value',
    });
    // JavaScript accepts `\p` outside unicode mode; Postgres refuses it: still the filter's fault.
    expect(await refusal(list({ properties: '[{"key":"plan","operator":"regex","value":"\\\\p"}]' }))).toEqual({ code: 'invalid', attr: 'properties' });
  });

  it('counts exactly up to the cap, and estimates beyond it unless asked for the exact count', async () => {
    expect(await reads.count(projectId, { properties: '[{"key":"plan","value":"pro"}]' }, { exact: false })).toBe(2);
    expect(await reads.count(projectId, {}, { exact: true })).toBe(4);
    const project = await stores.newProject();
    const total = EXACT_COUNT_CAP + 5;
    await stores.sql.query(
      'test.manyPersons',
      'INSERT INTO persons (project_id, uuid, created_at) SELECT $1, gen_random_uuid(), now() FROM generate_series(1, $2::int)',
      [project, total],
    );
    expect(await reads.count(project, {}, { exact: true })).toBe(total);
    expect(await reads.count(project, {}, { exact: false })).toBeGreaterThan(EXACT_COUNT_CAP);
  });

  it('gets a person by id, by uuid in any case, or by any of its distinct ids', async () => {
    const alice = await reads.get(projectId, ids.alice!);
    expect(alice).toMatchObject({ uuid: personUuid(projectId, 'alice'), distinctIds: ['alice', 'alice-laptop'] });
    expect(await reads.get(projectId, personUuid(projectId, 'alice').toUpperCase())).toEqual(alice);
    expect(await reads.getByDistinctId(projectId, 'alice-laptop')).toEqual(alice);
    expect(await reads.get(projectId, 'alice')).toBeUndefined();
    expect(await reads.get(projectId, 2 ** 60)).toBeUndefined();
    expect(await reads.getByDistinctId(projectId, 'nobody')).toBeUndefined();
    // Another project's person is not found through this one.
    expect(await reads.get(await stores.newProject(), ids.alice!)).toBeUndefined();
  });

  it('reads the persons and the person ids of many distinct ids at once, keyed by the id looked up', async () => {
    const persons = await reads.byDistinctIds(projectId, ['alice', 'alice-laptop', 'bob', 'nobody']);
    expect([...persons.keys()].sort()).toEqual(['alice', 'alice-laptop', 'bob']);
    expect(persons.get('alice-laptop')).toEqual(persons.get('alice'));
    expect(persons.get('bob')).toMatchObject({ id: ids.bob, distinctIds: ['bob'] });
    expect(await reads.personIdsByDistinctIds(projectId, ['alice-laptop', 'bob', 'nobody'])).toEqual(
      new Map([
        ['alice-laptop', ids.alice],
        ['bob', ids.bob],
      ]),
    );
    expect(await reads.byDistinctIds(projectId, [])).toEqual(new Map());
    expect(await reads.personIdsByDistinctIds(projectId, [])).toEqual(new Map());
  });

  it('reads what flag evaluation needs of a distinct id: the person id and properties', async () => {
    expect(await reads.flagProperties(projectId, 'alice-laptop')).toEqual({ id: ids.alice, properties: expect.objectContaining({ plan: 'pro', seats: 12 }) });
    expect(await reads.flagProperties(projectId, 'nobody')).toBeUndefined();
  });

  it('names the uuids merged into each person: merged persons and distinct ids first used personless', async () => {
    const project = await stores.newProject();
    for (const id of ['erin', 'frank']) await stores.persons.processEvent(project, event(id, '$pageview', { $set: { name: id } }));
    await stores.persons.processEvent(project, event('frank', '$identify', { $anon_distinct_id: 'erin' }));
    await stores.persons.processEvent(project, event('frank-phone', '$identify', { $anon_distinct_id: 'frank' }));
    const frank = personUuid(project, 'frank');
    expect(await reads.mergedInto(project, [frank, personUuid(project, 'nobody')])).toEqual(
      new Map([[frank, [personUuid(project, 'erin'), personUuid(project, 'frank-phone')].sort()]]),
    );
    expect(await reads.mergedInto(project, [])).toEqual(new Map());
  });

  it('lists the uuids of the persons matching a condition, in id order', async () => {
    const members = async (condition: PersonCondition) => {
      const uuids = await reads.matchingUuids(projectId, condition);
      const byUuid = new Map(Object.entries(ids).map(([name, id]) => [personUuid(projectId, name), id]));
      return uuids.map((uuid) => Object.keys(ids).find((name) => ids[name] === byUuid.get(uuid)));
    };
    const pro: PersonCondition = { propertyFilter: { key: 'plan', value: 'pro' } };
    const cohort = await staticCohort(stores.sql, projectId, [ids.bob!, ids.dave!]);
    expect(await members(pro)).toEqual(['alice', 'carol']);
    expect(await members({ storedCohort: cohort })).toEqual(['bob', 'dave']);
    expect(await members({ any: [pro, { storedCohort: cohort }] })).toEqual(['alice', 'bob', 'carol', 'dave']);
    expect(await members({ all: [{ not: pro }, { storedCohort: cohort }] })).toEqual(['bob', 'dave']);
    // dave has no plan: the comparison does not match him, so its negation does.
    expect(await members({ not: { propertyFilter: { key: 'plan', value: 'free' } } })).toEqual(['alice', 'carol', 'dave']);
    expect(await members({ all: [] })).toEqual(['alice', 'bob', 'carol', 'dave']);
    expect(await members({ any: [] })).toEqual([]);
    expect(await refusal(reads.matchingUuids(projectId, { propertyFilter: { key: 'plan', operator: 'near', value: 1 } }))).toEqual({
      code: 'invalid_choice',
      attr: 'properties__0__operator',
    });
  });
});
