import { isUuid, uuidv5, uuidv7 } from '@plover/core';

const PERSON_NAMESPACE = '932979b4-65c3-4424-8467-0b66ec27bc22';

describe('uuidv5', () => {
  // Expected values computed with Python's uuid.uuid5, an independent RFC 9562 implementation.
  it.each([
    ['1:abc', '07738276-ab30-525b-9ece-796064758bd4'],
    ['2:ümlaut distinct', '0429d804-30d1-5ec5-8a8f-ad71fec9fc26'],
  ])('derives %s to the RFC value', (name, expected) => {
    expect(uuidv5(name, PERSON_NAMESPACE)).toBe(expected);
  });

  it('is stable for the same input and differs across names', () => {
    expect(uuidv5('2:user', PERSON_NAMESPACE)).toBe(uuidv5('2:user', PERSON_NAMESPACE));
    expect(uuidv5('2:user', PERSON_NAMESPACE)).not.toBe(uuidv5('3:user', PERSON_NAMESPACE));
  });

  it('rejects a malformed namespace', () => {
    expect(() => uuidv5('x', 'not-a-uuid')).toThrow('invalid namespace uuid');
  });
});

describe('uuidv7', () => {
  it('carries version 7, the RFC variant and the creation time', () => {
    const id = uuidv7(Date.UTC(2026, 10, 21));
    expect(isUuid(id)).toBe(true);
    expect(id[14]).toBe('7');
    expect(['8', '9', 'a', 'b']).toContain(id[19]);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(Date.UTC(2026, 10, 21));
  });

  it('sorts by creation time', () => {
    const earlier = uuidv7(1_000_000);
    const later = uuidv7(2_000_000);
    expect(earlier < later).toBe(true);
  });
});
