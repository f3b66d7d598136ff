import { PERSON_UUID_NAMESPACE, personUuid } from '@plover/persons';
import { storableProperties, storableText } from '../src/json';
import { applyPropertyUpdate } from '../src/rules/properties';

describe('person uuid', () => {
  it("is PostHog's UUIDv5 of <project_id>:<distinct_id> (vectors computed with PostHog's namespace)", () => {
    expect(PERSON_UUID_NAMESPACE).toBe('932979b4-65c3-4424-8467-0b66ec27bc22');
    expect(personUuid(1, 'user-1')).toBe('6931a681-6e90-500d-8294-14582dcc2e3f');
    expect(personUuid(2, 'anon-abc')).toBe('02229259-4bb1-5c2a-96f1-e49292b59e8e');
    expect(personUuid(1, 'distinct_id')).toBe('90f26d77-1832-5e44-8796-eec309e68010');
  });
});

describe('storable text', () => {
  it.each([
    ['plain', 'plain'],
    ['a\u0000b', 'a\ufffdb'],
    ['x\ud800', 'x\ufffd'],
    ['\udc00y', '\ufffdy'],
    ['\ud800\ud800\udc00', '\ufffd\ud800\udc00'],
    ['pair \ud83d\ude00 kept', 'pair \ud83d\ude00 kept'],
  ])('%j is stored as %j', (text, stored) => {
    expect(storableText(text)).toBe(stored);
    expect(storableProperties({ [text]: [text, { [text]: text }] })).toEqual({ [stored]: [stored, { [stored]: stored }] });
  });
});

describe('applyPropertyUpdate', () => {
  it('keeps a `__proto__` key a key, and the prototype a plain object', () => {
    const current = JSON.parse('{"__proto__":1,"b":2}') as Record<string, unknown>;
    const applied = applyPropertyUpdate(
      current,
      { set: JSON.parse('{"__proto__":2}') as Record<string, unknown>, setOnce: JSON.parse('{"__proto__":3,"c":1}') as Record<string, unknown>, unset: ['b'] },
      false,
    );

    expect(JSON.stringify(applied.properties)).toBe('{"__proto__":2,"c":1}');
    expect(Object.getPrototypeOf(applied.properties)).toBe(Object.prototype);
    expect(JSON.stringify(current)).toBe('{"__proto__":1,"b":2}');
  });

  it('returns the current properties themselves when nothing changes', () => {
    const current = { a: { x: [1] }, b: null };
    const applied = applyPropertyUpdate(current, { set: { a: { x: [1] } }, setOnce: { b: 1 }, unset: ['missing'] }, true);

    expect(applied).toEqual({ properties: current, changed: false, triggersWrite: false });
    expect(applied.properties).toBe(current);
  });
});
