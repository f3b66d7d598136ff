import { PERSON_UUID_NAMESPACE, personUuid } from '@plover/persons';

describe('person uuid', () => {
  it("is PostHog's UUIDv5 of <project_id>:<distinct_id> (reference §2.2 test vectors)", () => {
    expect(PERSON_UUID_NAMESPACE).toBe('932979b4-65c3-4424-8467-0b66ec27bc22');
    expect(personUuid(1, 'user-1')).toBe('6931a681-6e90-500d-8294-14582dcc2e3f');
    expect(personUuid(2, 'anon-abc')).toBe('02229259-4bb1-5c2a-96f1-e49292b59e8e');
    expect(personUuid(1, 'distinct_id')).toBe('90f26d77-1832-5e44-8796-eec309e68010');
  });
});
