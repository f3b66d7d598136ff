/** The retention builder's node and its reading back, and the grid and mean line of an answer. */
import type { RetentionRow } from '../src/api/types';
import { meanLine, retentionGrid } from '../src/insights/retention-data';
import {
  defaultRetentionForm,
  describeRetention,
  retentionFormFromNode,
  retentionProblem,
  retentionQuery,
  type RetentionForm,
} from '../src/insights/retention-form';

const asRecord = (value: unknown) => value as Record<string, unknown>;

const form: RetentionForm = {
  targetEvent: 'signup',
  returningEvent: '$pageview',
  retentionType: 'retention_recurring',
  period: 'Week',
  totalIntervals: 4,
  cumulative: true,
  rollingWindows: false,
  filters: [{ type: 'event', key: '$browser', operator: 'exact', value: 'Chrome, Safari', groupTypeIndex: 0 }],
};

describe('the retention form', () => {
  it('writes a RetentionQuery and reads it back, bare or in an InsightVizNode', () => {
    const node = retentionQuery(form);
    expect(node).toEqual({
      kind: 'RetentionQuery',
      retentionFilter: {
        targetEntity: { id: 'signup', name: 'signup', type: 'events' },
        returningEntity: { id: '$pageview', name: '$pageview', type: 'events' },
        retentionType: 'retention_recurring',
        period: 'Week',
        totalIntervals: 4,
        cumulative: true,
        meanRetentionCalculation: 'simple',
      },
      properties: [{ type: 'event', key: '$browser', operator: 'exact', value: ['Chrome', 'Safari'] }],
    });
    expect(retentionFormFromNode(node)).toEqual(form);
    expect(retentionFormFromNode({ kind: 'InsightVizNode', source: node })).toEqual(form);
    expect(retentionFormFromNode({ kind: 'InsightVizNode', source: { kind: 'RetentionQuery' } })).toEqual(defaultRetentionForm());
    expect(retentionFormFromNode({ kind: 'FunnelsQuery' })).toBeNull();
    const rolling = { ...form, cumulative: false, rollingWindows: true };
    expect(asRecord(retentionQuery(rolling).retentionFilter)).toMatchObject({ timeWindowMode: '24_hour_windows', cumulative: false });
    expect(retentionFormFromNode(retentionQuery(rolling))).toEqual(rolling);
  });

  it('says what is missing and names the insight', () => {
    expect(retentionProblem(form)).toBeNull();
    expect(retentionProblem({ ...form, targetEvent: '' })).toBe('Choose the event that starts a cohort.');
    expect(retentionProblem({ ...form, totalIntervals: 0 })).toBe('The number of periods is a whole number from 1 to 100.');
    expect(retentionProblem({ ...form, rollingWindows: true })).toBe('Cumulative retention is counted in calendar periods only.');
    expect(describeRetention(form)).toBe('Retention: signup then $pageview');
    expect(describeRetention(defaultRetentionForm())).toBe('Retention of $pageview');
  });
});

const row = (counts: number[], index: number): RetentionRow => ({
  values: counts.map((count, k) => ({ count, label: `Day ${k}` })),
  label: `Day ${index}`,
  date: `2026-01-0${index + 1}T00:00:00Z`,
  breakdown_value: null,
});

describe('the retention grid', () => {
  const rows = [row([10, 5, 2], 0), row([4, 1, 0], 1), row([0, 0, 0], 2)];

  it('gives shares of the cohort, empties the periods to come and marks the one in progress', () => {
    const grid = retentionGrid(rows, true);
    expect(grid.map((line) => line.cells.map((cell) => cell && [cell.count, cell.percent, cell.inProgress]))).toEqual([
      [
        [10, 100, false],
        [5, 50, false],
        [2, 20, true],
      ],
      [[4, 100, false], [1, 25, true], null],
      [[0, 0, true], null, null],
    ]);
    expect(retentionGrid(rows, false)[0]!.cells[2]!.inProgress).toBe(false);
  });

  it('averages each period over the cells with returns that are not in progress', () => {
    expect(meanLine(retentionGrid(rows, true))).toEqual([100, 50, 0]);
    expect(meanLine(retentionGrid(rows, false))).toEqual([100, 37.5, 20]);
    expect(meanLine([])).toEqual([]);
  });
});
