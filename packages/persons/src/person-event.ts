import type { Properties } from './json';
import type { PersonOverride } from './person-repository';
import type { StagedChange } from './person-snapshot';
import type { PersonWarning } from './warnings';

/** An event as person processing needs it: capture's normalized event (distinct_id a string, timestamp computed). */
export interface PersonEvent {
  uuid: string;
  event: string;
  distinctId: string;
  timestamp: Date;
  properties: Properties;
}

/** The events table's person_mode (PostHog's `posthog/models/event/sql.py`; docs/ingestion.md#personless-events). */
export type PersonMode = 'full' | 'propertyless' | 'force_upgrade';

/** What the stored event row needs from person processing, plus what to record beside it. */
export interface EventPerson {
  mode: PersonMode;
  /** events.person_id. */
  personUuid: string;
  /** The Postgres id; undefined for a personless event of a distinct id that has no person. */
  personId: number | undefined;
  /** events.person_created_at. */
  createdAt: Date;
  /** events.person_properties: the person after this event, with its $set on top ({} when personless). */
  properties: Properties;
  /** Ingestion warnings to record; the event is still stored. */
  warnings: PersonWarning[];
  /** Override rows this event wrote (new or re-pointed), for a copy kept next to the events. */
  overrides: PersonOverride[];
  /** Set when this result relied on a person change staged in a BatchPersonStore: it holds once that is stored. */
  staged?: StagedChange;
}

/** The person store as event processing uses it: PersonStore itself, or a BatchPersonStore over it. */
export interface EventPersonStore {
  processEvent(projectId: number, event: PersonEvent): Promise<EventPerson>;
}
