import { Type, type Static } from '@sinclair/typebox';
import type { SessionSummary } from '@plover/clickhouse';
import type { Person } from '@plover/persons';
import type { Caller } from './access-store';
import { Person as PersonSchema, personBody } from './person-body';
import { component, Nullable } from './schema';
import type { RecordingsStore } from './recordings-store';

const PersonStub = Type.Object({
  id: Type.Null(),
  name: Type.Null(),
  distinct_ids: Type.Array(Type.String()),
  properties: Type.Object({}),
  created_at: Type.Null(),
  uuid: Type.Null(),
});

/** A recording's person as PostHog's minimal person serializer shows it; a stub when the distinct id has none. */
const RecordingPerson = Type.Union([PersonSchema, PersonStub], {
  description: 'the person (at most 10 distinct ids), or a stub with a null id when the distinct id has none',
});
export type RecordingPerson = Static<typeof RecordingPerson>;

/** A recording as PostHog's recordings API answers it (lists, retrieve, playlists' recordings). */
export const SessionRecording = component(
  'SessionRecording',
  Type.Object({
    id: Type.String({ description: 'the session id' }),
    distinct_id: Type.String(),
    viewed: Type.Boolean({ description: 'by the caller' }),
    viewers: Type.Array(Type.String(), { description: 'the emails of the other users who watched it' }),
    recording_duration: Type.Integer({ description: 'seconds' }),
    active_seconds: Type.Integer(),
    inactive_seconds: Type.Integer(),
    start_time: Type.String({ format: 'date-time' }),
    end_time: Type.String({ format: 'date-time' }),
    click_count: Type.Integer(),
    keypress_count: Type.Integer(),
    mouse_activity_count: Type.Integer(),
    console_log_count: Type.Integer(),
    console_warn_count: Type.Integer(),
    console_error_count: Type.Integer(),
    start_url: Nullable(Type.String()),
    person: RecordingPerson,
    retention_period_days: Type.Integer(),
    expiry_time: Type.String({ format: 'date-time' }),
    recording_ttl: Type.Integer({ description: 'whole days until expiry' }),
    snapshot_source: Type.String(),
    snapshot_library: Type.String(),
    ongoing: Type.Boolean({ description: 'data received in the last 5 minutes' }),
    activity_score: Type.Number(),
    has_summary: Type.Literal(false),
    summary_outcome: Type.Null(),
    external_references: Type.Tuple([]),
    matches_filters: Type.Literal(true),
  }),
);
export type Recording = Static<typeof SessionRecording>;

/** A person's distinct ids shown with a recording, as PostHog's minimal person serializer keeps. */
const PERSON_DISTINCT_IDS = 10;
/** The longest start_url answered. */
const START_URL_MAX = 512;
/** A recording that received data this recently is still going on. */
const ONGOING_MS = 5 * 60_000;
const DAY_MS = 86_400_000;

/** The first page address, else the first address seen without its query string; at most 512 characters. */
function startUrl(summary: SessionSummary): string | null {
  const url = summary.first_url ?? summary.all_urls[0]?.split('?')[0] ?? null;
  return url === null ? null : url.slice(0, START_URL_MAX);
}

function personOf(summary: SessionSummary, persons: Map<string, Person>): RecordingPerson {
  const person = persons.get(summary.distinct_id);
  if (!person) return { id: null, name: null, distinct_ids: [summary.distinct_id], properties: {}, created_at: null, uuid: null };
  const body = personBody(person);
  return { ...body, distinct_ids: body.distinct_ids.slice(0, PERSON_DISTINCT_IDS) };
}

/** The recordings of these summaries, in their order, seen by the caller at `now`. */
export async function recordingsOf(store: RecordingsStore, caller: Caller, summaries: readonly SessionSummary[], now = new Date()): Promise<Recording[]> {
  if (summaries.length === 0) return [];
  const [persons, views] = await Promise.all([
    store.personsOf(caller.projectId, [...new Set(summaries.map((summary) => summary.distinct_id))]),
    store.views(
      caller,
      summaries.map((summary) => summary.session_id),
    ),
  ]);
  return summaries.map((summary) => {
    const view = views.get(summary.session_id)!;
    const expiry = Date.parse(summary.expires_at);
    return {
      id: summary.session_id,
      distinct_id: summary.distinct_id,
      viewed: view.viewed,
      viewers: view.viewers,
      recording_duration: summary.duration,
      active_seconds: Math.floor(summary.active_seconds),
      inactive_seconds: Math.floor(summary.inactive_seconds),
      start_time: summary.start_time,
      end_time: summary.end_time,
      click_count: summary.click_count,
      keypress_count: summary.keypress_count,
      mouse_activity_count: summary.mouse_activity_count,
      console_log_count: summary.console_log_count,
      console_warn_count: summary.console_warn_count,
      console_error_count: summary.console_error_count,
      start_url: startUrl(summary),
      person: personOf(summary, persons),
      retention_period_days: summary.retention_period_days,
      expiry_time: summary.expires_at,
      recording_ttl: Math.max(0, Math.floor((expiry - now.getTime()) / DAY_MS)),
      snapshot_source: summary.snapshot_source || 'web',
      snapshot_library: summary.snapshot_library,
      ongoing: Date.parse(summary.last_ingested_at) >= now.getTime() - ONGOING_MS,
      activity_score: summary.activity_score,
      has_summary: false,
      summary_outcome: null,
      external_references: [],
      matches_filters: true,
    };
  });
}
