import type { TrendSeries } from '../src/api/types';
import {
  BREAKDOWN_OTHER,
  barSlot,
  bucketLabel,
  chartModel,
  compactNumber,
  lifecycleModel,
  seriesLabel,
  stackedValues,
  stickinessModel,
  totalRows,
} from '../src/insights/chart-data';

/** A trend series as the API answers it, with only what the mapping reads set. */
function series(fields: Partial<TrendSeries> & Pick<TrendSeries, 'label' | 'data'>): TrendSeries {
  return {
    labels: [],
    days: ['2026-11-10', '2026-11-11', '2026-11-12'].slice(0, fields.data.length),
    count: fields.data.reduce((sum, value) => sum + value, 0),
    action: { id: fields.label, order: 0, name: fields.label, custom_name: null, math: 'total' },
    ...fields,
  };
}

describe('bucket labels', () => {
  it('labels days, hours and months in the project’s wall-clock time, as the API gives them', () => {
    expect(bucketLabel('2026-11-09', 'day')).toBe('9 Nov');
    expect(bucketLabel('2026-11-08', 'week')).toBe('8 Nov');
    expect(bucketLabel('2026-11-09 13:00:00', 'hour')).toBe('9 Nov 13:00');
    expect(bucketLabel('2026-11-09 13:05:00', 'minute')).toBe('9 Nov 13:05');
    expect(bucketLabel('2026-02-01', 'month')).toBe('Feb 2026');
    expect(bucketLabel('not a date', 'day')).toBe('not a date');
  });
});

describe('chartModel', () => {
  it('draws one line per series over the buckets, with its total for the legend', () => {
    const model = chartModel([series({ label: '$pageview', data: [3, 0, 5] }), series({ label: 'signup', data: [1, 1, 0] })], 'day');
    expect(model.labels).toEqual(['10 Nov', '11 Nov', '12 Nov']);
    expect(model.series).toEqual([
      { label: '$pageview', values: [3, 0, 5], total: 8, previous: false },
      { label: 'signup', values: [1, 1, 0], total: 2, previous: false },
    ]);
  });

  it('totals in the legend only series whose buckets add up: counts and sums, not distinct counts or averages', () => {
    const of = (name: string, math: 'total' | 'sum' | 'dau' | 'avg' | 'weekly_active') =>
      series({ label: name, data: [2, 3], action: { id: name, order: 0, name, custom_name: null, math } });
    const totals = chartModel([of('a', 'total'), of('b', 'sum'), of('c', 'dau'), of('d', 'avg'), of('e', 'weekly_active')], 'day').series.map(
      (item) => item.total,
    );
    expect(totals).toEqual([5, 5, null, null, null]);
  });

  it('puts a comparison’s previous period on the current period’s buckets, marked previous', () => {
    const previous = series({
      label: '$pageview',
      data: [7, 8, 9],
      days: ['2026-11-07', '2026-11-08', '2026-11-09'],
      compare: true,
      compare_label: 'previous',
    });
    const current = series({ label: '$pageview', data: [1, 2, 3], compare: true, compare_label: 'current' });
    const model = chartModel([previous, current], 'day');
    expect(model.labels).toEqual(['10 Nov', '11 Nov', '12 Nov']);
    expect(model.series.map(({ label, previous: isPrevious }) => [label, isPrevious])).toEqual([
      ['$pageview (previous period)', true],
      ['$pageview', false],
    ]);
  });

  it('names breakdown series by value, the rest as Other, and a custom name only without a breakdown', () => {
    const other = series({ label: `$pageview - ${BREAKDOWN_OTHER}`, data: [1], breakdown_value: BREAKDOWN_OTHER });
    expect(seriesLabel(other)).toBe('$pageview - Other');
    const named = series({ label: 'signup', data: [1], action: { id: 'signup', order: 0, name: 'signup', custom_name: 'Sign-ups', math: 'total' } });
    expect(seriesLabel(named)).toBe('Sign-ups');
    expect(seriesLabel({ ...named, breakdown_value: 'Chrome', label: 'Chrome' })).toBe('Chrome');
  });

  it('fills buckets a series lacks with 0 and answers no labels for no series', () => {
    expect(chartModel([series({ label: 'a', data: [4], days: ['2026-11-10', '2026-11-11'] })], 'day').series[0]!.values).toEqual([4, 0]);
    expect(chartModel([], 'day')).toEqual({ labels: [], series: [] });
  });
});

describe('totalRows', () => {
  it('ranks the aggregated values, largest first, the previous period after the current one', () => {
    const rows = totalRows([
      series({ label: 'a', data: [], aggregated_value: 2 }),
      series({ label: 'b', data: [], aggregated_value: 9 }),
      series({ label: 'c', data: [], aggregated_value: 2 }),
      series({ label: 'b', data: [], aggregated_value: 50, compare_label: 'previous' }),
    ]);
    expect(rows).toEqual([
      { label: 'b', value: 9, previous: false },
      { label: 'a', value: 2, previous: false },
      { label: 'c', value: 2, previous: false },
      { label: 'b (previous period)', value: 50, previous: true },
    ]);
  });

  it('falls back to count when a series has no aggregated value (a time-series answer)', () => {
    expect(totalRows([series({ label: 'a', data: [1, 2] })])).toEqual([{ label: 'a', value: 3, previous: false }]);
  });
});

describe('bar groups and axis numbers', () => {
  it('places the bars of each bucket side by side, together 0.8 of a bucket wide and centred', () => {
    expect(barSlot(0, 1)).toEqual({ offset: -0.4, width: 0.8 });
    const slots = [0, 1, 2, 3].map((index) => barSlot(index, 4));
    expect(slots.map((slot) => slot.width)).toEqual([0.2, 0.2, 0.2, 0.2]);
    expect(slots.map((slot) => Number(slot.offset.toFixed(2)))).toEqual([-0.4, -0.2, 0, 0.2]);
  });

  it('shortens large numbers', () => {
    expect([0, 950, 9999, 12_500, 3_400_000, 2_000_000_000, -15_000, 0.125].map(compactNumber)).toEqual([
      '0',
      '950',
      '9999',
      '12.5k',
      '3.4M',
      '2B',
      '-15k',
      '0.13',
    ]);
  });
});

describe('stickiness and lifecycle charts', () => {
  it('draws stickiness over the number of intervals active, each total the persons counted', () => {
    const answer = series({ label: 'signup', data: [5, 3, 2], labels: ['1 day', '2 days', '3 days'], action: null });
    expect(stickinessModel([answer])).toEqual({
      labels: ['1 day', '2 days', '3 days'],
      series: [{ label: 'signup', values: [5, 3, 2], total: 10, previous: false }],
    });
  });

  it('orders lifecycle statuses new, returning, resurrecting, dormant whatever the answer’s order, with their colours', () => {
    const status = (name: TrendSeries['status'], data: number[]) => series({ label: `signup - ${name}`, data, status: name });
    const model = lifecycleModel(
      [status('dormant', [0, -2, -1]), status('new', [4, 1, 0]), status('resurrecting', [0, 0, 1]), status('returning', [0, 2, 1])],
      'day',
    );
    expect(model.labels).toEqual(['10 Nov', '11 Nov', '12 Nov']);
    expect(model.series.map((each) => [each.label, each.values, each.total, each.colour])).toEqual([
      ['New', [4, 1, 0], 5, 2],
      ['Returning', [0, 2, 1], 3, 0],
      ['Resurrecting', [0, 0, 1], 1, 4],
      ['Dormant', [0, -2, -1], -3, 1],
    ]);
  });

  it('stacks positive values upwards and negative ones downwards, each from 0, a 0 drawing nothing', () => {
    expect(
      stackedValues([
        [4, 1, 0],
        [0, 2, 1],
        [0, 0, 1],
        [0, -2, -1],
        [-1, 0, -1],
      ]),
    ).toEqual([
      [4, 1, 0],
      [0, 3, 1],
      [0, 0, 2],
      [0, -2, -1],
      [-1, 0, -2],
    ]);
    expect(stackedValues([])).toEqual([]);
  });
});
