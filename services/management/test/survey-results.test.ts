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
});
