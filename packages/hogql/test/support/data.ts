/**
 * A small seeded dataset over two projects, the same on every run: persons with distinct ids and properties,
 * sessions, a merged person (a person override), and events with properties. Tests compare HogQL answers with
 * plain TypeScript over `events`.
 */
import { insertEvents, insertLogs, insertPersonOverrides, NO_GROUPS, type ClickHouse, type EventRow, type LogRow } from '@plover/clickhouse';

export interface SeedEvent {
  uuid: string;
  projectId: number;
  event: string;
  distinctId: string;
  /** The person the event counts as now (after the override). */
  person: string;
  sessionId: string;
  timestamp: string;
  properties: Record<string, unknown>;
}

export const EVENT_NAMES = ['$pageview', '$autocapture', 'signed up', 'paid', "it's quoted"];
const BROWSERS = ['Chrome', 'Firefox', 'Safari'];

/** Park–Miller: small, deterministic, good enough to vary test data. */
export function random(seed: number): () => number {
  let state = seed % 2147483647 || 1;
  return () => (state = (state * 48271) % 2147483647) / 2147483647;
}

const uuid = (prefix: number, n: number) => `00000000-0000-4000-8000-${(prefix * 1_000_000 + n).toString(16).padStart(12, '0')}`;

/**
 * Writes `perProject` events for each of `projects` and returns them. In every project the second person was
 * merged into the first: their events were stored with the old id, and an override maps it. Each event also has
 * a log line of the same person and session, its body naming them.
 */
export async function seed(ch: ClickHouse, projects: readonly number[], perProject: number, seedValue = 7): Promise<SeedEvent[]> {
  const next = random(seedValue);
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
  const out: SeedEvent[] = [];
  const rows: EventRow[] = [];
  for (const projectId of projects) {
    const persons = Array.from({ length: 6 }, (_, i) => uuid(projectId, i + 1));
    const merged = { old: persons[1]!, into: persons[0]! };
    await insertPersonOverrides(ch, [{ team_id: projectId, old_person_id: merged.old, override_person_id: merged.into, version: 1 }]);
    for (let i = 0; i < perProject; i++) {
      const stored = pick(persons);
      const distinctId = `p${projectId}-${stored.slice(-2)}`;
      const properties = {
        $browser: pick(BROWSERS),
        n: Math.floor(next() * 10),
        $current_url: `https://x.test/${pick(['a', 'b'])}`,
        nested: { k: pick(['u', 'v']) },
      };
      const timestamp = new Date(Date.UTC(2025, 0, 1) + Math.floor(next() * 10 * 86_400_000)).toISOString().replace('T', ' ').replace('Z', '');
      const event: SeedEvent = {
        uuid: uuid(100 + projectId, i),
        projectId,
        event: pick(EVENT_NAMES),
        distinctId,
        person: stored === merged.old ? merged.into : stored,
        // UUIDv7 session ids: the sessions table keeps no other.
        sessionId: `01900000-0000-7000-8000-${projectId.toString(16).padStart(6, '0')}${Math.floor(next() * 8)
          .toString(16)
          .padStart(6, '0')}`,
        timestamp,
        properties,
      };
      out.push(event);
      rows.push({
        uuid: event.uuid,
        event: event.event,
        properties: JSON.stringify(properties),
        timestamp,
        team_id: projectId,
        distinct_id: distinctId,
        elements_chain: '',
        created_at: timestamp,
        person_id: stored,
        person_properties: JSON.stringify({ email: `${distinctId}@x.test`, plan: pick(['free', 'paid']) }),
        person_created_at: '2024-12-01 00:00:00.000',
        person_mode: 'full',
        ...NO_GROUPS,
        session_id: event.sessionId,
        window_id: '',
        historical_migration: false,
      });
    }
  }
  await insertEvents(ch, rows);
  await insertLogs(ch, out.map(logLine));
  return out;
}

/** The log line written beside an event: same project, time, person and session. */
function logLine(event: SeedEvent): LogRow {
  const timestamp = `${event.timestamp.replace(' ', 'T')}000Z`;
  return {
    team_id: event.projectId,
    uuid: event.uuid,
    timestamp,
    observed_timestamp: timestamp,
    severity_text: event.event === 'paid' ? 'ERROR' : 'INFO',
    severity_number: event.event === 'paid' ? 17 : 9,
    body: `${event.event} by ${event.distinctId} in ${event.sessionId}`,
    trace_id: '',
    span_id: '',
    attributes: JSON.stringify({ sessionId: event.sessionId, posthogDistinctId: event.distinctId }),
    resource_attributes: JSON.stringify({ 'service.name': 'web' }),
    service_name: 'web',
    session_id: event.sessionId,
    distinct_id: event.distinctId,
    // Seeded times are in 2025: kept for fifty years, past any run.
    retention_days: 18_250,
  };
}
