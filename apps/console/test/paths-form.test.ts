/** The paths builder's node and its reading back, and the Sankey layout of an answer. */
import type { PathEdge } from '../src/api/types';
import { layoutPaths, splitNodeName } from '../src/insights/paths-data';
import { defaultPathsForm, describePaths, pathsFormFromNode, pathsProblem, pathsQuery, type PathsForm } from '../src/insights/paths-form';

const form: PathsForm = {
  ...defaultPathsForm(),
  eventTypes: ['$pageview', 'custom_event'],
  startPoint: ' /home ',
  stepLimit: 4,
  edgeLimit: 20,
  cleaning: [{ regex: '/product/\\d+', alias: '/product/:id' }],
  filters: [{ type: 'event', key: '$browser', operator: 'exact', value: 'Chrome', groupTypeIndex: 0 }],
  dateFrom: '-30d',
};

describe('the paths form', () => {
  it('writes a PathsQuery and reads it back, bare or in an InsightVizNode', () => {
    const node = pathsQuery(form);
    expect(node).toEqual({
      kind: 'PathsQuery',
      pathsFilter: {
        includeEventTypes: ['$pageview', 'custom_event'],
        stepLimit: 4,
        edgeLimit: 20,
        startPoint: '/home',
        localPathCleaningFilters: [{ regex: '/product/\\d+', alias: '/product/:id' }],
      },
      dateRange: { date_from: '-30d' },
      properties: [{ type: 'event', key: '$browser', operator: 'exact', value: 'Chrome' }],
    });
    const back = { ...form, startPoint: '/home' };
    expect(pathsFormFromNode(node)).toEqual(back);
    expect(pathsFormFromNode({ kind: 'InsightVizNode', source: node })).toEqual(back);
    expect(pathsFormFromNode({ kind: 'RetentionQuery' })).toBeNull();
  });

  it('reads what it cannot show as the defaults', () => {
    const read = pathsFormFromNode({
      kind: 'PathsQuery',
      pathsFilter: { includeEventTypes: ['$screen', 'hogql'], stepLimit: 99, localPathCleaningFilters: [{ alias: 'x' }, 3] },
    });
    expect(read).toMatchObject({ eventTypes: ['$screen'], stepLimit: defaultPathsForm().stepLimit, cleaning: [] });
  });

  it('names what the API would refuse before asking, and describes the paths', () => {
    expect(pathsProblem(form)).toBeNull();
    expect(pathsProblem({ ...form, stepLimit: 21 })).toMatch(/from 2 to 20/);
    expect(pathsProblem({ ...form, edgeLimit: 0 })).toMatch(/links/);
    expect(pathsProblem({ ...form, endPoint: '/home' })).toMatch(/differ/);
    expect(pathsProblem({ ...form, cleaning: [{ regex: '', alias: 'x' }] })).toMatch(/Cleaning rule 1/);
    expect(describePaths(form)).toBe('Paths from /home');
    expect(describePaths({ ...form, startPoint: '', endPoint: '/buy' })).toBe('Paths to /buy');
  });
});

describe('the Sankey layout', () => {
  const edge = (source: string, target: string, value: number): PathEdge => ({ source, target, value, average_conversion_time: 1000 });
  const edges = [edge('1_/a', '2_/b_c', 6), edge('1_/a', '2_/d', 2), edge('2_/b_c', '3_/d', 3), edge('1_/x', '2_/d', 1)];

  it('splits node names at the first underscore', () => {
    expect(splitNodeName('2_/b_c')).toEqual({ step: 2, item: '/b_c' });
    expect(splitNodeName('odd')).toEqual({ step: 0, item: 'odd' });
  });

  it('puts each step in its column, sizes nodes by their paths and counts the ones that end there', () => {
    const layout = layoutPaths(edges, 600, 300);
    expect(layout.steps).toBe(3);
    const node = (id: string) => layout.nodes.find((each) => each.id === id)!;
    expect(node('1_/a').x0).toBeLessThan(node('2_/b_c').x0);
    expect(node('2_/b_c').x0).toBeLessThan(node('3_/d').x0);
    expect(node('1_/x').x0).toBe(node('1_/a').x0);
    expect(node('2_/d').x0).toBe(node('2_/b_c').x0);
    expect(node('1_/a').value).toBe(8);
    expect(node('2_/b_c')).toMatchObject({ value: 6, dropOff: 3 });
    expect(node('2_/d')).toMatchObject({ value: 3, dropOff: 3 });
    // Heights follow the counts; the busiest node of a column is on top.
    expect((node('1_/a').y1 - node('1_/a').y0) / (node('1_/x').y1 - node('1_/x').y0)).toBeCloseTo(8, 5);
    expect(node('1_/a').y0).toBeLessThan(node('1_/x').y0);
    for (const link of layout.links) expect(link.path).toMatch(/^M[\d.]+,[\d.]+C/);
    expect(layout.links.map((link) => link.value).sort()).toEqual([1, 2, 3, 6]);
  });

  it('lays out nothing for no edges', () => {
    expect(layoutPaths([], 600, 300)).toEqual({ nodes: [], links: [], steps: 0 });
  });
});
