import type { Sql, SqlExecutor } from '@plover/postgres';
import { storableText } from './json';
import {
  attachDistinctId,
  deleteDistinctIds,
  deletePersonRow,
  findPersonByDistinctId,
  findPersonsByDistinctIds,
  insertPerson,
  lockPersonsByDistinctIds,
  moveDistinctIds,
  overridesInto,
  repointOverrides,
  selectPerson,
  toRef,
  updatePersonState,
  writeOverrides,
  type PersonOverride,
  type StoredPerson,
} from './person-repository';
import {
  FORCE_UPGRADE_AFTER_MS,
  PERSONLESS_CREATED_AT,
  isPersonless,
  mergeRequestOf,
  personUuid,
  planIdentity,
  type IdentityPlan,
  type MergeRequest,
} from './rules/identity';
import { newPersonState, nextPersonState, type ChangeOptions, type PersonChange } from './rules/person-state';
import { MAX_PROPERTIES_BYTES, eventPersonProperties, normalizeUpdate, propertyUpdateOf, writesEveryChange, type PropertyUpdate } from './rules/properties';
import { BatchPersonStore } from './batch-person-store';
import type { EventPerson, PersonEvent } from './person-event';
import { KnownPersons } from './known-persons';
import type { Person } from './person-reads';
import { PersonSnapshot, type LockedWrite } from './person-snapshot';
import { LostRaceError, PersonWriteConflict, transactionWithReplays } from './transactions';
import type { PersonWarning } from './warnings';

/** Persons whose properties readPersons keeps between batches: ≈ 1–3 KB each, so tens of MiB at most. */
const KNOWN_PERSONS = 10_000;

export type { Person };

export interface PropertiesUpdate {
  /** `updated` (version + 1), `unchanged` (nothing to write) or `too_large` (refused, nothing written). */
  outcome: 'updated' | 'unchanged' | 'too_large';
  person: Person;
}

export interface DeletedPerson {
  id: number;
  uuid: string;
  version: number;
  distinctIds: string[];
}

/** The event-independent part of processing one event, fixed before any attempt of its transaction. */
interface EventContext {
  projectId: number;
  event: PersonEvent;
  distinctId: string;
  update: PropertyUpdate;
  writeEveryChange: boolean;
}

/**
 * Persons in Postgres, processed as PostHog's ingestion does (docs/ingestion.md#persons). Ingestion calls
 * processEvent per event, serially per distinct id; the management API's PATCH calls updateProperties. Both
 * decide with the same rules (rules/person-state.ts) on a row locked with SELECT … FOR UPDATE, so concurrent
 * consumers and API calls never lose each other's changes. Ingestion may instead stage a batch's property
 * changes of existing persons in a BatchPersonStore (`batch`) and flush them at once, each write conditional on
 * the version it was decided on: a person that changed meanwhile is not written, and its events are decided
 * again under the lock.
 *
 * Idempotency under at-least-once delivery: every rule writes only what changes, so replaying an event whose
 * effects are stored is a no-op with no version bump — a create finds the person, `$set` finds equal values,
 * `$set_once` finds the key, `$unset` finds it gone, a merge finds both ids on one person, an override finds
 * itself. Not idempotent: replaying an event after later events changed the same keys re-applies it (the
 * replay of those later events then restores the final state, with extra version bumps), and warnings are
 * raised again on every replay (dedupe them by event uuid).
 */
export class PersonStore {
  /** The properties readPersons read last: a batch then fetches only those of the persons written since. */
  private readonly known = new KnownPersons(KNOWN_PERSONS);

  constructor(private readonly sql: Sql) {}

  /**
   * A bus batch's view of this store, its persons read first: `distinctIds` by project (ids as events carry
   * them). With `stageWrites`, it stages the batch's property changes instead of writing each (BatchPersonStore).
   */
  async batch(distinctIds: ReadonlyMap<number, readonly string[]>, options: { stageWrites: boolean }): Promise<BatchPersonStore> {
    const snapshots = await Promise.all([...distinctIds].map(([projectId, ids]) => this.readPersons(projectId, ids, options)));
    return new BatchPersonStore((projectId, event, snapshot) => this.processEvent(projectId, event, snapshot), this.sql, options.stageWrites, snapshots);
  }

  /**
   * The persons of `distinctIds` (ids as events carry them), for processEvent over a batch of their events: one
   * statement instead of one read per event. With `stageWrites`, processEvent stages the batch's property changes
   * in it instead of writing each (PersonSnapshot).
   */
  async readPersons(projectId: number, distinctIds: readonly string[], options: { stageWrites?: boolean } = {}): Promise<PersonSnapshot> {
    const snapshot = new PersonSnapshot(projectId, options.stageWrites ?? false);
    const storable = [...new Set(distinctIds.map(storableText))];
    const held = this.known.lookUp(projectId, storable);
    const found = await findPersonsByDistinctIds(this.sql, projectId, storable, held);
    storable.forEach((distinctId) => {
      const row = found.get(distinctId);
      const properties = this.known.update(projectId, distinctId, held.get(distinctId), row);
      snapshot.set(
        distinctId,
        row && properties && { id: row.id, uuid: row.uuid, properties, isIdentified: row.isIdentified, createdAt: row.createdAt, version: row.version },
      );
    });
    return snapshot;
  }

  /** `snapshot` (from readPersons, same project) stands in for the unlocked reads; see PersonSnapshot. */
  async processEvent(projectId: number, event: PersonEvent, snapshot?: PersonSnapshot): Promise<EventPerson> {
    if (snapshot && snapshot.projectId !== projectId) throw new Error(`a snapshot of project ${snapshot.projectId} used for project ${projectId}`);
    // Postgres text refuses NUL; the event's distinct_id is normalized the same way before storage
    // (docs/capture.md#normalization).
    const distinctId = storableText(event.distinctId);
    if (isPersonless(event.properties)) return this.personlessEvent(projectId, distinctId, event.timestamp, snapshot);

    const { request, warning } = mergeRequestOf({ ...event, distinctId });
    const warnings = warning ? [warning] : [];
    const context: EventContext = {
      projectId,
      event,
      distinctId,
      update: propertyUpdateOf(event.event, event.properties),
      writeEveryChange: writesEveryChange(event.event),
    };
    if (!request) {
      // Most events change nothing: answer them from one unlocked read. Deciding "no write" on a snapshot is
      // safe — a concurrent writer's change simply orders after this event.
      const found = await this.findPerson(projectId, distinctId, snapshot);
      // While the read awaited, an event of another distinct id of the same person (another key of the batch,
      // processed concurrently) may have staged a change: decide on the person as staged now, with no await
      // until the change is staged, or staging would replace that change with one decided without it.
      const person = found && (snapshot?.get(distinctId) ?? found);
      if (person) {
        const change = nextPersonState(person, context.update, { writeEveryChange: context.writeEveryChange, identify: false });
        if (!change.write) return { ...this.eventPerson(context, person, change, warnings, []), staged: snapshot?.dependencyOf(person) };
        // A property change of an existing person, staged for the batch's flush.
        if (snapshot?.stagesWrites)
          return { ...this.eventPerson(context, person, change, warnings, []), staged: snapshot.stage(person, { ...person, ...change.state }) };
      }
    }
    const touched = request ? [request.into, request.other] : [distinctId];
    try {
      const { result, locked, written } = await transactionWithReplays(this.sql, (tx) => this.processLocked(tx, context, request, warnings, snapshot));
      snapshot?.forget(touched, [result.personUuid, ...result.overrides.flatMap((override) => [override.oldPersonUuid, override.overridePersonUuid])]);
      snapshot?.lockedWriteCommitted(written, locked);
      return result;
    } catch (error) {
      snapshot?.forget(touched, []);
      throw error;
    }
  }

  /** The person as the snapshot holds it (staged changes included), reading it on first use. */
  private async findPerson(projectId: number, distinctId: string, snapshot: PersonSnapshot | undefined): Promise<StoredPerson | undefined> {
    const known = snapshot?.get(distinctId);
    if (known !== undefined) return known ?? undefined;
    const person = await findPersonByDistinctId(this.sql, projectId, distinctId);
    if (!snapshot) return person;
    snapshot.set(distinctId, person);
    return snapshot.get(distinctId) ?? undefined;
  }

  /**
   * Merges `update` into the person's properties for the management API ($set semantics for a PATCH body:
   * `{ set: properties }`), through the same rules and row lock as ingestion. Undefined when there is no
   * such person. A string ref is a person uuid; anything else matches nothing.
   */
  async updateProperties(
    projectId: number,
    personIdOrUuid: number | string,
    update: { set?: unknown; setOnce?: unknown; unset?: unknown },
  ): Promise<PropertiesUpdate | undefined> {
    const ref = toRef(personIdOrUuid);
    if (!ref) return undefined;
    const normalized = normalizeUpdate(update);
    return transactionWithReplays(this.sql, async (tx) => {
      const person = await selectPerson(tx, projectId, ref, 'forUpdate');
      if (!person) return undefined;
      const change = nextPersonState(person, normalized, { writeEveryChange: true, identify: false });
      if (change.write) await updatePersonState(tx, person.id, change.state);
      const outcome = change.refusedBytes !== undefined ? 'too_large' : change.write ? 'updated' : 'unchanged';
      return { outcome, person: { ...person, ...change.state } };
    });
  }

  /**
   * Deletes the person and its distinct ids (new events of those ids create a new person). Overrides that
   * point at it are kept: the deletion of its events must still find the events of persons merged into it.
   */
  async deletePerson(projectId: number, personIdOrUuid: number | string): Promise<DeletedPerson | undefined> {
    const ref = toRef(personIdOrUuid);
    if (!ref) return undefined;
    return transactionWithReplays(this.sql, async (tx) => {
      const person = await selectPerson(tx, projectId, ref);
      if (!person) return undefined;
      const distinctIds = await deleteDistinctIds(tx, person.id);
      const deleted = await deletePersonRow(tx, person.id);
      // Merged away between the read and the delete: replayed, the read then finds no such person.
      if (!deleted) throw new LostRaceError('person merged away while being deleted');
      return { id: deleted.id, uuid: deleted.uuid, version: deleted.version, distinctIds };
    });
  }

  /**
   * Personless events (docs/ingestion.md#personless-events): no row is written and $set is ignored. A distinct
   * id without a person gets its deterministic uuid; one with a person gets that person's uuid without
   * properties, or, when the person is more than a minute older than the event, its properties as
   * `force_upgrade`.
   */
  private async personlessEvent(projectId: number, distinctId: string, timestamp: Date, snapshot: PersonSnapshot | undefined): Promise<EventPerson> {
    const person = await this.findPerson(projectId, distinctId, snapshot);
    const result = { warnings: [], overrides: [] };
    if (!person) {
      return {
        ...result,
        mode: 'propertyless',
        personUuid: personUuid(projectId, distinctId),
        personId: undefined,
        createdAt: PERSONLESS_CREATED_AT,
        properties: {},
      };
    }
    const upgrade = timestamp.getTime() > person.createdAt.getTime() + FORCE_UPGRADE_AFTER_MS;
    return {
      ...result,
      staged: snapshot?.dependencyOf(person),
      mode: upgrade ? 'force_upgrade' : 'propertyless',
      personUuid: person.uuid,
      personId: person.id,
      createdAt: person.createdAt,
      properties: upgrade ? person.properties : {},
    };
  }

  /**
   * One attempt: lock the ids' rows and persons, store the snapshot's staged changes of those persons, plan per
   * docs/ingestion.md#merges, execute. Returns what it locked and which staged changes it wrote, for the snapshot to
   * account for once the transaction has committed.
   */
  private async processLocked(
    tx: SqlExecutor,
    context: EventContext,
    request: MergeRequest | undefined,
    warnings: PersonWarning[],
    snapshot: PersonSnapshot | undefined,
  ): Promise<{ result: EventPerson; locked: StoredPerson[]; written: LockedWrite[] }> {
    const { projectId, event } = context;
    const lockedByDistinctId = await lockPersonsByDistinctIds(tx, projectId, request ? [request.into, request.other] : [context.distinctId]);
    const locked = [...new Map([...lockedByDistinctId.values()].map((person) => [person.id, person])).values()];
    const written = snapshot ? await this.writeStaged(tx, snapshot, locked) : [];
    const current = new Map(written.map(({ person }) => [person.id, person]));
    const owner = (distinctId: string) => {
      const person = lockedByDistinctId.get(distinctId);
      return person && (current.get(person.id) ?? person);
    };
    const plan = planIdentity(context.distinctId, request, owner, event.uuid);
    return { result: await this.executePlan(tx, context, plan, warnings), locked, written };
  }

  /**
   * The locked persons' staged changes, written first so that the event applies on top of them (one person's
   * events stay in order). A person whose version moved since it was staged is a conflict.
   */
  private async writeStaged(tx: SqlExecutor, snapshot: PersonSnapshot, locked: readonly StoredPerson[]): Promise<LockedWrite[]> {
    const written: LockedWrite[] = [];
    for (const person of locked) {
      const staged = snapshot.unstoredChanges(person.id);
      if (!staged) continue;
      if (person.version !== staged.storedVersion) throw new PersonWriteConflict(`person ${person.uuid} changed since the batch read it`);
      const state = staged.person;
      await updatePersonState(tx, person.id, state);
      written.push({ staged, person: state });
    }
    return written;
  }

  private async executePlan(tx: SqlExecutor, context: EventContext, plan: IdentityPlan<StoredPerson>, warnings: PersonWarning[]): Promise<EventPerson> {
    const { projectId, event, update } = context;
    switch (plan.kind) {
      case 'create': {
        const [primary, ...others] = plan.distinctIds;
        const change = newPersonState(update, event.uuid, event.timestamp, plan.identify);
        const person = await insertPerson(tx, projectId, personUuid(projectId, primary), change.state, plan.distinctIds);
        // Events stored personless under the other id carry its own uuid: map them to this person.
        const overrides = await writeOverrides(
          tx,
          projectId,
          others.map((other) => [personUuid(projectId, other), person.uuid] as const),
        );
        return this.eventPerson(context, person, change, warnings, overrides);
      }
      case 'update': {
        // A merge found done already may be this event's own, from an attempt that committed it here and died
        // before the overrides were copied to ClickHouse (a consumer killed mid-batch): Postgres then has them and
        // ClickHouse never will, as writeOverrides returns only what it changes. So the overrides into the person
        // are returned again; copied twice, they collapse in ClickHouse (same versions).
        const overrides = plan.joined ? await overridesInto(tx, projectId, plan.person.uuid) : [];
        return this.change(tx, context, plan.person, { identify: plan.identify }, plan.warning ? [...warnings, plan.warning] : warnings, overrides);
      }
      case 'attach': {
        await attachDistinctId(tx, projectId, plan.distinctId, plan.person.id);
        const overrides = await writeOverrides(tx, projectId, [[personUuid(projectId, plan.distinctId), plan.person.uuid]]);
        return this.change(tx, context, plan.person, { identify: true }, warnings, overrides);
      }
      case 'merge': {
        const { source, target } = plan;
        await moveDistinctIds(tx, projectId, source.id, target.id);
        const overrides = [
          ...(await repointOverrides(tx, projectId, source.uuid, target.uuid)),
          ...(await writeOverrides(tx, projectId, [[source.uuid, target.uuid]])),
        ];
        await deletePersonRow(tx, source.id);
        return this.change(tx, context, target, { identify: true, mergeFrom: source }, warnings, overrides);
      }
    }
  }

  /** Applies the event to a locked person, writing only when something changes. */
  private async change(
    tx: SqlExecutor,
    context: EventContext,
    person: StoredPerson,
    options: Omit<ChangeOptions, 'writeEveryChange'>,
    warnings: PersonWarning[],
    overrides: PersonOverride[],
  ): Promise<EventPerson> {
    const change = nextPersonState(person, context.update, { ...options, writeEveryChange: context.writeEveryChange });
    if (change.write) await updatePersonState(tx, person.id, change.state);
    return this.eventPerson(context, { ...person, ...change.state }, change, warnings, overrides);
  }

  private eventPerson(context: EventContext, person: StoredPerson, change: PersonChange, warnings: PersonWarning[], overrides: PersonOverride[]): EventPerson {
    const sizeWarnings: PersonWarning[] =
      change.refusedBytes === undefined
        ? []
        : [
            {
              type: 'person_properties_size_violation',
              details: {
                personUuid: person.uuid,
                distinctId: context.distinctId,
                eventUuid: context.event.uuid,
                sizeBytes: change.refusedBytes,
                maxBytes: MAX_PROPERTIES_BYTES,
              },
            },
          ];
    return {
      mode: 'full',
      personUuid: person.uuid,
      personId: person.id,
      createdAt: person.createdAt,
      properties: eventPersonProperties(change.properties, context.update),
      warnings: [...warnings, ...sizeWarnings],
      overrides,
    };
  }
}
