/**
 * What the consumer's person state is checked against: the same events applied one by one, in the order they
 * were produced, by PersonStore on a fresh database. The bus keeps order per key only, so the events used with
 * it touch one distinct id each (no merges across keys).
 */
import type { OutgoingMessage } from '@plover/bus';
import { parseCapturedEventMessage } from '@plover/contracts';
import { PersonReads, PersonStore, type Person } from '@plover/persons';
import { migrate, type Sql } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';
import { createProject } from '../../../../packages/persons/test/support/stores';
import { normalizeProperties } from '../../src/normalize';
import { captured } from './captured';

/** The parts of a person that processing decides (ids and uuids depend on the project). */
export type PersonState = Pick<Person, 'properties' | 'version' | 'isIdentified' | 'createdAt' | 'distinctIds'>;

export async function personStates(sql: Sql, projectId: number, distinctIds: readonly string[]): Promise<Record<string, PersonState | undefined>> {
  const reads = new PersonReads(sql);
  const states: Record<string, PersonState | undefined> = {};
  for (const distinctId of distinctIds) {
    const person = await reads.getByDistinctId(projectId, distinctId);
    states[distinctId] = person && {
      properties: person.properties,
      version: person.version,
      isIdentified: person.isIdentified,
      createdAt: person.createdAt,
      distinctIds: person.distinctIds,
    };
  }
  return states;
}

/** The person states after applying `messages` one at a time, in order, to an empty project. */
export async function referenceStates(messages: readonly OutgoingMessage[], distinctIds: readonly string[]): Promise<Record<string, PersonState | undefined>> {
  const sql = await PGliteSql.open();
  try {
    await migrate(sql);
    const projectId = await createProject(sql);
    const persons = new PersonStore(sql);
    for (const message of messages) {
      const parsed = parseCapturedEventMessage(message.value);
      if (!parsed.ok) throw new Error(`not a captured event: ${parsed.violation.detail}`);
      const { message: envelope, event } = parsed.value;
      const { properties } = normalizeProperties(event.event, event.properties, envelope.sent_at);
      await persons.processEvent(projectId, {
        uuid: event.uuid,
        event: event.event,
        distinctId: event.distinct_id,
        timestamp: new Date(event.timestamp),
        properties,
      });
    }
    return await personStates(sql, projectId, distinctIds);
  } finally {
    await sql.close();
  }
}

/**
 * `count` events over `people` distinct ids, each one a person write that a replay would repeat: `counter` is
 * overwritten by every event, so re-applying an older event changes it back and bumps the version again.
 */
export function personUpdates(projectId: number, count: number, people: number): { messages: OutgoingMessage[]; distinctIds: string[] } {
  const distinctIds = Array.from({ length: people }, (_, person) => `person-${person}`);
  const messages = Array.from({ length: count }, (_, i) =>
    captured(projectId, distinctIds[i % people] as string, 'updated', { $set: { counter: i, [`seen_${i}`]: true } }, { minutes: i / 60 }),
  );
  return { messages, distinctIds };
}
