/**
 * Keeps a project's event and property definitions (docs/definitions.md) as PostHog's property-defs service does:
 * every event's name, the keys of its properties (type 1), of its `$set` and `$set_once` (person, type 2), and for
 * `$groupidentify` only the keys of `$group_set` (group, type 3), with the type detected from the first value that
 * has one, and which event properties were seen on which events.
 *
 * One call per batch: what the batch's events hold that this process has not stored yet is upserted with three
 * statements, whatever the batch's size. A process remembers what it stored, so once a project's names are known an
 * event costs a few map lookups and no statement; an event definition's `last_seen_at` is written at most once an
 * hour per name. The memory is bounded: past `maxKnown` names it is dropped and relearnt from the next batches.
 */
import { storableText } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { detectPropertyType, type PropertyType } from './property-type';

type Properties = Record<string, unknown>;

export interface ObservedEvent {
  projectId: number;
  event: string;
  /** The event's properties as stored. */
  properties: Properties;
}

export interface DefinitionsUpkeepOptions {
  sql: Sql;
  /** The index of a project's group type, as group processing assigned it (undefined past the fifth type). */
  groupTypeIndex(projectId: number, groupType: string): Promise<number | undefined>;
  now?: () => Date;
  /** Names remembered before the memory is dropped (event names, property definitions and event–property pairs). */
  maxKnown?: number;
}

/** PostHog's property-defs skips its own metrics events. */
const SKIPPED_EVENTS = new Set(['$$plugin_metrics']);

/** Keys of an event's properties that are not event properties: person and group instructions. */
const NOT_EVENT_PROPERTIES = new Set(['$set', '$set_once', '$unset', '$group_0', '$group_1', '$group_2', '$group_3', '$group_4', '$groups']);

/** PostHog drops names longer than 200 bytes (half its 400-character column), and events with more updates than this. */
const MAX_NAME_BYTES = 200;
const MAX_UPDATES_PER_EVENT = 10_000;

const EVENT = 1;
const PERSON = 2;
const GROUP = 3;
const HOUR_MS = 3_600_000;

/** What a process knows it stored for one name of a project. */
interface KnownEvent {
  /** The hour (ms since the epoch / 1 h) of the `last_seen_at` last written. */
  seenHour: number;
  /** Properties whose pair with this event is stored. */
  pairs: Set<string>;
  /** Of those, the ones whose definition has a type: nothing left to write for them. */
  settled: Set<string>;
}

/** Property definitions stored, by name: true once the definition has a type, false while it is NULL. */
type KnownProperties = Map<string, boolean>;

interface KnownProject {
  events: Map<string, KnownEvent>;
  eventProperties: KnownProperties;
  personProperties: KnownProperties;
  /** By group type index. */
  groupProperties: Map<number, KnownProperties>;
}

interface PropertyWrite {
  projectId: number;
  type: number;
  groupTypeIndex: number | null;
  name: string;
  propertyType: PropertyType | null;
}

/** One batch's writes, deduplicated: the first value with a type wins, as it would event by event. */
class Pending {
  readonly events = new Map<string, { projectId: number; name: string }>();
  readonly properties = new Map<string, PropertyWrite>();
  readonly pairs = new Map<string, { projectId: number; event: string; property: string }>();

  get empty(): boolean {
    return this.events.size === 0 && this.properties.size === 0 && this.pairs.size === 0;
  }
}

const fits = (name: string): boolean => name.length <= MAX_NAME_BYTES && Buffer.byteLength(name) <= MAX_NAME_BYTES;

const isObject = (value: unknown): value is Properties => typeof value === 'object' && value !== null && !Array.isArray(value);

export class DefinitionsUpkeep {
  private readonly known = new Map<number, KnownProject>();
  private knownCount = 0;
  private readonly now: () => Date;
  private readonly maxKnown: number;

  constructor(private readonly options: DefinitionsUpkeepOptions) {
    this.now = options.now ?? (() => new Date());
    this.maxKnown = options.maxKnown ?? 200_000;
  }

  /** Stores what `events` hold that is not stored yet; throws when Postgres fails (the batch is then redelivered). */
  async record(events: Iterable<ObservedEvent>): Promise<void> {
    const now = this.now();
    const hour = Math.floor(now.getTime() / HOUR_MS);
    const nowS = Math.floor(now.getTime() / 1000);
    const pending = new Pending();
    for (const given of events) {
      // Names as Postgres stores them (NUL and lone surrogates as U+FFFD), so that two names one storable name
      // stands for are one row of a statement.
      const event = storableText(given.event);
      const observed = event === given.event ? given : { ...given, event };
      if (SKIPPED_EVENTS.has(observed.event) || !fits(observed.event)) continue;
      const project = this.project(observed.projectId);
      const known = project.events.get(observed.event);
      if (known?.seenHour !== hour) pending.events.set(`${observed.projectId}:${observed.event}`, { projectId: observed.projectId, name: observed.event });
      if (observed.event === '$groupidentify') await this.groupProperties(observed, project, pending, nowS);
      else this.eventProperties(observed, project, known, pending, nowS);
    }
    if (pending.empty) return;
    await this.store(pending, now);
    this.remember(pending, hour);
  }

  private project(projectId: number): KnownProject {
    let project = this.known.get(projectId);
    if (!project) {
      project = { events: new Map(), eventProperties: new Map(), personProperties: new Map(), groupProperties: new Map() };
      this.known.set(projectId, project);
    }
    return project;
  }

  private properties(project: KnownProject, type: number, groupTypeIndex: number | null): KnownProperties {
    if (type === EVENT) return project.eventProperties;
    if (type === PERSON) return project.personProperties;
    let group = project.groupProperties.get(groupTypeIndex ?? -1);
    if (!group) {
      group = new Map();
      project.groupProperties.set(groupTypeIndex ?? -1, group);
    }
    return group;
  }

  /** The hot path: for an event whose names are all settled, one set lookup per key. */
  private eventProperties(observed: ObservedEvent, project: KnownProject, known: KnownEvent | undefined, pending: Pending, nowS: number): void {
    const { projectId, event, properties } = observed;
    const updates: PropertyWrite[] = [];
    const pairs: string[] = [];
    for (const key in properties) {
      const name = storableText(key);
      if (known?.settled.has(name) || NOT_EVENT_PROPERTIES.has(name) || !fits(name)) continue;
      if (known?.pairs.has(name)) {
        // Typed since the pair was stored (by another event's value): settled from now on.
        if (project.eventProperties.get(name) === true) {
          known.settled.add(name);
          continue;
        }
      } else pairs.push(name);
      this.propertyUpdate(project.eventProperties, projectId, EVENT, null, name, properties[key], updates, nowS);
    }
    for (const source of ['$set', '$set_once']) {
      const set = properties[source];
      if (!isObject(set)) continue;
      for (const key in set) {
        const name = storableText(key);
        if (project.personProperties.get(name) === true || !fits(name)) continue;
        this.propertyUpdate(project.personProperties, projectId, PERSON, null, name, set[key], updates, nowS);
      }
    }
    // PostHog counts one update for the event, and one per definition and per pair.
    if (1 + updates.length + pairs.length > MAX_UPDATES_PER_EVENT) return;
    for (const update of updates) this.addProperty(pending, update);
    for (const property of pairs) pending.pairs.set(`${projectId}:${event}\u0000${property}`, { projectId, event, property });
  }

  /** `$groupidentify`: only the group's properties, under the index of its `$group_type`. */
  private async groupProperties(observed: ObservedEvent, project: KnownProject, pending: Pending, nowS: number): Promise<void> {
    const { projectId, properties } = observed;
    const groupType = properties.$group_type;
    const set = properties.$group_set;
    if (typeof groupType !== 'string' || !isObject(set)) return;
    // The type as the persons step stored it.
    const index = await this.options.groupTypeIndex(projectId, storableText(groupType));
    if (index === undefined) return;
    const updates: PropertyWrite[] = [];
    const known = this.properties(project, GROUP, index);
    for (const key in set) {
      const name = storableText(key);
      if (known.get(name) === true || !fits(name)) continue;
      this.propertyUpdate(known, projectId, GROUP, index, name, set[key], updates, nowS);
    }
    if (1 + updates.length > MAX_UPDATES_PER_EVENT) return;
    for (const update of updates) this.addProperty(pending, update);
  }

  /** A definition to write: one not stored yet, or one stored without a type when this value has one. */
  private propertyUpdate(
    known: KnownProperties,
    projectId: number,
    type: number,
    groupTypeIndex: number | null,
    name: string,
    value: unknown,
    updates: PropertyWrite[],
    nowS: number,
  ): void {
    const stored = known.get(name);
    if (stored === true) return;
    const propertyType = detectPropertyType(name, value, nowS);
    if (stored === false && propertyType === null) return;
    updates.push({ projectId, type, groupTypeIndex, name, propertyType });
  }

  private addProperty(pending: Pending, update: PropertyWrite): void {
    const key = `${update.projectId}:${update.type}:${update.groupTypeIndex ?? ''}:${update.name}`;
    const earlier = pending.properties.get(key);
    if (!earlier || (earlier.propertyType === null && update.propertyType !== null)) pending.properties.set(key, update);
  }

  /**
   * Three statements, each over rows sorted by their key, so that consumers writing overlapping names at once lock
   * them in the same order and cannot deadlock. No transaction: each upsert holds on its own and is repeated harmlessly.
   */
  private async store(pending: Pending, now: Date): Promise<void> {
    const { sql } = this.options;
    const events = [...pending.events.values()].sort((a, b) => a.projectId - b.projectId || compare(a.name, b.name));
    const properties = [...pending.properties.values()].sort(
      (a, b) => a.projectId - b.projectId || a.type - b.type || (a.groupTypeIndex ?? -1) - (b.groupTypeIndex ?? -1) || compare(a.name, b.name),
    );
    const pairs = [...pending.pairs.values()].sort((a, b) => a.projectId - b.projectId || compare(a.event, b.event) || compare(a.property, b.property));
    if (events.length > 0) {
      await sql.query(
        'ingestion.eventDefinitions',
        `INSERT INTO event_definitions (project_id, name, created_at, last_seen_at)
         SELECT project_id, name, $3, $3 FROM unnest($1::int[], $2::text[]) AS t (project_id, name)
         ON CONFLICT (project_id, name) DO UPDATE SET last_seen_at = GREATEST(event_definitions.last_seen_at, EXCLUDED.last_seen_at)`,
        [events.map((row) => row.projectId), events.map((row) => row.name), now],
      );
    }
    if (properties.length > 0) {
      await sql.query(
        'ingestion.propertyDefinitions',
        `INSERT INTO property_definitions (project_id, name, type, group_type_index, property_type, is_numerical)
         SELECT project_id, name, type, group_type_index, property_type, COALESCE(property_type = 'Numeric', false)
           FROM unnest($1::int[], $2::text[], $3::smallint[], $4::smallint[], $5::text[]) AS t (project_id, name, type, group_type_index, property_type)
         ON CONFLICT (project_id, type, (COALESCE(group_type_index, -1)), name)
         DO UPDATE SET property_type = EXCLUDED.property_type, is_numerical = EXCLUDED.is_numerical
         WHERE property_definitions.property_type IS NULL AND EXCLUDED.property_type IS NOT NULL`,
        [
          properties.map((row) => row.projectId),
          properties.map((row) => row.name),
          properties.map((row) => row.type),
          properties.map((row) => row.groupTypeIndex),
          properties.map((row) => row.propertyType),
        ],
      );
    }
    if (pairs.length > 0) {
      await sql.query(
        'ingestion.eventProperties',
        `INSERT INTO event_properties (project_id, event, property)
         SELECT * FROM unnest($1::int[], $2::text[], $3::text[]) ON CONFLICT DO NOTHING`,
        [pairs.map((row) => row.projectId), pairs.map((row) => row.event), pairs.map((row) => row.property)],
      );
    }
  }

  /** After the statements succeeded: what they stored need not be written again. */
  private remember(pending: Pending, hour: number): void {
    for (const { projectId, name } of pending.events.values()) {
      const project = this.project(projectId);
      const known = project.events.get(name);
      if (known) known.seenHour = hour;
      else {
        project.events.set(name, { seenHour: hour, pairs: new Set(), settled: new Set() });
        this.knownCount += 1;
      }
    }
    for (const update of pending.properties.values()) {
      const properties = this.properties(this.project(update.projectId), update.type, update.groupTypeIndex);
      if (!properties.has(update.name)) this.knownCount += 1;
      properties.set(update.name, properties.get(update.name) === true || update.propertyType !== null);
    }
    for (const { projectId, event, property } of pending.pairs.values()) {
      const known = this.project(projectId).events.get(event);
      if (!known || known.pairs.has(property)) continue;
      known.pairs.add(property);
      this.knownCount += 1;
    }
    if (this.knownCount > this.maxKnown) {
      this.known.clear();
      this.knownCount = 0;
    }
  }
}

/** Code-unit order, the same in every process (localeCompare depends on the locale). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
