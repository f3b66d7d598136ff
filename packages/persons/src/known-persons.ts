import type { Properties } from './json';

interface KnownPerson {
  id: number;
  version: number;
  properties: Properties;
}

/**
 * The properties of the persons PersonStore.readPersons read last, by project and distinct id, so that the next
 * batch's read fetches only those of persons whose row changed since: every write of a person's row bumps its
 * version (migrations/002_persons.sql), so one id and version always stand for the same properties. Only what
 * Postgres returned is kept (jsonb orders keys its own way, so a state this process wrote would serialize
 * differently), and the objects are shared, never changed in place. The least recently read go first once
 * `capacity` is reached.
 */
export class KnownPersons {
  /** In order of last read: a Map iterates in insertion order, so the first entry is the one to evict. */
  private readonly persons = new Map<string, KnownPerson>();

  constructor(private readonly capacity: number) {}

  /** What is held for those of `distinctIds` it knows. */
  lookUp(projectId: number, distinctIds: readonly string[]): Map<string, KnownPerson> {
    const held = new Map<string, KnownPerson>();
    for (const distinctId of distinctIds) {
      const person = this.persons.get(key(projectId, distinctId));
      if (person) held.set(distinctId, person);
    }
    return held;
  }

  /**
   * Records a read of `distinctId`: the person it found (`properties` undefined when they were `held`'s), or
   * undefined when the id has no person. Returns the person's properties.
   */
  update(
    projectId: number,
    distinctId: string,
    held: KnownPerson | undefined,
    found: { id: number; version: number; properties: Properties | undefined } | undefined,
  ): Properties | undefined {
    const id = key(projectId, distinctId);
    this.persons.delete(id);
    if (!found) return undefined;
    const properties = found.properties ?? held?.properties;
    // The statement returns no properties only for the id and version it was given.
    if (!properties) throw new Error(`person ${found.id} came back without properties`);
    this.persons.set(id, { id: found.id, version: found.version, properties });
    if (this.persons.size > this.capacity) {
      const oldest = this.persons.keys().next();
      if (!oldest.done) this.persons.delete(oldest.value);
    }
    return properties;
  }
}

function key(projectId: number, distinctId: string): string {
  return `${projectId}:${distinctId}`;
}
