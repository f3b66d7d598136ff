import type { StoredPerson } from './person-repository';
import { PersonWriteConflict } from './transactions';

/**
 * What an event's result relied on, when that is a person change staged in a PersonSnapshot: the result holds only
 * once `stored` is true (BatchPersonStore.flush, or a locked write of the same person, stored the change).
 */
export interface StagedChange {
  readonly stored: boolean;
}

/** One person's staged changes: its state after them, and the version Postgres holds as far as the batch knows. */
export class StagedPerson {
  constructor(
    public person: StoredPerson,
    public storedVersion: number,
  ) {}

  get unstored(): boolean {
    return this.person.version !== this.storedVersion;
  }
}

/** A staged state a locked transaction wrote: `staged` is stored up to `person` once the transaction commits. */
export interface LockedWrite {
  staged: StagedPerson;
  person: StoredPerson;
}

class Dependency implements StagedChange {
  constructor(
    private readonly staged: StagedPerson,
    private readonly version: number,
  ) {}

  get stored(): boolean {
    return this.staged.storedVersion >= this.version;
  }
}

/**
 * The persons of a batch's distinct ids, read with one statement before the batch (PersonStore.readPersons), so
 * that processEvent answers the events that write nothing, most of them, without a read of its own. An id it
 * does not hold is read on first use and kept; a locked write drops what it touched (its ids, and every id of the
 * persons involved), to be read again when next needed. A "no write" decided on it is as safe as one decided on
 * processEvent's own unlocked read: a concurrent writer's change orders after the event. It never refreshes
 * what it holds, so use a new one per batch.
 *
 * With `stagesWrites`, it also holds the batch's property changes of existing persons ($set, $set_once, $unset
 * without a merge): processEvent applies them here, in event order, and later events of the person see them;
 * BatchPersonStore.flush stores them all with one statement, each person only if its version is still the one
 * read. A result that relied on a staged change carries it (EventPerson.staged).
 */
export class PersonSnapshot {
  /** null: known to have no person. */
  private readonly persons = new Map<string, StoredPerson | null>();
  private readonly idsByPerson = new Map<string, Set<string>>();
  /** By person id. */
  private readonly staged = new Map<number, StagedPerson>();

  constructor(
    readonly projectId: number,
    readonly stagesWrites: boolean,
  ) {}

  /** The person as this batch holds it, staged changes included; undefined when it does not know `distinctId`. */
  get(distinctId: string): StoredPerson | null | undefined {
    const person = this.persons.get(distinctId);
    return person ? (this.staged.get(person.id)?.person ?? person) : person;
  }

  set(distinctId: string, person: StoredPerson | undefined): void {
    this.persons.set(distinctId, person ?? null);
    if (person) {
      const ids = this.idsByPerson.get(person.uuid) ?? new Set<string>();
      this.idsByPerson.set(person.uuid, ids.add(distinctId));
    }
  }

  forget(distinctIds: readonly string[], personUuids: readonly string[]): void {
    const ids = new Set(distinctIds);
    for (const uuid of personUuids) {
      for (const id of this.idsByPerson.get(uuid) ?? []) ids.add(id);
      this.idsByPerson.delete(uuid);
    }
    for (const id of ids) this.persons.delete(id);
  }

  /**
   * Stages `next` as the new state of `current`, which must be the person as `get` returns it now: a change
   * decided on a state that another change replaced since would drop that change (PersonWriteConflict instead).
   */
  stage(current: StoredPerson, next: StoredPerson): StagedChange {
    let staged = this.staged.get(current.id);
    if (staged && staged.person !== current) throw new PersonWriteConflict(`person ${current.uuid} was staged anew while a change of it was decided`);
    if (staged) staged.person = next;
    else {
      staged = new StagedPerson(next, current.version);
      this.staged.set(current.id, staged);
    }
    return new Dependency(staged, next.version);
  }

  /** What a result decided on `person` (as `get` returned it) relies on; undefined when that is stored. */
  dependencyOf(person: StoredPerson): StagedChange | undefined {
    const staged = this.staged.get(person.id);
    return staged?.unstored ? new Dependency(staged, person.version) : undefined;
  }

  /** The person's changes not stored yet, for a locked transaction to write first. */
  unstoredChanges(personId: number): StagedPerson | undefined {
    const staged = this.staged.get(personId);
    return staged?.unstored ? staged : undefined;
  }

  /** Every person with changes not stored yet, for the flush. */
  allUnstored(): StagedPerson[] {
    return [...this.staged.values()].filter((staged) => staged.unstored);
  }

  /**
   * After a locked transaction committed: what it wrote of the staged changes is stored, and the persons it
   * locked are read again when next needed (it may have changed them). A change staged on one of those
   * persons while it ran was decided on a state that is gone: a conflict.
   */
  lockedWriteCommitted(written: readonly LockedWrite[], locked: readonly StoredPerson[]): void {
    for (const { staged, person } of written) staged.storedVersion = person.version;
    let lost = false;
    for (const person of locked) {
      lost ||= this.staged.get(person.id)?.unstored ?? false;
      this.staged.delete(person.id);
    }
    this.forget(
      [],
      locked.map((person) => person.uuid),
    );
    if (lost) throw new PersonWriteConflict('a person was changed in the batch while a locked write of it ran');
  }
}
