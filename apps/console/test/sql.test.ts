/** The SQL editor's pieces without a DOM: colouring, error marks, positions, CSV, chart columns, the saved node. */
import { highlight, lineColumn, tokenize } from '../src/sql/highlight';
import { columnsByName, numericColumns, tableChart, toCsv, type QueryTable } from '../src/sql/results';
import { sqlNode, viewFromNode } from '../src/sql/saved';

describe('tokenize', () => {
  it('names keywords, functions, strings, numbers, placeholders, comments and quoted names, and keeps every character', () => {
    const text = "SELECT count(*), \"odd name\", `b`, {limit} -- note\nfrom events where x = 'it''s' and y >= 1.5e3 /* c */";
    const tokens = tokenize(text);
    expect(tokens.map((token) => token.text).join('')).toBe(text);
    const kinds = Object.fromEntries(tokens.filter((token) => token.kind !== 'space').map((token) => [token.text, token.kind]));
    expect(kinds).toMatchObject({
      SELECT: 'keyword',
      count: 'function',
      '"odd name"': 'identifier',
      '`b`': 'identifier',
      '{limit}': 'placeholder',
      '-- note': 'comment',
      from: 'keyword',
      events: 'identifier',
      "'it''s'": 'string',
      '>=': 'operator',
      '1.5e3': 'number',
      '/* c */': 'comment',
    });
  });

  it('keeps an unterminated string or comment to the end', () => {
    expect(tokenize("select 'abc").map((token) => token.kind)).toEqual(['keyword', 'space', 'string']);
    expect(tokenize('select /* abc').map((token) => token.kind)).toEqual(['keyword', 'space', 'comment']);
  });
});

describe('highlight', () => {
  it('marks exactly the characters of the error range, cutting tokens at its ends', () => {
    const text = 'select evnt_x from events';
    const pieces = highlight(text, { start: 7, end: 11 });
    expect(pieces.map((piece) => piece.text).join('')).toBe(text);
    expect(pieces.filter((piece) => piece.error).map((piece) => piece.text)).toEqual(['evnt']);
  });

  it('shows an empty range or one past the end as one marked character', () => {
    expect(
      highlight('select', { start: 6, end: 6 })
        .filter((piece) => piece.error)
        .map((piece) => piece.text),
    ).toEqual([' ']);
    expect(
      highlight('a b', { start: 2, end: 2 })
        .filter((piece) => piece.error)
        .map((piece) => piece.text),
    ).toEqual(['b']);
  });

  it('finds lines and columns from offsets', () => {
    expect(lineColumn('select\n  x\nfrom', 9)).toEqual({ line: 2, column: 3 });
    expect(lineColumn('abc', 0)).toEqual({ line: 1, column: 1 });
  });
});

const table: QueryTable = {
  columns: ['day', 'n', 'label, "quoted"', 'avg'],
  types: [
    ['day', 'Date'],
    ['n', 'UInt64'],
    ['label, "quoted"', 'String'],
    ['avg', 'Nullable(Float64)'],
  ],
  results: [
    ['2026-01-01', '3', 'a,b', 1.5],
    ['2026-01-02', '5', 'line\nbreak', null],
  ],
};

describe('results', () => {
  it('writes RFC 4180 CSV', () => {
    expect(toCsv(table)).toBe('day,n,"label, ""quoted""",avg\r\n2026-01-01,3,"a,b",1.5\r\n2026-01-02,5,"line\nbreak",\r\n');
  });

  it('finds the numeric columns and charts them over the first one by default', () => {
    expect(numericColumns(table)).toEqual([1, 3]);
    const columns = columnsByName(table, {});
    expect(columns).toEqual({ x: 0, y: [1, 3] });
    expect(tableChart(table, columns)).toEqual({
      labels: ['2026-01-01', '2026-01-02'],
      series: [
        { label: 'n', values: [3, 5], total: null, previous: false },
        { label: 'avg', values: [1.5, 0], total: null, previous: false },
      ],
    });
  });

  it('reads saved columns by name, dropping names the answer lacks', () => {
    expect(columnsByName(table, { x: 'n', y: ['avg', 'gone'] })).toEqual({ x: 1, y: [3] });
    expect(columnsByName(table, { x: 'gone', y: [] })).toEqual({ x: 0, y: [] });
  });
});

describe('the saved node', () => {
  it('round-trips the query, display and columns', () => {
    const view = { query: 'select 1', display: 'bar' as const, x: 'day', y: ['n'] };
    const node = sqlNode(view);
    expect(node).toEqual({
      kind: 'DataVisualizationNode',
      source: { kind: 'HogQLQuery', query: 'select 1' },
      display: 'ActionsBar',
      chartSettings: { xAxis: { column: 'day' }, yAxis: [{ column: 'n' }] },
    });
    expect(viewFromNode(node)).toEqual(view);
    expect(viewFromNode(sqlNode({ query: 'select 2', display: 'table' }))).toEqual({ query: 'select 2', display: 'table' });
  });

  it('reads a bare HogQLQuery and refuses other nodes', () => {
    expect(viewFromNode({ kind: 'HogQLQuery', query: 'select 3' })).toEqual({ query: 'select 3', display: 'table' });
    expect(viewFromNode({ kind: 'FunnelsQuery', series: [] })).toBeNull();
    expect(viewFromNode({ kind: 'DataTableNode', source: { kind: 'EventsQuery' } })).toBeNull();
    expect(viewFromNode(null)).toBeNull();
  });
});
