import { attrOf, capturedEventKey, parseCapturedEventMessage, validateBatchBody, validateEventArray, validateRawEvent } from '@plover/contracts';

describe('capture body schemas', () => {
  it('accept what the SDKs send', () => {
    expect(validateRawEvent({ event: 'e', distinct_id: 42, properties: { token: 'phc_x' }, uuid: '', offset: 12, $set: { a: 1 }, library: 'extra' }).ok).toBe(true);
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
  const event = { uuid: 'u', event: 'e', distinct_id: 'd', properties: {}, timestamp: '2025-01-01T00:00:00.000Z' };
  const message = { uuid: 'u', team_id: 1, distinct_id: 'd', ip: null, now: '2025-01-01T00:00:00.000Z', sent_at: null, data: JSON.stringify(event), historical: false };

  it('parses an envelope and the event inside it', () => {
    expect(parseCapturedEventMessage(Buffer.from(JSON.stringify(message)))).toEqual({ ok: true, value: { message, event } });
  });

  it('reports what breaks the contract, inside data too', () => {
    const badEnvelope = parseCapturedEventMessage(JSON.stringify({ ...message, team_id: 'x' }));
    expect(!badEnvelope.ok && badEnvelope.violation.attr).toBe('team_id');
    const badEvent = parseCapturedEventMessage(JSON.stringify({ ...message, data: JSON.stringify({ ...event, distinct_id: '' }) }));
    expect(!badEvent.ok && badEvent.violation.attr).toBe('data__distinct_id');
    expect(parseCapturedEventMessage('not json').ok).toBe(false);
  });

  it('is keyed by team and person', () => {
    expect(capturedEventKey(7, 'user-1')).toBe('7:user-1');
  });
});
