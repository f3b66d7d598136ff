/**
 * HogQL answers against plain TypeScript over the same seeded events: counts, exact uniques and group-bys with
 * random filters, persons through the overrides, joins with persons, and session metrics.
 */
import { runHogQL } from '../src';
import { EVENT_NAMES, random, type SeedEvent } from './support/data';
import { seededStore } from './support/store';

let store: Awaited<ReturnType<typeof seededStore>>;
let mine: SeedEvent[];
beforeAll(async () => {
  store = await seededStore(120);
  mine = store.events.filter((event) => event.projectId === 1);
});
afterAll(() => store.close());

const run = async (query: string, values?: Record<string, unknown>) => (await runHogQL(store.ch, query, { teamId: 1, values })).results;
const sortRows = (rows: unknown[][]) => rows.map((row) => JSON.stringify(row)).sort();

it('count, uniqExact and group by under random filters match a TypeScript evaluation', async () => {
  const next = random(99);
  for (let round = 0; round < 12; round++) {
    const event = EVENT_NAMES[Math.floor(next() * EVENT_NAMES.length)]!;
    const min = Math.floor(next() * 10);
    const matching = mine.filter((e) => e.event === event && (e.properties.n as number) >= min);
    const [count, persons, distinctIds] = (
      await run('SELECT count(), uniqExact(person_id), count(DISTINCT distinct_id) FROM events WHERE event = {event} AND toInt64(properties.n) >= {min}', {
        event,
        min,
      })
    )[0]!;
    expect([count, persons, distinctIds]).toEqual([
      matching.length,
      new Set(matching.map((e) => e.person)).size,
      new Set(matching.map((e) => e.distinctId)).size,
    ]);

    const grouped = await run(
      'SELECT properties.$browser AS b, properties.nested.k AS k, count() FROM events WHERE toInt64(properties.n) >= {min} GROUP BY b, k',
      { min },
    );
    const expected = new Map<string, number>();
    for (const e of mine.filter((e) => (e.properties.n as number) >= min)) {
      const key = JSON.stringify([e.properties.$browser, (e.properties.nested as { k: string }).k]);
      expected.set(key, (expected.get(key) ?? 0) + 1);
    }
    expect(sortRows(grouped)).toEqual(sortRows([...expected].map(([key, n]) => [...(JSON.parse(key) as string[]), n])));
  }
});

it('joins events with persons (merged persons counted once) and derives sessions', async () => {
  const perPerson = await run('SELECT p.id, count() FROM events AS e JOIN persons AS p ON e.person_id = p.id GROUP BY p.id');
  const expected = new Map<string, number>();
  for (const e of mine) expected.set(e.person, (expected.get(e.person) ?? 0) + 1);
  expect(sortRows(perPerson)).toEqual(sortRows([...expected]));

  const sessions = await run('SELECT session_id, $pageview_count, $autocapture_count, $start_timestamp FROM sessions');
  const bySession = new Map<string, SeedEvent[]>();
  for (const e of mine) bySession.set(e.sessionId, [...(bySession.get(e.sessionId) ?? []), e]);
  expect(sortRows(sessions)).toEqual(
    sortRows(
      [...bySession].map(([id, events]) => [
        id,
        events.filter((e) => e.event === '$pageview').length,
        events.filter((e) => e.event === '$autocapture').length,
        events.map((e) => e.timestamp).sort()[0]! + '000',
      ]),
    ),
  );
});
