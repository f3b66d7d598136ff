import type { WebOverviewItem } from '../src/api/types';
import {
  breakdownLabel,
  chartInterval,
  isWebAddress,
  limiter,
  overviewChange,
  overviewNode,
  overviewValue,
  readWebState,
  statsNode,
  visitorsNode,
  WEB_PANELS,
  webStateParams,
  withFilter,
  type WebState,
} from '../src/web/web-query';

const state: WebState = { dateFrom: '-30d', dateTo: '', compare: true, filters: [{ key: '$pathname', value: '/pricing' }] };

/** The address a state writes, read back. */
function roundTrip(value: WebState): WebState {
  const search = new URLSearchParams();
  for (const [name, text] of Object.entries(webStateParams(value))) if (text !== undefined) search.set(name, text);
  return readWebState(search);
}

describe('the Web analytics screen’s state in the address', () => {
  it('reads back what it writes, and the defaults from an empty address', () => {
    expect(roundTrip(state)).toEqual(state);
    expect(roundTrip({ dateFrom: '2026-01-01', dateTo: '2026-01-31', compare: false, filters: [] })).toEqual({
      dateFrom: '2026-01-01',
      dateTo: '2026-01-31',
      compare: false,
      filters: [],
    });
    expect(readWebState(new URLSearchParams())).toEqual({ dateFrom: '-7d', dateTo: '', compare: false, filters: [] });
    expect(webStateParams(readWebState(new URLSearchParams()))).toEqual({ from: undefined, to: undefined, compare: undefined, filters: undefined });
  });

  it('ignores filters that do not read', () => {
    expect(readWebState(new URLSearchParams({ filters: '{not json' })).filters).toEqual([]);
    expect(readWebState(new URLSearchParams({ filters: '[{"key":"$os"},{"key":"$os","value":"Mac OS X","x":1}]' })).filters).toEqual([
      { key: '$os', value: 'Mac OS X' },
    ]);
  });

  it('keeps one value per property', () => {
    expect(withFilter(state.filters, { key: '$pathname', value: '/' })).toEqual([{ key: '$pathname', value: '/' }]);
    expect(withFilter(state.filters, { key: '$os', value: 'Linux' })).toEqual([...state.filters, { key: '$os', value: 'Linux' }]);
  });
});

describe('the Web analytics requests', () => {
  const shared = {
    dateRange: { date_from: '-30d', date_to: null },
    properties: [{ key: '$pathname', value: '/pricing', operator: 'exact', type: 'event' }],
    compareFilter: { compare: true },
  };

  it('asks the overview, the tables and the visitors trend with the same range, comparison and filters', () => {
    expect(overviewNode(state)).toEqual({ kind: 'WebOverviewQuery', ...shared });
    expect(statsNode(state, WEB_PANELS[0]!.tables[1]!, true)).toEqual({
      kind: 'WebStatsTableQuery',
      ...shared,
      breakdownBy: 'InitialPage',
      includeBounceRate: true,
      limit: 10,
    });
    expect(visitorsNode(state)).toMatchObject({
      kind: 'TrendsQuery',
      interval: 'day',
      ...shared,
      series: [{ kind: 'EventsNode', event: '$pageview', math: 'dau' }],
    });
  });

  it('draws the chart by the preset’s interval, by day for custom dates', () => {
    expect(chartInterval({ ...state, dateFrom: '-24h' })).toBe('hour');
    expect(chartInterval({ ...state, dateFrom: '-12m' })).toBe('month');
    expect(chartInterval({ ...state, dateFrom: '2026-01-01', dateTo: '2026-02-01' })).toBe('day');
  });

  it('filters only on event properties, from the tables whose value is one', () => {
    const clickable = WEB_PANELS.flatMap((panel) => panel.tables).filter((table) => table.property !== null);
    expect(clickable.map((table) => [table.breakdownBy, table.property])).toEqual([
      ['Page', '$pathname'],
      ['DeviceType', '$device_type'],
      ['Browser', '$browser'],
      ['OS', '$os'],
      ['Country', '$geoip_country_code'],
      ['Language', '$browser_language'],
    ]);
  });
});

describe('how the answers read', () => {
  const item = (changes: Partial<WebOverviewItem>): WebOverviewItem => ({
    key: 'visitors',
    kind: 'unit',
    value: 12,
    previous: 10,
    changeFromPreviousPct: 20,
    ...changes,
  });

  it('writes counts, durations and percentages', () => {
    expect(overviewValue('unit', 1234)).toBe((1234).toLocaleString(undefined, { maximumFractionDigits: 2 }));
    expect(overviewValue('duration_s', 125.6)).toBe('2m 05s');
    expect(overviewValue('percentage', 33.333)).toBe('33%');
    expect(overviewValue('percentage', null)).toBe('—');
  });

  it('marks a change good or bad by whether an increase is bad', () => {
    expect(overviewChange(item({}))).toEqual({ text: '+20%', good: true });
    expect(overviewChange(item({ changeFromPreviousPct: -5 }))).toEqual({ text: '−5%', good: false });
    expect(overviewChange(item({ key: 'bounce rate', kind: 'percentage', changeFromPreviousPct: 10, isIncreaseBad: true }))).toEqual({
      text: '+10%',
      good: false,
    });
    expect(overviewChange(item({ changeFromPreviousPct: 0 }))).toEqual({ text: '0%', good: null });
    expect(overviewChange(item({ changeFromPreviousPct: null }))).toBeNull();
  });

  it('names breakdown values', () => {
    expect(breakdownLabel('Page', null)).toBe('(none)');
    expect(breakdownLabel('Country', 'FR')).toBe('France');
    expect(breakdownLabel('Country', 'XX')).toBe('XX');
    expect(breakdownLabel('City', ['FR', 'Paris'])).toBe('Paris, FR');
    expect(breakdownLabel('Region', ['US', 'CA', 'California'])).toBe('California, CA, US');
    expect(breakdownLabel('Viewport', ['1280', '800'])).toBe('1280 × 800');
    expect(breakdownLabel('City', [null, null])).toBe('(none)');
    expect(breakdownLabel('Timezone', 5.5)).toBe('UTC+5.5');
    expect(breakdownLabel('Timezone', -3)).toBe('UTC−3');
    expect(breakdownLabel('Timezone', 0)).toBe('UTC');
  });
});

describe('limiter', () => {
  it('runs at most the given number of tasks at once, the others in order, and goes on after a failure', async () => {
    const run = limiter(2);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const task = (id: number, fail = false) =>
      run(async () => {
        started.push(id);
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running--;
        if (fail) throw new Error(`task ${id}`);
        return id;
      });
    const results = await Promise.allSettled([task(1), task(2, true), task(3), task(4), task(5)]);
    expect(results.map((result) => (result.status === 'fulfilled' ? result.value : 'failed'))).toEqual([1, 'failed', 3, 4, 5]);
    expect(started).toEqual([1, 2, 3, 4, 5]);
    expect(most).toBe(2);
  });

  it('drops a waiting task whose signal was aborted, without running it', async () => {
    const run = limiter(1);
    const ran: number[] = [];
    const controller = new AbortController();
    const first = run(async () => {
      ran.push(1);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return 1;
    });
    const second = run(() => {
      ran.push(2);
      return Promise.resolve(2);
    }, controller.signal);
    const third = run(() => {
      ran.push(3);
      return Promise.resolve(3);
    });
    controller.abort(new Error('superseded'));
    await expect(first).resolves.toBe(1);
    await expect(second).rejects.toThrow('superseded');
    await expect(third).resolves.toBe(3);
    expect(ran).toEqual([1, 3]);
  });
});

it('links only web addresses from the outbound links table', () => {
  expect(['https://x.example/a', 'HTTP://x.example'].map(isWebAddress)).toEqual([true, true]);
  expect(['javascript:alert(1)', ' https://x.example', 'data:text/html,x', '//x.example', null, 3].map(isWebAddress)).toEqual([
    false,
    false,
    false,
    false,
    false,
    false,
  ]);
});
