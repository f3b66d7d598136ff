import request from 'supertest';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { insertEvents } from '@plover/clickhouse';
import { eventRow } from '../../../packages/insights/test/support/event-row';
import { backends, bearer, useWorld, type World } from './support/app';
import { useChdb } from './support/recordings';

/**
 * Survey results through the real routes on chDB: the counting rules against a plain TypeScript reference on
 * small seeded random event streams, and the edge cases one by one.
 */

jest.setTimeout(120_000);

type Body = Record<string, unknown>;
const SHOWN = 'survey shown';
const DISMISSED = 'survey dismissed';
const SENT = 'survey sent';
const EVENTS = [SHOWN, DISMISSED, SENT] as const;

interface SurveyEvent {
  uuid: string;
  event: string;
  at: number;
  person: string;
  survey: string;
  partial?: boolean | 'true';
  submission?: string;
  answers?: Body;
}

const person = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const chTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
const isoZ = (ms: number) =>
  new Date(ms)
    .toISOString()
    .replace(/\.000Z$/, 'Z')
    .replace(/\.(\d{3})Z$/, '.$1000Z');

function row(projectId: number, e: SurveyEvent) {
  const properties: Body = { $survey_id: e.survey };
  if (e.partial !== undefined) properties.$survey_partially_completed = e.partial;
  if (e.submission !== undefined) properties.$survey_submission_id = e.submission;
  Object.assign(properties, e.answers);
  return eventRow({ uuid: e.uuid, projectId, event: e.event, at: chTime(e.at), person: e.person, properties });
}

interface Scope {
  survey: string;
  from: number | null;
  to: number | null;
  excluded: Set<string>;
}

/** The counting rules, in plain TypeScript. */
function reference(events: SurveyEvent[], scope: Scope) {
  const inWindow = (e: SurveyEvent) => (scope.from === null || e.at >= scope.from) && (scope.to === null || e.at <= scope.to);
  const latest = new Map<string, SurveyEvent>();
  for (const e of events.filter((x) => x.event === SENT && inWindow(x))) {
    const key = e.submission ? e.submission : e.uuid;
    const held = latest.get(key);
    if (!held || e.at > held.at) latest.set(key, e);
  }
  const latestUuids = new Set([...latest.values()].map((e) => e.uuid));
  const base = events.filter(
    (e) => e.survey === scope.survey && inWindow(e) && !scope.excluded.has(e.uuid) && !(e.event === DISMISSED && (e.partial === true || e.partial === 'true')),
  );
  const counts = (name: string) => {
    const counted = base.filter((e) => e.event === name && (name !== SENT || latestUuids.has(e.uuid)));
    const times = counted.map((e) => e.at);
    return {
      total_count: counted.length,
      unique_persons: new Set(counted.map((e) => e.person)).size,
      first_seen: times.length ? isoZ(Math.min(...times)) : null,
      last_seen: times.length ? isoZ(Math.max(...times)) : null,
      unique_persons_only_seen: 0,
      total_count_only_seen: 0,
    };
  };
  const [shown, dismissed, sent] = [counts(SHOWN), counts(DISMISSED), counts(SENT)];
  const dismissedPersons = new Set(base.filter((e) => e.event === DISMISSED).map((e) => e.person));
  const both = new Set(base.filter((e) => e.event === SENT && dismissedPersons.has(e.person)).map((e) => e.person)).size;
  dismissed.unique_persons = Math.max(0, dismissed.unique_persons - both);
  shown.unique_persons_only_seen = Math.max(0, shown.unique_persons - dismissed.unique_persons - sent.unique_persons);
  shown.total_count_only_seen = Math.max(0, shown.total_count - dismissed.total_count - sent.total_count);
  const rate = (a: number, b: number) => Math.round((a / b) * 10000) / 100;
  const rates =
    shown.total_count > 0
      ? {
          response_rate: rate(sent.total_count, shown.total_count),
          dismissal_rate: rate(dismissed.total_count, shown.total_count),
          unique_users_response_rate: rate(sent.unique_persons, shown.unique_persons),
          unique_users_dismissal_rate: rate(dismissed.unique_persons, shown.unique_persons),
        }
      : { response_rate: 0, dismissal_rate: 0, unique_users_response_rate: 0, unique_users_dismissal_rate: 0 };
  const stats = { [SHOWN]: shown, [DISMISSED]: dismissed, [SENT]: sent };
  return { stats, rates, submissions: base.filter((e) => e.event === SENT && latestUuids.has(e.uuid)).length };
}

const clickhouse = useChdb();
const T0 = Date.UTC(2025, 2, 1, 9);
const HOUR = 3_600_000;

async function tenantOf(world: World) {
  const t = await world.tenant();
  const call = (method: 'get' | 'post' | 'patch', url: string, body?: Body) => {
    const req = request(world.app)[method](`/api/projects/${t.projectId}${url}`).set(bearer(t.key));
    return body === undefined ? req : req.send(body);
  };
  const survey = async (fields: Body = {}) => {
    const res = await call('post', '/surveys/', { name: `s-${randomUUID()}`, questions: [{ type: 'open', question: 'Why?' }], ...fields });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  return { ...t, call, survey };
}

const stream = fc.array(
  fc.record({
    event: fc.constantFrom(...EVENTS),
    hour: fc.integer({ min: 0, max: 47 }),
    person: fc.integer({ min: 1, max: 6 }),
    other: fc.boolean(),
    partial: fc.constantFrom(undefined, false, true, 'true' as const),
    submission: fc.constantFrom(undefined, 's1', 's2', 's3'),
    archive: fc.boolean(),
  }),
  { minLength: 1, maxLength: 25 },
);

describe.each(backends)('survey results on $name', (backend) => {
  const world = useWorld(backend, { clickhouse });

  it('counts as the reference does on random streams (dedup, partial dismissals, windows, archived, rates)', async () => {
    const s = await tenantOf(world);
    await fc.assert(
      fc.asyncProperty(stream, fc.integer({ min: 0, max: 47 }), fc.integer({ min: 0, max: 47 }), fc.boolean(), async (drawn, a, b, excludeArchived) => {
        const start = T0 + 4 * HOUR;
        const end = T0 + 40 * HOUR;
        const survey = await s.survey({ start_date: new Date(start).toISOString(), end_date: new Date(end).toISOString() });
        const otherSurvey = await s.survey();
        // Distinct timestamps: PostHog's latest-per-submission pick is the argMax by timestamp.
        const events: SurveyEvent[] = drawn.map((d, i) => ({
          uuid: randomUUID(),
          event: d.event,
          at: T0 + d.hour * HOUR + i * 1000 + (i % 3) * 7,
          person: person(d.person),
          survey: d.other ? otherSurvey : survey,
          ...(d.partial !== undefined ? { partial: d.partial } : {}),
          // Submission ids are per survey in practice.
          ...(d.submission !== undefined ? { submission: `${survey}-${d.other}-${d.submission}` } : {}),
        }));
        await insertEvents(
          clickhouse(),
          events.map((e) => row(s.projectId, e)),
        );
        const archived = events.filter((e, i) => e.event === SENT && e.survey === survey && drawn[i]!.archive);
        for (const e of archived) expect((await s.call('post', `/surveys/${survey}/responses/${e.uuid}/archive/`)).status).toBe(200);

        const [lo, hi] = [Math.min(a, b), Math.max(a, b)];
        const from = T0 + lo * HOUR;
        const to = T0 + hi * HOUR + 30 * 60_000;
        const query = `date_from=${encodeURIComponent(new Date(from).toISOString())}&date_to=${encodeURIComponent(new Date(to).toISOString().replace('Z', '+00:00'))}`;
        const res = await s.call('get', `/surveys/${survey}/stats/?${query}&exclude_archived=${excludeArchived}`);
        expect(res.status).toBe(200);
        const expected = reference(events, {
          survey,
          from: Math.max(from, start),
          to: Math.min(to, end),
          excluded: new Set(excludeArchived ? archived.map((e) => e.uuid) : []),
        });
        expect(res.body).toEqual({
          survey_id: survey,
          start_date: new Date(start).toISOString(),
          end_date: new Date(end).toISOString(),
          stats: expected.stats,
          rates: expected.rates,
        });

        const counts = await s.call('get', `/surveys/responses_count/?survey_ids=${survey}&exclude_archived=${excludeArchived}`);
        const all = reference(events, { survey, from: start, to: null, excluded: new Set(excludeArchived ? archived.map((e) => e.uuid) : []) });
        expect(counts.body).toEqual(all.submissions > 0 ? { [survey]: all.submissions } : {});
      }),
      { numRuns: 12, seed: 35 },
    );
  });

  it('edge cases: date validation, unknown surveys, an empty project, archived surveys, rounding, unarchive', async () => {
    const s = await tenantOf(world);
    expect((await s.call('get', '/surveys/stats/')).body).toEqual({
      stats: {},
      rates: { response_rate: 0, dismissal_rate: 0, unique_users_response_rate: 0, unique_users_dismissal_rate: 0 },
    });
    const survey = await s.survey();
    for (const bad of [
      'date_from=2025-03-01',
      'date_from=2025-03-01T00:00:00',
      'date_to=yesterday',
      'date_from=2025-03-02T00:00:00Z&date_to=2025-03-01T00:00:00Z',
    ]) {
      const res = await s.call('get', `/surveys/${survey}/stats/?${bad}`);
      expect(res.status).toBe(400);
      expect(res.body.type).toBe('validation_error');
    }
    expect((await s.call('get', `/surveys/stats/?date_from=2025-03-01`)).status).toBe(400);
    expect((await s.call('get', `/surveys/${survey}/stats/?date_from=2025-03-02T00:00:00Z&date_to=2025-03-01T00:00:00Z`)).body.detail).toBe(
      'date_from must be before date_to',
    );
    expect((await s.call('get', `/surveys/${randomUUID()}/stats/`)).status).toBe(404);
    expect((await s.call('post', `/surveys/${survey}/responses/not-a-uuid/archive/`)).status).toBe(400);

    // A survey created now counts from its creation: events are stamped now. 3 shown by 3 persons, 1 sent: 33.33 %.
    const now = Date.now() - 60_000;
    const events: SurveyEvent[] = [
      { uuid: randomUUID(), event: SHOWN, at: now, person: person(1), survey },
      { uuid: randomUUID(), event: SHOWN, at: now + 1, person: person(2), survey },
      { uuid: randomUUID(), event: SHOWN, at: now + 2, person: person(3), survey },
      { uuid: randomUUID(), event: SENT, at: now + 3, person: person(1), survey, submission: 'x' },
      { uuid: randomUUID(), event: SENT, at: now + 4, person: person(1), survey, submission: 'x' },
      { uuid: randomUUID(), event: DISMISSED, at: now + 5, person: person(1), survey, partial: true },
    ];
    // Created a minute after the events' time: nothing counts for the survey itself…
    await insertEvents(
      clickhouse(),
      events.map((e) => row(s.projectId, e)),
    );
    const own = await s.call('get', `/surveys/${survey}/stats/`);
    expect((own.body.stats as Record<string, Body>)[SHOWN]!.total_count).toBe(0);
    // …while the project-wide stats take no survey window.
    const global = await s.call('get', '/surveys/stats/');
    expect(global.body.rates).toEqual({ response_rate: 33.33, dismissal_rate: 0, unique_users_response_rate: 33.33, unique_users_dismissal_rate: 0 });
    expect((global.body.stats as Record<string, Body>)[SENT]).toMatchObject({ total_count: 1, unique_persons: 1, first_seen: isoZ(now + 4) });
    // An archived survey drops out of the project-wide stats.
    expect((await s.call('patch', `/surveys/${survey}/`, { archived: true })).status).toBe(200);
    expect((await s.call('get', '/surveys/stats/')).body.stats).toEqual({});

    // Archive, then unarchive: the response counts again.
    const latest = events[4]!.uuid;
    const counted = async () => (await s.call('get', `/surveys/responses_count/?exclude_archived=true`)).body as Record<string, number>;
    expect(await counted()).toEqual({});
    const dated = await s.call('patch', `/surveys/${survey}/`, { start_date: new Date(now - HOUR).toISOString() });
    expect(dated.status).toBe(200);
    expect(await counted()).toEqual({ [survey]: 1 });
    expect((await s.call('post', `/surveys/${survey}/responses/${latest}/archive/`)).body).toEqual({ response_uuid: latest, archived: true });
    expect(await counted()).toEqual({});
    expect((await s.call('get', `/surveys/responses_count/`)).body).toEqual({ [survey]: 1 });
    expect((await s.call('post', `/surveys/${survey}/responses/${latest}/unarchive/`)).body).toEqual({ response_uuid: latest, archived: false });
    expect(await counted()).toEqual({ [survey]: 1 });
  });

  it('responses and per-question results: id keys then index keys, a submission merged, archived left out, CSV', async () => {
    const s = await tenantOf(world);
    const questions = [
      { id: 'q-open', type: 'open', question: 'What could be better?' },
      { id: 'q-rate', type: 'rating', question: 'How likely…?', scale: 10 },
      { id: 'q-one', type: 'single_choice', question: 'Role?', choices: ['Engineer', 'Designer', 'Other'] },
      { id: 'q-many', type: 'multiple_choice', question: 'Which?', choices: ['A', 'B', 'C'] },
    ];
    const survey = await s.survey({ questions, start_date: new Date(T0).toISOString() });
    const sent = (at: number, who: number, answers: Body, submission?: string): SurveyEvent => ({
      uuid: randomUUID(),
      event: SENT,
      at: T0 + at * HOUR,
      person: person(who),
      survey,
      answers,
      ...(submission ? { submission } : {}),
    });
    const events = [
      // One submission sent question by question: its answers merge, the latest event names it.
      sent(1, 1, { '$survey_response_q-open': 'Faster pages', '$survey_response_q-rate': 9 }, 'sub-1'),
      sent(2, 1, { '$survey_response_q-one': 'Engineer', '$survey_response_q-many': ['A', 'C'] }, 'sub-1'),
      // An older client: index keys only.
      sent(3, 2, { $survey_response: 'More docs', $survey_response_1: 10, $survey_response_2: 'Product manager', $survey_response_3: ['B'] }),
      // Empty answers do not count; the id key wins over the index key.
      sent(4, 3, { '$survey_response_q-open': '  ', '$survey_response_q-rate': 9, $survey_response_1: 2, '$survey_response_q-many': [] }),
      sent(5, 4, { '$survey_response_q-open': 'Archive me', '$survey_response_q-one': 'Designer' }),
    ];
    await insertEvents(
      clickhouse(),
      events.map((e) => row(s.projectId, e)),
    );
    expect((await s.call('post', `/surveys/${survey}/responses/${events[4]!.uuid}/archive/`)).status).toBe(200);

    const listed = await s.call('get', `/surveys/${survey}/responses/?exclude_archived=true`);
    expect(listed.status).toBe(200);
    expect(listed.body.count).toBe(3);
    const results = listed.body.results as Body[];
    expect(results.map((r) => r.distinct_id)).toEqual([person(3), person(2), person(1)]);
    expect(results[2]).toEqual({
      uuid: events[1]!.uuid,
      submission_id: 'sub-1',
      timestamp: isoZ(events[1]!.at),
      distinct_id: person(1),
      person_id: person(1),
      answers: { 'q-open': 'Faster pages', 'q-rate': 9, 'q-one': 'Engineer', 'q-many': ['A', 'C'] },
    });
    expect(results[1]!.submission_id).toBeNull();
    expect(results[0]!.answers).toEqual({ 'q-open': null, 'q-rate': 9, 'q-one': null, 'q-many': null });
    expect((await s.call('get', `/surveys/${survey}/responses/`)).body.count).toBe(4);
    expect((await s.call('get', `/surveys/${survey}/responses/?limit=1&offset=1`)).body.results).toHaveLength(1);

    const perQuestion = await s.call('get', `/surveys/${survey}/questions/?exclude_archived=true`);
    expect(perQuestion.status).toBe(200);
    const [open, rating, single, multiple] = perQuestion.body.questions as Body[];
    expect(perQuestion.body.submissions).toBe(3);
    expect(open).toMatchObject({ id: 'q-open', type: 'open', response_count: 2 });
    expect((open!.answers as Body[]).map((a) => a.value)).toEqual(['More docs', 'Faster pages']);
    expect(rating).toMatchObject({ response_count: 3, average: (9 + 10 + 9) / 3 });
    expect(rating!.distribution).toEqual({ 0: 0, 1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 0, 8: 0, 9: 2, 10: 1 });
    expect(single!.distribution).toEqual({ Engineer: 1, Designer: 0, Other: 0, '<other>': 1 });
    expect(multiple).toMatchObject({ response_count: 2, distribution: { A: 1, B: 1, C: 1 } });

    const csv = await s.call('get', `/surveys/${survey}/responses/?format=csv&exclude_archived=true`);
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toMatch(/text\/csv/);
    const lines = csv.text.trim().split(/\r?\n/);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toContain('answers.q-open');
    expect(csv.text).toContain('Faster pages');
    expect(csv.text).not.toContain('Archive me');
  });
});
