import type { JsonValue, Properties, PropertyOperator } from '@plover/flags';

import { matches } from './fixtures';

/** [why, filter value, person properties, expected] — the filter's key is always `prop`. */
type Row = [string, JsonValue | undefined, Properties, boolean];

function table(operator: PropertyOperator, rows: Row[]): void {
  describe(operator, () => {
    it.each(rows)('%s', (_why, value, properties, expected) => {
      expect(matches({ key: 'prop', type: 'person', operator, value }, properties)).toBe(expected);
    });
  });
}

const MISSING: Properties = { other: 'x' };

describe('property operators (server semantics)', () => {
  table('exact', [
    ['compares text case-insensitively', 'Chrome', { prop: 'chrome' }, true],
    ['rejects other text', 'Chrome', { prop: 'Firefox' }, false],
    ['fails for a missing property', 'Chrome', MISSING, false],
    ['matches a number against its text', '5', { prop: 5 }, true],
    ['matches numeric text against a number filter', 5, { prop: '5' }, true],
    ['treats "true" in any case as boolean true', true, { prop: 'TRUE' }, true],
    ['treats a "True" filter as boolean true', 'True', { prop: true }, true],
    ['matches false against false', false, { prop: false }, true],
    ['counts any property that is not true as false', 'false', { prop: 'no' }, true],
    ['does not treat 1 as true', true, { prop: 1 }, false],
    ['matches any element of a list, case-insensitively', ['US', 'CA'], { prop: 'ca' }, true],
    ['rejects a value outside the list', ['US', 'CA'], { prop: 'de' }, false],
    ['matches a boolean-ish list by truthiness', ['true'], { prop: true }, true],
    ['never matches text against an empty list', [], { prop: 'us' }, false],
    ['compares a null property as the text "null"', 'null', { prop: null }, true],
    ['does not match null against other text', 'value', { prop: null }, false],
    ['never matches without a filter value', null, { prop: 'x' }, false],
  ]);

  table('is_not', [
    ['matches other text', 'a', { prop: 'b' }, true],
    ['rejects the same text in another case', 'a', { prop: 'A' }, false],
    ['matches a missing property', 'a', MISSING, true],
    ['matches a value outside the list', ['a', 'b'], { prop: 'c' }, true],
    ['rejects a value inside the list', ['a', 'b'], { prop: 'B' }, false],
    ['matches a null property', 'value', { prop: null }, true],
    ['never matches without a filter value, even for a missing property', null, MISSING, false],
  ]);

  table('icontains', [
    ['finds a substring in any case', 'valUe', { prop: '343tfVALUE5' }, true],
    ['rejects text without it', 'valUe', { prop: 'Alakazam' }, false],
    ['searches the text of a number', 3, { prop: 323 }, true],
    ['fails for a missing property', 'x', MISSING, false],
    ['lowercases ASCII only, like the Rust server', 'i', { prop: 'İstanbul' }, false],
  ]);

  table('not_icontains', [
    ['matches text without the substring', 'admin', { prop: 'guest' }, true],
    ['rejects text with it in any case', 'admin', { prop: 'ADMINISTRATOR' }, false],
    ['matches a missing property', 'admin', MISSING, true],
  ]);

  table('starts_with', [
    ['matches a prefix in any case', 'Val', { prop: 'value' }, true],
    ['rejects a substring that is not a prefix', 'alu', { prop: 'value' }, false],
    ['fails for a missing property', 'Val', MISSING, false],
  ]);

  table('not_starts_with', [
    ['matches text without the prefix', 'Val', { prop: 'other' }, true],
    ['rejects text with the prefix', 'Val', { prop: 'VALUE' }, false],
    ['matches a missing property', 'Val', MISSING, true],
  ]);

  table('ends_with', [
    ['matches a suffix in any case', '.COM', { prop: 'a@b.com' }, true],
    ['rejects a different suffix', '.com', { prop: 'a@b.org' }, false],
    ['fails for a missing property', '.com', MISSING, false],
  ]);

  table('not_ends_with', [
    ['matches text without the suffix', '.com', { prop: 'a@b.org' }, true],
    ['rejects text with the suffix', '.com', { prop: 'A@B.COM' }, false],
    ['matches a missing property', '.com', MISSING, true],
  ]);

  table('icontains_multi', [
    ['matches when any needle is contained', ['foo', 'BAR'], { prop: 'xbarx' }, true],
    ['rejects when none is', ['foo', 'bar'], { prop: 'baz' }, false],
    ['accepts a single needle', 'foo', { prop: 'FOOD' }, true],
    ['fails for a missing property', ['foo'], MISSING, false],
  ]);

  table('not_icontains_multi', [
    ['matches when no needle is contained', ['foo', 'bar'], { prop: 'baz' }, true],
    ['rejects when one is', ['foo', 'bar'], { prop: 'foobar' }, false],
    ['matches a missing property', ['foo'], MISSING, true],
  ]);

  table('gt', [
    ['compares numbers', 10, { prop: 11 }, true],
    ['accepts numeric text on the property side', 10, { prop: '11' }, true],
    ['accepts numeric text on the filter side', '10', { prop: 11 }, true],
    ['compares numerically, never lexically', 10, { prop: '9' }, false],
    ['reads exponents', 999, { prop: '1e3' }, true],
    ['fails for non-numeric text (no string fallback)', 'a', { prop: 'b' }, false],
    ['fails for a boolean', 0, { prop: true }, false],
    ['fails for a missing property', 10, MISSING, false],
    ['is strict', 10, { prop: 10 }, false],
  ]);

  table('gte', [
    ['includes equality', 10, { prop: 10 }, true],
    ['rejects smaller numbers', 10, { prop: 9.5 }, false],
  ]);

  table('lt', [
    ['compares numbers', 10, { prop: 9 }, true],
    ['is strict', 10, { prop: 10 }, false],
    ['reads negative numeric text', 0, { prop: '-1.5' }, true],
    ['fails for a missing property', 10, MISSING, false],
  ]);

  table('lte', [
    ['includes equality', '10', { prop: '10.0' }, true],
    ['rejects larger numbers', 10, { prop: 11 }, false],
  ]);

  table('between', [
    ['is inclusive at the low end', [1, 10], { prop: 1 }, true],
    ['is inclusive at the high end', [1, 10], { prop: '10' }, true],
    ['rejects values outside', [1, 10], { prop: 11 }, false],
    ['fails for a missing property', [1, 10], MISSING, false],
    ['never matches reversed bounds', [10, 1], { prop: 5 }, false],
  ]);

  table('not_between', [
    ['matches values outside', [1, 10], { prop: 11 }, true],
    ['rejects values inside', [1, 10], { prop: 5 }, false],
    ['matches a missing property', [1, 10], MISSING, true],
  ]);

  table('is_set', [
    ['matches a present property', undefined, { prop: 'x' }, true],
    ['counts a null value as set', undefined, { prop: null }, true],
    ['fails for a missing property', undefined, MISSING, false],
  ]);

  table('is_not_set', [
    ['matches a missing property', undefined, MISSING, true],
    ['rejects a null value', undefined, { prop: null }, false],
  ]);

  describe('operators that do not apply to properties', () => {
    it.each(['in', 'not_in', 'flag_evaluates_to'] as const)('%s never matches a property', (operator) => {
      expect(matches({ key: 'prop', type: 'person', operator, value: 'x' }, { prop: 'x' })).toBe(false);
    });

    it('an operator this version does not know never matches', () => {
      const operator = 'is_cleverer_than' as PropertyOperator;
      expect(matches({ key: 'prop', type: 'person', operator, value: 'x' }, { prop: 'x' })).toBe(false);
    });
  });

  it('looks up own properties only: `constructor` is not set on an empty person', () => {
    expect(matches({ key: 'constructor', type: 'person', operator: 'is_set' }, {})).toBe(false);
    expect(matches({ key: '__proto__', type: 'person', operator: 'is_not_set' }, {})).toBe(true);
  });

  it('defaults a filter without an operator to exact', () => {
    expect(matches({ key: 'prop', value: 'a' }, { prop: 'A' })).toBe(true);
  });
});
