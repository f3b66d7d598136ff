/**
 * Tenant isolation, adversarially: a seeded corpus of hostile queries (test/support/corpus.ts) run as project 1
 * over two projects' data. Each either answers with project 1's rows only or is refused with a 400; none reads a
 * file, a URL, a system table or another database. HOGQL_FUZZ_QUERIES runs a longer corpus (npm run fuzz:hogql).
 */
import { ApiError } from '@plover/core';
import { runHogQL } from '../src';
import { corpus } from './support/corpus';
import { seededStore } from './support/store';

const COUNT = Number(process.env.HOGQL_FUZZ_QUERIES ?? 150);
let store: Awaited<ReturnType<typeof seededStore>>;
/** Every value that identifies a row of project 2. */
let foreign: Set<string>;

beforeAll(async () => {
  store = await seededStore(30);
  foreign = new Set(store.events.filter((event) => event.projectId === 2).flatMap((event) => [event.uuid, event.distinctId, event.person, event.sessionId]));
});
afterAll(() => store.close());

function foreignCells(rows: unknown[][]): unknown[] {
  return rows.flat(3).filter((cell) => typeof cell === 'string' && (foreign.has(cell) || /\bp2-|\bs2-/.test(cell)));
}

it(`${COUNT} hostile queries: project 1's rows or a 400, never another project's, a file or a system table`, async () => {
  const outcomes = { answered: 0, refused: 0 };
  for (const { query, values, mustRefuse } of corpus(COUNT, 20261207)) {
    let rows: unknown[][] | undefined;
    try {
      rows = (await runHogQL(store.ch, query, { teamId: 1, values })).results;
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 400) throw new Error(`${query}\n→ ${String(error)}`, { cause: error });
      outcomes.refused++;
      continue;
    }
    if (mustRefuse) throw new Error(`answered a query that must be refused: ${query}`);
    expect({ query, foreign: foreignCells(rows) }).toEqual({ query, foreign: [] });
    outcomes.answered++;
  }
  // The corpus must exercise both sides, or it proves little.
  expect(outcomes.answered).toBeGreaterThan(COUNT / 5);
  expect(outcomes.refused).toBeGreaterThan(COUNT / 5);
});

it("reads a project's own log lines only, whatever the query names", async () => {
  const own = await runHogQL(store.ch, 'SELECT body, distinct_id, session_id FROM logs ORDER BY timestamp', { teamId: 1 });
  expect(own.results.length).toBe(30);
  expect(foreignCells(own.results)).toEqual([]);
  for (const query of [
    "SELECT body FROM logs WHERE team_id = 2 OR distinct_id LIKE 'p2-%'",
    'SELECT count() FROM logs AS l JOIN (SELECT session_id FROM logs WHERE team_id = 2) AS o ON l.session_id = o.session_id',
    "SELECT body FROM logs WHERE session_id IN (SELECT `$session_id` FROM events WHERE team_id = 2) OR body LIKE '%p2-%'",
  ]) {
    const { results } = await runHogQL(store.ch, query, { teamId: 1 });
    expect({ query, foreign: foreignCells(results) }).toEqual({ query, foreign: [] });
    if (query.startsWith('SELECT body')) expect(results).toEqual([]);
  }
  const asProject2 = await runHogQL(store.ch, 'SELECT body FROM logs', { teamId: 2 });
  expect(asProject2.results.length).toBe(30);
  expect(foreignCells(asProject2.results).length).toBe(30);
});

it('answers project 1 rows for a plain query, so the check above is not vacuous', async () => {
  const { results } = await runHogQL(store.ch, 'SELECT distinct_id FROM events', { teamId: 1 });
  expect(results.length).toBe(30);
  const asProject2 = await runHogQL(store.ch, 'SELECT distinct_id FROM events', { teamId: 2 });
  expect(foreignCells(asProject2.results).length).toBe(30);
});
