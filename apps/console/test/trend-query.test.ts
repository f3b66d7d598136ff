import { newFilter, type FilterForm } from '../src/filters/property-filter';
import {
  defaultForm,
  describeForm,
  formFromFilters,
  formProblem,
  newSeries,
  trendRequest,
  visualizationOf,
  withKind,
  type TrendForm,
} from '../src/insights/query';

const form = (changes: Partial<TrendForm>): TrendForm => ({ ...defaultForm(), ...changes });
const filter = (fields: Omit<FilterForm, 'groupTypeIndex'>): FilterForm => ({ ...fields, groupTypeIndex: 0 });

describe('trendRequest', () => {
  it('sends a default form as one $pageview count per day over the last 7 days, drawn as lines', () => {
    expect(trendRequest(defaultForm())).toEqual({
      insight: 'TRENDS',
      events: [{ id: '$pageview', type: 'events', order: 0, name: '$pageview', math: 'total' }],
      interval: 'day',
      date_from: '-7d',
      display: 'ActionsLineGraph',
    });
  });

  it('sends every setting of the builder as the legacy field the API reads', () => {
    const request = trendRequest(
      form({
        series: [
          { ...newSeries('purchase'), math: 'p90', mathProperty: ' amount ' },
          { ...newSeries(''), math: 'unique_group', groupTypeIndex: 2 },
          { ...newSeries('signup'), math: 'dau', mathProperty: 'ignored' },
        ],
        interval: 'week',
        dateFrom: '2026-01-01',
        dateTo: '2026-03-31',
        filters: [
          filter({ type: 'event', key: '$browser', operator: 'exact', value: 'Chrome, Firefox' }),
          filter({ type: 'person', key: 'plan', operator: 'is_not', value: 'free' }),
          filter({ type: 'event', key: 'amount', operator: 'gte', value: '10.5' }),
          filter({ type: 'person', key: 'email', operator: 'is_set', value: 'ignored' }),
          filter({ type: 'event', key: '$current_url', operator: 'icontains', value: ' /docs ' }),
          filter({ type: 'cohort', key: 'id', operator: 'not_in', value: '7' }),
          { ...newFilter('event'), key: '  ' },
        ],
        breakdown: ' $os ',
        breakdownType: 'person',
        compare: true,
        formula: ' A / C ',
        visualization: 'table',
      }),
    );
    expect(request).toEqual({
      insight: 'TRENDS',
      events: [
        { id: 'purchase', type: 'events', order: 0, name: 'purchase', math: 'p90', math_property: 'amount' },
        { id: null, type: 'events', order: 1, name: 'All events', math: 'unique_group', math_group_type_index: 2 },
        { id: 'signup', type: 'events', order: 2, name: 'signup', math: 'dau' },
      ],
      interval: 'week',
      date_from: '2026-01-01',
      date_to: '2026-03-31',
      properties: [
        { type: 'event', key: '$browser', operator: 'exact', value: ['Chrome', 'Firefox'] },
        { type: 'person', key: 'plan', operator: 'is_not', value: 'free' },
        { type: 'event', key: 'amount', operator: 'gte', value: 10.5 },
        { type: 'person', key: 'email', operator: 'is_set' },
        { type: 'event', key: '$current_url', operator: 'icontains', value: '/docs' },
        { type: 'cohort', key: 'id', operator: 'not_in', value: 7 },
      ],
      breakdown: '$os',
      breakdown_type: 'person',
      compare: true,
      formula: 'A / C',
      display: 'ActionsTable',
    });
  });

  it('maps each visualisation to its display and back', () => {
    for (const visualization of ['line', 'bar', 'number', 'table'] as const) {
      expect(visualizationOf(trendRequest(form({ visualization })).display)).toBe(visualization);
    }
    expect(visualizationOf('ActionsPie')).toBe('line');
  });
});

describe('formFromFilters', () => {
  it('reopens what trendRequest saved as the same form', () => {
    const saved = form({
      series: [{ ...newSeries('purchase'), math: 'sum', mathProperty: 'amount' }, newSeries('signup')],
      filters: [
        filter({ type: 'person', key: 'plan', operator: 'exact', value: 'pro, team' }),
        filter({ type: 'cohort', key: 'id', operator: 'in', value: '3' }),
      ],
      breakdown: '$browser',
      compare: true,
      formula: 'A + B',
      visualization: 'bar',
      interval: 'hour',
      dateFrom: '-24h',
    });
    const reopened = formFromFilters(JSON.parse(JSON.stringify(trendRequest(saved))) as Record<string, unknown>);
    expect(reopened).toEqual(saved);
  });

  it('orders series by their order field and leaves what it cannot show at the defaults', () => {
    const reopened = formFromFilters({
      events: [
        { id: 'b', order: 1, math: 'nonsense' },
        { id: 'a', order: 0 },
      ],
      interval: 'fortnight',
      properties: [
        { type: 'cohort', key: 'id', value: 3 },
        { key: 'x', operator: 'gt', value: 5 },
        { type: 'group', key: 'industry', group_type_index: 0 },
        'junk',
      ],
      display: 'WorldMap',
    });
    expect(reopened.series.map((series) => [series.event, series.math])).toEqual([
      ['a', 'total'],
      ['b', 'total'],
    ]);
    expect(reopened.interval).toBe('day');
    expect(reopened.filters).toEqual([
      filter({ type: 'cohort', key: 'id', operator: 'in', value: '3' }),
      filter({ type: 'event', key: 'x', operator: 'gt', value: '5' }),
    ]);
    expect(reopened.visualization).toBe('line');
    expect(formFromFilters({}).series).toEqual(defaultForm().series);
  });
});

describe('formProblem and describeForm', () => {
  it('names what the builder needs before sending', () => {
    expect(formProblem(defaultForm())).toBeNull();
    expect(formProblem(form({ series: [newSeries(), { ...newSeries(), math: 'avg' }] }))).toBe('Series B: choose the property to aggregate.');
    expect(formProblem(form({ filters: [{ ...newFilter('event'), key: 'plan' }] }))).toBe('Filter on plan: enter a value.');
    expect(formProblem(form({ filters: [{ ...newFilter('person'), key: 'n', operator: 'lt', value: 'ten' }] }))).toBe('Filter on n: ten is not a number.');
    expect(formProblem(form({ filters: [{ ...newFilter('event'), key: 'n', operator: 'is_set' }] }))).toBeNull();
  });

  it('names an unnamed insight after its series and breakdown', () => {
    expect(describeForm(form({ series: [newSeries(), { ...newSeries(''), math: 'dau' }], breakdown: '$browser' }))).toBe(
      '$pageview total count, All events unique users by $browser',
    );
  });
});

describe('stickiness and lifecycle', () => {
  const full = form({
    series: [newSeries('signup'), newSeries('purchase')],
    breakdown: '$browser',
    compare: true,
    formula: 'A + B',
    visualization: 'table',
  });

  it('asks stickiness without a breakdown or formula, as a line when the trend showed a total', () => {
    const sticky = withKind(full, 'STICKINESS');
    expect(sticky.visualization).toBe('line');
    const request = trendRequest(sticky);
    expect(request).toMatchObject({ insight: 'STICKINESS', compare: true, display: 'ActionsLineGraph' });
    expect(request.events.map((event) => event.id)).toEqual(['signup', 'purchase']);
    expect(request).not.toHaveProperty('breakdown');
    expect(request).not.toHaveProperty('formula');
    expect(withKind(form({ visualization: 'bar' }), 'STICKINESS').visualization).toBe('bar');
  });

  it('asks lifecycle of the first series only, as bars, with neither breakdown, formula nor comparison', () => {
    const request = trendRequest(withKind(full, 'LIFECYCLE'));
    expect(request).toMatchObject({ insight: 'LIFECYCLE', display: 'ActionsBar' });
    expect(request.events.map((event) => event.id)).toEqual(['signup']);
    for (const field of ['breakdown', 'formula', 'compare']) expect(request).not.toHaveProperty(field);
    expect(describeForm(withKind(full, 'LIFECYCLE'))).toBe('signup lifecycle');
    expect(describeForm(withKind(full, 'STICKINESS'))).toBe('signup, purchase stickiness');
  });

  it('reopens each kind, `shown_as` before `insight` as the API reads it', () => {
    for (const kind of ['STICKINESS', 'LIFECYCLE'] as const) {
      const saved = withKind(form({ series: [newSeries('signup')] }), kind);
      expect(formFromFilters(JSON.parse(JSON.stringify(trendRequest(saved))) as Record<string, unknown>)).toEqual(saved);
    }
    expect(formFromFilters({ insight: 'TRENDS', shown_as: 'Lifecycle' }).insight).toBe('LIFECYCLE');
    expect(formFromFilters({ insight: 'PATHS' }).insight).toBe('TRENDS');
  });
});
