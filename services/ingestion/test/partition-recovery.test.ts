import { PartitionRecovery, type ProcessedMessage } from '../src/partition-recovery';

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
