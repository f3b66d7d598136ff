import { seededRandom } from '../../../test/support/random';
import { eventTimestamp, parseTimestamp, sentAtFromQuery } from '../src/timestamp';

const NOW = Date.parse('2025-06-01T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const H = 3_600_000;

describe('the clock-skew rule (fixed clock at 2025-06-01T12:00:00Z)', () => {
  it.each<[string, { timestamp?: string; offset?: number; sentAt?: number }, string, string | undefined]>([
    ['nothing given → now', {}, '2025-06-01T12:00:00.000Z', undefined],
    ['timestamp alone → as given', { timestamp: '2025-06-01T10:00:00Z' }, '2025-06-01T10:00:00.000Z', undefined],
    ['timestamp corrected by sent_at: client 1 h fast', { timestamp: '2025-06-01T12:30:00Z', sentAt: NOW + H }, '2025-06-01T11:30:00.000Z', undefined],
    ['timestamp corrected by sent_at: client 1 h late', { timestamp: '2025-06-01T10:30:00Z', sentAt: NOW - H }, '2025-06-01T11:30:00.000Z', undefined],
    ['offset → now − offset', { offset: 5_000 }, '2025-06-01T11:59:55.000Z', undefined],
    ['offset overrides timestamp and sent_at', { offset: 1_000, timestamp: '2020-01-01T00:00:00Z', sentAt: NOW - H }, '2025-06-01T11:59:59.000Z', undefined],
    [
      'offset overrides an unparseable timestamp, which is then not used at all',
      { offset: 1_000, timestamp: 'yesterday' },
      '2025-06-01T11:59:59.000Z',
      undefined,
    ],
    ['22 h in the future is kept', { timestamp: iso(NOW + 22 * H) }, iso(NOW + 22 * H), undefined],
    ['more than 23 h in the future → now', { timestamp: iso(NOW + 23 * H + 1) }, '2025-06-01T12:00:00.000Z', 'in_future'],
    ['a negative offset far ahead → now', { offset: -24 * H }, '2025-06-01T12:00:00.000Z', 'in_future'],
    ['an unparseable timestamp → now', { timestamp: 'yesterday' }, '2025-06-01T12:00:00.000Z', 'invalid_format'],
    [
      'a year past 9999 → now (it is in the future first)',
      { timestamp: '2025-06-01T12:00:00Z', sentAt: NOW - 9000 * 365 * 24 * H },
      '2025-06-01T12:00:00.000Z',
      'in_future',
    ],
    ['a year before 0 → now', { offset: 3000 * 365 * 24 * H }, '2025-06-01T12:00:00.000Z', 'out_of_bounds'],
    ['the distant past is kept', { timestamp: '1999-12-31T23:59:59Z' }, '1999-12-31T23:59:59.000Z', undefined],
  ])('%s', (_name, input, expected, ignored) => {
    const time = eventTimestamp({ ...input, now: NOW });
    expect(iso(time.ms)).toBe(expected);
    expect(time.ignored?.reason).toBe(ignored);
  });
});

describe('timestamp formats', () => {
  it.each<[string, string | undefined]>([
    ['2025-06-01T10:00:00Z', '2025-06-01T10:00:00.000Z'],
    ['2025-06-01T10:00:00.123456Z', '2025-06-01T10:00:00.123Z'],
    ['2025-06-01T10:00:00+02:00', '2025-06-01T08:00:00.000Z'],
    ['2025-06-01T10:00:00+03', '2025-06-01T07:00:00.000Z'],
    ['2025-06-01T10:00:00-0130', '2025-06-01T11:30:00.000Z'],
    ['2025-06-01T10:00:00', '2025-06-01T10:00:00.000Z'],
    ['2025-06-01 10:00:00', '2025-06-01T10:00:00.000Z'],
    ['2025-06-01T10:00', '2025-06-01T10:00:00.000Z'],
    ['2025-06-01', '2025-06-01T00:00:00.000Z'],
    ['2025/06/01 10:00:00', '2025-06-01T10:00:00.000Z'],
    ['1748772000', '2025-06-01T10:00:00.000Z'],
    ['1748772000123', '2025-06-01T10:00:00.123Z'],
    ['Sun, 01 Jun 2025 10:00:00 +0000', '2025-06-01T10:00:00.000Z'],
    ['2025-02-30T10:00:00Z', undefined],
    ['2025-06-01T25:00:00Z', undefined],
    ['not a date', undefined],
    ['', undefined],
  ])('%s', (value, expected) => {
    const parsed = parseTimestamp(value);
    expect(parsed === undefined ? undefined : iso(parsed)).toBe(expected);
  });
});

describe('the toISOString shape (read without the regex) agrees with the general parser', () => {
  // `…z` (lower case) is the same instant in a shape only the regex path reads: it is the reference.
  const reference = (value: string) => parseTimestamp(`${value.slice(0, -1)}z`);
  const CANONICAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

  it('on 20,000 generated timestamps, valid and not, with days changing between calls', () => {
    const random = seededRandom(20261126);
    const pick = (values: string[]) => values[Math.floor(random() * values.length)] as string;
    const two = (max: number) => String(Math.floor(random() * max)).padStart(2, '0');
    let valid = 0;
    for (let i = 0; i < 20_000; i++) {
      const year = pick(['0000', '0099', '1970', '2000', '2024', '2025', '2100', '9999']);
      const value = `${year}-${two(14)}-${two(33)}T${two(26)}:${two(62)}:${two(62)}.${two(100)}${Math.floor(random() * 10)}Z`.replace(
        /\d/g, // about 1 in 100 digits, anywhere, becomes something else
        (digit) => (random() < 0.01 ? pick(['x', ' ', '-']) : digit),
      );
      const parsed = parseTimestamp(value);
      expect([value, parsed]).toEqual([value, reference(value)]);
      if (parsed !== undefined) {
        valid++;
        // Date.parse as a second reference, for the exact toISOString shape (the general parser also reads `…44.89 Z`).
        if (CANONICAL.test(value) && year !== '0000' && year !== '0099') expect(parsed).toBe(Date.parse(value));
      }
    }
    // Both kinds were exercised.
    expect(valid).toBeGreaterThan(5_000);
    expect(valid).toBeLessThan(19_000);
  });

  it.each(['2024-02-29T23:59:59.999Z', '2025-02-29T00:00:00.000Z', '2025-06-01T10:00:00.000Z ', ' 2025-06-01T10:00:00.000Z', '2025-06-01T10:00:00,123Z'])(
    '%j',
    (value) => {
      expect(parseTimestamp(value)).toBe(parseTimestamp(value.replace('Z', 'z')));
    },
  );
});

describe('sent_at from the query (`_` or `sent_at`, epoch ms)', () => {
  it.each<[string | null, number | undefined]>([
    ['1748779200000', NOW],
    ['1748779200', undefined], // seconds from old SDKs land in 1970: ignored
    ['1577836800000', undefined], // 2020: ignored as PostHog does
    ['abc', undefined],
    [null, undefined],
  ])('%s', (value, expected) => {
    expect(sentAtFromQuery(value)).toBe(expected);
  });
});
