/** resolveInstant: the date grammar of insights as instants, for filters that compare times (recordings). */
import { ApiError } from '@plover/core';
import { resolveInstant } from '@plover/insights';

const NOW = new Date('2026-03-29T13:45:30.250Z');

describe('resolveInstant', () => {
  it.each([
    ['-3d', 'UTC', false, '2026-03-26T00:00:00.000Z'],
    ['-3d', 'UTC', true, '2026-03-26T23:59:59.000Z'],
    ['-24h', 'UTC', false, '2026-03-28T13:00:00.000Z'],
    ['-1w', 'UTC', false, '2026-03-22T00:00:00.000Z'],
    ['2026-01-15', 'UTC', false, '2026-01-15T00:00:00.000Z'],
    ['2026-01-15', 'UTC', true, '2026-01-15T23:59:59.000Z'],
    // A day and a wall clock without an offset are in the project's timezone; an offset is kept.
    ['2026-01-15', 'America/New_York', false, '2026-01-15T05:00:00.000Z'],
    ['2026-01-15T08:30:00', 'Asia/Tokyo', false, '2026-01-14T23:30:00.000Z'],
    ['2026-01-15T08:30:00Z', 'Asia/Tokyo', false, '2026-01-15T08:30:00.000Z'],
    ['-3d', 'Europe/Berlin', false, '2026-03-25T23:00:00.000Z'],
    // 02:30 on 2026-03-29 does not exist in Berlin (02:00 CET jumped to 03:00 CEST): read with the offset before the jump.
    ['2026-03-29T02:30:00', 'Europe/Berlin', false, '2026-03-29T01:30:00.000Z'],
  ])('%s in %s (end: %s) is %s', (text, timezone, end, expected) => {
    expect(resolveInstant(text, { now: NOW, timezone }, end, 'date_from').toISOString()).toBe(expected);
  });

  it('refuses what is not a date, naming the parameter', () => {
    let thrown: unknown;
    try {
      resolveInstant('yesterday', { now: NOW, timezone: 'UTC' }, false, 'date_to');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ApiError);
    expect((thrown as ApiError).toBody()).toMatchObject({ code: 'invalid', attr: 'date_to' });
  });
});
