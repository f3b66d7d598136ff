import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { RegexBudget, type FeatureFlag, type PropertyFilter } from '@plover/flags';
import { parseRustFloat } from '../src/values';
import { buildFlag, evaluate, matches } from './fixtures';

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

describe('the regex budget of one request', () => {
  // Exponential for a backtracking engine on the value below; each pattern differs, so no answer is reused.
  const pathological = (i: number) => `^(a|a)*\\1(?:b{${i}})?$`;
  const value = `${'a'.repeat(64)}!`;
  const regexFlag = (patterns: string[], operator: 'regex' | 'not_regex' = 'regex'): FeatureFlag =>
    buildFlag({
      filters: { groups: patterns.map((pattern) => ({ properties: [{ key: 'p', type: 'person', operator, value: pattern }], rollout_percentage: 100 })) },
    });

  it.each(['regex', 'not_regex'] as const)('runs at most two %s matches of a 100-group pathological flag, and the flag does not match', (operator) => {
    const flag = regexFlag(
      Array.from({ length: 100 }, (_, i) => pathological(i)),
      operator,
    );
    const budget = new RegexBudget();
    const result = evaluate({ flags: [flag], context: { personPropertyOverrides: { p: value } }, options: { regexBudget: budget } }).get(flag.key);
    // A match Rust cannot decide is a non-match, not an error: the flag is computed (errorsWhileComputingFlags
    // stays false) and does not match.
    expect(result).toMatchObject({ failed: false, enabled: false, reason: { code: 'no_condition_match' } });
    // Each of the first matches runs out of its time; together they spend the request's, and the rest are not run.
    expect(budget.matches).toBeLessThanOrEqual(2);
    expect(budget.undecided).toBe(100);
    expect(budget.spentMs).toBeGreaterThanOrEqual(budget.limitMs);
  });

  it('leaves later regex filters of the request undecided once the budget is spent, and other filters decided', () => {
    const slow = regexFlag([pathological(0), pathological(1), pathological(2)]);
    const cheap = regexFlag(['^a+!$']);
    const plain = buildFlag({
      filters: { groups: [{ properties: [{ key: 'p', type: 'person', operator: 'icontains', value: 'a!' }], rollout_percentage: 100 }] },
    });
    const budget = new RegexBudget();
    const results = evaluate({ flags: [slow, cheap, plain], context: { personPropertyOverrides: { p: value } }, options: { regexBudget: budget } });
    expect([results.get(cheap.key)?.enabled, results.get(plain.key)?.enabled]).toEqual([false, true]);
    expect(budget.undecided).toBe(4);
    // Alone, with a fresh budget, the same flag matches.
    expect(evaluate({ flags: [cheap], context: { personPropertyOverrides: { p: value } } }).get(cheap.key)?.enabled).toBe(true);
  });

  it('matches a pattern against a text once per request, whatever repeats it', () => {
    const repeated = regexFlag(Array.from({ length: 100 }, () => pathological(7)));
    const linear = regexFlag(
      Array.from({ length: 100 }, () => '^a+$'),
      'not_regex',
    );
    const budget = new RegexBudget();
    const results = evaluate({ flags: [repeated, linear], context: { personPropertyOverrides: { p: value } }, options: { regexBudget: budget } });
    expect([results.get(repeated.key)?.enabled, results.get(linear.key)?.enabled]).toEqual([false, true]);
    expect([budget.matches, budget.undecided]).toEqual([2, 1]);
  });
});
