/**
 * Events of many users, each with a user id and usually an anonymous id (merged by `$identify`) and sometimes
 * an alias (merged by `$create_alias`), and the person state ingestion must end with — worked out from the
 * events' order per distinct id alone, so that it holds however consumers interleave distinct ids.
 *
 * Ingestion keeps order per distinct id only: one id's events share a partition and are processed one by one,
 * while different ids (even of one user) run in other partitions, other processes, or concurrently within a
 * batch. So `$identify` on the user id may be processed before or after events of the anonymous id sent before
 * it. The workload is built so that every such interleaving must give the same persons:
 * - every property is owned by one distinct id (`user_*`, `anon_*`, `alias_*`): only that id's events set,
 *   set once or unset it, so its final value is what that id's events give in their order, whichever person
 *   held it in between (a merge keeps both persons' properties, and they never clash);
 * - the user id's first event comes first and is the user's oldest: the user's person exists before any merge
 *   (the merges are the user id's own later events), so it is always the merge target. Hence the surviving
 *   person's uuid (that of the user id), its `$creator_event_uuid` (that first event) and `created_at` (the
 *   oldest of the persons merged) are fixed too;
 * - no event carries browser or URL properties, which ingestion would copy into every id's `$set`.
 * What stays order-dependent, and is not compared: person versions (a merge bumps them differently), and the
 * person properties stored on each event row (a snapshot at processing time).
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { PERSON_ID_EXPRESSION, PERSON_OVERRIDES_SUBQUERY, type ClickHouse } from '@plover/clickhouse';
import { personUuid } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { seededRandom } from './random';

export interface WorkloadEvent {
  uuid: string;
  event: string;
  distinct_id: string;
  timestamp: string;
  properties: Record<string, unknown>;
}

export interface ExpectedPerson {
  uuid: string;
  /** Sorted. */
  distinctIds: string[];
  properties: Record<string, unknown>;
  isIdentified: boolean;
  createdAt: string;
}

export interface Workload {
  /** Every distinct id starts with it (`<label>-`): what the checks select by. */
  label: string;
  events: WorkloadEvent[];
  /** The events split into `streams` sequences, each distinct id's events in one of them, in order. */
  streams: WorkloadEvent[][];
  persons: ExpectedPerson[];
  /** The expected person uuid of every distinct id that has events. */
  personOf: Map<string, string>;
}

export interface WorkloadOptions {
  label: string;
  projectId: number;
  /** About this many events (a few more, to round up to whole users). */
  events: number;
  streams: number;
  seed?: number;
}

/** Events per user, counting all of its ids. */
const EVENTS_PER_USER = 20;

type Role = 'user' | 'anon' | 'alias';

interface Planned {
  role: Role;
  build: (n: number) => { event: string; properties: Record<string, unknown> };
}

/** A distinct id's own properties: `$set` of a sequence number, `$set_once` of the first, a set and unset pair. */
function ownEvent(role: Role, n: number): { event: string; properties: Record<string, unknown> } {
  const properties: Record<string, unknown> = {
    $set: { [`${role}_seq`]: n, ...(n % 4 === 1 ? { [`${role}_tmp`]: n } : {}) },
    $set_once: { [`${role}_first`]: n },
  };
  if (n % 4 === 3) properties.$unset = [`${role}_tmp`];
  return { event: n % 3 === 0 ? 'signed_in' : '$pageview', properties };
}

export function personWorkload(options: WorkloadOptions): Workload {
  const random = seededRandom(options.seed ?? 20_261_127);
  const users = Math.ceil(options.events / EVENTS_PER_USER);
  const scripts: { distinctId: Record<Role, string>; stream: Record<Role, number>; plan: Planned[] }[] = [];
  for (let user = 0; user < users; user += 1) {
    const kind = user % 4; // 0: user id only; 1, 2: + anonymous id; 3: + anonymous id and alias
    const ids: Record<Role, string> = {
      user: `${options.label}-user-${user}`,
      anon: `${options.label}-anon-${user}`,
      alias: `${options.label}-alias-${user}`,
    };
    const roles: Role[] = kind === 0 ? ['user'] : kind === 3 ? ['user', 'anon', 'alias'] : ['user', 'anon'];
    const rest: Planned[] = [];
    for (let n = 1; n < EVENTS_PER_USER; n += 1) {
      const role = roles[Math.floor(random() * roles.length)] ?? 'user';
      rest.push({ role, build: (index) => ownEvent(role, index) });
    }
    if (kind !== 0) {
      rest[Math.floor(random() * rest.length)] = {
        role: 'user',
        build: () => ({ event: '$identify', properties: { $anon_distinct_id: ids.anon, $set: { user_identified: true } } }),
      };
    }
    if (kind === 3) {
      let at = Math.floor(random() * rest.length);
      while (rest[at]?.build(0).event === '$identify') at = (at + 1) % rest.length;
      rest[at] = { role: 'user', build: () => ({ event: '$create_alias', properties: { alias: ids.alias } }) };
    }
    const stream = { user: user % options.streams, anon: (user + 1) % options.streams, alias: user % options.streams };
    scripts.push({ distinctId: ids, stream, plan: [{ role: 'user', build: (n) => ownEvent('user', n) }, ...rest] });
  }

  // Users progress side by side: step s emits every user's s-th event, so merges land mid-stream.
  const base = Date.now() - 3_600_000;
  const events: WorkloadEvent[] = [];
  const streams: WorkloadEvent[][] = Array.from({ length: options.streams }, () => []);
  const counters = scripts.map(() => ({ user: 0, anon: 0, alias: 0 }));
  for (let step = 0; step < EVENTS_PER_USER; step += 1) {
    scripts.forEach((script, user) => {
      const planned = script.plan[step];
      if (!planned) return;
      const counter = counters[user]!;
      const { event, properties } = planned.build(counter[planned.role]++);
      const built: WorkloadEvent = {
        uuid: randomUUID(),
        event,
        distinct_id: script.distinctId[planned.role],
        timestamp: new Date(base + events.length).toISOString(),
        properties,
      };
      events.push(built);
      streams[script.stream[planned.role]]!.push(built);
    });
  }
  const { persons, personOf } = expectedPersons(options.projectId, scripts, events);
  return { label: options.label, events, streams, persons, personOf };
}

/** The persons the events give, applying each distinct id's events in its order (see the module comment). */
function expectedPersons(
  projectId: number,
  scripts: readonly { distinctId: Record<Role, string> }[],
  events: readonly WorkloadEvent[],
): { persons: ExpectedPerson[]; personOf: Map<string, string> } {
  const userOf = new Map<string, string>();
  for (const { distinctId } of scripts) for (const id of Object.values(distinctId)) userOf.set(id, distinctId.user);
  const byUser = new Map<string, { ids: Set<string>; properties: Record<string, unknown>; identified: boolean; first: WorkloadEvent }>();
  for (const event of events) {
    const user = userOf.get(event.distinct_id)!;
    let person = byUser.get(user);
    if (!person) {
      person = { ids: new Set(), properties: { $creator_event_uuid: event.uuid }, identified: false, first: event };
      byUser.set(user, person);
    }
    person.ids.add(event.distinct_id);
    const { $set, $set_once, $unset, $anon_distinct_id, alias } = event.properties as {
      $set?: Record<string, unknown>;
      $set_once?: Record<string, unknown>;
      $unset?: string[];
      $anon_distinct_id?: string;
      alias?: string;
    };
    for (const [key, value] of Object.entries($set_once ?? {})) if (!(key in person.properties)) person.properties[key] = value;
    Object.assign(person.properties, $set);
    for (const key of $unset ?? []) delete person.properties[key];
    const merged = $anon_distinct_id ?? alias;
    if (merged !== undefined) {
      person.ids.add(merged);
      person.identified = true;
    }
  }
  const persons = [...byUser].map(([user, person]) => {
    const uuid = personUuid(projectId, user);
    return {
      uuid,
      distinctIds: [...person.ids].sort(),
      properties: person.properties,
      isIdentified: person.identified,
      createdAt: new Date(person.first.timestamp).toISOString(),
    };
  });
  const personOf = new Map(events.map((event) => [event.distinct_id, personUuid(projectId, userOf.get(event.distinct_id)!)]));
  return { persons: persons.sort((a, b) => a.uuid.localeCompare(b.uuid)), personOf };
}

/** The stored persons of the workload's distinct ids, as ExpectedPerson, sorted by uuid. */
export async function storedPersons(sql: Sql, projectId: number, label: string): Promise<ExpectedPerson[]> {
  const { rows } = await sql.query<{ uuid: string; properties: Record<string, unknown>; is_identified: boolean; created_at: Date; distinct_ids: string[] }>(
    'test.workloadPersons',
    `SELECT p.uuid::text AS uuid, p.properties, p.is_identified, p.created_at, array_agg(d.distinct_id ORDER BY d.distinct_id) AS distinct_ids
       FROM persons p JOIN person_distinct_ids d ON d.person_id = p.id
      WHERE p.project_id = $1 AND d.distinct_id LIKE $2
      GROUP BY p.id`,
    [projectId, `${label}-%`],
  );
  return rows
    .map((row) => ({
      uuid: row.uuid,
      distinctIds: [...row.distinct_ids].sort(),
      properties: row.properties,
      isIdentified: row.is_identified,
      createdAt: new Date(row.created_at).toISOString(),
    }))
    .sort((a, b) => a.uuid.localeCompare(b.uuid));
}

/** What ClickHouse holds of the workload's events, read as the product's queries read it (FINAL, overrides). */
export interface StoredEvents {
  /** Rows as stored, before FINAL collapses copies of one uuid: more than `uuids` means an event was stored twice. */
  rows: number;
  /** uuids after FINAL, sorted. */
  uuids: string[];
  /** Each distinct id's persons, through person_overrides as insights resolve them. */
  personsOf: Map<string, string[]>;
}

export async function storedEvents(clickhouse: ClickHouse, projectId: number, label: string): Promise<StoredEvents> {
  const like = `${label}-%`;
  const [raw] = await clickhouse.query<{ rows: string }>(
    'test.workloadRows',
    'SELECT count() AS rows FROM events WHERE team_id = {projectId:Int64} AND distinct_id LIKE {like:String}',
    { projectId, like },
  );
  const uuids = await clickhouse.query<{ uuid: string }>(
    'test.workloadUuids',
    'SELECT toString(uuid) AS uuid FROM events FINAL WHERE team_id = {projectId:Int64} AND distinct_id LIKE {like:String} ORDER BY uuid',
    { projectId, like },
  );
  const persons = await clickhouse.query<{ distinct_id: string; persons: string[] }>(
    'test.workloadEventPersons',
    `SELECT e.distinct_id AS distinct_id, arraySort(groupUniqArray(toString(${PERSON_ID_EXPRESSION}))) AS persons
       FROM (SELECT distinct_id, person_id FROM events FINAL WHERE team_id = {projectId:Int64} AND distinct_id LIKE {like:String}) AS e
       LEFT JOIN (${PERSON_OVERRIDES_SUBQUERY}) AS o ON e.person_id = o.old_person_id
      GROUP BY e.distinct_id`,
    { projectId, like },
  );
  return {
    rows: Number(raw?.rows ?? 0),
    uuids: uuids.map((row) => row.uuid),
    personsOf: new Map(persons.map((row) => [row.distinct_id, row.persons])),
  };
}

/**
 * Where the stored state differs from the workload's: empty lists when it is exactly right. At most `limit`
 * examples of each kind, with their counts, so a failure is readable at 100,000 events.
 */
export function differences(workload: Workload, persons: readonly ExpectedPerson[], events: StoredEvents, limit = 3): Record<string, unknown> {
  const expectedUuids = workload.events.map((event) => event.uuid).sort();
  const stored = new Set(events.uuids);
  const sent = new Set(expectedUuids);
  const missing = expectedUuids.filter((uuid) => !stored.has(uuid));
  const unexpected = events.uuids.filter((uuid) => !sent.has(uuid));
  const storedPersons = new Map(persons.map((person) => [person.uuid, person]));
  const wrongPersons = workload.persons.filter((person) => !isDeepStrictEqual(storedPersons.get(person.uuid), person));
  const expectedPersons = new Set(workload.persons.map((person) => person.uuid));
  const extraPersons = persons.filter((person) => !expectedPersons.has(person.uuid));
  const wrongEventPersons = [...workload.personOf].filter(([id, uuid]) => !isDeepStrictEqual(events.personsOf.get(id), [uuid]));
  const example = <T>(list: readonly T[]) => ({ count: list.length, examples: list.slice(0, limit) });
  return {
    events: { sent: workload.events.length, storedAfterFinal: events.uuids.length, storedRows: events.rows },
    missingEvents: example(missing),
    unexpectedEvents: example(unexpected),
    wrongPersons: example(wrongPersons.map((person) => ({ expected: person, stored: storedPersons.get(person.uuid) }))),
    extraPersons: example(extraPersons),
    eventsResolvedToAnotherPerson: example(wrongEventPersons.map(([id, uuid]) => ({ distinctId: id, expected: uuid, stored: events.personsOf.get(id) }))),
  };
}

/** The empty differences of a correct run, to compare against. */
export function noDifferences(workload: Workload): Record<string, unknown> {
  const none = { count: 0, examples: [] };
  const n = workload.events.length;
  return {
    events: { sent: n, storedAfterFinal: n, storedRows: n },
    missingEvents: none,
    unexpectedEvents: none,
    wrongPersons: none,
    extraPersons: none,
    eventsResolvedToAnotherPerson: none,
  };
}
