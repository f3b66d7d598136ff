import type { BusMessage, OutgoingMessage } from '@plover/bus';
import type { CapturedEvent } from '@plover/contracts';
import { readMessage } from '../src/message';
import { CAPTURED_AT, T0, captured, capturedEvent } from './support/captured';

const UUID = '0190B0F2-0E5F-7A2C-9D4E-6F1A2B3C4D5E';

function onBus(message: OutgoingMessage): BusMessage {
  return { topic: 'events', partition: 0, offset: '0', key: message.key, value: message.value, headers: {}, timestamp: Date.parse('2024-05-02T00:00:00.000Z') };
}

function raw(value: unknown): BusMessage {
  return onBus({ key: '1:x', value: Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)) });
}

describe('reading a captured-event message', () => {
  it.each([
    ['nested in data (as capture writes it)', false],
    ['as a JSON string in data (as the previous version wrote it)', true],
  ])('reads the event %s', (_form, stringData) => {
    const message = onBus(captured(7, 'user-1', 'clicked', { $set: { plan: 'pro' } }, { uuid: UUID, minutes: 5, sentAt: '2024-05-01T12:06:00.000Z', historical: true, stringData }));
    const nested = message.value.toString().includes('"data":{');
    expect(nested).toBe(!stringData);
    expect(readMessage(message)).toEqual({
      ok: true,
      input: {
        message,
        teamId: 7,
        uuid: UUID.toLowerCase(),
        event: 'clicked',
        distinctId: 'user-1',
        properties: { $set: { plan: 'pro' } },
        timestamp: new Date(T0.getTime() + 5 * 60_000),
        sentAt: '2024-05-01T12:06:00.000Z',
        historical: true,
        key: '7:user-1',
      },
    });
  });

  it('replaces an unusable timestamp by capture receive time, keeping what was sent', () => {
    for (const stringData of [false, true]) {
      const read = readMessage(onBus(captured(7, 'user-1', 'clicked', {}, { timestamp: '1800-01-01T00:00:00.000Z', stringData })));
      expect(read.ok && [read.input.timestamp, read.input.invalidTimestamp]).toEqual([CAPTURED_AT, '1800-01-01T00:00:00.000Z']);
    }
  });

  it('dead-letters what breaks the contract, with the reason and the project when the envelope names one', () => {
    const good = capturedEvent(7, 'user-1', 'clicked', {}, { uuid: UUID });
    const event = good.data as CapturedEvent;
    const cases: [BusMessage, string, string, number | null][] = [
      [raw('{"not json'), 'invalid_message', 'The body must be object.', null],
      [raw({ team_id: 7, hello: 'world' }), 'invalid_message', 'uuid is required.', 7],
      [raw({ ...good, team_id: 'x' }), 'invalid_message', 'team_id must be integer.', null],
      [raw({ ...good, data: { ...event, event: '' } }), 'invalid_message', 'data__event must NOT have fewer than 1 characters.', 7],
      [raw({ ...good, data: JSON.stringify({ ...event, event: '' }) }), 'invalid_message', 'data__event must NOT have fewer than 1 characters.', 7],
      [raw({ ...good, data: { ...event, timestamp: undefined } }), 'invalid_message', 'timestamp is required.', 7],
      [raw({ ...good, data: '{"not json' }), 'invalid_message', 'data is not valid JSON.', 7],
      [raw({ ...good, data: { ...event, uuid: 'not-a-uuid' } }), 'invalid_uuid', 'uuid "not-a-uuid" is not a UUID', 7],
      [raw({ ...good, data: JSON.stringify({ ...event, uuid: 'not-a-uuid' }) }), 'invalid_uuid', 'uuid "not-a-uuid" is not a UUID', 7],
    ];
    for (const [message, reason, detail, teamId] of cases) {
      expect(readMessage(message)).toEqual({ ok: false, unreadable: { reason, detail, teamId, eventUuid: null } });
    }
  });
});
