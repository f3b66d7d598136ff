import type { BusMessage, OutgoingMessage } from '@plover/bus';
import { MAX_JSON_DEPTH, type CapturedEvent } from '@plover/contracts';
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
    const message = onBus(
      captured(7, 'user-1', 'clicked', { $set: { plan: 'pro' } }, { uuid: UUID, minutes: 5, sentAt: '2024-05-01T12:06:00.000Z', historical: true, stringData }),
    );
    const nested = message.value.toString().includes('"data":{');
    expect(nested).toBe(!stringData);
    expect(readMessage(message)).toEqual({
      ok: true,
      input: {
        message,
        projectId: 7,
        uuid: UUID.toLowerCase(),
        event: 'clicked',
        distinctId: 'user-1',
        properties: { $set: { plan: 'pro' } },
        timestamp: new Date(T0.getTime() + 5 * 60_000),
        captureWarnings: [],
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

  it('dead-letters what breaks the contract, with the reason, and the project and client uuid when the envelope names them', () => {
    const good = capturedEvent(7, 'user-1', 'clicked', {}, { uuid: UUID });
    const event = good.data as CapturedEvent;
    const uuid = UUID.toLowerCase();
    const cases: [BusMessage, string, string, number | null, string | null][] = [
      [raw('{"not json'), 'invalid_message', 'The body must be object.', null, null],
      [raw({ team_id: 7, hello: 'world' }), 'invalid_message', 'uuid is required.', 7, null],
      [raw({ ...good, team_id: 'x' }), 'invalid_message', 'team_id must be integer.', null, uuid],
      [raw({ ...good, data: { ...event, event: '' } }), 'invalid_message', 'data__event must NOT have fewer than 1 characters.', 7, uuid],
      [raw({ ...good, data: JSON.stringify({ ...event, event: '' }) }), 'invalid_message', 'data__event must NOT have fewer than 1 characters.', 7, uuid],
      [raw({ ...good, data: { ...event, event: 'x'.repeat(201) } }), 'invalid_message', 'data__event must NOT have more than 200 characters.', 7, uuid],
      [raw({ ...good, data: { ...event, timestamp: undefined } }), 'invalid_message', 'timestamp is required.', 7, uuid],
      [raw({ ...good, data: '{"not json' }), 'invalid_message', 'data is not valid JSON.', 7, uuid],
      [raw({ ...good, uuid: 'not-a-uuid', data: { ...event, event: '' } }), 'invalid_message', 'data__event must NOT have fewer than 1 characters.', 7, null],
      [raw({ ...good, data: { ...event, uuid: 'not-a-uuid' } }), 'invalid_uuid', 'uuid "not-a-uuid" is not a UUID', 7, null],
      [raw({ ...good, data: JSON.stringify({ ...event, uuid: 'not-a-uuid' }) }), 'invalid_uuid', 'uuid "not-a-uuid" is not a UUID', 7, null],
    ];
    for (const [message, reason, detail, projectId, eventUuid] of cases) {
      expect(readMessage(message)).toEqual({ ok: false, unreadable: { reason, detail, projectId, eventUuid } });
    }
  });

  it('dead-letters properties nested deeper than MAX_JSON_DEPTH without overflowing the stack, and reads them up to it', () => {
    const nested = (depth: number): Record<string, unknown> => {
      let value: Record<string, unknown> = {};
      for (let level = 1; level < depth; level++) value = { a: value };
      return value;
    };
    const at = (depth: number) => readMessage(onBus(captured(7, 'user-1', 'clicked', nested(depth), { uuid: UUID })));
    expect(at(MAX_JSON_DEPTH).ok).toBe(true);
    expect(at(MAX_JSON_DEPTH + 1)).toEqual({
      ok: false,
      unreadable: {
        reason: 'invalid_message',
        detail: `data__properties nests deeper than ${MAX_JSON_DEPTH} levels.`,
        projectId: 7,
        eventUuid: UUID.toLowerCase(),
      },
    });
    // Deep enough that a recursive walk (JSON.stringify, the person property rules) overflows the stack.
    const deep = `{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const message = { ...capturedEvent(7, 'user-1', 'clicked', {}, { uuid: UUID }), data: '' };
    const value = JSON.stringify(message).replace(
      '"data":""',
      `"data":{"uuid":"${UUID}","event":"e","distinct_id":"d","properties":${deep},"timestamp":"2024-05-01T12:00:00Z"}`,
    );
    expect(readMessage(raw(value))).toMatchObject({
      ok: false,
      unreadable: { reason: 'invalid_message', detail: `data__properties nests deeper than ${MAX_JSON_DEPTH} levels.` },
    });
  });

  it('hands on the warnings capture raised, and reads messages without any', () => {
    const warning = {
      type: 'ignored_invalid_timestamp',
      details: { eventUuid: UUID.toLowerCase(), field: 'timestamp', value: 'yesterday', reason: 'invalid format' },
    };
    const read = readMessage(raw({ ...capturedEvent(7, 'user-1', 'clicked', {}, { uuid: UUID }), warnings: [warning] }));
    expect(read.ok && read.input.captureWarnings).toEqual([warning]);
    // A detail is a scalar: a tree there would be walked by the warning's JSON.stringify.
    const tree = readMessage(raw({ ...capturedEvent(7, 'user-1', 'clicked', {}, { uuid: UUID }), warnings: [{ ...warning, details: { value: { a: 1 } } }] }));
    expect(tree.ok).toBe(false);
  });
});
