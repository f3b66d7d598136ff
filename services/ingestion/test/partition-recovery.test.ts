import type { BusMessage } from '@plover/bus';
import { StorageError } from '@plover/core';
import { GroupStore, PersonStore, personUuid } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { backends, useStores } from '../../../packages/persons/test/support/stores';
import { readMessage, type CapturedInput } from '../src/message';
import { PartitionRecovery, type ProcessedMessage } from '../src/partition-recovery';
import { EventProcessor } from '../src/process';
import { AnonymizedProjects } from '../src/geoip';
import { captured } from './support/captured';

const alreadyStored = (offset: string): ProcessedMessage => ({ offset, processed: { kind: 'already_stored' } });

/** A partition that handled the batch of offsets 0–9. */
function afterFirstBatch(): PartitionRecovery {
  const recovery = new PartitionRecovery();
  recovery.begin('0');
  recovery.handled('9');
  return recovery;
}

describe('PartitionRecovery', () => {
  it('tells the deliveries apart by their first offset', () => {
    const recovery = new PartitionRecovery();
    expect(recovery.begin('0')).toBe('first');
    recovery.failed('0');
    expect(recovery.begin('0')).toBe('redelivery');
    recovery.handled('9');
    expect(recovery.begin('10')).toBe('next');
    recovery.failed('10');
    expect(recovery.begin('10')).toBe('redelivery');
    recovery.handled('19');
    expect(recovery.begin('50')).toBe('reassigned');
    recovery.failed('50');
    // Back where this process left off, with the other batch's failure pending: the next batch all the same.
    expect(recovery.begin('20')).toBe('next');
  });

  it('checks for stored events from the first delivery until a batch holds none, and again after a reassignment', () => {
    const recovery = new PartitionRecovery();
    recovery.begin('0');
    expect(recovery.checksStoredEvents).toBe(true);
    recovery.storedEventsFound(10);
    recovery.handled('9');
    recovery.begin('10');
    expect(recovery.checksStoredEvents).toBe(true);
    recovery.storedEventsFound(0);
    expect(recovery.checksStoredEvents).toBe(false);
    recovery.handled('19');
    recovery.begin('20');
    expect(recovery.checksStoredEvents).toBe(false);
    recovery.handled('29');

    recovery.begin('100');
    expect(recovery.checksStoredEvents).toBe(true);
  });

  it('a redelivery reuses the results its failed attempt remembered; the batch after it starts afresh', () => {
    const recovery = afterFirstBatch();
    recovery.begin('10');
    expect(recovery.remember([alreadyStored('10'), alreadyStored('11')])).toEqual([]);
    recovery.failed('10');

    expect(recovery.begin('10')).toBe('redelivery');
    expect(recovery.rememberedAt('11')).toEqual({ kind: 'already_stored' });
    recovery.handled('19');
    recovery.begin('20');
    expect(recovery.rememberedAt('11')).toBeUndefined();
  });

  it('a reassignment forgets what a failed attempt remembered: another consumer may have stored more since', () => {
    const recovery = afterFirstBatch();
    recovery.begin('10');
    recovery.remember([alreadyStored('10')]);
    recovery.failed('10');

    expect(recovery.begin('5')).toBe('reassigned');
    expect(recovery.rememberedAt('10')).toBeUndefined();
  });

  it('a redelivery is checked again when the batch that failed did not continue the last one, not when it did', () => {
    const continued = afterFirstBatch();
    continued.begin('10');
    continued.storedEventsFound(0);
    continued.failed('10');
    expect(continued.begin('10')).toBe('redelivery');
    expect(continued.checksStoredEvents).toBe(false);

    const reassigned = afterFirstBatch();
    reassigned.begin('10');
    reassigned.storedEventsFound(0);
    reassigned.handled('19');
    reassigned.begin('50');
    reassigned.storedEventsFound(0);
    reassigned.failed('50');
    expect(reassigned.begin('50')).toBe('redelivery');
    expect(reassigned.checksStoredEvents).toBe(true);
  });
});

/** `sql` whose next transaction commits and then reports a broken connection, as when the COMMIT's answer is lost. */
function losingNextCommitAnswer(sql: Sql): Sql {
  let lose = true;
  return {
    query: (name, text, params) => sql.query(name, text, params),
    exec: (name, script) => sql.exec(name, script),
    async transaction(fn) {
      const result = await sql.transaction(fn);
      if (!lose) return result;
      lose = false;
      throw new StorageError('transaction.commit: connection terminated', true, '08006');
    },
    ping: () => sql.ping(),
    close: () => sql.close(),
  };
}

describe.each(backends)('PartitionRecovery with person writes in an unknown state, on $name', (backend) => {
  const stores = useStores(backend);

  /** The captured event at `offset` of partition 0, read as the consumer reads it. */
  function input(projectId: number, offset: number, distinctId: string, properties: Record<string, unknown>): CapturedInput {
    const { key, value } = captured(projectId, distinctId, '$pageview', properties);
    const message: BusMessage = { topic: 'events', partition: 0, offset: String(offset), key, value, headers: {}, timestamp: Date.now() };
    const read = readMessage(message);
    if (!read.ok) throw new Error(read.unreadable.detail);
    return read.input;
  }

  it('settles them before the redelivery: the results relying on a write found stored are reused, the others are not', async () => {
    const projectId = await stores.newProject();
    const created = new EventProcessor({
      persons: stores.persons,
      groups: stores.groups,
      anonymized: new AnonymizedProjects(stores.sql),
      geoip: undefined,
      now: () => new Date(),
    });
    const firsts = [input(projectId, 0, 'a', {}), input(projectId, 1, 'b', {})];
    const persons = await created.readPersons(firsts, false);
    for (const first of firsts) await created.process(first, persons);
    const recovery = afterFirstBatch();

    // The attempt at offsets 10 and 11 stages both persons' changes; b is changed by someone else before the
    // flush, which then stores only a's, and the answer to its COMMIT is lost.
    const processor = new EventProcessor({
      persons: new PersonStore(losingNextCommitAnswer(stores.sql)),
      groups: new GroupStore(stores.sql),
      anonymized: new AnonymizedProjects(stores.sql),
      geoip: undefined,
      now: () => new Date(),
    });
    recovery.begin('10');
    const inputs = [input(projectId, 10, 'a', { $set: { plan: 'pro' } }), input(projectId, 11, 'b', { $set: { plan: 'pro' } })];
    const staged = await processor.readPersons(inputs, true);
    const done = await Promise.all(inputs.map(async (item) => ({ offset: item.message.offset, processed: await processor.process(item, staged) })));
    await stores.persons.updateProperties(projectId, personUuid(projectId, 'b'), { set: { api: true } });
    await expect(staged.flush()).rejects.toThrow('connection terminated');
    const unstored = recovery.remember(done);
    expect(unstored.map((result) => result.offset)).toEqual(['10', '11']);
    recovery.leaveUnsettled(staged, unstored);
    recovery.failed('10');

    expect(recovery.begin('10')).toBe('redelivery');
    await recovery.unsettledWrites?.settle();
    recovery.settled();
    expect(recovery.unsettledWrites).toBeUndefined();
    expect(recovery.rememberedAt('10')).toBe(done[0]?.processed);
    expect(recovery.rememberedAt('11')).toBeUndefined();
  });

  it('keeps them across redeliveries until settled, and forgets them on a reassignment', async () => {
    const projectId = await stores.newProject();
    const processor = new EventProcessor({
      persons: stores.persons,
      groups: stores.groups,
      anonymized: new AnonymizedProjects(stores.sql),
      geoip: undefined,
      now: () => new Date(),
    });
    const created = input(projectId, 0, 'a', {});
    await processor.process(created, await processor.readPersons([created], false));
    const recovery = afterFirstBatch();
    recovery.begin('10');
    const change = input(projectId, 10, 'a', { $set: { plan: 'pro' } });
    const staged = await processor.readPersons([change], true);
    recovery.leaveUnsettled(staged, recovery.remember([{ offset: '10', processed: await processor.process(change, staged) }]));
    recovery.failed('10');

    recovery.begin('10');
    recovery.failed('10');
    recovery.begin('10');
    expect(recovery.unsettledWrites).toBe(staged);
    recovery.begin('5');
    expect(recovery.unsettledWrites).toBeUndefined();
  });
});
