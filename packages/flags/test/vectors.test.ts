import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { calculateHash, compileFlags, evaluateFlags, flagValue, type FeatureFlag, type JsonValue } from '@plover/flags';

import { NOW } from './fixtures';

/** PostHog's official bucketing vectors (see the file's `_note` for provenance). */
interface Vectors {
  simple_flag: { flag: FeatureFlag; expected_true_count: number; results: Record<string, boolean> };
  multivariate_flag: {
    flag: FeatureFlag;
    expected_distribution: Record<string, number>;
    results: Record<string, string | false>;
  };
  group_flag: {
    flag: FeatureFlag;
    group_type_mapping: Record<string, string>;
    cases: {
      distinct_id: string;
      groups: Record<string, JsonValue>;
      group_properties: Record<string, Record<string, JsonValue>>;
      expected: boolean;
      rollout_hash_of_group_key?: number;
    }[];
  };
  holdout_hash_vectors: { cases: Record<string, number> };
  sha1_vector: { input: string; sha1_hex: string };
  derived_hash_values: { cases: { input_string: string; hash: number }[] };
}

const vectors = JSON.parse(readFileSync(path.join(__dirname, 'fixtures', 'flag-vectors.json'), 'utf8')) as Vectors;

function valueFor(flag: FeatureFlag, distinctId: string): string | boolean {
  const result = evaluateFlags(compileFlags({ flags: [flag] }), { distinctId }, { now: NOW }).get(flag.key);
  if (result === undefined) throw new Error('flag not returned');
  return flagValue(result);
}

function tally(values: Iterable<string | boolean>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[String(value)] = (counts[String(value)] ?? 0) + 1;
  return counts;
}

describe('official PostHog consistency vectors', () => {
  describe('simple-flag (45% rollout)', () => {
    const { flag, results, expected_true_count } = vectors.simple_flag;
    const cases = Object.entries(results);

    it('covers the 1,000 published distinct ids', () => {
      expect(cases).toHaveLength(1000);
    });

    it.each(cases)('%s → %s', (distinctId, expected) => {
      expect(valueFor(flag, distinctId)).toBe(expected);
    });

    it(`enables exactly ${expected_true_count} ids`, () => {
      expect(cases.filter(([distinctId]) => valueFor(flag, distinctId) === true)).toHaveLength(expected_true_count);
    });
  });

  describe('multivariate-flag (55% rollout, variants 50/20/20/5/5)', () => {
    const { flag, results, expected_distribution } = vectors.multivariate_flag;
    const cases = Object.entries(results);

    it('covers the 1,000 published distinct ids', () => {
      expect(cases).toHaveLength(1000);
    });

    it.each(cases)('%s → %s', (distinctId, expected) => {
      expect(valueFor(flag, distinctId)).toBe(expected);
    });

    it('reproduces the published distribution', () => {
      expect(tally(cases.map(([distinctId]) => valueFor(flag, distinctId)))).toEqual(expected_distribution);
    });
  });

  describe('group-flag (35% rollout on the group key)', () => {
    const { flag, group_type_mapping, cases } = vectors.group_flag;

    it.each(cases)('$distinct_id with groups $groups → $expected', ({ distinct_id, groups, group_properties, expected }) => {
      const result = evaluateFlags(
        compileFlags({ flags: [flag] }),
        { distinctId: distinct_id, groups, groupPropertyOverrides: group_properties, groupTypeMapping: group_type_mapping },
        { now: NOW },
      ).get(flag.key);
      expect(result?.enabled).toBe(expected);
    });

    it.each(cases.filter((c) => c.rollout_hash_of_group_key !== undefined))(
      'hashes group key $groups.company to $rollout_hash_of_group_key',
      ({ groups, rollout_hash_of_group_key }) => {
        expect(calculateHash(`${flag.key}.`, groups.company as string)).toBe(rollout_hash_of_group_key);
      },
    );
  });

  describe('holdout hash (Rust test_calculate_hash)', () => {
    it.each(Object.entries(vectors.holdout_hash_vectors.cases))('holdout-%s → %d', (identifier, hash) => {
      expect(calculateHash('holdout-', identifier)).toBe(hash);
    });
  });

  describe('hash arithmetic', () => {
    it('takes the first 15 hex digits of the SHA-1 over 2^60 - 1', () => {
      const { input, sha1_hex } = vectors.sha1_vector;
      // posthog-node's formula, literally: `parseInt(hex.slice(0, 15), 16) / 0xfffffffffffffff`.
      const divisor = parseInt('fffffffffffffff', 16);
      expect(calculateHash(input, '')).toBe(parseInt(sha1_hex.slice(0, 15), 16) / divisor);
    });

    it('equals the exact BigInt computation, correctly rounded, for 10,000 identifiers', () => {
      for (let i = 0; i < 10_000; i += 1) {
        const input = `flag-${i % 7}.user-${i}`;
        const sixtyBits = BigInt(`0x${createHash('sha1').update(input).digest('hex').slice(0, 15)}`);
        expect(calculateHash(input, '')).toBe(Number(sixtyBits) / 2 ** 60);
      }
    });

    it.each(vectors.derived_hash_values.cases)('$input_string → $hash (bit-exact)', ({ input_string, hash }) => {
      expect(calculateHash(input_string, '')).toBe(hash);
    });
  });
});
