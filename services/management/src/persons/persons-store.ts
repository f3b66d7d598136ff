import { PersonReads, PersonStore, type ListedPerson, type Person, type PersonListFilter } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { queueEventDeletion, unqueueEventDeletion } from '../shared/deletion-queue';
import type { Page } from '../http/render';
import { csvStream, type ListingExport } from '../http/route-table';
import { personBody } from '../shared/person-body';

/** A person of a request: by integer id, uuid or distinct id. */
export type PersonRef = { ref: number | string } | { distinctId: string };

/**
 * The persons of a project as the management API reads and changes them: reads through the persons read model,
 * every write through PersonStore (the rules ingestion applies), event deletions through the deletion queue.
 */
export class PersonsStore {
  private readonly reads: PersonReads;
  private readonly writes: PersonStore;

  constructor(private readonly sql: Sql) {
    this.reads = new PersonReads(sql);
    this.writes = new PersonStore(sql);
  }

  /** One page (and one person more) of the listing, newest first. */
  list(projectId: number, filter: PersonListFilter, page: Page): Promise<Person[]> {
    return this.reads.list(projectId, filter, { limit: page.limit + 1, offset: page.offset });
  }

  count(projectId: number, filter: PersonListFilter, exact: boolean): Promise<number> {
    return this.reads.count(projectId, filter, { exact });
  }

  /** Every person of the listing from `offset`, as a streamed CSV (keyset batches). */
  export(projectId: number, filter: PersonListFilter, offset: number): ListingExport {
    return csvStream<ListedPerson>(async (after, size) =>
      (await this.reads.list(projectId, filter, after ? { limit: size, after: after.cursor } : { limit: size, offset })).map((person) => ({
        row: personBody(person),
        cursor: person,
      })),
    );
  }

  get(projectId: number, ref: PersonRef): Promise<Person | undefined> {
    return 'distinctId' in ref ? this.reads.getByDistinctId(projectId, ref.distinctId) : this.reads.get(projectId, ref.ref);
  }

  updateProperties(projectId: number, ref: number | string, properties: Record<string, unknown>) {
    return this.writes.updateProperties(projectId, ref, { set: properties });
  }

  /**
   * Deletes the person; with `queueEventsBy` (the requesting user) its events are queued for deletion first, and
   * unqueued again if the person turned out to be gone. Whether it was deleted.
   */
  async delete(projectId: number, person: Person, queueEventsBy?: number): Promise<boolean> {
    if (queueEventsBy !== undefined) await queueEventDeletion(this.sql, projectId, person.uuid, queueEventsBy);
    const deleted = (await this.writes.deletePerson(projectId, person.id)) !== undefined;
    if (!deleted && queueEventsBy !== undefined) await unqueueEventDeletion(this.sql, projectId, person.uuid);
    return deleted;
  }
}
