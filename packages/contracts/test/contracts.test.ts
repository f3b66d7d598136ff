import { attrOf, capturedEventKey, parseCapturedEventMessage, validateBatchBody, validateEventArray, validateRawEvent } from '@plover/contracts';

describe('capture body schemas', () => {
  it('accept what the SDKs send', () => {
    expect(validateRawEvent({ event: 'e', distinct_id: 42, properties: { token: 'phc_x' }, uuid: '', offset: 12, $set: { a: 1 }, library: 'extra' }).ok).toBe(
      true,
    );
    expect(validateBatchBody({ api_key: 'phc_x', batch: [{ event: 'e' }], sent_at: '2025-01-01T00:00:00Z', historical_migration: false }).ok).toBe(true);
    expect(validateEventArray([{ event: 'e', timestamp: null }]).ok).toBe(true);
  });

  it.each<[string, () => ReturnType<typeof validateRawEvent>, string | null]>([
    ['an event name that is no string', () => validateRawEvent({ event: 3 }), 'event'],
    ['a uuid that is no uuid', () => validateRawEvent({ event: 'e', uuid: 'nope' }), 'uuid'],
    ['properties that are no object', () => validateRawEvent({ event: 'e', properties: 'x' }), 'properties'],
    ['a body that is no object', () => validateRawEvent('x'), null],
  ])('name the field of %s', (_name, validate, attr) => {
    const result = validate();
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.violation.attr).toBe(attr);
  });

  it('name the event index inside a batch and an array', () => {
    const batch = validateBatchBody({ api_key: 'k', batch: [{ event: 'e' }, { event: 'e' }, { event: 'e' }, { event: 'e', timestamp: 5 }] });
    expect(!batch.ok && batch.violation).toEqual({ attr: 'batch__3__timestamp', detail: 'batch__3__timestamp must be string,null.' });
    const array = validateEventArray([{ event: 'e' }, { event: 'e', $set: [] }]);
    expect(!array.ok && array.violation.attr).toBe('1__$set');
    const missing = validateBatchBody({ api_key: 'k' });
    expect(!missing.ok && missing.violation).toEqual({ attr: 'batch', detail: 'batch is required.' });
  });

  it('undo JSON Pointer escapes in attrs', () => {
    expect(attrOf('/properties/a~1b/c~0d')).toBe('properties__a/b__c~d');
    expect(attrOf('')).toBeNull();
  });
});

describe('the captured-event bus message', () => {
  const event = { uuid: 'u', event: 'e', distinct_id: 'd', properties: { a: [1, { b: null }] }, timestamp: '2025-01-01T00:00:00.000Z' };
  const envelope = { uuid: 'u', team_id: 1, distinct_id: 'd', ip: null, now: '2025-01-01T00:00:00.000Z', sent_at: null, historical: false };
  const message = { ...envelope, data: event };
  /** As capture wrote it before the event was nested: `data` a JSON string. */
  const stringData = { ...envelope, data: JSON.stringify(event) };

  it('parses an envelope with the event nested in data', () => {
    expect(parseCapturedEventMessage(Buffer.from(JSON.stringify(message)))).toEqual({ ok: true, value: { message, event } });
    expect(parseCapturedEventMessage(JSON.stringify(message))).toEqual({ ok: true, value: { message, event } });
  });

  it('still reads messages whose data is the event as a JSON string, returning the event in data', () => {
    expect(parseCapturedEventMessage(Buffer.from(JSON.stringify(stringData)))).toEqual({ ok: true, value: { message, event } });
  });

  it.each([
    ['nested', (data: typeof event) => data],
    ['as a string', (data: typeof event) => JSON.stringify(data)],
  ])('reports what breaks the contract, inside data too (event %s)', (_form, encode) => {
    const parse = (fields: Record<string, unknown>, data: Record<string, unknown> = event) =>
      parseCapturedEventMessage(JSON.stringify({ ...envelope, ...fields, data: encode(data as typeof event) }));
    expect(parse({ team_id: 'x' })).toEqual({ ok: false, violation: { attr: 'team_id', detail: 'team_id must be integer.' } });
    expect(parse({ historical: undefined })).toEqual({ ok: false, violation: { attr: 'historical', detail: 'historical is required.' } });
    expect(parse({ distinct_id: '' })).toEqual({ ok: false, violation: { attr: 'distinct_id', detail: 'distinct_id must NOT have fewer than 1 characters.' } });
    expect(parse({}, { ...event, distinct_id: '' })).toEqual({
      ok: false,
      violation: { attr: 'data__distinct_id', detail: 'data__distinct_id must NOT have fewer than 1 characters.' },
    });
    // The envelope is reported first.
    expect(parse({ now: 1 }, { ...event, distinct_id: '' })).toEqual({ ok: false, violation: { attr: 'now', detail: 'now must be string.' } });
    expect(parse({}, { ...event, uuid: undefined })).toEqual({ ok: false, violation: { attr: 'data__uuid', detail: 'uuid is required.' } });
    expect(parse({}, { ...event, properties: 'x' })).toEqual({
      ok: false,
      violation: { attr: 'data__properties', detail: 'data__properties must be object.' },
    });
  });

  it('rejects what is not a message, with a reason', () => {
    const reasons = [
      'not json',
      '[]',
      'null',
      '7',
      JSON.stringify({ team_id: 1, hello: 'world' }),
      JSON.stringify({ ...envelope }),
      JSON.stringify({ ...envelope, data: 7 }),
      JSON.stringify({ ...envelope, data: '{"not json' }),
    ].map((value) => parseCapturedEventMessage(value));
    expect(reasons).toEqual([
      { ok: false, violation: { attr: null, detail: 'The body must be object.' } },
      { ok: false, violation: { attr: null, detail: 'The body must be object.' } },
      { ok: false, violation: { attr: null, detail: 'The body must be object.' } },
      { ok: false, violation: { attr: null, detail: 'The body must be object.' } },
      { ok: false, violation: { attr: 'uuid', detail: 'uuid is required.' } },
      { ok: false, violation: { attr: 'data', detail: 'data is required.' } },
      { ok: false, violation: { attr: 'data', detail: 'data must be object.' } },
      { ok: false, violation: { attr: 'data', detail: 'data is not valid JSON.' } },
    ]);
  });

  it('is keyed by team and person', () => {
    expect(capturedEventKey(7, 'user-1')).toBe('7:user-1');
  });
});
