import type { Sql } from '@plover/postgres';
import { jsonEqual } from './json';
import { selectPersonStates, updatePersonsIfUnchanged } from './person-repository';
import { PersonSnapshot, type StagedPerson } from './person-snapshot';
import { PersonReads, type Person } from './person-reads';
import type { EventPerson, EventPersonStore, PersonEvent } from './person-event';
import { PersonWriteConflict, transactionWithReplays } from './transactions';

/**
 * One bus batch's view of a PersonStore, with the store's own interface (PostHog's BatchWritingPersonsStore):
 * made by PersonStore.batch, which reads the batch's persons first, one statement per project, so that the
 * events that write nothing, most of them, need no read of their own (PersonSnapshot).
 *
 * With `stagesWrites`, the property changes of existing persons ($set, $set_once, $unset without a merge) are
 * staged here instead of written: later events of the person, and this store's reads, see them. `flush` stores
 * them all in one transaction, each person only if its version is still the one the batch read; `discard`
 * drops them unwritten. Until one of the two, a staged change is stored only by a locked write of the same
 * person (a merge, an identify), which writes the person's staged changes first so its events stay in order.
 * A result that relied on a staged change carries it (EventPerson.staged) and holds once it is stored.
 */
export class BatchPersonStore implements EventPersonStore {
  /** By project. */
  private readonly snapshots = new Map<number, PersonSnapshot>();
  private readonly reads: PersonReads;

  constructor(
    /** PersonStore.processEvent. */
    private readonly process: (projectId: number, event: PersonEvent, snapshot: PersonSnapshot) => Promise<EventPerson>,
    private readonly sql: Sql,
    readonly stagesWrites: boolean,
    snapshots: readonly PersonSnapshot[],
  ) {
    for (const snapshot of snapshots) this.snapshots.set(snapshot.projectId, snapshot);
    this.reads = new PersonReads(sql);
  }

  processEvent(projectId: number, event: PersonEvent): Promise<EventPerson> {
    let snapshot = this.snapshots.get(projectId);
    if (!snapshot) {
      snapshot = new PersonSnapshot(projectId, this.stagesWrites);
      this.snapshots.set(projectId, snapshot);
    }
    return this.process(projectId, event, snapshot);
  }

  /** The stored person with the changes staged here on top. */
  async getPerson(projectId: number, personIdOrUuid: number | string): Promise<Person | undefined> {
    return this.withStaged(projectId, await this.reads.get(projectId, personIdOrUuid));
  }

  /** The stored person with the changes staged here on top. */
  async getPersonByDistinctId(projectId: number, distinctId: string): Promise<Person | undefined> {
    return this.withStaged(projectId, await this.reads.getByDistinctId(projectId, distinctId));
  }

  private withStaged(projectId: number, person: Person | undefined): Person | undefined {
    const staged = person && this.snapshots.get(projectId)?.unstoredChanges(person.id);
    if (!staged) return person;
    const { properties, isIdentified, version } = staged.person;
    return { ...person, properties, isIdentified, version };
  }

  /**
   * Stores the staged changes: every person in one statement, in one transaction, each only if its version is
   * still the one the batch read. A person that changed meanwhile (a management PATCH, another consumer, a merge
   * or a deletion) is not written: PersonWriteConflict, after storing the others. The events whose results rely
   * on the changes not stored (EventPerson.staged) must then be processed again without staging, in order,
   * which decides them under row locks.
   */
  async flush(): Promise<void> {
    const unstored = this.unstored();
    if (unstored.length === 0) return;
    const writes = unstored.map(({ staged, person }) => ({
      id: person.id,
      expectedVersion: staged.storedVersion,
      properties: person.properties,
      version: person.version,
    }));
    // One statement, so a transaction only for its replays: two flushes updating the same persons can deadlock.
    const written = await transactionWithReplays(this.sql, (tx) => updatePersonsIfUnchanged(tx, writes));
    for (const { staged, person } of unstored) if (written.has(person.id)) staged.storedVersion = person.version;
    if (written.size < unstored.length)
      throw new PersonWriteConflict(`${unstored.length - written.size} of ${unstored.length} persons changed since the batch read them`);
  }

  /**
   * After a flush (or a locked write) failed in a way that leaves its outcome unknown — the connection broke
   * around its COMMIT — finds out what was stored: a staged person that Postgres holds exactly as staged (same
   * version and properties) counts as stored. Without this, processing the events again would apply them a
   * second time (extra version bumps). Reads only; call it once Postgres answers again.
   */
  async settle(): Promise<void> {
    const unstored = this.unstored();
    if (unstored.length === 0) return;
    const stored = await selectPersonStates(
      this.sql,
      unstored.map(({ person }) => person.id),
    );
    for (const { staged, person } of unstored) {
      const row = stored.get(person.id);
      if (row && row.version === person.version && jsonEqual(row.properties, person.properties)) staged.storedVersion = person.version;
    }
  }

  /**
   * Drops everything this batch holds, the staged changes not stored above all: nothing of them is written,
   * and the results that relied on them never hold. Later calls read from Postgres again.
   */
  discard(): void {
    this.snapshots.clear();
  }

  private unstored(): Array<{ staged: StagedPerson; person: StagedPerson['person'] }> {
    return [...this.snapshots.values()].flatMap((snapshot) => snapshot.allUnstored().map((staged) => ({ staged, person: staged.person })));
  }
}
