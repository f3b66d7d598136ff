import { NO_GROUPS, type EventRow } from '@plover/clickhouse';

/** What an insight test says about one stored event; the rest of the row is what a personful event carries. */
export interface StoredEvent {
  uuid: string;
  projectId: number;
  event: string;
  /** ClickHouse DateTime64 text, UTC. */
  at: string;
  /** The distinct id, and the person the event was stored with. */
  person: string;
  properties?: Record<string, unknown>;
  personProperties?: Record<string, unknown>;
  personCreatedAt?: string;
  group0?: string;
}

export function eventRow(event: StoredEvent): EventRow {
  return {
    uuid: event.uuid,
    event: event.event,
    properties: JSON.stringify(event.properties ?? {}),
    timestamp: event.at,
    team_id: event.projectId,
    distinct_id: event.person,
    elements_chain: '',
    created_at: event.at,
    person_id: event.person,
    person_properties: JSON.stringify(event.personProperties ?? {}),
    person_created_at: event.personCreatedAt ?? '1970-01-01 00:00:00.000',
    person_mode: 'full',
    ...NO_GROUPS,
    $group_0: event.group0 ?? '',
    session_id: '',
    window_id: '',
    historical_migration: false,
  };
}
