import { MAX_JSON_DEPTH, parseCapturedEventMessage, type CapturedEvent, type CapturedEventMessage, type RawEvent } from '@plover/contracts';
import { ApiError } from '@plover/core';
import { distinctIdOf } from '@plover/contracts';
import { prepareContext, toBusMessage, type RequestContext } from '../src/normalize';
import { requestUuids } from '../src/uuids';

const NOW = Date.parse('2025-06-01T12:00:00.000Z');
const fields: RequestContext = {
  projectId: 7,
  ip: '203.0.113.9',
  now: NOW,
  sentAt: undefined,
  historical: false,
  engage: false,
  maxMessageBytes: 1_000_000,
  eventUuid: requestUuids(7, 'events', '{"event":"e"}'),
};
const context = prepareContext(fields);

function normalize(raw: RawEvent, overrides: Partial<RequestContext> = {}): { key: string; message: CapturedEventMessage; event: CapturedEvent } {
  const { key, value } = toBusMessage(raw, '', prepareContext({ ...fields, ...overrides }));
  const message = JSON.parse(value.toString()) as CapturedEventMessage & { data: CapturedEvent };
  // The contract's own reader accepts it and reads the same event.
  expect(parseCapturedEventMessage(value)).toEqual({ ok: true, value: { message, event: message.data } });
  return { key, message, event: message.data };
}

describe('distinct_id', () => {
  it.each<[string, unknown, string | undefined]>([
    ['a string as it is', 'user-1', 'user-1'],
    ['an integer stringified', 23, '23'],
    ['a float stringified', 23.4, '23.4'],
    ['an array as compact JSON', ['a', 'b'], '["a","b"]'],
    ['an object as compact JSON with sorted keys (as serde_json writes it)', { string: 'a', number: 3 }, '{"number":3,"string":"a"}'],
    ['a boolean stringified', true, 'true'],
    ['NUL replaced by U+FFFD', 'a\u0000b', 'a\uFFFDb'],
    ['cut to 200 characters', 'x'.repeat(222), 'x'.repeat(200)],
    ['cut by characters, never inside a surrogate pair', `${'x'.repeat(199)}😀😀`, `${'x'.repeat(199)}😀`],
    ['a lone surrogate replaced by U+FFFD, and the cut made after it', `${'x'.repeat(199)}\ud800ab`, `${'x'.repeat(199)}\ufffd`],
    ['a lone low surrogate replaced too', 'a\udc00b', 'a\ufffdb'],
    ['a lone surrogate in an object id replaced, as PostHog replaces it before parsing', { k: 'a\ud800' }, '{"k":"a\ufffd"}'],
    ['an escaped backslash before "ud800" is not a surrogate', { k: '\\ud800' }, '{"k":"\\\\ud800"}'],
    ['null is none', null, undefined],
    ['missing is none', undefined, undefined],
    ['empty is none', '', undefined],
  ])('%s', (_name, value, expected) => {
    expect(distinctIdOf(value)).toBe(expected);
  });

  it('top level wins over properties.distinct_id; $distinct_id is an alias; properties are the fallback', () => {
    expect(normalize({ event: 'e', distinct_id: 23, properties: { distinct_id: 'p' } }).message.distinct_id).toBe('23');
    expect(normalize({ event: 'e', $distinct_id: 'mix' }).message.distinct_id).toBe('mix');
    expect(normalize({ event: 'e', distinct_id: null, properties: { distinct_id: 'p' } }).message.distinct_id).toBe('p');
  });

  it('an empty top-level id is an error even when properties have one (PostHog does not fall back)', () => {
    expect(() => normalize({ event: 'e', distinct_id: '', properties: { distinct_id: 'p' } })).toThrow(ApiError);
  });
});

describe('normalization', () => {
  it('keys by team_id:distinct_id and keeps a client uuid, lowercased', () => {
    const { key, message } = normalize({ event: 'e', distinct_id: 'd', uuid: '0190B0F2-0E5F-7A2C-9D4E-6F1A2B3C4D5E' });
    expect(key).toBe('7:d');
    expect(message.uuid).toBe('0190b0f2-0e5f-7a2c-9d4e-6f1a2b3c4d5e');
  });

  it('derives a UUIDv5 from the request and the event\'s place in it when the client sent none (or "")', () => {
    const uuids = [undefined, ''].map((uuid) => normalize({ event: 'e', distinct_id: 'd', uuid }).message.uuid);
    expect(uuids[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(uuids[1]).toBe(uuids[0]);
    // Another request (text, project or topic), or another place in it, gives another uuid.
    const other = (eventUuid: RequestContext['eventUuid'], prefix = '') => toBusMessage({ event: 'e', distinct_id: 'd' }, prefix, { ...context, eventUuid });
    const uuidOf = (message: { value: Buffer }) => (JSON.parse(message.value.toString()) as CapturedEventMessage).uuid;
    const variants = [
      other(requestUuids(7, 'events', '{"event":"e" }')),
      other(requestUuids(8, 'events', '{"event":"e"}')),
      other(requestUuids(7, 'events_historical', '{"event":"e"}')),
      other(context.eventUuid, 'batch__1__'),
      other(requestUuids(7, 'events', '{"event":"e"}')),
    ].map(uuidOf);
    expect(new Set([uuids[0], ...variants.slice(0, 4)]).size).toBe(5);
    expect(variants[4]).toBe(uuids[0]);
  });

  it('cuts the event name to 200 characters', () => {
    expect(normalize({ event: 'n'.repeat(300), distinct_id: 'd' }).event.event).toBe('n'.repeat(200));
  });

  it('cuts an event name with a lone surrogate at the cut to 200 characters ingestion accepts', () => {
    // 199 characters, a lone high surrogate, then more: cut after a pair that is not one, it was 201 code units.
    const { event } = normalize({ event: `${'n'.repeat(199)}\ud800${'n'.repeat(10)}`, distinct_id: 'd' });
    expect(event.event).toBe(`${'n'.repeat(199)}\ufffd`);
  });

  it('replaces lone surrogates by U+FFFD in the name, the distinct id and property keys and values at any depth, keeping pairs', () => {
    const { message, event } = normalize({
      event: 'a\ud800',
      distinct_id: '\udfffd',
      properties: { 'k\udbff': ['v\ud800', { deep: { 'x\udc00': '😀 \ud83d' } }], pair: '😀', escaped: '\\ud800' },
      $set: { 's\ud800': 1 },
    });
    expect(event.event).toBe('a\ufffd');
    expect(message.distinct_id).toBe('\ufffdd');
    expect(event.distinct_id).toBe('\ufffdd');
    expect(event.properties).toEqual({
      'k\ufffd': ['v\ufffd', { deep: { 'x\ufffd': '😀 \ufffd' } }],
      pair: '😀',
      escaped: '\\ud800',
      $set: { 's\ufffd': 1 },
      $ip: '203.0.113.9',
    });
  });

  it('folds top-level $set/$set_once into properties, the top level winning a clash', () => {
    const { event } = normalize({
      event: '$identify',
      distinct_id: 'd',
      properties: { $set: { a: 1, b: 1 }, $set_once: { c: 1 } },
      $set: { b: 2 },
      $set_once: { d: 1 },
    });
    expect(event.properties.$set).toEqual({ a: 1, b: 2 });
    expect(event.properties.$set_once).toEqual({ c: 1, d: 1 });
  });

  it('keeps $feature/<key> and $feature_flag_called properties exactly', () => {
    const properties = {
      $feature_flag: 'beta',
      $feature_flag_response: 'variant-b',
      '$feature/beta': 'variant-b',
      '$feature/off': false,
      $active_feature_flags: ['beta'],
    };
    expect(normalize({ event: '$feature_flag_called', distinct_id: 'd', properties: { ...properties } }).event.properties).toEqual({
      ...properties,
      $ip: '203.0.113.9',
    });
  });

  it('sets $ip from the request unless the client sent one', () => {
    expect(normalize({ event: 'e', distinct_id: 'd' }).event.properties.$ip).toBe('203.0.113.9');
    expect(normalize({ event: 'e', distinct_id: 'd', properties: { $ip: '1.2.3.4' } }).event.properties.$ip).toBe('1.2.3.4');
    expect(normalize({ event: 'e', distinct_id: 'd' }, { ip: null }).event.properties.$ip).toBeUndefined();
  });

  it('honours $ignore_sent_at', () => {
    const sentAt = NOW - 3_600_000;
    const timestamp = '2025-06-01T11:00:00.000Z';
    expect(normalize({ event: 'e', distinct_id: 'd', timestamp }, { sentAt }).event.timestamp).toBe('2025-06-01T12:00:00.000Z');
    expect(normalize({ event: 'e', distinct_id: 'd', timestamp, properties: { $ignore_sent_at: true } }, { sentAt }).event.timestamp).toBe(timestamp);
  });

  it('refuses an event whose message would pass the size limit, naming it', () => {
    try {
      toBusMessage(
        { event: 'e', distinct_id: 'd', properties: { blob: 'x'.repeat(2000) } },
        'batch__4__',
        prepareContext({ ...fields, maxMessageBytes: 1000 }),
      );
      throw new Error('accepted');
    } catch (error) {
      expect(error).toMatchObject({ status: 413, code: 'payload_too_large', attr: 'batch__4' });
    }
  });

  it('counts the limit in UTF-8 bytes, not characters', () => {
    const sized = (text: string) => () =>
      toBusMessage({ event: 'e', distinct_id: 'd', properties: { text } }, '', prepareContext({ ...fields, maxMessageBytes: 1000 }));
    const envelope = Buffer.byteLength(JSON.stringify(normalize({ event: 'e', distinct_id: 'd', properties: { text: '' } }).message));
    // Fewer characters than the limit, more bytes: refused; as many ASCII characters: accepted.
    const characters = 1000 - envelope - 10;
    expect(sized('é'.repeat(characters))).toThrow(expect.objectContaining({ status: 413 }) as Error);
    expect(sized('e'.repeat(characters))).not.toThrow();
  });

  it('nests the event in data as a JSON object, with every field of the envelope', () => {
    const { value } = toBusMessage(
      { event: 'e', distinct_id: 'd', uuid: '0190b0f2-0e5f-7a2c-9d4e-6f1a2b3c4d5e', timestamp: '2025-06-01T11:00:00Z' },
      '',
      prepareContext({ ...fields, sentAt: NOW - 60_000 }),
    );
    expect(JSON.parse(value.toString())).toEqual({
      uuid: '0190b0f2-0e5f-7a2c-9d4e-6f1a2b3c4d5e',
      team_id: 7,
      distinct_id: 'd',
      ip: '203.0.113.9',
      now: '2025-06-01T12:00:00.000Z',
      sent_at: '2025-06-01T11:59:00.000Z',
      data: {
        uuid: '0190b0f2-0e5f-7a2c-9d4e-6f1a2b3c4d5e',
        event: 'e',
        distinct_id: 'd',
        properties: { $ip: '203.0.113.9' },
        timestamp: '2025-06-01T11:01:00.000Z',
      },
      historical: false,
    });
    expect(value.toString()).toContain('"data":{"uuid":');
  });

  it('escapes names, ids and properties that need it', () => {
    const awkward = 'a "quoted" \\ name\n\u2028 😀 \u0001';
    const { message, event } = normalize({ event: awkward, distinct_id: awkward, properties: { [awkward]: awkward } }, { ip: null, historical: true });
    expect(message).toMatchObject({ distinct_id: awkward, ip: null, historical: true });
    expect(event).toMatchObject({ event: awkward, distinct_id: awkward, properties: { [awkward]: awkward } });
  });
});

describe('nesting depth', () => {
  /** A value nesting `depth` objects deep. */
  function nested(depth: number): Record<string, unknown> {
    let value: Record<string, unknown> = {};
    for (let level = 1; level < depth; level++) value = { a: value };
    return value;
  }

  function refusal(raw: RawEvent): unknown {
    try {
      toBusMessage(raw, 'batch__2__', context);
    } catch (error) {
      return error instanceof ApiError ? { status: error.status, code: error.code, attr: error.attr } : error;
    }
    return 'accepted';
  }

  it('accepts properties and a distinct id nested up to MAX_JSON_DEPTH', () => {
    expect(normalize({ event: 'e', distinct_id: [nested(MAX_JSON_DEPTH - 1)], properties: nested(MAX_JSON_DEPTH) }).event.properties).toBeDefined();
  });

  it.each<[string, RawEvent, string]>([
    ['properties one level too deep', { event: 'e', distinct_id: 'd', properties: nested(MAX_JSON_DEPTH + 1) }, 'batch__2__properties'],
    [
      'a top-level $set that becomes too deep once folded into properties',
      { event: 'e', distinct_id: 'd', $set: nested(MAX_JSON_DEPTH) },
      'batch__2__properties',
    ],
    ['a distinct id one level too deep', { event: 'e', distinct_id: [nested(MAX_JSON_DEPTH)] }, 'batch__2__distinct_id'],
    [
      'properties deep enough to overflow the stack of a recursive walk',
      { event: 'e', distinct_id: 'd', properties: JSON.parse(`{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`) as Record<string, unknown> },
      'batch__2__properties',
    ],
    ['a distinct id as deep', { event: 'e', distinct_id: JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) }, 'batch__2__distinct_id'],
  ])('refuses %s with 400 request_parsing_error naming it', (_name, raw, attr) => {
    expect(refusal(raw)).toEqual({ status: 400, code: 'request_parsing_error', attr });
  });
});

describe('timestamp warnings for ingestion', () => {
  const UUID = '0190b0f2-0e5f-7a2c-9d4e-6f1a2b3c4d5e';

  it('carries none when the client time is used', () => {
    const { message } = normalize({ event: 'e', distinct_id: 'd', timestamp: '2025-06-01T11:00:00Z' });
    expect(message.warnings).toBeUndefined();
    expect(JSON.parse(toBusMessage({ event: 'e', distinct_id: 'd' }, '', context).value.toString())).not.toHaveProperty('warnings');
  });

  it('warns of an unparseable timestamp replaced by the receive time, with the value sent and the event uuid', () => {
    const { message, event } = normalize({ event: 'e', distinct_id: 'd', uuid: UUID, timestamp: 'yesterday \ud800' });
    expect(event.timestamp).toBe(context.nowIso);
    expect(message.warnings).toEqual([
      { type: 'ignored_invalid_timestamp', details: { eventUuid: UUID, field: 'timestamp', value: 'yesterday \ufffd', reason: 'invalid format' } },
    ]);
  });

  it('warns of a time more than 23 h ahead replaced by the receive time, as PostHog does', () => {
    const sentAt = NOW - 60_000;
    const { message, event } = normalize({ event: 'signed up', distinct_id: 'd', uuid: UUID, timestamp: '2025-06-03T00:00:00.000Z' }, { sentAt });
    expect(event.timestamp).toBe(context.nowIso);
    expect(message.warnings).toEqual([
      {
        type: 'event_timestamp_in_future',
        details: {
          timestamp: '2025-06-03T00:00:00.000Z',
          sentAt: new Date(sentAt).toISOString(),
          offset: '',
          now: context.nowIso,
          result: '2025-06-03T00:01:00.000Z',
          eventUuid: UUID,
          eventName: 'signed up',
        },
      },
    ]);
    const farOffset = normalize({ event: 'e', distinct_id: 'd', offset: -1e300 }).message.warnings;
    expect(farOffset?.[0]).toMatchObject({ type: 'event_timestamp_in_future', details: { offset: -1e300, result: '1e+300' } });
  });

  it('warns of a time before year 0', () => {
    const { message } = normalize({ event: 'e', distinct_id: 'd', uuid: UUID, timestamp: '2025-06-01T00:00:00Z', offset: 1e14 });
    expect(message.warnings).toEqual([
      { type: 'ignored_invalid_timestamp', details: { eventUuid: UUID, field: 'timestamp', value: '2025-06-01T00:00:00Z', reason: 'out of bounds' } },
    ]);
  });

  it("warns of the batch's unusable sent_at on each of its events, unless the event ignores sent_at", () => {
    const invalid = { invalidSentAt: 'a while ago' };
    expect(normalize({ event: 'e', distinct_id: 'd', uuid: UUID }, invalid).message.warnings).toEqual([
      { type: 'ignored_invalid_timestamp', details: { eventUuid: UUID, field: 'sent_at', value: 'a while ago', reason: 'invalid format' } },
    ]);
    expect(normalize({ event: 'e', distinct_id: 'd', properties: { $ignore_sent_at: true } }, invalid).message.warnings).toBeUndefined();
  });
});
