import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import type { PropertyFilter } from '@plover/flags';
import { parseRustFloat } from '../src/values';
import { matches } from './fixtures';

const MIB = 1024 * 1024;

/**
 * `fn()`, interrupted after `ms`. The inputs below are 20 MiB, what one request may carry: a linear match
 * takes milliseconds on them, a super-linear one hours, so the generous budget separates the two without
 * timing anything closely, and a regression fails at the budget instead of hanging the suite.
 */
function withinBudget<T>(ms: number, fn: () => T): T {
  return runInNewContext('fn()', { fn }, { timeout: ms }) as T;
}

describe('property values sent by a client', () => {
  it('compares a 20 MiB run of digits numerically in linear time', () => {
    const digits = '1'.repeat(20 * MIB);
    for (const operator of ['gt', 'lt', 'between'] as const) {
      const filter: PropertyFilter = { key: 'n', type: 'person', operator, value: operator === 'between' ? [0, 1] : 5 };
      expect(withinBudget(5_000, () => matches(filter, { n: `${digits}x` }))).toBe(false);
      expect(withinBudget(5_000, () => matches(filter, { n: `${digits}e1x` }))).toBe(false);
    }
    expect(withinBudget(5_000, () => matches({ key: 'n', type: 'person', operator: 'gt', value: 5 }, { n: digits }))).toBe(true);
  });

  it('reads short texts exactly as the grammar written as a regular expression does', () => {
    const grammar = /^[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)$/i;
    const text = fc.stringMatching(/^[-+]?[0-9.eEinfatyINFATY_x ]{0,8}$/);
    fc.assert(
      fc.property(text, (value) => {
        const parsed = parseRustFloat(value);
        expect([value, parsed !== null]).toEqual([value, grammar.test(value)]);
        if (parsed !== null && !/nan/i.test(value)) expect(parsed).toBe(/inf/i.test(value) ? (value.startsWith('-') ? -Infinity : Infinity) : Number(value));
      }),
      { numRuns: 5_000, seed: 20261126 },
    );
  });

  it('still reads every form of Rust float text', () => {
    const gt = (value: string) => matches({ key: 'n', type: 'person', operator: 'gt', value: 1 }, { n: value });
    for (const text of ['2', '+2', '2.', '2.5', '.5e1', '2e0', '2.5E+3', 'inf', '-INFINITY']) expect([text, gt(text)]).toEqual([text, !text.startsWith('-')]);
    for (const text of ['2..5', '.', 'e5', '2e', '0x2', ' 2', '2_0', 'nan']) expect([text, gt(text)]).toEqual([text, false]);
  });
});

describe('regex filters against client values', () => {
  // Patterns an administrator may store that backtrack exponentially or polynomially on a crafted value.
  const catastrophic: [string, string][] = [
    ['^(a+)+$', `${'a'.repeat(20 * MIB)}!`],
    ['^(.*\\.)*example\\.com$', `${'a.'.repeat(10 * MIB)}!`],
    ['^(\\w+\\s?)*$', `${'word '.repeat(4 * MIB)}!`],
  ];

  it.each(catastrophic)('matches %s in linear time, for regex and not_regex', (pattern, value) => {
    for (const operator of ['regex', 'not_regex'] as const) {
      const filter: PropertyFilter = { key: 'p', type: 'person', operator, value: pattern };
      expect(withinBudget(5_000, () => matches(filter, { p: value }))).toBe(operator === 'not_regex');
    }
  });

  it('gives a back-referencing pattern a budget, then counts it as no match for regex and not_regex', () => {
    // RE2 has no back-references: this one backtracks, and exponentially on this value.
    const pattern = '^(a|a)*\\1$';
    const value = `${'a'.repeat(64)}!`;
    for (const operator of ['regex', 'not_regex'] as const) {
      expect(withinBudget(5_000, () => matches({ key: 'p', type: 'person', operator, value: pattern }, { p: value }))).toBe(false);
    }
    expect(matches({ key: 'p', type: 'person', operator: 'regex', value: pattern }, { p: 'aaaa' })).toBe(true);
  });
});
