import type { Series, TrendsInput } from '../../src/types';

/** A series counting `event` (null: all events) in total, unless `overrides` say otherwise. */
export function seriesOf(event: string | null, overrides: Partial<Series> = {}): Series {
  const counted = overrides.event === undefined ? event : overrides.event;
  return {
    event: counted,
    action: null,
    name: counted ?? 'All events',
    customName: null,
    order: 0,
    math: 'total',
    mathProperty: null,
    mathGroupTypeIndex: null,
    properties: null,
    ...overrides,
  };
}

/** A daily insight over `series` with no range, filter, breakdown, comparison or formula, unless `overrides` say otherwise. */
export function insightInput(series: Series, overrides: Partial<TrendsInput> = {}): TrendsInput {
  return {
    series: [series],
    dateFrom: null,
    dateTo: null,
    interval: 'day',
    properties: null,
    breakdown: null,
    compare: false,
    formula: null,
    display: 'ActionsLineGraph',
    ...overrides,
  };
}
