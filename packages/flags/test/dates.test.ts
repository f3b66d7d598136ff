import type { JsonValue, PropertyOperator } from '@plover/flags';

import { matches } from './fixtures';

function dateMatches(
  operator: PropertyOperator,
  filter: JsonValue,
  property: JsonValue | undefined,
  options: { now?: string; timezone?: string } = {},
): boolean {
  return matches({ key: 'when', type: 'person', operator, value: filter }, property === undefined ? {} : { when: property }, {
    now: new Date(options.now ?? '2024-06-15T12:00:00.000Z'),
    ...(options.timezone ? { timezone: options.timezone } : {}),
  });
}

describe('relative dates (now minus N; Rust relative_date.rs vectors)', () => {
  const now = '2020-01-01T12:01:20.134Z';

  it.each([
    ['1h', '2020-01-01T11:01:20.134Z'],
    ['-24h', '2019-12-31T12:01:20.134Z'],
    ['30h', '2019-12-31T06:01:20.134Z'],
    ['000h', now],
    ['7d', '2019-12-25T12:01:20.134Z'],
    ['-30d', '2019-12-02T12:01:20.134Z'],
    ['1w', '2019-12-25T12:01:20.134Z'],
    ['-8w', '2019-11-06T12:01:20.134Z'],
    ['1m', '2019-12-01T12:01:20.134Z'],
    ['-4m', '2019-09-01T12:01:20.134Z'],
    ['12m', '2019-01-01T12:01:20.134Z'],
    ['-1y', '2019-01-01T12:01:20.134Z'],
  ])('%s is %s', (relative, instant) => {
    expect(dateMatches('is_date_exact', relative, instant, { now })).toBe(true);
  });

  it.each([
    ['1m from 31 March clamps to the end of February', '2024-03-31T00:00:00Z', '1m', '2024-02-29T00:00:00Z'],
    ['2m steps one month at a time, keeping the clamp', '2024-03-31T00:00:00Z', '2m', '2024-01-29T00:00:00Z'],
    ['1y from 29 February lands on 28 February', '2024-02-29T08:00:00Z', '1y', '2023-02-28T08:00:00Z'],
  ])('%s', (_why, from, relative, instant) => {
    expect(dateMatches('is_date_exact', relative, instant, { now: from })).toBe(true);
  });

  it.each(['10000d', '1s', '1.5d', '-d', 'bazinga', '7 d'])('%s is not a date, so nothing matches', (relative) => {
    expect(dateMatches('is_date_before', relative, '1970-01-01T00:00:00Z')).toBe(false);
    expect(dateMatches('is_date_after', relative, '2999-01-01T00:00:00Z')).toBe(false);
  });
});

describe('is_date_before / is_date_after / is_date_exact', () => {
  it.each<[string, PropertyOperator, JsonValue, JsonValue | undefined, boolean]>([
    ['compares an ISO property with a bare date filter', 'is_date_before', '2024-01-01', '2023-12-31T23:59:59Z', true],
    ['is strict at the boundary', 'is_date_before', '2024-01-01', '2024-01-01T00:00:00Z', false],
    ['reads a numeric property as unix seconds', 'is_date_before', '2024-01-01', 1704067199, true],
    ['reads numeric text as unix seconds, fractions allowed', 'is_date_after', '2024-01-01', '1704067200.5', true],
    ['compares with a relative filter (after 7 days ago)', 'is_date_after', '-7d', '2024-06-10T00:00:00Z', true],
    ['compares with a relative filter (before 7 days ago)', 'is_date_before', '-7d', '2024-06-10T00:00:00Z', false],
    ['honours an explicit filter offset', 'is_date_after', '2024-01-01T00:00:00+02:00', '2023-12-31T22:30:00Z', true],
    ['accepts a naive date-time filter', 'is_date_after', '2024-01-01 10:30:00', '2024-01-01T10:30:01Z', true],
    ['accepts an offset without colon', 'is_date_exact', '2024-01-01T02:00:00+0200', '2024-01-01T00:00:00Z', true],
    ['matches the same instant written differently', 'is_date_exact', '2024-01-01', '2024-01-01T02:00:00+02:00', true],
    ['rejects an unparseable property', 'is_date_before', '2024-01-01', 'not a date', false],
    ['rejects an impossible calendar date', 'is_date_before', '2024-02-30', '2000-01-01T00:00:00Z', false],
    ['rejects a boolean property', 'is_date_before', '2024-01-01', true, false],
    ['rejects a filter that is not text', 'is_date_after', 1704067200, '2024-06-01T00:00:00Z', false],
    ['fails for a missing property', 'is_date_before', '2024-01-01', undefined, false],
    ['does not guess free-form formats', 'is_date_before', 'May 6 2030', '2024-01-01T00:00:00Z', false],
  ])('%s', (_why, operator, filter, property, expected) => {
    expect(dateMatches(operator, filter, property)).toBe(expected);
  });

  describe('in the project timezone', () => {
    const timezone = 'America/New_York';

    it('reads a naive filter as local midnight', () => {
      // 2024-01-01 in New York is 05:00 UTC: 04:59:59 UTC is still "before".
      expect(dateMatches('is_date_before', '2024-01-01', '2024-01-01T04:59:59Z', { timezone })).toBe(true);
      expect(dateMatches('is_date_before', '2024-01-01', '2024-01-01T04:59:59Z')).toBe(false);
    });

    it('counts relative days on the local wall clock across a DST change', () => {
      // Now is 08:00 EDT on 11 March 2024; two local days back is 08:00 EST on 9 March = 13:00 UTC.
      const now = '2024-03-11T12:00:00Z';
      expect(dateMatches('is_date_exact', '-2d', '2024-03-09T13:00:00Z', { now, timezone })).toBe(true);
      expect(dateMatches('is_date_exact', '-2d', '2024-03-09T12:00:00Z', { now })).toBe(true);
    });

    it('takes the earlier instant of a repeated wall-clock time', () => {
      expect(dateMatches('is_date_exact', '2024-11-03 01:30:00', '2024-11-03T05:30:00Z', { timezone })).toBe(true);
    });

    it('has no instant for a wall-clock time skipped by DST, so nothing matches', () => {
      expect(dateMatches('is_date_before', '2024-03-10 02:30:00', '2000-01-01T00:00:00Z', { timezone })).toBe(false);
      expect(dateMatches('is_date_after', '2024-03-10 02:30:00', '2030-01-01T00:00:00Z', { timezone })).toBe(false);
    });

    it('falls back to UTC for an unknown timezone instead of failing', () => {
      expect(dateMatches('is_date_exact', '2024-01-01', '2024-01-01T00:00:00Z', { timezone: 'Mars/Olympus' })).toBe(true);
    });
  });
});
