import fc from 'fast-check';
import { isoTimestamp, isoTimestampMs, sqlTimestamp, utcDateMs } from '../src/utc-text';

const FIRST = Date.parse('0000-01-01T00:00:00.000Z');
const LAST = Date.parse('9999-12-31T23:59:59.999Z');
const DAY = 86_400_000;
/** Times of years 0000–9999, and runs of them a step apart: the day changes between calls, or does not. */
const runs = fc.tuple(fc.array(fc.integer({ min: FIRST, max: LAST }), { maxLength: 20 }), fc.integer({ min: 0, max: 3 * DAY }));

describe('isoTimestamp and sqlTimestamp', () => {
  it('are Date#toISOString (and its SQL form), from one day to the next and at the edges', () => {
    const now = Date.parse('2025-06-01T12:00:00.000Z');
    const times = [now, now + 1, now + 999, now + DAY - 1, now + DAY, now - 1, 0, -1, -DAY - 1, FIRST, LAST, Date.parse('2024-02-29T23:59:59.999Z')];
    // Outside the 4-digit years and between milliseconds Date decides, and refuses what it cannot hold.
    const others = [FIRST - 1, LAST + 1, now + 0.5, -0.5, -1.5, 8.64e15];
    for (const ms of [...times, ...others]) {
      expect([ms, isoTimestamp(ms)]).toEqual([ms, new Date(ms).toISOString()]);
      expect([ms, sqlTimestamp(ms)]).toEqual([ms, new Date(ms).toISOString().replace('T', ' ').slice(0, -1)]);
    }
    expect(() => isoTimestamp(Number.NaN)).toThrow(RangeError);
    fc.assert(
      fc.property(runs, ([starts, step]) => {
        for (const start of starts) {
          for (const ms of [start, start + step, start - step]) {
            expect(isoTimestamp(ms)).toBe(new Date(ms).toISOString());
            expect(sqlTimestamp(ms)).toBe(new Date(ms).toISOString().replace('T', ' ').slice(0, -1));
          }
        }
      }),
    );
  });
});

describe('isoTimestampMs', () => {
  it('reads what isoTimestamp writes, whichever day was read or written before', () => {
    fc.assert(
      fc.property(runs, ([starts, step]) => {
        for (const start of starts) {
          for (const ms of [start, start + step, start - step]) {
            if (ms < FIRST || ms > LAST) continue;
            expect(isoTimestampMs(isoTimestamp(ms))).toBe(ms);
            expect(isoTimestampMs(new Date(ms).toISOString())).toBe(ms);
          }
        }
      }),
    );
  });

  it.each([
    '2025-02-29T00:00:00.000Z',
    '2025-04-31T00:00:00.000Z',
    '2025-13-01T00:00:00.000Z',
    '2025-00-01T00:00:00.000Z',
    '2025-06-01T24:00:00.000Z',
    '2025-06-01T10:60:00.000Z',
    '2025-06-01T10:00:60.000Z',
    '2025-06-01T10:00:00.00xZ',
    '2025-06-01 10:00:00.000Z',
    '2025-06-01T10:00:00.000z',
    '2025/06/01T10:00:00.000Z',
    '+25-06-01T10:00:00.000Z',
    '2025-06-01T10:00:00.000Z ',
    '2025-06-01T10:00:00Z',
  ])('leaves %j to the general parser', (text) => {
    // The same day read well just before must not make a bad one pass.
    expect(isoTimestampMs('2025-06-01T00:00:00.000Z')).toBe(Date.parse('2025-06-01T00:00:00.000Z'));
    expect(isoTimestampMs(text)).toBeUndefined();
  });
});

describe('utcDateMs', () => {
  it('is Date.UTC for dates that exist, years 0–99 included; NaN for the ones that do not', () => {
    expect(utcDateMs(2024, 2, 29)).toBe(Date.parse('2024-02-29T00:00:00Z'));
    expect(utcDateMs(99, 12, 31)).toBe(Date.parse('0099-12-31T00:00:00Z'));
    expect(utcDateMs(0, 1, 1)).toBe(FIRST);
    expect(utcDateMs(2000, 2, 29)).toBe(Date.parse('2000-02-29T00:00:00Z'));
    for (const [year, month, day] of [
      [2025, 2, 29],
      [1900, 2, 29],
      [2025, 4, 31],
      [2025, 0, 1],
      [2025, 13, 1],
      [2025, 1, 0],
      [Number.NaN, 1, 1],
    ] as const) {
      expect(utcDateMs(year, month, day)).toBeNaN();
    }
  });
});
