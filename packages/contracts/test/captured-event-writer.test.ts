import fc from 'fast-check';
import { CapturedEventWriter, parseCapturedEventMessage, type CapturedEvent, type CapturedEventEnvelope, type CapturedEventWarning } from '../src';

/** Any string, lone surrogates and characters JSON must escape included. */
const text = fc.string({ unit: 'binary', maxLength: 30 });
const wellFormed = text.map((value) => value.toWellFormed());
const name = wellFormed.filter((value) => value.length >= 1 && value.length <= 200);
const properties = fc.dictionary(text, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }) as fc.Arbitrary<Record<string, unknown>>;

const envelope: fc.Arbitrary<CapturedEventEnvelope> = fc.record({
  team_id: fc.integer({ min: 1, max: 2_147_483_647 }),
  ip: fc.oneof(fc.constant(null), fc.ipV4(), fc.ipV6()),
  now: fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
  sent_at: fc.oneof(fc.constant(null), wellFormed),
  historical: fc.boolean(),
});

const event: fc.Arbitrary<CapturedEvent> = fc.record({
  uuid: fc.uuid(),
  event: name,
  distinct_id: name,
  properties,
  timestamp: wellFormed,
});

const warnings: fc.Arbitrary<CapturedEventWarning[] | undefined> = fc.option(
  fc.array(
    fc.record({
      type: name,
      details: fc.dictionary(text, fc.oneof(wellFormed, fc.integer(), fc.boolean(), fc.constant(null)), { maxKeys: 4 }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  { nil: undefined },
);

/** What the writer promises to keep of a value: everything, with unpaired surrogates (in keys too) as U+FFFD. */
function wellFormedCopy(value: unknown): unknown {
  if (typeof value === 'string') return value.toWellFormed();
  if (Array.isArray(value)) return value.map(wellFormedCopy);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key.toWellFormed(), wellFormedCopy(item)]));
}

describe('CapturedEventWriter', () => {
  it('writes what parseCapturedEventMessage reads back: the envelope, the event, and the warnings', () => {
    fc.assert(
      fc.property(envelope, event, warnings, (fields, captured, raised) => {
        const bytes = new CapturedEventWriter(fields).write(captured, raised);
        const parsed = parseCapturedEventMessage(bytes);
        expect(parsed.ok).toBe(true);
        if (!parsed.ok) return;
        const expectedEvent = { ...captured, properties: wellFormedCopy(captured.properties) };
        expect(parsed.value.event).toEqual(expectedEvent);
        expect(parsed.value.message).toEqual({
          uuid: captured.uuid,
          distinct_id: captured.distinct_id,
          ...fields,
          data: expectedEvent,
          ...(raised ? { warnings: wellFormedCopy(raised) } : {}),
        });
        // Well-formed UTF-8 throughout: decoding and encoding again gives the same bytes.
        expect(Buffer.from(bytes.toString('utf8'), 'utf8').equals(bytes)).toBe(true);
      }),
      { seed: 29, numRuns: 300 },
    );
  });
});
