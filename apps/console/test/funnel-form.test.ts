/** The funnel builder's node and its reading back, and the funnel answer as the screen draws it. */
import type { FunnelStep } from '../src/api/types';
import { breakdownLabel, funnelSeries, funnelTrendModel, stepRows, timeToConvertModel } from '../src/insights/funnel-data';
import { defaultFunnelForm, describeFunnel, funnelFormFromNode, funnelProblem, funnelsQuery, newStep, type FunnelForm } from '../src/insights/funnel-form';

const form: FunnelForm = {
  ...defaultFunnelForm(),
  steps: [
    { event: '$pageview', customName: 'Landing', filters: [{ type: 'event', key: '$pathname', operator: 'exact', value: '/', groupTypeIndex: 0 }] },
    newStep('signup'),
  ],
  filters: [{ type: 'person', key: 'plan', operator: 'is_set', value: '', groupTypeIndex: 0 }],
  windowInterval: 3,
  windowUnit: 'hour',
  order: 'strict',
  vizType: 'trends',
  interval: 'week',
  breakdown: '$browser',
  breakdownType: 'person',
};

describe('the funnel form', () => {
  it('writes a FunnelsQuery with per-step filters, the window, order, view and breakdown', () => {
    expect(funnelsQuery(form)).toEqual({
      kind: 'FunnelsQuery',
      series: [
        {
          kind: 'EventsNode',
          event: '$pageview',
          name: '$pageview',
          custom_name: 'Landing',
          properties: [{ type: 'event', key: '$pathname', operator: 'exact', value: '/' }],
        },
        { kind: 'EventsNode', event: 'signup', name: 'signup' },
      ],
      dateRange: { date_from: '-14d' },
      interval: 'week',
      properties: [{ type: 'person', key: 'plan', operator: 'is_set' }],
      funnelsFilter: { funnelVizType: 'trends', funnelOrderType: 'strict', funnelWindowInterval: 3, funnelWindowIntervalUnit: 'hour' },
      breakdownFilter: { breakdown: '$browser', breakdown_type: 'person' },
    });
  });

  it('reads the node back, bare or in an InsightVizNode', () => {
    const node = funnelsQuery(form);
    expect(funnelFormFromNode(node)).toEqual(form);
    expect(funnelFormFromNode({ kind: 'InsightVizNode', source: node })).toEqual(form);
    expect(funnelFormFromNode({ kind: 'RetentionQuery' })).toBeNull();
  });

  it('says what is missing before asking', () => {
    expect(funnelProblem(form)).toBeNull();
    expect(funnelProblem({ ...form, steps: [newStep('a')] })).toBe('A funnel needs at least 2 steps.');
    expect(funnelProblem({ ...form, steps: [newStep('a'), newStep(' ')] })).toBe('Step 2: choose an event.');
    expect(funnelProblem({ ...form, windowInterval: 0 })).toBe('The conversion window is a whole number of at least 1.');
    expect(
      funnelProblem({
        ...form,
        steps: [newStep('a'), { ...newStep('b'), filters: [{ type: 'event', key: 'x', operator: 'exact', value: '', groupTypeIndex: 0 }] }],
      }),
    ).toBe('Step 2: Filter on x: enter a value.');
    expect(describeFunnel(form)).toBe('Landing → signup');
  });
});

const step = (order: number, count: number, breakdown?: string[]): FunnelStep => ({
  name: `step ${order}`,
  custom_name: null,
  order,
  count,
  average_conversion_time: order === 0 ? null : 60,
  median_conversion_time: order === 0 ? null : 30,
  ...(breakdown && { breakdown_value: breakdown }),
});

describe('the funnel answer', () => {
  it('computes conversion from the first and previous step and the drop-off', () => {
    expect(stepRows([step(1, 6), step(0, 10), step(2, 3)]).map((row) => [row.count, row.fromFirst, row.fromPrevious, row.droppedOff])).toEqual([
      [10, 100, 100, 0],
      [6, 60, 60, 4],
      [3, 30, 50, 3],
    ]);
    expect(stepRows([step(0, 0), step(1, 0)]).map((row) => [row.fromFirst, row.fromPrevious])).toEqual([
      [0, 100],
      [0, 0],
    ]);
  });

  it('makes one series per breakdown value', () => {
    const series = funnelSeries([
      [step(0, 5, ['Chrome']), step(1, 2, ['Chrome'])],
      [step(0, 4, ['$$_posthog_breakdown_other_$$']), step(1, 1, ['$$_posthog_breakdown_other_$$'])],
    ]);
    expect(series.map((line) => [line.label, line.steps.map((row) => row.count)])).toEqual([
      ['Chrome', [5, 2]],
      ['Other', [4, 1]],
    ]);
    expect(funnelSeries([step(0, 1)]).map((line) => line.label)).toEqual(['All']);
    expect(breakdownLabel(['a', ''])).toBe('a, (none)');
  });

  it('draws the histogram without the closing bin and the trend per period', () => {
    expect(
      timeToConvertModel({
        bins: [
          [60, 2],
          [120, 1],
          [180, 0],
        ],
        average_conversion_time: 90,
      }),
    ).toEqual({ labels: ['1m 00s–2m 00s', '2m 00s–3m 00s'], series: [{ label: 'Persons converted', values: [2, 1], total: 3, previous: false }] });
    expect(funnelTrendModel([{ count: 2, data: [50, 0], days: ['2026-01-05', '2026-01-12'], labels: [] }], 'week')).toEqual({
      labels: ['5 Jan', '12 Jan'],
      series: [{ label: 'Conversion rate (%)', values: [50, 0], total: null, previous: false }],
    });
  });
});
